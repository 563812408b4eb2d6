// RUN: tg-opt %s --split-input-file --tg-build-train-step --verify-diagnostics | FileCheck %s

// Two micro-batches of 4 rows: the step takes 8 rows, loops over them with
// scf.for, averages, then applies Nesterov momentum with a linear warm-up.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:.+]]: tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>}, %[[BUF:.+]]: tensor<3xf32> {tg.name = "w.momentum", tg.role = #tg.role<state>}, %[[STEP:.+]]: tensor<i64> {tg.name = "step", tg.role = #tg.role<step>}, %[[X:.+]]: tensor<8x3xf32> {tg.name = "x", tg.role = #tg.role<input>}
// CHECK-SAME: -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>}, tensor<3xf32> {tg.name = "w.momentum", tg.role = #tg.role<state>}, tensor<i64> {tg.name = "step", tg.role = #tg.role<step>})
// CHECK: %[[ACC:.+]]:2 = scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args
// CHECK: %[[OFF:.+]] = arith.muli %[[I]], %{{.+}} : index
// CHECK: %[[MB:.+]] = tensor.extract_slice %[[X]][%[[OFF]], 0] [4, 3] [1, 1] : tensor<8x3xf32> to tensor<4x3xf32>
// CHECK: %[[R:.+]]:2 = func.call @forward_grad(%[[MB]], %[[W]])
// CHECK: scf.yield
// CHECK: %[[G:.+]] = tg.div %[[ACC]]#1, %{{.+}} : tensor<3xf32>, tensor<f32>
// CHECK: tg.cast %[[STEP]] : tensor<i64> to tensor<f32>
// CHECK: tg.minimum
// CHECK: %[[NEWBUF:.+]] = tg.add %{{.+}}, %[[G]] : tensor<3xf32>, tensor<3xf32>
// CHECK: %[[DIR:.+]] = tg.add %[[G]], %{{.+}}
// CHECK: %[[NEWW:.+]] = tg.sub %[[W]], %{{.+}}
// CHECK: %[[NEXT:.+]] = tg.add %[[STEP]], %{{.+}} : tensor<i64>, tensor<i64>
// CHECK: return %{{.+}}, %[[NEWW]], %[[NEWBUF]], %[[NEXT]]
// CHECK-LABEL: func.func @init
// CHECK-SAME: (%[[SEED:.+]]: tensor<i64> {tg.name = "seed", tg.role = #tg.role<input>})
// CHECK: tg.random uniform %[[SEED]] {a = -1.000000e+00 : f64, b = 1.000000e+00 : f64, stream = 0 : i64} : tensor<i64> -> tensor<3xf32>
// CHECK: tg.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: tg.constant dense<0> : tensor<i64>
// CHECK-LABEL: func.func @eval
module attributes {tg.train = {accumulate = 2 : i64, optimizer = {kind = "momentum", lr = 0.1 : f64, momentum = 0.9 : f64, nesterov = 1 : i64, weight_decay = 0.0 : f64}, schedule = {kind = "warmup", steps = 10 : i64}}} {
func.func @forward(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<uniform(-1.0, 1.0)>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x3xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}

// -----

// AdamW: decoupled decay, two state slots, bias correction through pow, a
// cosine schedule (tg.cos) and clipping by the global norm (tg.sqrt).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: tensor<2x2xf32> {tg.name = "fc.weight.exp_avg", tg.role = #tg.role<state>}, %{{.+}}: tensor<2x2xf32> {tg.name = "fc.weight.exp_avg_sq", tg.role = #tg.role<state>}
// CHECK: call @forward_grad
// CHECK: tg.sqrt
// CHECK: tg.cos
// CHECK: tg.select
// CHECK: tg.pow
// CHECK: return
// CHECK-LABEL: func.func @init
// CHECK: tg.random uniform %{{.+}} {a = -1.2247448713915889 : f64, b = 1.2247448713915889 : f64, stream = 0 : i64}
module attributes {tg.train = {clip_grad_norm = 1.0 : f64, optimizer = {kind = "adamw", lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}, schedule = {kind = "cosine", steps = 100 : i64, warmup = 10 : i64, min_lr = 0.0 : f64}}} {
func.func @forward(%x: tensor<4x2xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<2x2xf32> {tg.name = "fc.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<4x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
  %1 = tg.mse_loss %0, %x : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}

// -----

// expected-error @+1 {{the module has no 'tg.train' attribute}}
module {
func.func @forward(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
}

// -----

// expected-error @+1 {{train block: batch = 64 but the model's inputs hold 4 rows; the batch is the micro-batch that accumulate = 2 repeats}}
module attributes {tg.train = {batch = 64 : i64, accumulate = 2 : i64}} {
func.func @forward(%x: tensor<4xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = tg.sum %0 axes = [0] : tensor<4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}

// -----

// expected-error @+1 {{the module already has a function named 'train_step'}}
module attributes {tg.train = {}} {
func.func @forward(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @train_step() {
  return
}
}

// -----

// precision = fp16: dynamic loss scaling. forward_grad seeds the backward
// pass with the scaler's loss_scale and divides the gradient by it; the
// step checks every gradient once (g * 0 sums to NaN on inf or NaN), keeps
// the parameter and the step count on a non-finite step, and updates the
// scale and its growth tracker as GradScaler does; init starts the scale
// at `init` and the tracker at 0.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {tg.name = "loss_scale", tg.role = #tg.role<state>}
// CHECK: %[[SEED:.+]] = tg.broadcast_to
// CHECK: %[[G:.+]] = tg.mul %[[SEED]], %arg0
// CHECK: %[[INV:.+]] = tg.div %{{.+}}, %[[SCALE]]
// CHECK: %[[UNSCALED:.+]] = tg.mul %[[G]], %[[INV]]
// CHECK: return %{{.+}}, %[[UNSCALED]]
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}, %[[S:[a-z0-9]+]]: tensor<f32> {tg.name = "loss_scale", tg.role = #tg.role<state>}, %[[T:[a-z0-9]+]]: tensor<i64> {tg.name = "loss_scale.growth_tracker", tg.role = #tg.role<state>}, %[[STEP:[a-z0-9]+]]: tensor<i64> {tg.name = "step"
// CHECK: %[[CALL:.+]]:2 = call @forward_grad(%{{.+}}, %[[W]], %[[S]])
// CHECK: %[[ZERO:.+]] = tg.mul %[[CALL]]#1, %{{.+}} : tensor<4xf32>, tensor<f32>
// CHECK: %[[SUM:.+]] = tg.sum %[[ZERO]]
// CHECK: %[[FINITE:.+]] = tg.cmp eq %[[SUM]], %[[SUM]]
// CHECK: %[[NEWW:.+]] = tg.sub %[[W]]
// CHECK: %[[NEXT:.+]] = tg.add %[[STEP]]
// CHECK: %[[KEEPW:.+]] = tg.select %[[FINITE]], %[[NEWW]], %[[W]]
// CHECK: %[[KEEPSTEP:.+]] = tg.select %[[FINITE]], %[[NEXT]], %[[STEP]]
// CHECK: %[[COUNT:.+]] = tg.add %[[T]]
// CHECK: %[[DUE:.+]] = tg.cmp eq %[[COUNT]], %{{.+}} : tensor<i64>
// CHECK: %[[GROWN:.+]] = tg.mul %[[S]], %{{.+}}
// CHECK: %[[FITS:.+]] = tg.cmp le %[[GROWN]]
// CHECK: %[[G1:.+]] = tg.select %[[FITS]], %[[GROWN]], %[[S]]
// CHECK: %[[G2:.+]] = tg.select %[[DUE]], %[[G1]], %[[S]]
// CHECK: %[[HALF:.+]] = tg.mul %[[S]], %{{.+}}
// CHECK: %[[NEWS:.+]] = tg.select %[[FINITE]], %[[G2]], %[[HALF]]
// CHECK: %[[NEWT:.+]] = tg.select %[[FINITE]]
// CHECK: return %[[CALL]]#0, %[[KEEPW]], %[[NEWS]], %[[NEWT]], %[[KEEPSTEP]]
// CHECK-LABEL: func.func @init
// CHECK: tg.constant dense<1.024000e+03> : tensor<f32>
module attributes {tg.train = {precision = "fp16", loss_scale = {kind = "dynamic", init = 1024.0 : f64, growth = 2.0 : f64, backoff = 0.5 : f64, interval = 7 : i64}}} {
func.func @forward(%x: tensor<4xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = tg.sum %0 axes = [0] : tensor<4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}

// -----

// expected-error @+1 {{tg.train: loss_scale needs precision = fp16}}
module attributes {tg.train = {precision = "bf16", loss_scale = {kind = "dynamic"}}} {
func.func @forward(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
}

// -----

// expected-error @+1 {{tg.train: loss_scale needs 0 < init <= 3.4e38, growth > 1, 0 < backoff < 1 and interval >= 1}}
module attributes {tg.train = {precision = "fp16", loss_scale = {kind = "dynamic", backoff = 1.5 : f64}}} {
func.func @forward(%w: tensor<2xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
}

// -----

module attributes {tg.train = {precision = "fp16"}} {
// expected-error @+1 {{parameter 'loss_scale' has the name of the loss scaler's state}}
func.func @forward(%w: tensor<2xf32> {tg.name = "loss_scale", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.sum %w axes = [0] : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
}
