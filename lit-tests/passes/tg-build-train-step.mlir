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
