// tg-eval refuses what it cannot evaluate with a located error, before it
// allocates anything, and stops a runaway loop at its step limit.
// RUN: not tg-eval %s --func=dynamic 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not tg-eval %s --func=overflow 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not tg-eval %s --func=huge 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not tg-eval %s --func=endless --max-steps=1000 2>&1 | FileCheck %s --check-prefix=LOOP1000
// RUN: tg-eval %s --func=short --max-steps=1000 | FileCheck %s --check-prefix=SHORT

// DYN: tg-eval-limits.mlir:[[@LINE+1]]:1: error: reference evaluator: an argument has type 'tensor<?xf32>'; only static shapes can be evaluated
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}

// 2^32 x 2^32 elements overflow int64 once multiplied by 2^32 again.
// OVERFLOW: tg-eval-limits.mlir:[[@LINE+1]]:1: error: reference evaluator: an argument has type 'tensor<4294967296x4294967296x4294967296xf32>', more than the {{[0-9]+}} elements it can hold in this machine's memory
func.func @overflow(%a: tensor<4294967296x4294967296x4294967296xf32>) -> tensor<f32> {
  %z = tg.constant dense<0.0> : tensor<f32>
  return %z : tensor<f32>
}

// HUGE: tg-eval-limits.mlir:[[@LINE+3]]:8: error: reference evaluator: a result has type 'tensor<1000000x1000000xf32>', more than
func.func @huge(%a: tensor<f32>) -> tensor<f32> {
  %z = tg.constant dense<0.0> : tensor<f32>
  %b = tg.broadcast_to %a : tensor<f32> to tensor<1000000x1000000xf32>
  return %z : tensor<f32>
}

// LOOP1000: tg-eval-limits.mlir:[[@LINE+5]]:8: error: reference evaluator: stopped after 1000 steps
func.func @endless(%a: tensor<f32>) -> tensor<f32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 9223372036854775807 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%x = %a) -> (tensor<f32>) {
    %y = tg.add %x, %x : tensor<f32>, tensor<f32> -> tensor<f32>
    scf.yield %y : tensor<f32>
  }
  return %r : tensor<f32>
}

// SHORT: result 0: tensor<f32>
func.func @short(%a: tensor<f32>) -> tensor<f32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 100 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%x = %a) -> (tensor<f32>) {
    %y = tg.add %x, %x : tensor<f32>, tensor<f32> -> tensor<f32>
    scf.yield %y : tensor<f32>
  }
  return %r : tensor<f32>
}
