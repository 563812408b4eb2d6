// A result lives in an argument's storage only when it is that argument's
// next value: the same tg.name and the same tg.role. forward_grad returns
// each parameter's gradient under the parameter's name (role grad); placed
// over the parameter, a backend running the plan would overwrite the
// weights with their gradients.
// RUN: tg-opt %s --tg-plan-memory=func=update | FileCheck %s --check-prefix=UPDATE
// RUN: tg-opt %s --tg-plan-memory=func=grad | FileCheck %s --check-prefix=GRAD

// UPDATE-LABEL: func.func @update
// UPDATE: tg.sub %{{.*}}, %{{.*}} {tg.alias_arg = 0 : i64
func.func @update(%w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>},
                  %x: tensor<4xf32> {tg.name = "x", tg.role = #tg.role<input>})
    -> (tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}) {
  %0 = tg.sub %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// GRAD-LABEL: func.func @grad
// GRAD: tg.sub %{{.*}}, %{{.*}} {tg.bytes = 16 : i64, tg.offset = 0 : i64}
// GRAD-NOT: tg.alias_arg
func.func @grad(%w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>},
                %x: tensor<4xf32> {tg.name = "x", tg.role = #tg.role<input>})
    -> (tensor<4xf32> {tg.name = "w", tg.role = #tg.role<grad>}) {
  %0 = tg.sub %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// A GEMM group's result does not take the buffer of the residual its
// epilogue adds, though the residual dies there: the GPU GEMMs write over
// no input.
// RUN: tg-opt %s --tg-plan-memory=func=residual | FileCheck %s --check-prefix=GEMM
// GEMM-LABEL: func.func @residual
// GEMM: tg.add {{.*}}tg.offset = 0 :
// GEMM: tg.fused <gemm> {{.*}}tg.offset = 256 :
func.func @residual(%a: tensor<4x4xf32> {tg.name = "a", tg.role = #tg.role<input>},
                    %b: tensor<4x4xf32> {tg.name = "b", tg.role = #tg.role<input>})
    -> (tensor<4x4xf32> {tg.name = "y", tg.role = #tg.role<output>}) {
  %r = tg.add %a, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %0 = tg.fused <gemm> ins(%a, %b, %r : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  ^bb0(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>, %res: tensor<4x4xf32>):
    %1 = tg.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %2 = tg.add %1, %res : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    tg.yield %2 : tensor<4x4xf32>
  } -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
