// RUN: tg-opt %s --split-input-file --tg-autodiff --tg-rematerialize | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-autodiff --tg-rematerialize=max-flops-per-byte=0.1 | FileCheck %s --check-prefix=STRICT
// RUN: not tg-opt %s --split-input-file --tg-rematerialize 2>&1 | FileCheck %s --check-prefix=MISSING

// MISSING: tg-rematerialize: no function named 'forward_grad'

// The GELU output is read by the second matmul's weight gradient. It is
// recomputed from the kept matmul result right before that use instead of
// being kept; matmuls are never recomputed.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: tg.remat = #tg.remat<bytes = 128, flops = 256>
// CHECK: %[[H:.+]] = tg.matmul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: %[[G:.+]] = tg.gelu %[[H]] : tensor<4x8xf32>
// CHECK: tg.matmul %[[G]], %{{.+}} : tensor<4x8xf32>
// CHECK: %[[R:.+]] = tg.gelu %[[H]] {tg.recomputed} : tensor<4x8xf32>
// CHECK-NEXT: tg.matmul %[[R]], %{{.+}} {transpose_lhs}
// CHECK-NOT: tg.recomputed

// A recomputation that costs more FLOPs per byte freed than allowed is not done.
// STRICT-LABEL: func.func @forward_grad
// STRICT-SAME: tg.remat = #tg.remat<bytes = 0, flops = 0>
// STRICT-NOT: tg.recomputed
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = tg.gelu %0 : tensor<4x8xf32>
  %2 = tg.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %3 = tg.mean %2 axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
