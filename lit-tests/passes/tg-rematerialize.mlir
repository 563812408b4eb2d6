// RUN: tg-opt %s --split-input-file --tg-autodiff --tg-rematerialize | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-autodiff --tg-rematerialize=max-flops-per-byte=0.1 | FileCheck %s --check-prefix=STRICT
// RUN: tg-opt %s --split-input-file --tg-autodiff --tg-rematerialize="matmuls=1 max-flops-per-byte=8 max-depth=8" | FileCheck %s --check-prefix=MM
// RUN: not tg-opt %s --split-input-file --tg-rematerialize 2>&1 | FileCheck %s --check-prefix=MISSING

// MISSING: tg-rematerialize: no function named 'forward_grad'

// The GELU output is read by the second matmul's weight gradient. It is
// recomputed from the kept matmul result right before that use instead of
// being kept; matmuls are never recomputed.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: tg.remat = #tg.remat<bytes = 128, flops = 256, step_flops = {{[0-9]+}}>
// CHECK: %[[H:.+]] = tg.matmul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: %[[G:.+]] = tg.gelu %[[H]] : tensor<4x8xf32>
// CHECK: tg.matmul %[[G]], %{{.+}} : tensor<4x8xf32>
// CHECK: %[[R:.+]] = tg.gelu %[[H]] {tg.recomputed} : tensor<4x8xf32>
// CHECK-NEXT: tg.matmul %[[R]], %{{.+}} {transpose_lhs}
// (The GELU's derivative, replayed from H by its VJP, is marked too.)
// CHECK-NOT: tg.matmul {{.*}}tg.recomputed

// A recomputation that costs more FLOPs per byte freed than allowed is not done.
// STRICT-LABEL: func.func @forward_grad
// STRICT-SAME: tg.remat = #tg.remat<bytes = 0, flops = 0, step_flops = {{[0-9]+}}>
// STRICT-NOT: tg.gelu {{.*}}tg.recomputed
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = tg.gelu %0 : tensor<4x8xf32>
  %2 = tg.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %3 = tg.mean %2 axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// With matmuls: the cheap matmul (K = 2: 1 FLOP per byte) and the GELU on
// it are replayed for the weight gradient of the second matmul and for the
// GELU gradient; the expensive matmul (K = 64: 32 FLOPs per byte) stays
// stored, its output read directly by the GELU gradient. Without matmuls
// (the default), the cheap matmul is not replayed.
// MM-LABEL: func.func @forward_grad(%arg0: tensor<4x2xf32>
// MM-SAME: tg.remat = #tg.remat<bytes = 2048, flops = 4096, step_flops = {{[0-9]+}}>
// MM: %[[B:.+]] = tg.matmul %{{.+}}, %arg2 : tensor<4x64xf32>, tensor<64x64xf32> -> tensor<4x64xf32>
// MM: tg.mul %[[B]], %{{.+}} : tensor<4x64xf32>, tensor<f32>
// MM: %[[A:.+]] = tg.matmul %arg0, %arg1 {tg.recomputed} : tensor<4x2xf32>, tensor<2x64xf32>
// MM-NEXT: %[[G:.+]] = tg.gelu %[[A]] {tg.recomputed}
// MM-NEXT: tg.matmul %[[G]], %{{.+}} {transpose_lhs}
// MM: tg.matmul %arg0, %arg1 {tg.recomputed}
// MM-NOT: tg.matmul %{{.+}}, %arg2 {tg.recomputed}
// CHECK-LABEL: func.func @forward_grad
// CHECK-NOT: tg.matmul %arg0, %arg1 {tg.recomputed}
func.func @forward(%x: tensor<4x2xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w1: tensor<2x64xf32> {tg.name = "w1", tg.role = #tg.role<param>}, %w2: tensor<64x64xf32> {tg.name = "w2", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %a = tg.matmul %x, %w1 : tensor<4x2xf32>, tensor<2x64xf32> -> tensor<4x64xf32>
  %g = tg.gelu %a : tensor<4x64xf32>
  %b = tg.matmul %g, %w2 : tensor<4x64xf32>, tensor<64x64xf32> -> tensor<4x64xf32>
  %t = tg.gelu %b : tensor<4x64xf32>
  %l = tg.mean %t axes = [0, 1] : tensor<4x64xf32> -> tensor<f32>
  return %l : tensor<f32>
}
