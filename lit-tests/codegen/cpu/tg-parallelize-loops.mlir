// RUN: tg-opt %s --split-input-file --tg-parallelize-loops | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-parallelize-loops="min-work=1" | FileCheck %s --check-prefix=ANY
// RUN: tg-opt %s --split-input-file --tg-parallelize-loops --convert-scf-to-openmp | FileCheck %s --check-prefix=OMP

// A large elementwise nest: 1024 x 256 points of 4 operations (load, add,
// store, the terminator) = 1048576 >= 65536. The outer dimension runs in
// parallel, the inner one stays a loop inside each iteration (LLVM
// vectorises it).
// CHECK-LABEL: func.func @large
// CHECK: scf.parallel (%[[I:.+]]) = (%c0) to (%c1024) step (%c1) {
// CHECK-NEXT: scf.for %[[J:.+]] = %c0 to %c256 step %c1 {
// CHECK-NEXT: memref.load %arg0[%[[I]], %[[J]]]
// CHECK: } {tg_cpu.parallel = {iterations = 1024 : i64, work = 1048576 : i64}}
// The loop that stays parallel is an OpenMP worksharing loop over the
// rows; the one that does not has no OpenMP region.
// OMP-LABEL: func.func @large
// OMP: omp.parallel {
// OMP-NEXT: omp.wsloop {
// OMP-NEXT: omp.loop_nest (%{{.+}}) : index = (%c0) to (%c1024) step (%c1) {
// OMP-LABEL: func.func @small
// OMP-NOT: omp.
// OMP-LABEL: func.func @flat
func.func @large(%a: memref<1024x256xf32>, %b: memref<1024x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1024, %c256) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<1024x256xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %b[%i, %j] : memref<1024x256xf32>
    scf.reduce
  }
  return
}

// -----

// 16 x 16 x 4 = 1024 operations: a fork and join would cost more than the
// loop; it becomes sequential loops in the same order. With min-work=1 it
// runs in parallel.
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[I:.+]] = %c0 to %c16 step %c1 {
// CHECK-NEXT: scf.for %[[J:.+]] = %c0 to %c16 step %c1 {
// CHECK-NEXT: memref.load %arg0[%[[I]], %[[J]]]
// ANY-LABEL: func.func @small
// ANY: scf.parallel
// ANY: tg_cpu.parallel = {iterations = 16 : i64, work = 1024 : i64}
func.func @small(%a: memref<16x16xf32>, %b: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c16) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<16x16xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %b[%i, %j] : memref<16x16xf32>
    scf.reduce
  }
  return
}

// -----

// One-dimensional and innermost: 100000 iterations in chunks of 256 (391
// parallel iterations, the last one short), so the vector body and scalar
// remainder of each chunk do not depend on the thread count.
// CHECK-LABEL: func.func @flat
// CHECK: %[[C391:.+]] = arith.constant 391 : index
// CHECK: scf.parallel (%[[C:.+]]) = (%{{.+}}) to (%[[C391]]) step
// CHECK: %[[C256:.+]] = arith.constant 256 : index
// CHECK: %[[SPAN:.+]] = arith.muli %c1, %[[C256]] : index
// CHECK: %[[OFF:.+]] = arith.muli %[[C]], %[[SPAN]] : index
// CHECK: %[[FIRST:.+]] = arith.addi %c0, %[[OFF]] : index
// CHECK: %[[END:.+]] = arith.addi %[[FIRST]], %[[SPAN]] : index
// CHECK: %[[LAST:.+]] = arith.minsi %[[END]], %c100000 : index
// CHECK: scf.for %[[I:.+]] = %[[FIRST]] to %[[LAST]] step %c1 {
// CHECK: memref.load %arg0[%[[I]]]
// CHECK: } {tg_cpu.parallel = {iterations = 391 : i64, work = 400000 : i64}}
func.func @flat(%a: memref<100000xf32>, %b: memref<100000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100000 = arith.constant 100000 : index
  scf.parallel (%i) = (%c0) to (%c100000) step (%c1) {
    %x = memref.load %a[%i] : memref<100000xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %b[%i] : memref<100000xf32>
    scf.reduce
  }
  return
}

// -----

