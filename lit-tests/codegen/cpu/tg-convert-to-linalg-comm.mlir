// RUN: tg-opt %s --split-input-file --tg-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: tg-opt %s --split-input-file --tg-plan-memory --tg-bind-arena --tg-convert-to-linalg | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-convert-to-linalg | FileCheck %s --check-prefix=UNPLANNED
// RUN: tg-opt %s --split-input-file --tg-plan-memory --tg-bind-arena '--tg-cpu-pipeline=arena=1' | FileCheck %s --check-prefix=LLVM

// The CPU backend packs a bucket into one flat buffer and hands it to the
// artifact's support function with the communicator's id (0: the world).
// tg-plan-memory places that buffer in the arena (bucket_offset), live
// while the collective runs only, so apart from the gradients it reads and
// the results it writes (all three live at that step); the lowering then
// packs the bucket in that slice of the arena, not in a heap allocation.

// PLAN-LABEL: func.func @train_step
// The gradient at 256, the results at 512 and 768, the bucket at 0.
// PLAN: tg.exp %{{.+}} {tg.bytes = 36 : i64, tg.offset = 256 : i64}
// PLAN: tg.all_reduce %{{.+}}, %{{.+}} on %{{.+}} {bucket_offset = 0 : i64, op = "mean", {{.*}}tg.offsets = array<i64: 512, 768>}

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[ARENA:[a-z0-9_]+]]: memref<{{[0-9]+}}xi8> {tg.arena}
// CHECK: %[[ID:[a-z0-9_]+]] = arith.constant 0 : i64
// CHECK: %[[VIEW:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<{{[0-9]+}}xi8> to memref<13xf32>
// CHECK: %[[FLAT:.+]] = bufferization.to_tensor %[[VIEW]] restrict writable : memref<13xf32>
// CHECK: tensor.insert_slice %{{.+}} into %[[FLAT]][0] [9] [1]
// CHECK: call @tgx_all_reduce_f32(%[[ID]], %{{.+}}, %{{.+}}, %{{.+}}) : (i64, !llvm.ptr, i64, f32) -> ()
// CHECK-NOT: tg.comm_world
// UNPLANNED-LABEL: func.func @train_step
// UNPLANNED: %[[ID:[a-z0-9_]+]] = arith.constant 0 : i64
// UNPLANNED: tensor.empty() : tensor<13xf32>
// UNPLANNED: call @tgx_all_reduce_f32(%[[ID]],
// LLVM-LABEL: llvm.func @train_step(
// LLVM-NOT: @malloc
// LLVM-NOT: @aligned_alloc
// LLVM: llvm.call @tgx_all_reduce_f32
// LLVM-NOT: @malloc
// LLVM-NOT: @aligned_alloc
// LLVM: llvm.return
func.func @train_step(%g: tensor<3x3xf32> {tg.name = "g", tg.role = #tg.role<input>},
                      %h: tensor<4xf32> {tg.name = "h", tg.role = #tg.role<input>})
    -> (tensor<3x3xf32> {tg.name = "a", tg.role = #tg.role<output>},
        tensor<4xf32> {tg.name = "b", tg.role = #tg.role<output>}) {
  %c = tg.comm_world : !tg.comm<ranks = 2>
  %e = tg.exp %g : tensor<3x3xf32>
  %a:2 = tg.all_reduce %e, %h on %c {op = "mean"} : !tg.comm<ranks = 2>, tensor<3x3xf32>, tensor<4xf32>
  return %a#0, %a#1 : tensor<3x3xf32>, tensor<4xf32>
}

// -----

// ZeRO stage 1: a reduce_scatter of 9 elements over 2 ranks (shards of 5,
// one element of padding, so the rows are zeroed first) and an all_gather,
// each in its own planned [ranks][block] buffer; tg.shard reads the rank
// in the communicator.
// PLAN-LABEL: func.func @train_step
// Each bucket at 0, apart from what the collective reads and writes.
// PLAN: tg.reduce_scatter %{{.+}} on %{{.+}} {bucket_offset = 0 : i64, op = "sum", tg.bytes = 20 : i64, tg.offset = 256 : i64}
// PLAN: tg.add {{.+}} {tg.bytes = 20 : i64, tg.offset = 512 : i64}
// PLAN: tg.all_gather %{{.+}} on %{{.+}} {bucket_offset = 0 : i64, tg.bytes = 36 : i64, tg.offset = 256 : i64}
// CHECK-LABEL: func.func @train_step
// CHECK: memref.view %{{.+}} to memref<2x5xf32>
// CHECK-NEXT: bufferization.to_tensor
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x5xf32>)
// CHECK: call @tgx_reduce_scatter_f32(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (i64, !llvm.ptr, i64, f32) -> ()
// CHECK: call @tgx_rank(%{{.+}}) : (i64) -> i64
// CHECK: call @tgx_all_gather_f32(%{{.+}}, %{{.+}}, %{{.+}}) : (i64, !llvm.ptr, i64) -> ()
func.func @train_step(%g: tensor<3x3xf32> {tg.name = "g", tg.role = #tg.role<input>},
                      %w: tensor<3x3xf32> {tg.name = "w", tg.role = #tg.role<input>})
    -> (tensor<3x3xf32> {tg.name = "a", tg.role = #tg.role<output>}) {
  %c = tg.comm_world : !tg.comm<ranks = 2>
  %s = tg.reduce_scatter %g on %c {op = "sum"} : !tg.comm<ranks = 2>, tensor<3x3xf32> -> tensor<5xf32>
  %p = tg.shard %w on %c : !tg.comm<ranks = 2>, tensor<3x3xf32> -> tensor<5xf32>
  %u = tg.add %p, %s : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
  %a = tg.all_gather %u on %c : !tg.comm<ranks = 2>, tensor<5xf32> -> tensor<3x3xf32>
  return %a : tensor<3x3xf32>
}
