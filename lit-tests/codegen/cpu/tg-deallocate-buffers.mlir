// RUN: tg-opt %s --split-input-file --tg-deallocate-buffers | FileCheck %s

// A function that allocates, calls and is called by nothing (a step planned
// into its arena) is set aside: its body, its loop that yields buffers and
// its public visibility come back as they were, with no deallocation
// bookkeeping. The function that allocates frees what it allocated.
// CHECK-LABEL: func.func @planned(
// CHECK-SAME: %[[ARENA:.+]]: memref<1024xi8>, %[[OUT:.+]]: memref<16xf32>)
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[C4:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[A:.+]] = memref.view %[[ARENA]][%[[C0]]][] : memref<1024xi8> to memref<16xf32>
// CHECK-NEXT: %[[R:.+]] = scf.for %{{.+}} = %[[C0]] to %[[C4]] step %[[C1]] iter_args(%[[X:.+]] = %[[A]]) -> (memref<16xf32>) {
// CHECK-NEXT: memref.copy %[[X]], %[[OUT]]
// CHECK-NEXT: scf.yield %[[OUT]] : memref<16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-LABEL: func.func @allocates(
// CHECK: %[[M:.+]] = memref.alloc() : memref<16xf32>
// CHECK: memref.copy %[[M]]
// CHECK: memref.dealloc %[[M]]
// CHECK: return
func.func @planned(%arena: memref<1024xi8>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.view %arena[%c0][] : memref<1024xi8> to memref<16xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%x = %a) -> (memref<16xf32>) {
    memref.copy %x, %out : memref<16xf32> to memref<16xf32>
    scf.yield %out : memref<16xf32>
  }
  return
}
func.func @allocates(%in: memref<16xf32>, %out: memref<16xf32>) {
  %m = memref.alloc() : memref<16xf32>
  memref.copy %in, %m : memref<16xf32> to memref<16xf32>
  memref.copy %m, %out : memref<16xf32> to memref<16xf32>
  return
}

// -----

// A function that allocates nothing but is called keeps its place in the
// pipeline (ownership crosses the call); so does its caller.
// CHECK-LABEL: func.func @caller(
// CHECK: memref.alloc
// CHECK: call @callee
// CHECK: memref.dealloc
// CHECK-LABEL: func.func private @callee(
func.func @caller(%out: memref<16xf32>) {
  %m = memref.alloc() : memref<16xf32>
  call @callee(%m, %out) : (memref<16xf32>, memref<16xf32>) -> ()
  return
}
func.func private @callee(%in: memref<16xf32>, %out: memref<16xf32>) {
  memref.copy %in, %out : memref<16xf32> to memref<16xf32>
  return
}
