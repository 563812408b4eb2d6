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

// The work limit: each op's element operations are estimated from its types
// and counted before it runs, so a few ops on huge tensors are an error at
// the op, not minutes of float64 loops (the step limit counts ops only).
// RUN: not tg-eval %s --func=bigconst 2>&1 | FileCheck %s --check-prefix=BIGCONST
// RUN: not tg-eval %s --func=bigadd --max-work=401 2>&1 | FileCheck %s --check-prefix=BIGADD
// RUN: tg-eval %s --func=bigadd --max-work=402 | FileCheck %s --check-prefix=SMALLADD
// RUN: not tg-eval %s --func=matmul --max-work=100000 2>&1 | FileCheck %s --check-prefix=MATMUL
// RUN: tg-eval %s --func=matmul --max-work=300000 | FileCheck %s --check-prefix=MATMULOK

// 10^8 elements is within what this machine can hold, but past the
// default 2^26 element operations: refused before the constant is made
// (it took 5 s of CPU and 1.6 GB to make it and add it to itself).
// BIGCONST: tg-eval-limits.mlir:[[@LINE+2]]:8: error: reference evaluator: this op needs about 100000001 element operations, which would take the evaluation past its limit of 67108864
func.func @bigconst() -> tensor<100000000xf32> {
  %a = tg.constant dense<1.0> : tensor<100000000xf32>
  %r = tg.add %a, %a : tensor<100000000xf32>, tensor<100000000xf32> -> tensor<100000000xf32>
  return %r : tensor<100000000xf32>
}

// The constant costs 101, the add 301: 402 in all.
// BIGADD: tg-eval-limits.mlir:[[@LINE+4]]:8: error: reference evaluator: this op needs about 301 element operations, which would take the evaluation past its limit of 401
// SMALLADD: result 0: tensor<100xf32> [2, 2
func.func @bigadd() -> tensor<100xf32> {
  %a = tg.constant dense<1.0> : tensor<100xf32>
  %r = tg.add %a, %a : tensor<100xf32>, tensor<100xf32> -> tensor<100xf32>
  return %r : tensor<100xf32>
}

// A contraction counts its reduction: 64 * 64 outputs of 64 products each
// (262,144) on top of the 12,289 elements read and written.
// MATMUL: tg-eval-limits.mlir:[[@LINE+3]]:8: error: reference evaluator: this op needs about 274433 element operations
// MATMULOK: result 0: tensor<64x64xf32>
func.func @matmul(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c = tg.matmul %a, %b : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}
