// RUN: tg-opt %s --tg-bind-arena --mlir-print-debuginfo | FileCheck %s --check-prefix=BIND
// RUN: tg-opt %s '--tg-cpu-pipeline=arena=1 stop-after-scratch=1' | FileCheck %s

// An op's scratch that tg-plan-memory placed inside the plan (tg.scratch
// bytes at tg.scratch_offset) is where the CPU lowering puts it: the bf16
// matmul's f32 accumulator (64 x 16 x 4 = 4096 bytes) at offset 4096 of the
// 8192-byte arena, after the bf16 result at 0. The arena does not grow.

// tg-bind-arena carries the place into the op's location.
// BIND: tg.matmul {{.*}} loc(#[[LOC:loc[0-9]*]])
// BIND: #[[LOC]] = loc(fused<{tg.scratch = 4096 : i64, tg.scratch_offset = 4096 : i64}>

// CHECK: module attributes {tg.arena_bytes = {f = 8192 : i64}}
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[ARENA:[a-z0-9_]+]]: memref<8192xi8> {tg.arena}
// CHECK-DAG: %[[C4096:.+]] = arith.constant 4096 : index
// CHECK-DAG: memref.view %[[ARENA]][%[[C4096]]][] : memref<8192xi8> to memref<64x16xf32>
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @f(%a: tensor<64x32xbf16> {tg.name = "a", tg.role = #tg.role<input>}, %b: tensor<32x16xbf16> {tg.name = "b", tg.role = #tg.role<input>}) -> tensor<64x16xbf16> attributes {tg.memory = #tg.memory<params_bytes = 0, optimizer_bytes = 0, inputs_bytes = 5120, grads_bytes = 0, activations_bytes = 0, workspace_bytes = 8192, persistent_bytes = 5120, transient_bytes = 8192, peak_bytes = 13312, lower_bound_bytes = 13312, naive_bytes = 13312>} {
  %0 = tg.matmul %a, %b {tg.acc = f32, tg.bytes = 2048 : i64, tg.offset = 0 : i64, tg.scratch = 4096 : i64, tg.scratch_offset = 4096 : i64} : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return %0 : tensor<64x16xbf16>
}
