// RUN: tg-eval %s | FileCheck %s
// RUN: tg-eval %s --func=rounding | FileCheck %s --check-prefix=BF16
// RUN: tg-eval %s --func=rounding --f64 | FileCheck %s --check-prefix=F64
// RUN: tg-eval %s --func=random --seed 3 | FileCheck %s --check-prefix=RAND
// RUN: tg-eval %s --func=random --seed 3 > %t.a && tg-eval %s --func=random --seed 3 > %t.b && diff %t.a %t.b
// RUN: not tg-eval %s --func=nope 2>&1 | FileCheck %s --check-prefix=NOFUNC
// RUN: not tg-eval %s --func=unsupported 2>&1 | FileCheck %s --check-prefix=UNSUP
// RUN: not tg-eval %t.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'func.func @f() { %%x = tg.bogus }' > %t.bad.mlir
// RUN: not tg-eval %t.bad.mlir 2>&1 | FileCheck %s --check-prefix=BAD

// @forward is the default function.
// CHECK: result 0: tensor<2x2xf32> [0.5, 1, 1.5, 2] sum = 5
// CHECK-NEXT: result 1: tensor<f32> [2.5] sum = 2.5
func.func @forward() -> (tensor<2x2xf32>, tensor<f32>) {
  %a = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %h = arith.constant dense<0.5> : tensor<f32>
  %r = tg.mul %a, %h : tensor<2x2xf32>, tensor<f32> -> tensor<2x2xf32>
  %m = tg.mean %a axes = [0, 1] : tensor<2x2xf32> -> tensor<f32>
  return %r, %m : tensor<2x2xf32>, tensor<f32>
}

// 1 + 2^-8 is a tie in bf16 and rounds to 1; float64 mode keeps it.
// BF16: result 0: tensor<bf16> [1] sum = 1
// F64: result 0: tensor<bf16> [1.00391] sum = 1.00390625
func.func @rounding() -> tensor<bf16> {
  %one = tg.constant dense<1.0> : tensor<bf16>
  %eps = tg.constant dense<3.90625e-03> : tensor<bf16>
  %r = tg.add %one, %eps : tensor<bf16>, tensor<bf16> -> tensor<bf16>
  return %r : tensor<bf16>
}

// Random arguments: integers in [0, 10), floats in [-1, 1).
// RAND: result 0: tensor<4x3xf32> [{{.*}}, ...] sum =
// RAND-NEXT: result 1: tensor<f32>
func.func @random(%t: tensor<10x3xf32>, %ids: tensor<4xi64>, %x: tensor<4x10xf32>, %y: tensor<4xi64>) -> (tensor<4x3xf32>, tensor<f32>) {
  %e = tg.embedding %t, %ids : tensor<10x3xf32>, tensor<4xi64> -> tensor<4x3xf32>
  %l = tg.cross_entropy %x, %y : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  return %e, %l : tensor<4x3xf32>, tensor<f32>
}

// NOFUNC: tg-eval: error: no function named 'nope' in

// UNSUP: tg-eval.mlir:[[@LINE+2]]:8: error: reference evaluator: unsupported op 'arith.addf'
func.func @unsupported(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = arith.addf %x, %x : tensor<2xf32>
  return %y : tensor<2xf32>
}

// MISSING: could not open input file
// BAD: bad.mlir:1:{{[0-9]+}}: error: custom op 'tg.bogus' is unknown

// One process: every rank holds the same values, so a mean over the ranks
// is the identity and a sum multiplies by the rank count.
// RUN: tg-eval %s --func=all_reduce | FileCheck %s --check-prefix=ALLREDUCE
// ALLREDUCE: result 0: tensor<2xf32> [1, 2] sum = 3
// ALLREDUCE-NEXT: result 1: tensor<f32> [12] sum = 12
func.func @all_reduce() -> (tensor<2xf32>, tensor<f32>) {
  %a = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = tg.constant dense<4.0> : tensor<f32>
  %w = tg.comm_world : !tg.comm<ranks = 3>
  %m = tg.all_reduce %a on %w {op = "mean"} : !tg.comm<ranks = 3>, tensor<2xf32>
  %s = tg.all_reduce %b on %w {op = "sum"} : !tg.comm<ranks = 3>, tensor<f32>
  return %m, %s : tensor<2xf32>, tensor<f32>
}
