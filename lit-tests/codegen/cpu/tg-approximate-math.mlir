// RUN: tg-opt %s --split-input-file --tg-approximate-math | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-approximate-math=functions=exp | FileCheck %s --check-prefix=EXP
// RUN: not tg-opt %s --split-input-file --tg-approximate-math=functions=foo 2>&1 | FileCheck %s --check-prefix=BAD

// f32 tanh, exp, log and erf, scalars and vectors, become arith/math ops;
// f64 and the functions off the list (sin) keep their op, hence libm.
// CHECK-LABEL: func.func @f32
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK: math.sin %{{.+}} : f32
// CHECK: math.tanh %{{.+}} : f64
// CHECK: return
// EXP-LABEL: func.func @f32
// EXP: math.tanh %{{.+}} : vector<8xf32>
// EXP-NOT: math.exp
// EXP: math.log %{{.+}} : f32
// BAD: 'math.foo' is not a math op
func.func @f32(%v: vector<8xf32>, %s: f32, %d: f64) -> (vector<8xf32>, f32, f64) {
  %t = math.tanh %v : vector<8xf32>
  %e = math.exp %t : vector<8xf32>
  %l = math.log %s : f32
  %r = math.erf %l : f32
  %n = math.sin %r : f32
  %w = math.tanh %d : f64
  return %e, %n, %w : vector<8xf32>, f32, f64
}

// -----

// log's subnormal arguments are scaled by 2^24 into the normal range, and
// 24 log(2) subtracted from the result.
// CHECK-LABEL: func.func @log_subnormal
// CHECK-DAG: %[[MIN:.+]] = arith.constant 1.17549435E-38 : f32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 0x4B800000 : f32
// CHECK-DAG: %[[SHIFT:.+]] = arith.constant 16.6355324 : f32
// CHECK: %[[SMALL:.+]] = arith.cmpf olt, %arg0, %[[MIN]] : f32
// CHECK: %[[UP:.+]] = arith.mulf %arg0, %[[SCALE]] : f32
// CHECK: arith.select %[[SMALL]], %[[UP]], %arg0 : f32
// CHECK-NOT: math.log
// CHECK: %[[DOWN:.+]] = arith.subf %{{.+}}, %[[SHIFT]] : f32
// CHECK: arith.select %[[SMALL]], %[[DOWN]], %{{.+}} : f32
func.func @log_subnormal(%x: f32) -> f32 {
  %l = math.log %x : f32
  return %l : f32
}
