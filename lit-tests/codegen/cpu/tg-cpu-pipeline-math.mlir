// RUN: tg-opt %s --tg-cpu-pipeline="vector-lanes=8" | FileCheck %s
// RUN: tg-opt %s --tg-cpu-pipeline="vector-lanes=8 vector-elementwise=false approximate-math=false" | FileCheck %s --check-prefix=LIBM

// The whole pipeline on GELU (tanh form) and softmax (exp): both are
// vector polynomials on 8 lanes, and no libm call is left; with both
// options off, the step calls tanhf and expf as before.
// CHECK-NOT: @tanhf
// CHECK-NOT: @expf
// CHECK: llvm.fmul {{.+}} : vector<8xf32>
// CHECK-NOT: @tanhf
// CHECK-NOT: @expf
// LIBM-DAG: llvm.func @tanhf
// LIBM-DAG: llvm.func @expf
func.func @gelu_softmax(%x: tensor<4x40xf32>) -> tensor<4x40xf32> {
  %g = tg.gelu %x approximate = tanh : tensor<4x40xf32>
  %s = tg.softmax %g axis = 1 : tensor<4x40xf32>
  return %s : tensor<4x40xf32>
}
