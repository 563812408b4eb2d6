// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=4 bucket-bytes=16" --verify-diagnostics | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=1" | FileCheck %s --check-prefix=ONE
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=1 keep-collectives=1" | FileCheck %s --check-prefix=KEEP
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2" | FileCheck %s --check-prefix=BIG
// RUN: tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2 bucket-bytes=16 zero=1" | FileCheck %s --check-prefix=ZERO
// RUN: not tg-opt %s --split-input-file --tg-build-train-step --tg-data-parallel="ranks=2 zero=2" 2>&1 | FileCheck %s --check-prefix=STAGE
// STAGE: error: tg-data-parallel: zero must be 0 or 1 (ZeRO stage 1 shards the optimizer state), got 2

// Without accumulation: right after the gradient call, the loss, then the
// gradients in backward order (b, then w) in buckets of 16 bytes: b (8
// bytes) is not a full bucket, b and w (20 bytes) are.
// Every collective runs over one communicator of all the ranks, made at the
// top of @train_step; its type carries the rank count.
// CHECK: module attributes {{{.*}}tg.ranks = 4 : i64
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[W:.+]] = tg.comm_world : !tg.comm<ranks = 4>
// CHECK: %[[R:.+]]:3 = call @forward_grad
// CHECK-NEXT: %[[L:.+]] = tg.all_reduce %[[R]]#0 on %[[W]] {op = "mean"} : !tg.comm<ranks = 4>, tensor<f32>
// CHECK-NEXT: %[[G:.+]]:2 = tg.all_reduce %[[R]]#2, %[[R]]#1 on %[[W]] {op = "mean"} : !tg.comm<ranks = 4>, tensor<2xf32>, tensor<3xf32>
// CHECK-NOT: tg.all_reduce
// CHECK: tg.mul %{{.+}}, %[[G]]#1
// CHECK: return %[[L]]
// ONE-NOT: tg.ranks
// ONE-NOT: tg.comm_world
// ONE-NOT: tg.all_reduce
// BIG: tg.all_reduce %{{.+}} : !tg.comm<ranks = 2>, tensor<f32>
// BIG-NEXT: tg.all_reduce %{{.+}}, %{{.+}} on %{{.+}} {op = "mean"} : !tg.comm<ranks = 2>, tensor<2xf32>, tensor<3xf32>
// keep-collectives: one rank communicates all the same, over a
// communicator of one (to measure what the exchange costs).
// KEEP: module attributes {{{.*}}tg.ranks = 1 : i64
// KEEP-LABEL: func.func @train_step
// KEEP-NEXT: %[[W:.+]] = tg.comm_world : !tg.comm<ranks = 1>
// KEEP: tg.all_reduce %{{.+}} on %[[W]] {op = "mean"} : !tg.comm<ranks = 1>, tensor<f32>
// KEEP-NEXT: tg.all_reduce %{{.+}}, %{{.+}} on %[[W]] {op = "mean"} : !tg.comm<ranks = 1>, tensor<2xf32>, tensor<3xf32>
// ZeRO stage 1 (zero=1): the gradients are reduce-scattered instead, each
// rank updates its shards of w (3 elements: 2 per rank, rank 1's last one
// padding) and b, and the updated shards are gathered.
// ZERO: module attributes {{{.*}}tg.zero = 1 : i64
// ZERO-LABEL: func.func @train_step
// ZERO-NEXT: %[[C:.+]] = tg.comm_world : !tg.comm<ranks = 2>
// ZERO: %[[R:.+]]:3 = call @forward_grad
// ZERO-NEXT: tg.all_reduce %[[R]]#0 on %[[C]] {op = "mean"} : !tg.comm<ranks = 2>, tensor<f32>
// ZERO-NEXT: %[[G:.+]]:2 = tg.reduce_scatter %[[R]]#2, %[[R]]#1 on %[[C]] {op = "mean"} : !tg.comm<ranks = 2>, tensor<2xf32>, tensor<3xf32> -> tensor<1xf32>, tensor<2xf32>
// ZERO-NEXT: %[[W:.+]] = tg.shard %arg0 on %[[C]] : !tg.comm<ranks = 2>, tensor<3xf32> -> tensor<2xf32>
// ZERO-NEXT: tg.shard %arg1 on %[[C]] : !tg.comm<ranks = 2>, tensor<2xf32> -> tensor<1xf32>
// ZERO: %[[STEP:.+]] = tg.mul %{{.+}}, %[[G]]#1 : tensor<f32>, tensor<2xf32>
// ZERO-NEXT: %[[NW:.+]] = tg.sub %[[W]], %[[STEP]] : tensor<2xf32>
// ZERO-NOT: tg.all_reduce
// ZERO: %[[P:.+]]:2 = tg.all_gather %[[NW]], %{{.+}} on %[[C]] : !tg.comm<ranks = 2>, tensor<2xf32>, tensor<1xf32> -> tensor<3xf32>, tensor<2xf32>
// ZERO-NEXT: return %{{.+}}, %[[P]]#0, %[[P]]#1
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
// CHECK-NEXT: %[[L:.+]] = tg.all_reduce %[[ACC]]#0 on %{{.+}} {op = "mean"} : !tg.comm<ranks = 4>, tensor<f32>
// CHECK-NEXT: tg.all_reduce %[[ACC]]#2, %[[ACC]]#1 on %{{.+}} {op = "mean"}
// CHECK-NOT: tg.all_reduce
// CHECK: tg.div %[[L]]
// ZERO-LABEL: func.func @train_step
// ZERO: %[[ACC:.+]]:3 = scf.for
// ZERO: scf.yield
// ZERO-NEXT: }
// ZERO-NEXT: tg.all_reduce %[[ACC]]#0 on %{{.+}} {op = "mean"}
// ZERO-NEXT: %[[G:.+]]:2 = tg.reduce_scatter %[[ACC]]#2, %[[ACC]]#1 on %{{.+}} {op = "mean"}
// The mean over the micro-batches divides the shard.
// ZERO: tg.div %[[G]]#1, %{{.+}} : tensor<2xf32>, tensor<f32>
// ZERO: tg.all_gather
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

