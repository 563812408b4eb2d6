// RUN: tg-opt %s --split-input-file --tg-autodiff --tg-decompose --cse | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-autodiff --canonicalize --cse | FileCheck %s --check-prefix=SLICES

// What the backward pass reads of the forward pass (docs/memory.md, "What
// the backward pass saves"): a VJP replays a composite's cheap internals
// from the composite's input (tg.recomputed), so after decomposition and
// CSE the backward reads the GELU's input, its output (for the weight
// gradient) and the logits, and none of the forward's x-sized
// intermediates (x^2, tanh, exp, one-hot).
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[H:[0-9]+]] = tg.matmul %arg0, %arg2
// CHECK-NEXT: %[[X2:[0-9]+]] = tg.mul %[[H]], %[[H]] :
// CHECK: %[[TANH:[0-9]+]] = tg.tanh
// CHECK: %[[Y:[0-9]+]] = tg.mul %{{[0-9]+}}, %{{[0-9]+}} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[LOGITS:[0-9]+]] = tg.matmul %[[Y]], %arg2
// CHECK: %[[EXP:[0-9]+]] = tg.exp
// CHECK: %[[ONEHOT:[0-9]+]] = tg.one_hot %arg1 :
// CHECK: tg.max %[[LOGITS]] axes = [1] keepdims {tg.recomputed}
// CHECK-NOT: %[[EXP]]{{[^0-9]}}
// CHECK-NOT: %[[ONEHOT]]{{[^0-9]}}
// CHECK-NOT: %[[X2]]{{[^0-9]}}
// CHECK-NOT: %[[TANH]]{{[^0-9]}}
// CHECK: tg.one_hot %arg1 {tg.recomputed}
// CHECK-NOT: %[[EXP]]{{[^0-9]}}
// CHECK-NOT: %[[ONEHOT]]{{[^0-9]}}
// CHECK-NOT: %[[X2]]{{[^0-9]}}
// CHECK-NOT: %[[TANH]]{{[^0-9]}}
// CHECK: tg.matmul %[[Y]], %{{[0-9]+}} {transpose_lhs}
// CHECK-NOT: %[[EXP]]{{[^0-9]}}
// CHECK-NOT: %[[ONEHOT]]{{[^0-9]}}
// CHECK-NOT: %[[X2]]{{[^0-9]}}
// CHECK-NOT: %[[TANH]]{{[^0-9]}}
// CHECK: tg.mul %[[H]], %[[H]] {tg.recomputed}
// CHECK-NOT: %[[EXP]]{{[^0-9]}}
// CHECK-NOT: %[[ONEHOT]]{{[^0-9]}}
// CHECK-NOT: %[[X2]]{{[^0-9]}}
// CHECK-NOT: %[[TANH]]{{[^0-9]}}
// CHECK: return
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>}, %y: tensor<4xi64> {tg.name = "y", tg.role = #tg.role<input>}, %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = tg.gelu %0 approximate = tanh : tensor<4x8xf32>
  %2 = tg.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %3 = tg.cross_entropy %2, %y : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// Slices of one value (q, k and v of one projection): their cotangents
// are padded with zeros and summed; the sum is one concatenation of the
// pieces, with no zero tensor as large as the sliced value.
// SLICES-LABEL: func.func @forward_grad
// SLICES-NOT: tg.constant dense<0.000000e+00> : tensor<2x4x
// The weight's gradient folds the batch into the rows (no [2, 6, 6]
// product summed over the batch).
// SLICES: %[[D:[0-9]+]] = tg.concat %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} axis = 2 : tensor<2x4x2xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32> -> tensor<2x4x6xf32>
// SLICES-NEXT: %[[X2:[0-9]+]] = tg.reshape %arg0 : tensor<2x4x6xf32> to tensor<8x6xf32>
// SLICES-NEXT: %[[D2:[0-9]+]] = tg.reshape %[[D]] : tensor<2x4x6xf32> to tensor<8x6xf32>
// SLICES-NEXT: tg.matmul %[[X2]], %[[D2]] {transpose_lhs} : tensor<8x6xf32>, tensor<8x6xf32> -> tensor<6x6xf32>
// SLICES-NOT: tg.add
// SLICES: return
func.func @forward(%x: tensor<2x4x6xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<6x6xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<2x4x6xf32>, tensor<6x6xf32> -> tensor<2x4x6xf32>
  %1 = tg.slice %0 start [0, 0, 0] limit [2, 4, 2] step [1, 1, 1] : tensor<2x4x6xf32> -> tensor<2x4x2xf32>
  %2 = tg.slice %0 start [0, 0, 2] limit [2, 4, 4] step [1, 1, 1] : tensor<2x4x6xf32> -> tensor<2x4x2xf32>
  %3 = tg.slice %0 start [0, 0, 4] limit [2, 4, 6] step [1, 1, 1] : tensor<2x4x6xf32> -> tensor<2x4x2xf32>
  %4 = tg.mul %1, %2 : tensor<2x4x2xf32>, tensor<2x4x2xf32> -> tensor<2x4x2xf32>
  %5 = tg.mul %4, %3 : tensor<2x4x2xf32>, tensor<2x4x2xf32> -> tensor<2x4x2xf32>
  %6 = tg.sum %5 axes = [0, 1, 2] : tensor<2x4x2xf32> -> tensor<f32>
  return %6 : tensor<f32>
}