// A batch of 2 and 4096 rows of 64: the batch alone is under 8 iterations,
// so the batch and the rows are collapsed into one parallel loop of 2 x 4096
// iterations (one fork and join, where a parallel row loop inside a loop
// over the batch would fork twice), each index delinearised, the rows
// fastest; work 2 x 4096 x (64 x 4 + 1). The inner parallel loop of each
// row stays sequential: its enclosing loop runs on threads already.
// CHECK-LABEL: func.func @nested
// CHECK: %[[N:.+]] = arith.constant 8192 : index
// CHECK: scf.parallel (%[[P:.+]]) = (%{{.+}}) to (%[[N]]) step
// CHECK-NEXT: %[[ROWS:.+]] = arith.constant 4096 : index
// CHECK-NEXT: %[[RI:.+]] = arith.remui %[[P]], %[[ROWS]] : index
// CHECK-NEXT: %[[BI:.+]] = arith.divui %[[P]], %[[ROWS]] : index
// CHECK-NEXT: %[[RS:.+]] = arith.muli %[[RI]], %c1 : index
// CHECK-NEXT: %[[R:.+]] = arith.addi %c0, %[[RS]] : index
// CHECK-NEXT: %[[BS:.+]] = arith.muli %[[BI]], %c1 : index
// CHECK-NEXT: %[[B:.+]] = arith.addi %c0, %[[BS]] : index
// CHECK-NEXT: scf.for %[[K:.+]] = %c0 to %c64 step %c1 {
// CHECK-NEXT: memref.load %arg0[%[[B]], %[[R]], %[[K]]]
// CHECK-NOT: scf.parallel
// CHECK: } {tg_cpu.parallel = {iterations = 8192 : i64, work = 2105344 : i64}}
func.func @nested(%a: memref<2x4096x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%b, %r) = (%c0, %c0) to (%c2, %c4096) step (%c1, %c1) {
    scf.parallel (%k) = (%c0) to (%c64) step (%c1) {
      %x = memref.load %a[%b, %r, %k] : memref<2x4096x64xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %a[%b, %r, %k] : memref<2x4096x64xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// Iterations that allocate (the artifact's counted allocator is not
// thread-safe) or call stay on one thread, however much work they hold.
// CHECK-LABEL: func.func @allocates
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: memref.alloc
// ANY-LABEL: func.func @allocates
// ANY-NOT: scf.parallel
func.func @allocates(%a: memref<1024x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
    %t = memref.alloc() : memref<256xf32>
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %a[%i, %j] : memref<1024x256xf32>
      memref.store %x, %t[%j] : memref<256xf32>
    }
    memref.dealloc %t : memref<256xf32>
    scf.reduce
  }
  return
}

// -----

// A tiled loop's block (upper bound min(lb + 256, n)) counts 256
// iterations: 32 row tiles x (256 x 4 + 1) operations = 32800 < 65536, so
// the row tiles stay sequential.
// CHECK-LABEL: func.func @blocked
// CHECK-NOT: scf.parallel
// ANY-LABEL: func.func @blocked
// ANY: tg_cpu.parallel = {iterations = 32 : i64, work = 32800 : i64}
func.func @blocked(%a: memref<32x1000xf32>, %lo: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %c1000 = arith.constant 1000 : index
  %e = arith.addi %lo, %c256 : index
  %hi = arith.minsi %e, %c1000 : index
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %j = %lo to %hi step %c1 {
      %x = memref.load %a[%i, %j] : memref<32x1000xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %a[%i, %j] : memref<32x1000xf32>
    }
    scf.reduce
  }
  return
}

// -----

