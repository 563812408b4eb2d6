// The pass is registered when codegen/nvptx is built, as tg-bench-gemm is.
// REQUIRES: tg-bench-gemm
// RUN: tg-opt %s --split-input-file --tg-configure-row-reductions | FileCheck %s

// tg-configure-row-reductions (docs/nvptx.md, "Long rows over several
// blocks"): rows over 1024 elements, fewer than 264 (two blocks per H200
// SM), take S = min(ceil(264 / rows), row groups / (256 x 4), 64) blocks
// each when that is 2 or more.

// Four 50257-wide vocabulary rows: 66 blocks a row would fill the GPU,
// but 50257 / 1024 = 49 keeps each thread at 4 elements or more.
// CHECK-LABEL: func.func @vocab_rows
// CHECK: tg.fused <row_reduction>
// CHECK-SAME: tg_nvptx.row_blocks = 49 : i64
// CHECK-NOT: row_blocks
// CHECK: tg.yield
func.func @vocab_rows(%arg0: tensor<4x50257xf32>) -> tensor<4x50257xf32> {
  %0 = tg.fused <row_reduction> ins(%arg0 : tensor<4x50257xf32>) {
  ^bb0(%x: tensor<4x50257xf32>):
    %m = tg.max %x axes = [1] keepdims : tensor<4x50257xf32> -> tensor<4x1xf32>
    %s = tg.sub %x, %m : tensor<4x50257xf32>, tensor<4x1xf32> -> tensor<4x50257xf32>
    %e = tg.exp %s : tensor<4x50257xf32>
    %z = tg.sum %e axes = [1] keepdims : tensor<4x50257xf32> -> tensor<4x1xf32>
    %y = tg.div %e, %z : tensor<4x50257xf32>, tensor<4x1xf32> -> tensor<4x50257xf32>
    tg.yield %y : tensor<4x50257xf32>
  } -> tensor<4x50257xf32>
  return %0 : tensor<4x50257xf32>
}

// -----

// Sixteen rows: ceil(264 / 16) = 17 blocks a row.
// CHECK-LABEL: func.func @sixteen_rows
// CHECK: tg.max
// CHECK-SAME: tg_nvptx.row_blocks = 17 : i64
func.func @sixteen_rows(%x: tensor<16x50257xbf16>) -> tensor<16x1xbf16> {
  %m = tg.max %x axes = [1] keepdims : tensor<16x50257xbf16> -> tensor<16x1xbf16>
  return %m : tensor<16x1xbf16>
}

// -----

// f32 rows of 8192 take four elements a step (16-byte loads): 2048
// groups, two blocks of 256 threads x 4 groups.
// CHECK-LABEL: func.func @vector_rows
// CHECK: tg.sum
// CHECK-SAME: tg_nvptx.row_blocks = 2 : i64
func.func @vector_rows(%x: tensor<2x8192xf32>) -> tensor<2xf32> {
  %s = tg.sum %x axes = [1] : tensor<2x8192xf32> -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// 300 rows fill the GPU a block each; rows of 1024 take a warp each;
// 500 groups of four are too few to share; a leading axis is no row.
// CHECK-LABEL: func.func @unsplit
// CHECK-NOT: row_blocks
// CHECK: return
func.func @unsplit(%a: tensor<300x50257xf32>, %b: tensor<4x1024xf32>, %c: tensor<4x2000xf32>, %d: tensor<50257x4xf32>) -> (tensor<300xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = tg.sum %a axes = [1] : tensor<300x50257xf32> -> tensor<300xf32>
  %1 = tg.max %b axes = [1] : tensor<4x1024xf32> -> tensor<4xf32>
  %2 = tg.sum %c axes = [1] : tensor<4x2000xf32> -> tensor<4xf32>
  %3 = tg.sum %d axes = [0] : tensor<50257x4xf32> -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<300xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The plan puts the row result %t in the buffer of the row operand %s,
// which the other blocks of a split row would still read: the row stays
// one block.
// CHECK-LABEL: func.func @row_result_in_place
// CHECK-NOT: row_blocks
// CHECK: return
func.func @row_result_in_place(%arg0: tensor<2x50257xf32>, %arg1: tensor<2x1xf32>) -> (tensor<2x50257xf32>, tensor<2x1xf32>) {
  %0:2 = tg.fused <row_reduction> ins(%arg0, %arg1 : tensor<2x50257xf32>, tensor<2x1xf32>) attributes {tg.alias_args = array<i64: -1, 1>} {
  ^bb0(%x: tensor<2x50257xf32>, %s: tensor<2x1xf32>):
    %m = tg.max %x axes = [1] keepdims : tensor<2x50257xf32> -> tensor<2x1xf32>
    %y = tg.mul %x, %s : tensor<2x50257xf32>, tensor<2x1xf32> -> tensor<2x50257xf32>
    %t = tg.mul %s, %m : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
    tg.yield %y, %t : tensor<2x50257xf32>, tensor<2x1xf32>
  } -> tensor<2x50257xf32>, tensor<2x1xf32>
  return %0#0, %0#1 : tensor<2x50257xf32>, tensor<2x1xf32>
}
