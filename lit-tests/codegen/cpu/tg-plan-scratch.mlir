// RUN: tg-opt %s --tg-plan-scratch | FileCheck %s

// Buffers a planned function still allocates after bufferization, of ops
// that no tg.scratch_offset placed, go into a region appended to its arena
// (marked {tg.arena}): two whose lifetimes overlap get disjoint slots, a
// later one reuses the first slot, deallocs go, the arena grows, and the
// module records the final size. A buffer that escapes (returned) stays an
// allocation; functions without an arena are left alone.

// The arena of 1000 bytes is rounded up to 1024; %a and %b (live together)
// take 256 bytes each after it, %c reuses %a's slot.
// CHECK: module attributes {tg.arena_bytes = {placed = 4608 : i64, slots = 4096 : i64, step = 1536 : i64}}
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[ARENA:[a-z0-9_]+]]: memref<1536xi8> {tg.arena}
// CHECK: %[[C1024:.+]] = arith.constant 1024 : index
// CHECK: %[[A:.+]] = memref.view %[[ARENA]][%[[C1024]]][] : memref<1536xi8> to memref<64xf32>
// CHECK: %[[C1280:.+]] = arith.constant 1280 : index
// CHECK: %[[B:.+]] = memref.view %[[ARENA]][%[[C1280]]][] : memref<1536xi8> to memref<32xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[A]] : memref<64xf32>)
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[B]] : memref<32xf32>)
// CHECK: arith.constant 1024 : index
// CHECK: memref.view %[[ARENA]][%{{.+}}][] : memref<1536xi8> to memref<16xf32>
// CHECK: %[[KEEP:.+]] = memref.alloc() : memref<8xf32>
// CHECK-NOT: memref.dealloc
// CHECK: return %[[KEEP]]
func.func @step(%x: memref<4xf32>, %arena: memref<1000xi8> {tg.arena}) -> memref<8xf32> {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<64xf32>
  %b = memref.alloc() : memref<32xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<64xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<32xf32>)
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<32xf32>
  %c = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<16xf32>)
  memref.dealloc %c : memref<16xf32>
  %keep = memref.alloc() : memref<8xf32>
  return %keep : memref<8xf32>
}

// CHECK-LABEL: func.func @unplanned(
// CHECK: memref.alloc() : memref<64xf32>
func.func @unplanned() {
  %a = memref.alloc() : memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  return
}