// An im2col copy of one image (1 x 1 x 5 x 5 x 28 x 28, LeNet's first
// convolution): the leading dimensions 1, 1, 5, 5 are collapsed into 25
// parallel iterations (the first prefix of at least 8), the 28 x 28 stay
// sequential inside: one fork per call, where the parallel 28 rows inside
// sequential 5 x 5 loops forked 25 times; work 25 x 28 x 28 x 5.
// CHECK-LABEL: func.func @im2col
// CHECK: %[[N:.+]] = arith.constant 25 : index
// CHECK: scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[N]]) step
// CHECK: scf.for %{{.+}} = %c0 to %c28 step %c1 {
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c28 step %c1 {
// CHECK: } {tg_cpu.parallel = {iterations = 25 : i64, work = 98000 : i64}}
func.func @im2col(%a: memref<1x1x32x32xf32>, %b: memref<1x1x5x5x28x28xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c28 = arith.constant 28 : index
  scf.parallel (%n, %c, %i, %j, %y, %x) = (%c0, %c0, %c0, %c0, %c0, %c0) to (%c1, %c1, %c5, %c5, %c28, %c28) step (%c1, %c1, %c1, %c1, %c1, %c1) {
    %r = arith.addi %y, %i : index
    %s = arith.addi %x, %j : index
    %v = memref.load %a[%n, %c, %r, %s] : memref<1x1x32x32xf32>
    memref.store %v, %b[%n, %c, %i, %j, %y, %x] : memref<1x1x5x5x28x28xf32>
    scf.reduce
  }
  return
}

// -----

// A convolution's slot loop (tg_cpu.slots: 8 blocks of images, each with
// its own slot of the op's scratch) runs in parallel: one fork per
// convolution, however many images. The per-image kernels its body calls
// (allocating nothing) are inlined, and erased where no one else calls
// them: a parallel body that calls keeps the alloca_scope of
// convert-scf-to-openmp, which scf-to-cf cannot lower. Their loops, now
// inside the parallel one, stay sequential (a parallel region there would
// fork once per call). Work: (3 operations of the body + the kernel's
// 128 x 256 x 4) x 8 = 1048600.
// CHECK-NOT: @slot_kernel
// CHECK-LABEL: func.func @slots
// CHECK: scf.parallel (%[[S:.+]]) = (%c0) to (%c8) step (%c1) {
// CHECK-NEXT: arith.muli %[[S]], %c128
// CHECK: %[[V:.+]] = memref.subview
// CHECK-NOT: call
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step
// CHECK-NEXT: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step
// CHECK-NEXT: memref.load %[[V]][%[[I]], %[[J]]]
// CHECK: } {tg_cpu.parallel = {iterations = 8 : i64, work = 1048600 : i64}}
// CHECK-NOT: tg_cpu.slots
// OMP-LABEL: func.func @slots
// OMP: omp.parallel {
// OMP-NEXT: omp.wsloop {
// OMP-NEXT: omp.loop_nest (%{{.+}}) : index = (%c0) to (%c8) step (%c1) {
// OMP: memref.alloca_scope
// OMP-NOT: func.call
// OMP: omp.yield
func.func private @slot_kernel(%a: memref<128x256xf32, strided<[256, 1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c256) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<128x256xf32, strided<[256, 1], offset: ?>>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%i, %j] : memref<128x256xf32, strided<[256, 1], offset: ?>>
    scf.reduce
  }
  return
}
func.func @slots(%a: memref<1024x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  scf.for %s = %c0 to %c8 step %c1 {
    %first = arith.muli %s, %c128 : index
    %v = memref.subview %a[%first, 0] [128, 256] [1, 1] : memref<1024x256xf32> to memref<128x256xf32, strided<[256, 1], offset: ?>>
    func.call @slot_kernel(%v) : (memref<128x256xf32, strided<[256, 1], offset: ?>>) -> ()
  } {tg_cpu.slots = 8 : i64}
  return
}

// -----

// A slot loop whose body allocates (no arena: the counted allocator is not
// thread-safe) or calls a function of unknown body stays a sequential
// loop, and the loops of what it calls keep their own decision.
// CHECK-LABEL: func.func private @kernel2
// CHECK: scf.parallel
// CHECK-LABEL: func.func @allocates
// CHECK: scf.for
// CHECK-NOT: scf.parallel
// CHECK: } {tg_cpu.slots = 8 : i64}
// CHECK-LABEL: func.func @unknown
// CHECK: scf.for
// CHECK-NOT: scf.parallel
// CHECK: } {tg_cpu.slots = 8 : i64}
func.func private @kernel2(%a: memref<1024x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1024, %c256) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<1024x256xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%i, %j] : memref<1024x256xf32>
    scf.reduce
  }
  return
}
func.func private @external(memref<1024x256xf32>)
func.func @allocates(%a: memref<1024x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %s = %c0 to %c8 step %c1 {
    %t = memref.alloc() : memref<16xf32>
    func.call @kernel2(%a) : (memref<1024x256xf32>) -> ()
    memref.dealloc %t : memref<16xf32>
  } {tg_cpu.slots = 8 : i64}
  return
}
func.func @unknown(%a: memref<1024x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %s = %c0 to %c8 step %c1 {
    func.call @external(%a) : (memref<1024x256xf32>) -> ()
  } {tg_cpu.slots = 8 : i64}
  return
}
