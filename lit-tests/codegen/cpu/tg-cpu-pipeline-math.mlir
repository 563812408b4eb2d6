// RUN: tg-opt %s --tg-cpu-pipeline="vector-lanes=8" | FileCheck %s
// RUN: tg-opt %s --tg-cpu-pipeline="vector-lanes=8 vector-elementwise=false approximate-math=false" | FileCheck %s --check-prefix=LIBM

// The whole pipeline on GELU (tanh form) and softmax (exp): both are
// vector polynomials on 8 lanes (FMAs), and no tanh or exp intrinsic is
// left for LLVM to turn into libm calls; with both options off, the step
// has them (LLVM calls tanhf and expf, one element at a time).
// CHECK-NOT: llvm.intr.tanh
// CHECK-NOT: llvm.intr.exp
// CHECK: llvm.intr.fma({{.+}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT: llvm.intr.tanh
// CHECK-NOT: llvm.intr.exp
// LIBM-DAG: llvm.intr.tanh
// LIBM-DAG: llvm.intr.exp
func.func @gelu_softmax(%x: tensor<4x40xf32>) -> tensor<4x40xf32> {
  %g = tg.gelu %x approximate = tanh : tensor<4x40xf32>
  %s = tg.softmax %g axis = 1 : tensor<4x40xf32>
  return %s : tensor<4x40xf32>
}
