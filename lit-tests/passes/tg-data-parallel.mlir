// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=4 bucket-bytes=16" --verify-diagnostics | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=1" | FileCheck %s --check-prefix=ONE
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2" | FileCheck %s --check-prefix=BIG

// Without accumulation: right after the gradient call, the loss, then the
// gradients in backward order (b, then w) in buckets of 16 bytes: b (8
// bytes) is not a full bucket, b and w (20 bytes) are.
// CHECK: module attributes {{{.*}}tg.ranks = 4 : i64
// CHECK-LABEL: func.func @train_step
// CHECK: %[[R:.+]]:3 = call @forward_grad
// CHECK-NEXT: %[[L:.+]] = tg.all_reduce %[[R]]#0 {op = "mean", ranks = 4 : i64} : tensor<f32>
// CHECK-NEXT: %[[G:.+]]:2 = tg.all_reduce %[[R]]#2, %[[R]]#1 {op = "mean", ranks = 4 : i64} : tensor<2xf32>, tensor<3xf32>
// CHECK-NOT: tg.all_reduce
// CHECK: tg.mul %{{.+}}, %[[G]]#1
// CHECK: return %[[L]]
// ONE-NOT: tg.ranks
// ONE-NOT: tg.all_reduce
// BIG: tg.all_reduce %{{.+}} : tensor<f32>
// BIG-NEXT: tg.all_reduce %{{.+}}, %{{.+}} {op = "mean", ranks = 2 : i64} : tensor<2xf32>, tensor<3xf32>
module attributes {tg.train = {optimizer = {kind = "sgd", lr = 0.1 : f64, weight_decay = 0.0 : f64}, schedule = {kind = "constant"}}} {
func.func @forward(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %b: tensor<2xf32> {tg.name = "b", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %2 = tg.sum %b axes = [0] : tensor<2xf32> -> tensor<f32>
  %3 = tg.add %1, %2 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %3 : tensor<f32>
}
}

// -----

// With accumulation: after the micro-batch loop, once per step, before the
// division by the micro-batch count.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[ACC:.+]]:3 = scf.for
// CHECK: call @forward_grad
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[L:.+]] = tg.all_reduce %[[ACC]]#0 {op = "mean", ranks = 4 : i64} : tensor<f32>
// CHECK-NEXT: tg.all_reduce %[[ACC]]#2, %[[ACC]]#1 {op = "mean", ranks = 4 : i64}
// CHECK-NOT: tg.all_reduce
// CHECK: tg.div %[[L]]
module attributes {tg.train = {accumulate = 2 : i64, optimizer = {kind = "sgd", lr = 0.1 : f64, weight_decay = 0.0 : f64}, schedule = {kind = "constant"}}} {
func.func @forward(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %b: tensor<2xf32> {tg.name = "b", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x3xf32> -> tensor<f32>
  %2 = tg.sum %b axes = [0] : tensor<2xf32> -> tensor<f32>
  %3 = tg.add %1, %2 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %3 : tensor<f32>
}
}
