// RUN: tg-opt %s --split-input-file --tg-autodiff | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-autodiff=wrt-inputs | FileCheck %s --check-prefix=INPUTS
// RUN: not tg-opt %s --split-input-file --tg-autodiff=func=missing 2>&1 | FileCheck %s --check-prefix=MISSING

// MISSING: tg-autodiff: no function named 'missing'

// Fan-out sums cotangents (%1 feeds relu and add), the broadcast bias gets
// its cotangent summed over the batch, integer labels get none, and an
// unused parameter gets zeros.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32>
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x5xf32>
// CHECK-SAME: -> (tensor<f32> {tg.role = #tg.role<loss>}, tensor<4x5xf32> {tg.name = "logits", tg.role = #tg.role<output>}, tensor<3x5xf32> {tg.name = "fc.weight", tg.role = #tg.role<grad>}, tensor<5xf32> {tg.name = "fc.bias", tg.role = #tg.role<grad>}, tensor<2xf32> {tg.name = "unused", tg.role = #tg.role<grad>})
// CHECK: %[[H:.+]] = tg.add %{{.+}}, %{{.+}} : tensor<4x5xf32>, tensor<5xf32>
// CHECK: %[[LOSS:.+]] = tg.cross_entropy
// CHECK: %[[SEED:.+]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: tg.softmax
// CHECK: tg.one_hot
// CHECK: %[[DLOGITS:.+]] = tg.mul %{{.+}}, %{{.+}} : tensor<4x5xf32>, tensor<4x1xf32> -> tensor<4x5xf32>
// CHECK: %[[DRELU:.+]] = tg.select %{{.+}}, %{{.+}}, %[[DLOGITS]]
// CHECK: %[[DH:.+]] = tg.add %[[DLOGITS]], %[[DRELU]]
// CHECK: %[[DBS:.+]] = tg.sum %[[DH]] axes = [0] keepdims : tensor<4x5xf32> -> tensor<1x5xf32>
// CHECK: %[[DB:.+]] = tg.reshape %[[DBS]] : tensor<1x5xf32> to tensor<5xf32>
// CHECK: %[[DX:.+]] = tg.matmul %[[DH]], %[[W]] {transpose_rhs}
// CHECK: %[[DW:.+]] = tg.matmul %[[X]], %[[DH]] {transpose_lhs} : tensor<4x3xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
// CHECK: %[[DU:.+]] = tg.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %[[LOSS]], %{{.+}}, %[[DW]], %[[DB]], %[[DU]]
// CHECK-LABEL: func.func @forward(

