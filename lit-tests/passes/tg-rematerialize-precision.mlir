// RUN: tg-opt %s --tg-assign-precision --tg-build-train-step --canonicalize --cse --tg-rematerialize="widening-casts=1 max-depth=0" | FileCheck %s
// RUN: tg-opt %s --tg-training-pipeline="remat-level=1 plan-memory=1" | FileCheck %s --check-prefix=PLAN

// Mixed precision's widening casts (the fp32 operands of layer_norm and
// cross_entropy, cast up from bf16) are replayed in the backward pass
// instead of stored: the backward keeps the bf16 value (half the bytes) and
// casts it again. With accumulate = 2 the step runs @forward_grad_micro
// (the clone that reads the shared compute copies): it is rematerialised
// too, or the step's memory would not change.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: tg.remat = #tg.remat<bytes = 160, flops = 40,
// CHECK: tg.cast %{{.+}} {tg.precision = "fp32-sensitive", tg.recomputed} : tensor<4x2xbf16> to tensor<4x2xf32>
// CHECK: tg.cast %{{.+}} {tg.precision = "fp32-sensitive", tg.recomputed} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-LABEL: func.func private @forward_grad_micro(
// CHECK-SAME: tg.remat = #tg.remat<bytes = 160, flops = 40,
// CHECK: tg.cast %{{.+}} {tg.precision = "fp32-sensitive", tg.recomputed} : tensor<4x2xbf16> to tensor<4x2xf32>
// CHECK: tg.cast %{{.+}} {tg.precision = "fp32-sensitive", tg.recomputed} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: tg.recomputed

// The planner inlines @forward_grad_micro like @forward_grad: its forward
// values read by the backward pass are activations and its results
// gradients (both were counted as workspace).
// PLAN-LABEL: func.func private @forward_grad_micro(
// PLAN-SAME: tg.remat = #tg.remat<bytes = {{[1-9][0-9]*}}
// PLAN-LABEL: func.func @train_step(
// At the peak (5376 B, the lower bound; 256-byte alignment makes it 15
// buffers) the micro-batch loop's body is in the layer norm's backward:
// the loop's results hold the accumulated gradients (352 B, as many as
// the parameters) while the body has already summed this micro-batch's
// gradients of w2 and g into new buffers (96 B): 448 B of gradients.
// Before the schedule hoist the body had two moments of 9 buffers, the
// end of its forward pass (144 B of activations, none of its gradients)
// and this one; the first of the two was reported (352 / 148). The hoist
// runs shrinking ops earlier and the end of the forward pass holds fewer
// buffers now, so this moment is the peak: each value is classified as
// before. The micro-batch loss (4 B), read only by the loop's running
// sum, is not an activation (tg-plan-memory-kinds.mlir).
// PLAN-SAME: tg.memory = #tg.memory<params_bytes = 352, optimizer_bytes = 8, inputs_bytes = 320, grads_bytes = 448, activations_bytes = 0, workspace_bytes = 648, persistent_bytes = 1536, transient_bytes = 3840, peak_bytes = 5376,
module attributes {tg.train = {precision = "bf16", accumulate = 2 : i64, optimizer = {kind = "sgd", lr = 0.1 : f64, weight_decay = 0.0 : f64}}} {
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
