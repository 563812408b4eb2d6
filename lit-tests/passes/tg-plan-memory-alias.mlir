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

// A group's result may take the buffer of an input it reads element by
// element when the group's only other read of that result is a sum it
// returns (the GELU derivative's product over `dy W^T`, and the bias
// gradient summed from it): the sum reads what the buffer holds. A sum of
// a value computed on the way is refused, as any non-elementwise reader
// of the input's dependents is.
// RUN: tg-opt %s --tg-plan-memory=func=sum_of_result | FileCheck %s --check-prefix=SUM
// SUM-LABEL: func.func @sum_of_result
// SUM: tg.exp {{.*}}tg.offset = 0 :
// SUM: tg.fused <reduction> {{.*}}tg.offsets = array<i64: 0, {{[1-9][0-9]*}}>
func.func @sum_of_result(%a: tensor<4x64xf32> {tg.name = "a", tg.role = #tg.role<input>})
    -> (tensor<4x64xf32> {tg.name = "y", tg.role = #tg.role<output>},
        tensor<64xf32> {tg.name = "s", tg.role = #tg.role<output>}) {
  %d = tg.exp %a : tensor<4x64xf32>
  %0:2 = tg.fused <reduction> ins(%a, %d : tensor<4x64xf32>, tensor<4x64xf32>) {
  ^bb0(%x: tensor<4x64xf32>, %g: tensor<4x64xf32>):
    %1 = tg.mul %g, %x : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
    %2 = tg.sum %1 axes = [0] : tensor<4x64xf32> -> tensor<64xf32>
    tg.yield %1, %2 : tensor<4x64xf32>, tensor<64xf32>
  } -> tensor<4x64xf32>, tensor<64xf32>
  return %0#0, %0#1 : tensor<4x64xf32>, tensor<64xf32>
}

// RUN: tg-opt %s --tg-plan-memory=func=sum_on_the_way | FileCheck %s --check-prefix=WAY
// WAY-LABEL: func.func @sum_on_the_way
// WAY: tg.exp {{.*}}tg.offset = 0 :
// WAY: tg.fused <reduction> {{.*}}tg.offsets = array<i64: {{[1-9][0-9]*}}, {{[1-9][0-9]*}}>
func.func @sum_on_the_way(%a: tensor<4x64xf32> {tg.name = "a", tg.role = #tg.role<input>})
    -> (tensor<4x64xf32> {tg.name = "y", tg.role = #tg.role<output>},
        tensor<64xf32> {tg.name = "s", tg.role = #tg.role<output>}) {
  %d = tg.exp %a : tensor<4x64xf32>
  %0:2 = tg.fused <reduction> ins(%a, %d : tensor<4x64xf32>, tensor<4x64xf32>) {
  ^bb0(%x: tensor<4x64xf32>, %g: tensor<4x64xf32>):
    %1 = tg.mul %g, %x : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
    %2 = tg.add %1, %x : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
    %3 = tg.sum %1 axes = [0] : tensor<4x64xf32> -> tensor<64xf32>
    tg.yield %2, %3 : tensor<4x64xf32>, tensor<64xf32>
  } -> tensor<4x64xf32>, tensor<64xf32>
  return %0#0, %0#1 : tensor<4x64xf32>, tensor<64xf32>
}