// With wrt-inputs the float input x gets a gradient too, the labels do not.
// INPUTS-LABEL: func.func @forward_grad
// INPUTS-SAME: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<grad>}, tensor<3x5xf32> {tg.name = "fc.weight", tg.role = #tg.role<grad>}
// INPUTS-NOT: tg.name = "y", tg.role = #tg.role<grad>
func.func @forward(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %y: tensor<4xi64> {tg.name = "y", tg.role = #tg.role<input>},
                   %w: tensor<3x5xf32> {tg.name = "fc.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>},
                   %b: tensor<5xf32> {tg.name = "fc.bias", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %u: tensor<2xf32> {tg.name = "unused", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}, tensor<4x5xf32> {tg.name = "logits", tg.role = #tg.role<output>}) {
  %0 = tg.matmul %x, %w : tensor<4x3xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
  %1 = tg.add %0, %b : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xf32>
  %2 = tg.relu %1 : tensor<4x5xf32>
  %3 = tg.add %2, %1 : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
  %4 = tg.cross_entropy %3, %y : tensor<4x5xf32>, tensor<4xi64> -> tensor<f32>
  return %4, %3 : tensor<f32>, tensor<4x5xf32>
}

// -----

// Data movement and convolution use the transposed ops.
// CHECK-LABEL: func.func @forward_grad
// CHECK-DAG: tg.conv2d_grad_input %{{.+}}, %{{.+}} {padding = array<i64: 1, 1>}
// CHECK-DAG: tg.conv2d_grad_weight %{{.+}}, %{{.+}} {padding = array<i64: 1, 1>}
// Its 2x2 pooling tiles the input: a running maximum of selects whose
// conditions the backward reads (tg-autodiff-pooling.mlir).
// CHECK-DAG: tg.concat %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} axis = 0 : tensor<1x24xf32>, tensor<1x24xf32>, tensor<1x24xf32>, tensor<1x24xf32> -> tensor<4x24xf32>
// CHECK-DAG: tg.embedding_grad
// CHECK-DAG: tg.transpose %{{.+}} perm = [1, 0]
// CHECK: return
func.func @forward(%x: tensor<2x1x4x4xf32> {tg.role = #tg.role<input>},
                   %k: tensor<3x1x3x3xf32> {tg.name = "k", tg.role = #tg.role<param>},
                   %e: tensor<10x6xf32> {tg.name = "e", tg.role = #tg.role<param>},
                   %ids: tensor<2xi32> {tg.role = #tg.role<input>}) -> tensor<f32> {
  %0 = tg.conv2d %x, %k {padding = array<i64: 1, 1>} : tensor<2x1x4x4xf32>, tensor<3x1x3x3xf32> -> tensor<2x3x4x4xf32>
  %1 = tg.max_pool2d %0 kernel = [2, 2] stride = [2, 2] : tensor<2x3x4x4xf32> -> tensor<2x3x2x2xf32>
  %2 = tg.reshape %1 : tensor<2x3x2x2xf32> to tensor<2x12xf32>
  %3 = tg.slice %2 start [0, 0] limit [2, 6] step [1, 1] : tensor<2x12xf32> -> tensor<2x6xf32>
  %4 = tg.embedding %e, %ids : tensor<10x6xf32>, tensor<2xi32> -> tensor<2x6xf32>
  %5 = tg.transpose %4 perm = [1, 0] : tensor<2x6xf32> -> tensor<6x2xf32>
  %6 = tg.matmul %3, %5 : tensor<2x6xf32>, tensor<6x2xf32> -> tensor<2x2xf32>
  %7 = tg.sum %6 axes = [0, 1] : tensor<2x2xf32> -> tensor<f32>
  return %7 : tensor<f32>
}

// -----

// avg_pool2d's gradient divides by the same count as its forward:
// count_include_pad travels to avg_pool2d_grad.
// CHECK-LABEL: func.func @forward_grad
// CHECK: tg.avg_pool2d_grad %{{.+}} kernel = [3, 3] stride = [1, 1] {count_include_pad = false, padding = array<i64: 1, 1>}
// CHECK: tg.avg_pool2d_grad %{{.+}} kernel = [3, 3] stride = [1, 1] {padding = array<i64: 1, 1>}
func.func @forward(%x: tensor<1x1x4x4xf32> {tg.name = "x", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.avg_pool2d %x kernel = [3, 3] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32>
  %1 = tg.avg_pool2d %0 kernel = [3, 3] stride = [1, 1] {count_include_pad = false, padding = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32>
  %2 = tg.sum %1 axes = [0, 1, 2, 3] : tensor<1x1x4x4xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// maximum splits a tie's cotangent in halves (PyTorch): the shared half is
// selected on equality, and each side is zeroed where it loses.
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[EQ:.+]] = tg.cmp eq %[[A:[a-z0-9]+]], %[[B:[a-z0-9]+]]
// CHECK: %[[HALF:.+]] = tg.mul %{{.+}}, %{{.+}} : tensor<3xf32>, tensor<f32>
// CHECK: %[[SHARED:.+]] = tg.select %[[EQ]], %[[HALF]], %{{.+}}
// CHECK: %[[LT:.+]] = tg.cmp lt %[[A]], %[[B]]
// CHECK: tg.select %[[LT]], %{{.+}}, %[[SHARED]]
// CHECK: %[[GT:.+]] = tg.cmp gt %[[A]], %[[B]]
// CHECK: tg.select %[[GT]], %{{.+}}, %[[SHARED]]
func.func @forward(%a: tensor<3xf32> {tg.name = "a", tg.role = #tg.role<param>},
                   %b: tensor<3xf32> {tg.name = "b", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.maximum %a, %b : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = tg.sum %0 axes = [0] : tensor<3xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A weight shared by the batch (x [2, 3, 4] @ w, and a tied head read
// transposed): its gradient folds the batch into the rows, one [4, 5] (and
// [5, 4]) product of [6, .] row matrices, not a [2, 4, 5] product summed
// over the batch afterwards. The input's gradient keeps its batch.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3x4xf32>
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4x5xf32>
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<5x5xf32>
// CHECK: %[[H:.+]] = tg.matmul %[[X]], %[[W]] : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
// CHECK: %[[DH:.+]] = tg.matmul %{{.+}}, %[[V]] : tensor<2x3x5xf32>, tensor<5x5xf32> -> tensor<2x3x5xf32>
// CHECK: %[[H2:.+]] = tg.reshape %[[H]] : tensor<2x3x5xf32> to tensor<6x5xf32>
// CHECK: %[[G2:.+]] = tg.reshape %{{.+}} : tensor<2x3x5xf32> to tensor<6x5xf32>
// CHECK: %[[DV:.+]] = tg.matmul %[[G2]], %[[H2]] {transpose_lhs} : tensor<6x5xf32>, tensor<6x5xf32> -> tensor<5x5xf32>
// CHECK-NOT: tg.sum %{{.+}} axes = [0] keepdims : tensor<2x
// CHECK: %[[X2:.+]] = tg.reshape %[[X]] : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK: %[[DH2:.+]] = tg.reshape %[[DH]] : tensor<2x3x5xf32> to tensor<6x5xf32>
// CHECK: %[[DW:.+]] = tg.matmul %[[X2]], %[[DH2]] {transpose_lhs} : tensor<6x4xf32>, tensor<6x5xf32> -> tensor<4x5xf32>
// CHECK: return %{{.+}}, %[[DW]], %[[DV]]
func.func @forward(%x: tensor<2x3x4xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<4x5xf32> {tg.name = "w", tg.role = #tg.role<param>},
                   %v: tensor<5x5xf32> {tg.name = "v", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %1 = tg.matmul %0, %v {transpose_rhs} : tensor<2x3x5xf32>, tensor<5x5xf32> -> tensor<2x3x5xf32>
  %2 = tg.sum %1 axes = [0, 1, 2] : tensor<2x3x5xf32> -> tensor<f32>
  return %2 : tensor<f32>
}
