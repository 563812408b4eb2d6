// RUN: tg-opt %s --tg-fit-budget=budget=1000000 | FileCheck %s
// RUN: not tg-opt %s --tg-fit-budget=budget=1000 2>&1 | FileCheck %s --check-prefix=NOFIT
// RUN: tg-opt %s --tg-fit-budget="budget=1000 must-fit=0" | FileCheck %s --check-prefix=LEAST
// RUN: not tg-opt %s --tg-fit-budget 2>&1 | FileCheck %s --check-prefix=NOBUDGET
// RUN: tg-opt %s --tg-fit-budget="budget=1000000 ranks=2" | FileCheck %s --check-prefix=RANKS

// A budget the plain step fits: nothing is recomputed, and the module
// records the choice, the peak and the step's FLOPs.
// CHECK: module attributes {tg.budget_fit = #tg.budget_fit<choice = "none", level = 0, micro_batches = 1, zero = 0, precision = "fp32", budget = 1000000, peak = [[PEAK:[0-9]+]], unconstrained = [[PEAK]], extra_flops = 0, step_flops = {{[0-9]+}}, fits = true>
// CHECK: func.func @train_step
// CHECK-NOT: tg.recomputed

// A budget below the parameters alone: one error with the least peak.
// NOFIT: error: tg-fit-budget: the training step does not fit the budget of 1000 B: the least peak reached is {{.*}} (rematerialisation level {{[0-4]}} of 4)

// Without must-fit the least peak is kept and recorded as not fitting.
// LEAST: tg.budget_fit = #tg.budget_fit<choice = {{.+}}, budget = 1000, {{.+}}, fits = false>
// LEAST: func.func @train_step

// The kept candidate's module attributes come along: tg-data-parallel's
// tg.ranks, which the artifact's manifest reads.
// RANKS: module attributes {{{.*}}tg.ranks = 2 : i64
// RANKS: tg.all_reduce

// NOBUDGET: error: tg-fit-budget: no budget: give budget=BYTES or memory_budget in the train block
module attributes {tg.train = {optimizer = {kind = "sgd", lr = 0.01 : f64}}} {
func.func @forward(%x: tensor<64x2xf32> {tg.name = "x", tg.role = #tg.role<input>}, %seed: tensor<i64> {tg.name = "seed", tg.role = #tg.role<input>}, %w1: tensor<2x64xf32> {tg.name = "w1", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>}, %w2: tensor<64x64xf32> {tg.name = "w2", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %a = tg.matmul %x, %w1 : tensor<64x2xf32>, tensor<2x64xf32> -> tensor<64x64xf32>
  %d = tg.dropout %a, %seed {p = 2.5e-01 : f64, stream = 1 : i64} : tensor<64x64xf32>, tensor<i64>
  %g = tg.gelu %d : tensor<64x64xf32>
  %b = tg.matmul %g, %w2 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %t = tg.gelu %b : tensor<64x64xf32>
  %l = tg.mean %t axes = [0, 1] : tensor<64x64xf32> -> tensor<f32>
  return %l : tensor<f32>
}
}