// -----

// ZeRO stage 1 with AdamW and clipping (ZERO only): the state arguments
// and results are shards (3 elements over 2 ranks: 2 each, one of padding
// on rank 1), the clipping norm sums the ranks' partial sums of squares,
// and @init returns zero shards.
// ZERO-LABEL: func.func @train_step
// ZERO-SAME: %arg2: tensor<2xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>, tg.shard_of = array<i64: 3>}
// ZERO-SAME: %arg3: tensor<1xf32> {tg.name = "b.exp_avg", tg.role = #tg.role<state>, tg.shard_of = array<i64: 2>}
// ZERO-SAME: -> (
// ZERO-SAME: tensor<2xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>, tg.shard_of = array<i64: 3>}
// ZERO: %[[G:.+]]:2 = tg.reduce_scatter
// ZERO: %[[SQ:.+]] = tg.mul %[[G]]#1, %[[G]]#1 : tensor<2xf32>, tensor<2xf32>
// ZERO: %[[PART:.+]] = tg.add
// ZERO-NEXT: %[[TOTAL:.+]] = tg.all_reduce %[[PART]] on %{{.+}} {op = "sum"} : !tg.comm<ranks = 2>, tensor<f32>
// ZERO-NEXT: tg.sqrt %[[TOTAL]]
// ZERO: tg.mul %{{.+}}, %arg2 : tensor<f32>, tensor<2xf32>
// ZERO: tg.all_gather
// ZERO-LABEL: func.func @init
// ZERO-SAME: tensor<2xf32> {tg.name = "w.exp_avg", tg.role = #tg.role<state>, tg.shard_of = array<i64: 3>}
// ZERO-DAG: tg.constant dense<0.000000e+00> : tensor<2xf32>
// ZERO-DAG: tg.constant dense<0.000000e+00> : tensor<1xf32>
module attributes {tg.train = {optimizer = {kind = "adamw", lr = 0.1 : f64, weight_decay = 0.01 : f64}, clip_grad_norm = 1.0 : f64, schedule = {kind = "constant"}}} {
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
