// RUN: tg-opt %s --split-input-file --tg-convert-to-linalg | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-cpu-pipeline --mlir-print-ir-after=tg-select-vector-widths -o /dev/null 2>&1 | FileCheck %s --check-prefix=WIDTH

// A float sum over axes that end with the innermost one but are not only
// trailing (a convolution's bias gradient: (n, y, x) of (n, c, y, x)) is two
// generics (codegen/cpu/ReductionsToLinalg.cpp): partial sums over the kept
// axes and the collapsed trailing axes (y * x), the other reduced axes (n)
// inside the kept ones and the contiguous axis innermost and parallel, then
// each kept element's partial sums in order.
// CHECK-LABEL: func.func @bias_grad
// CHECK-SAME: (%[[X:.+]]: tensor<4x6x5x7xf32>)
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : tensor<4x6x5x7xf32> into tensor<4x6x35xf32>
// CHECK: %[[P0:.+]] = linalg.fill {{.*}} -> tensor<6x35xf32>
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#[[IN:.+]], #[[PART:.+]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[FLAT]] : tensor<4x6x35xf32>) outs(%[[P0]] : tensor<6x35xf32>)
// CHECK: arith.addf
// CHECK: %[[R0:.+]] = linalg.fill {{.*}} -> tensor<1x6x1x1xf32>
// CHECK: %[[R:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #[[OUT:.+]]], iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<6x35xf32>) outs(%[[R0]] : tensor<1x6x1x1xf32>)
// CHECK: return %[[R]]
// The partial sums run 16 lanes at a time (the host's width, at most).
// WIDTH-LABEL: func.func @bias_grad
// WIDTH: iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.+}} : memref<4x6x35xf32>) outs(%{{.+}} : memref<6x35xf32>) attrs = {tg_cpu.vector_width = {{4|8|16}} : i64}
func.func @bias_grad(%x: tensor<4x6x5x7xf32>) -> tensor<1x6x1x1xf32> {
  %0 = tg.sum %x axes = [0, 2, 3] keepdims : tensor<4x6x5x7xf32> -> tensor<1x6x1x1xf32>
  return %0 : tensor<1x6x1x1xf32>
}

// -----

// A mean over (0, 2) of a 3-D tensor: nothing to collapse; the sums are
// divided in place.
// CHECK-LABEL: func.func @mean_outer_and_inner
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.+}} : tensor<3x4x5xf32>) outs(%{{.+}} : tensor<4x5xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.+}} : tensor<4x5xf32>) outs(%{{.+}} : tensor<4xf32>)
// CHECK: arith.divf
func.func @mean_outer_and_inner(%x: tensor<3x4x5xf32>) -> tensor<4xf32> {
  %0 = tg.mean %x axes = [0, 2] : tensor<3x4x5xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Column sums (a linear layer's bias gradient: the innermost axis is kept)
// and row sums (only trailing axes reduced) stay one generic each, and so
// does a max, an integer sum and a sum inside a fused group (whose
// producers fuse into the reduction only without the reshape).
// CHECK-LABEL: func.func @one_generic
// CHECK-NOT: tensor.collapse_shape
// CHECK: iterator_types = ["reduction", "parallel"]} ins(%{{.+}} : tensor<16x8xf32>) outs(%{{.+}} : tensor<8xf32>)
// CHECK: iterator_types = ["parallel", "reduction", "reduction"]} ins(%{{.+}} : tensor<2x3x8xf32>) outs(%{{.+}} : tensor<2xf32>)
// CHECK: iterator_types = ["reduction", "parallel", "reduction"]} ins(%{{.+}} : tensor<2x3x8xf32>) outs(%{{.+}} : tensor<3xf32>)
// CHECK: arith.maximumf
// CHECK: iterator_types = ["reduction", "parallel", "reduction"]} ins(%{{.+}} : tensor<2x3x8xi32>) outs(%{{.+}} : tensor<3xi32>)
// CHECK: iterator_types = ["reduction", "parallel", "reduction"]} ins(%{{.+}} : tensor<2x3x8xf32>) outs(%{{.+}} : tensor<3xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @one_generic(%c: tensor<16x8xf32>, %x: tensor<2x3x8xf32>, %i: tensor<2x3x8xi32>)
    -> (tensor<8xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3xf32>) {
  %0 = tg.sum %c axes = [0] : tensor<16x8xf32> -> tensor<8xf32>
  %1 = tg.sum %x axes = [1, 2] : tensor<2x3x8xf32> -> tensor<2xf32>
  %2 = tg.max %x axes = [0, 2] : tensor<2x3x8xf32> -> tensor<3xf32>
  %3 = tg.sum %i axes = [0, 2] : tensor<2x3x8xi32> -> tensor<3xi32>
  %4 = tg.fused <reduction> ins(%x : tensor<2x3x8xf32>) {
  ^bb0(%a: tensor<2x3x8xf32>):
    %s = tg.sum %a axes = [0, 2] : tensor<2x3x8xf32> -> tensor<3xf32>
    tg.yield %s : tensor<3xf32>
  } -> tensor<3xf32>
  return %0, %1, %2, %3, %4 : tensor<8xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3xf32>
}
