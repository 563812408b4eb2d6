// RUN: tg-opt %s --split-input-file --tg-assign-precision --tg-build-train-step | FileCheck %s

// precision = bf16 with accumulate = 3: the weights' compute copies are made
// once per step in @train_step, before the micro-batch loop, and every
// micro-batch's gradient call reads them; the loop makes none. The entry
// point @forward_grad keeps its fp32 signature and its own casts (it is
// what tg-run --save-grads calls); the loop calls a private clone that
// takes the copies as arguments. The layer_norm's scale is read as the
// fp32 master (no copy), so it gets no extra argument.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-COUNT-2: tg.precision = "compute-copy"
// CHECK-LABEL: func.func private @forward_grad_micro(
// CHECK-SAME: %{{.+}}: tensor<8x8xbf16> {tg.name = "w1.compute_copy", tg.role = #tg.role<param>}, %{{.+}}: tensor<8x2xbf16> {tg.name = "w2.compute_copy", tg.role = #tg.role<param>})
// CHECK-NOT: compute-copy
// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W1:[^:]+]]: tensor<8x8xf32> {tg.name = "w1"
// CHECK-SAME: %[[W2:[^:]+]]: tensor<8x2xf32> {tg.name = "w2"
// CHECK: %[[C1:.+]] = tg.cast %[[W1]] {tg.precision = "compute-copy"} : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK: %[[C2:.+]] = tg.cast %[[W2]] {tg.precision = "compute-copy"} : tensor<8x2xf32> to tensor<8x2xbf16>
// CHECK: scf.for
// CHECK-NOT: compute-copy
// CHECK: func.call @forward_grad_micro({{.*}}, %[[C1]], %[[C2]])
// CHECK: scf.yield
// CHECK-NOT: compute-copy
// CHECK: return
module attributes {tg.train = {precision = "bf16", accumulate = 3 : i64, optimizer = {kind = "sgd", lr = 0.1 : f64, weight_decay = 0.0 : f64}}} {
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %y: tensor<4xi64> {tg.name = "y", tg.role = #tg.role<input>},
                   %w1: tensor<8x8xf32> {tg.name = "w1", tg.role = #tg.role<param>},
                   %g: tensor<8xf32> {tg.name = "g", tg.role = #tg.role<param>},
                   %w2: tensor<8x2xf32> {tg.name = "w2", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = tg.layer_norm %0 scale(%g : tensor<8xf32>) : tensor<4x8xf32>
  %2 = tg.matmul %1, %w2 : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %3 = tg.cross_entropy %2, %y : tensor<4x2xf32>, tensor<4xi64> -> tensor<f32>
  return %3 : tensor<f32>
}
}

// -----

// accumulate = 1: one gradient call per step, whose casts are already made
// once per step; nothing is cloned.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-NOT: forward_grad_micro
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: compute-copy
// CHECK: call @forward_grad(
// CHECK-NOT: forward_grad_micro
module attributes {tg.train = {precision = "bf16", optimizer = {kind = "sgd", lr = 0.1 : f64, weight_decay = 0.0 : f64}}} {
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w1: tensor<8x8xf32> {tg.name = "w1", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = tg.sum %0 axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}
