// RUN: tg-opt %s --tg-training-pipeline="plan-memory=1" | FileCheck %s

// The categories at the peak: an activation is a forward value that the
// backward pass reads. The loss is a forward value too, but only the
// step's results read it (or, with accumulation, the micro-batch loop's
// running sum): it is workspace. It was counted as a 4-byte activation in
// every step (activations_bytes = 36 here) until 2026-12-02.
// At the peak, in the cross-entropy's backward pass, the relu output
// (32 B), which its softmax replay reads, is the only activation; the
// loss (4 B) is live until the step returns it.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tg.memory = #tg.memory<params_bytes = 64, optimizer_bytes = 8, inputs_bytes = 160, grads_bytes = 0, activations_bytes = 32, workspace_bytes = 60, persistent_bytes = 1024, transient_bytes = 1280, peak_bytes = 2304,
module attributes {tg.train = {optimizer = {kind = "sgd", lr = 0.1 : f64, weight_decay = 0.0 : f64}}} {
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %y: tensor<4xi64> {tg.name = "y", tg.role = #tg.role<input>},
                   %w: tensor<8x2xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %1 = tg.relu %0 : tensor<4x2xf32>
  %2 = tg.cross_entropy %1, %y : tensor<4x2xf32>, tensor<4xi64> -> tensor<f32>
  return %2 : tensor<f32>
}
}
