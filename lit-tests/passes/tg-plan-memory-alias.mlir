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
