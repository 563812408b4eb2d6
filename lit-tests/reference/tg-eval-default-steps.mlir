// The default step limit (2^24) stops an endless loop. That takes seconds
// here but minutes in the sanitizer build (`make test-asan`), which leaves
// this file out; tg-eval-limits.mlir checks the same limit at 1000 steps.
// UNSUPPORTED: sanitized
// RUN: not tg-eval %s 2>&1 | FileCheck %s

// CHECK: tg-eval-default-steps.mlir:[[@LINE+5]]:8: error: reference evaluator: stopped after 16777216 steps (ops and loop iterations)
func.func @forward(%a: tensor<f32>) -> tensor<f32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 9223372036854775807 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%x = %a) -> (tensor<f32>) {
    %y = tg.add %x, %x : tensor<f32>, tensor<f32> -> tensor<f32>
    scf.yield %y : tensor<f32>
  }
  return %r : tensor<f32>
}
