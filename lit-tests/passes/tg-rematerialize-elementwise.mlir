// RUN: tg-opt %s --tg-autodiff --tg-decompose --cse --tg-rematerialize="elementwise=1 max-depth=32 max-flops-per-byte=8" | FileCheck %s
// RUN: tg-opt %s --tg-autodiff --tg-decompose --cse --tg-rematerialize="elementwise=1 max-depth=32 max-flops-per-byte=0.1" | FileCheck %s --check-prefix=STRICT

// Free replays (what the training pipeline runs before tg-fuse): the GELU's
// output, read by the second matmul's weight gradient, is replayed from the
// matmul result that the GELU's derivative keeps anyway, by elementwise ops
// only, right before that gradient. No matmul is replayed.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: tg.remat = #tg.remat<bytes = 128,
// CHECK: %[[H:.+]] = tg.matmul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: tg.tanh %{{.+}} {tg.recomputed}
// CHECK: %[[G:.+]] = tg.mul %{{.+}}, %{{.+}} {tg.recomputed} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: tg.matmul %[[G]], %{{.+}} {transpose_lhs}
// CHECK-NOT: tg.matmul {{.*}}tg.recomputed

// Too expensive per byte: nothing is replayed and no record is left.
// STRICT-LABEL: func.func @forward_grad
// STRICT-NOT: tg.remat
// STRICT: tg.tanh
// STRICT-NOT: tg.recomputed
// STRICT: %[[G:.+]] = tg.mul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>
// STRICT-NEXT: tg.matmul %[[G]], %arg1 :
// STRICT: tg.matmul %[[G]], %{{.+}} {transpose_lhs}
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = tg.gelu %0 approximate = tanh : tensor<4x8xf32>
  %2 = tg.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %3 = tg.mean %2 axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