// Buffers whose location carries their op's planned scratch (tg-bind-arena:
// tg.scratch_offset and tg.scratch as FusedLoc metadata, also inside a
// location fused around it), and that only that op's code uses, go there,
// packed by lifetime: %a and %b, live together, at 1024 and 1280, inside
// the arena, which does not grow for them. %c needs 512 bytes where its op
// was sized for 256 (the step's lowering is not the isolated op's) and %d
// is read by another op's code (a copy at another location): both go
// after the plan, at 4096 (%d after %c is dead, in its slot), and the
// arena grows to 4608.
// CHECK-LABEL: func.func @placed(
// CHECK-SAME: %[[ARENA:[a-z0-9_]+]]: memref<4608xi8> {tg.arena}
// CHECK: %[[C1024:.+]] = arith.constant 1024 : index
// CHECK: memref.view %[[ARENA]][%[[C1024]]][] : memref<4608xi8> to memref<64xf32>
// CHECK: %[[C1280:.+]] = arith.constant 1280 : index
// CHECK: memref.view %[[ARENA]][%[[C1280]]][] : memref<4608xi8> to memref<64xf32>
// CHECK: %[[C4096:.+]] = arith.constant 4096 : index
// CHECK: memref.view %[[ARENA]][%[[C4096]]][] : memref<4608xi8> to memref<128xf32>
// CHECK: %[[C4096B:.+]] = arith.constant 4096 : index
// CHECK: memref.view %[[ARENA]][%[[C4096B]]][] : memref<4608xi8> to memref<64xf32>
// CHECK-NOT: memref.alloc
// CHECK: return
#op3 = loc(fused<{tg.scratch = 512 : i64, tg.scratch_offset = 1024 : i64}>["model.tg":3:7])
#op4 = loc(fused<{tg.scratch = 256 : i64, tg.scratch_offset = 2048 : i64}>["model.tg":4:7])
#op5 = loc(fused<{tg.scratch = 256 : i64, tg.scratch_offset = 3072 : i64}>["model.tg":5:7])
func.func @placed(%arena: memref<4096xi8> {tg.arena}, %out: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<64xf32> loc(#op3)
  %b = memref.alloc() : memref<64xf32> loc(fused["other.mlir":1:1, #op3])
  linalg.fill ins(%zero : f32) outs(%a : memref<64xf32>) loc(#op3)
  linalg.fill ins(%zero : f32) outs(%b : memref<64xf32>) loc(#op3)
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<64xf32>
  %c = memref.alloc() : memref<128xf32> loc(#op4)
  linalg.fill ins(%zero : f32) outs(%c : memref<128xf32>) loc(#op4)
  memref.dealloc %c : memref<128xf32>
  %d = memref.alloc() : memref<64xf32> loc(#op5)
  linalg.fill ins(%zero : f32) outs(%d : memref<64xf32>) loc(#op5)
  memref.copy %d, %out : memref<64xf32> to memref<64xf32>
  memref.dealloc %d : memref<64xf32>
  return
}

// A buffer allocated inside a slot loop (tg_cpu.slots = 4: a convolution's
// blocks of images, which may run on threads) gets one slot per iteration:
// 400 bytes round up to a 512-byte slot, planned 4 times over (2048 bytes,
// after the plan at 1024), and iteration %s views its slot at 1024 + %s x
// 512. %b, used after %a is dead, does not reuse %a's bytes as it would
// in sequential code: two iterations run at once, and %b's slot 1 would
// overlap %a's slot 0; it lives as long as the loop, at 3072 + %s x 256,
// and the arena grows to 4096.
// CHECK-LABEL: func.func @slots(
// CHECK-SAME: %[[ARENA:[a-z0-9_]+]]: memref<4096xi8> {tg.arena}
// CHECK: scf.for %[[S:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: %[[BASE:.+]] = arith.constant 1024 : index
// CHECK: %[[SLOT:.+]] = arith.constant 512 : index
// CHECK: %[[AT:.+]] = arith.muli %[[S]], %[[SLOT]] : index
// CHECK: %[[OFF:.+]] = arith.addi %[[BASE]], %[[AT]] : index
// CHECK: memref.view %[[ARENA]][%[[OFF]]][] : memref<4096xi8> to memref<100xf32>
// CHECK: %[[BASEB:.+]] = arith.constant 3072 : index
// CHECK: %[[SLOTB:.+]] = arith.constant 256 : index
// CHECK: %[[ATB:.+]] = arith.muli %[[S]], %[[SLOTB]] : index
// CHECK: %[[OFFB:.+]] = arith.addi %[[BASEB]], %[[ATB]] : index
// CHECK: memref.view %[[ARENA]][%[[OFFB]]][] : memref<4096xi8> to memref<50xf32>
// CHECK: } {tg_cpu.slots = 4 : i64}
func.func @slots(%arena: memref<1024xi8> {tg.arena}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %s = %c0 to %c4 step %c1 {
    %a = memref.alloc() : memref<100xf32>
    linalg.fill ins(%zero : f32) outs(%a : memref<100xf32>)
    memref.dealloc %a : memref<100xf32>
    %b = memref.alloc() : memref<50xf32>
    linalg.fill ins(%zero : f32) outs(%b : memref<50xf32>)
    memref.dealloc %b : memref<50xf32>
  } {tg_cpu.slots = 4 : i64}
  return
}
