// RUN: tg-opt %s --tg-plan-memory=func=step | FileCheck %s

// Op scratch (tg.scratch, from tg-size-scratch) is a buffer of the plan live
// at its op's step only. The matmul's 8 KiB are live with its operand %0
// and its result %1 (16 KiB each), so they go after both, at 32768: that
// moment is the worst, and the lower bound counts them (40960 transient
// bytes, not 32768 + a region after the plan). The sum's 8 KiB come when
// %0 is dead: they reuse its hole at offset 0, and the sum's result takes
// the rest of it, at 8192. The summary counts op scratch as workspace.
// CHECK-LABEL: func.func @step
// CHECK-SAME: workspace_bytes = 40960, persistent_bytes = 16384, transient_bytes = 40960, peak_bytes = 57344, lower_bound_bytes = 57344
// CHECK: tg.exp {{.*}} {tg.bytes = 16384 : i64, tg.offset = 0 : i64}
// CHECK: tg.matmul {{.*}} {tg.bytes = 16384 : i64, tg.offset = 16384 : i64, tg.scratch = 8192 : i64, tg.scratch_offset = 32768 : i64}
// CHECK: tg.sum {{.*}} {tg.bytes = 4 : i64, tg.offset = 8192 : i64, tg.scratch = 8192 : i64, tg.scratch_offset = 0 : i64}
func.func @step(%x: tensor<64x64xf32> {tg.name = "x", tg.role = #tg.role<input>}) -> tensor<f32> {
  %0 = tg.exp %x : tensor<64x64xf32>
  %1 = tg.matmul %0, %0 {tg.scratch = 8192 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %2 = tg.sum %1 axes = [0, 1] {tg.scratch = 8192 : i64} : tensor<64x64xf32> -> tensor<f32>
  return %2 : tensor<f32>
}
