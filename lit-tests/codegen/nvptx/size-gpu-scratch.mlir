// The pass is registered when codegen/nvptx is built, as tg-bench-gemm is.
// REQUIRES: tg-bench-gemm
// RUN: tg-opt %s --tg-configure-gemms --tg-size-gpu-scratch | FileCheck %s
// RUN: tg-opt %s --tg-configure-gemms --tg-size-gpu-scratch=targets=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: tg-opt %s --tg-configure-gemms --tg-size-gpu-scratch --tg-plan-memory=func=step | FileCheck %s --check-prefix=PLAN
// RUN: not tg-opt %s --tg-size-gpu-scratch=targets=sm_70 2>&1 | FileCheck %s --check-prefix=BADTARGET

// tg-size-gpu-scratch (docs/nvptx.md, "Op scratch in the plan") records
// each op's GPU kernel scratch as tg.scratch before the plan, from shapes
// and tile configs alone, so that tg-plan-memory places it (a buffer live
// at the op's step) and the schedule reads tg.scratch_offset.
// BADTARGET: error: tg-size-gpu-scratch: unknown target 'sm_70' (the GPU backend knows sm_80 and sm_90a)

// GPT-2 small's vocabulary input gradient at B*T = 8192: sm_90a stages the
// [8192, 50257] operand (kernel = "wgmma_staged"), its rows padded to
// 50264 elements: 8192 x 50264 x 2 = 823,525,376 bytes. sm_80 stages
// nothing (the sm_80 run gets none). The bias gradient's column sums over 8192
// rows split in 11 slices of 768 outputs: 11 x 768 x 8 = 67,584 bytes.
// Four vocabulary rows of a softmax take 49 blocks each (as
// tg-configure-row-reductions will split them), the max and the sum of
// the online pair one phase: 2 x 49 x 4 x 8 = 3,136 bytes. Short rows are
// one launch and an elementwise op none: the stale tg.scratch goes.
// CHECK-LABEL: func.func @step
// CHECK: tg.matmul {{.*}}tg.scratch = 823525376 : i64
// CHECK: tg.sum {{.*}}tg.scratch = 67584 : i64
// CHECK: tg.fused <row_reduction> {{.*}}{tg.scratch = 3136 : i64}
// CHECK: tg.sum {{.*}} : tensor<64x128xf32> -> tensor<64xf32>
// CHECK-NOT: tg.scratch
// CHECK: return
// SM80-LABEL: func.func @step
// SM80-NOT: tg.scratch = 823525376
// SM80: tg.sum {{.*}}tg.scratch = 67584 : i64
// SM80: tg.scratch = 3136 : i64
// The plan gives each a place (tg.scratch_offset) inside its region (it
// may reorder the ops: its schedule runs the product last).
// PLAN-LABEL: func.func @step
// PLAN-DAG: tg.matmul {{.*}}tg.scratch = 823525376 : i64, tg.scratch_offset = {{[0-9]+}} : i64
// PLAN-DAG: tg.sum {{.*}}tg.scratch = 67584 : i64, tg.scratch_offset = {{[0-9]+}} : i64
// PLAN-DAG: tg.scratch = 3136 : i64, tg.scratch_offset = {{[0-9]+}} : i64
func.func @step(%g: tensor<8192x50257xbf16> {tg.name = "g", tg.role = #tg.role<input>},
                %w: tensor<50257x768xbf16> {tg.name = "w", tg.role = #tg.role<input>},
                %c: tensor<8192x768xf32> {tg.name = "c", tg.role = #tg.role<input>},
                %l: tensor<4x50257xf32> {tg.name = "l", tg.role = #tg.role<input>},
                %s: tensor<64x128xf32> {tg.name = "s", tg.role = #tg.role<input>})
    -> (tensor<8192x768xbf16>, tensor<768xf32>, tensor<4x50257xf32>, tensor<64xf32>, tensor<64x128xf32>) {
  %dx = tg.matmul %g, %w {tg.acc = f32} : tensor<8192x50257xbf16>, tensor<50257x768xbf16> -> tensor<8192x768xbf16>
  %cs = tg.sum %c axes = [0] : tensor<8192x768xf32> -> tensor<768xf32>
  %p = tg.fused <row_reduction> ins(%l : tensor<4x50257xf32>) {
  ^bb0(%a: tensor<4x50257xf32>):
    %m = tg.max %a axes = [1] keepdims : tensor<4x50257xf32> -> tensor<4x1xf32>
    %d = tg.sub %a, %m : tensor<4x50257xf32>, tensor<4x1xf32> -> tensor<4x50257xf32>
    %e = tg.exp %d : tensor<4x50257xf32>
    %z = tg.sum %e axes = [1] keepdims : tensor<4x50257xf32> -> tensor<4x1xf32>
    %y = tg.div %e, %z : tensor<4x50257xf32>, tensor<4x1xf32> -> tensor<4x50257xf32>
    tg.yield %y : tensor<4x50257xf32>
  } -> tensor<4x50257xf32>
  %r = tg.sum %s axes = [1] : tensor<64x128xf32> -> tensor<64xf32>
  %e = tg.exp %s {tg.scratch = 7 : i64} : tensor<64x128xf32>
  return %dx, %cs, %p, %r, %e : tensor<8192x768xbf16>, tensor<768xf32>, tensor<4x50257xf32>, tensor<64xf32>, tensor<64x128xf32>
}
