// RUN: tg-opt %s --tg-plan-scratch | FileCheck %s

// Buffers a planned function still allocates after bufferization go into a
// region appended to its arena (marked {tg.arena}): two whose lifetimes
// overlap get disjoint slots, a later one reuses the first slot, deallocs
// go, the arena grows, and the module records the final size. A buffer
// that escapes (returned) stays an allocation; functions without an arena
// are left alone.

// The arena of 1000 bytes is rounded up to 1024; %a and %b (live together)
// take 256 bytes each after it, %c reuses %a's slot.
// CHECK: module attributes {tg.arena_bytes = {step = 1536 : i64}}
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
