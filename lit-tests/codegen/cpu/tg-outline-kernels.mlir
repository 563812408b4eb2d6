// RUN: tg-opt %s --split-input-file --tg-outline-kernels | FileCheck %s

// Three relus of one shape share one kernel; the add (another body) gets its
// own. Each op's place becomes a call with the op's buffers, in order; the
// constant the body reads is cloned into the kernel, not passed.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: memref<4xf32>, %[[B:[a-z0-9_]+]]: memref<4xf32>, %[[C:[a-z0-9_]+]]: memref<4xf32>)
// CHECK: call @[[RELU:tg_kernel_[0-9]+]](%[[A]], %[[B]])
// CHECK-NEXT: call @[[RELU]](%[[B]], %[[C]])
// CHECK-NEXT: call @[[ADD:tg_kernel_[0-9]+]](%[[B]], %[[C]], %[[A]])
// CHECK-NEXT: call @[[RELU]](%[[A]], %[[B]])
// CHECK-NEXT: return
// CHECK: func.func private @[[RELU]](%{{.+}}: memref<4xf32>, %{{.+}}: memref<4xf32>) attributes {passthrough = ["noinline"]}
// CHECK-NEXT: arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.generic
// CHECK: arith.maximumf
// CHECK: func.func private @[[ADD]](
// CHECK: arith.addf
// CHECK-NOT: func.func private @tg_kernel
#id = affine_map<(d0) -> (d0)>
func.func @step(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<4xf32>) outs(%c : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%b, %c : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A different shape or a non-constant value read by the body (here a
// scalar argument) makes a different kernel; the scalar is passed after the
// buffers. Ops on tensors are left alone.
// CHECK-LABEL: func.func @scale(
// CHECK-SAME: %[[S:[a-z0-9_]+]]: f32
// CHECK: call @[[K0:tg_kernel_[0-9]+]](%{{.+}}, %{{.+}}, %[[S]]) : (memref<4xf32>, memref<4xf32>, f32) -> ()
// CHECK: call @[[K1:tg_kernel_[0-9]+]](%{{.+}}, %{{.+}}, %[[S]]) : (memref<8xf32>, memref<8xf32>, f32) -> ()
// CHECK: linalg.generic
// CHECK-SAME: tensor<4xf32>
#id = affine_map<(d0) -> (d0)>
func.func @scale(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<8xf32>,
                 %d: memref<8xf32>, %s: f32, %t: tensor<4xf32>) -> tensor<4xf32> {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %s : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : memref<8xf32>) outs(%d : memref<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %s : f32
    linalg.yield %r : f32
  }
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%t : tensor<4xf32>) outs(%t : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %u : tensor<4xf32>
}

// -----

// A loop nest marked tg_cpu.kernel (a row-reduction group's row loop) moves
// whole into ONE kernel, the linalg ops in it with it: the two identical
// row loops share it, called once each (not once per op per row). The
// loop bounds are constants, cloned into the kernel; the buffers and the
// scalar the body reads are arguments. The lone generic after them is its
// own kernel, as before. The copy of each row's result from its subview
// onto an equal one (what bufferizing the loop-carried result leaves) is
// dropped, so the first loop's kernel is the second's.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %[[X:[a-z0-9_]+]]: memref<4x8xf32>, %[[Y:[a-z0-9_]+]]: memref<4x8xf32>, %[[Z:[a-z0-9_]+]]: memref<4x8xf32>, %[[S:[a-z0-9_]+]]: f32)
// CHECK: call @[[ROW:tg_kernel_[0-9]+]](%[[X]], %[[Y]], %[[S]])
// CHECK-NEXT: call @[[ROW]](%[[Y]], %[[Z]], %[[S]])
// CHECK-NEXT: call @[[ONE:tg_kernel_[0-9]+]](%[[Z]], %[[X]])
// CHECK-NEXT: return
// CHECK: func.func private @[[ROW]](%[[A:[a-z0-9_]+]]: memref<4x8xf32>, %[[B:[a-z0-9_]+]]: memref<4x8xf32>, %{{.+}}: f32) attributes {passthrough = ["noinline"]}
// CHECK: scf.for
// CHECK: memref.subview %[[A]]
// CHECK: memref.alloca() : memref<1x8xf32>
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK-NOT: memref.copy
// CHECK: } {tg_cpu.kernel}
// CHECK-NEXT: return
// CHECK: func.func private @[[ONE]](
// CHECK-NOT: scf.for
// CHECK: arith.negf
// CHECK-NOT: func.func private @tg_kernel
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @rows(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %z: memref<4x8xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %in = memref.subview %x[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    %out = memref.subview %y[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    %t = memref.alloca() : memref<1x8xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%in : memref<1x8xf32, strided<[8, 1], offset: ?>>) outs(%t : memref<1x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.mulf %a, %s : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%in, %t : memref<1x8xf32, strided<[8, 1], offset: ?>>, memref<1x8xf32>) outs(%out : memref<1x8xf32, strided<[8, 1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
    }
    %again = memref.subview %y[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    memref.copy %out, %again : memref<1x8xf32, strided<[8, 1], offset: ?>> to memref<1x8xf32, strided<[8, 1], offset: ?>>
  } {tg_cpu.kernel}
  scf.for %i = %c0 to %c4 step %c1 {
    %in = memref.subview %y[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    %out = memref.subview %z[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    %t = memref.alloca() : memref<1x8xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%in : memref<1x8xf32, strided<[8, 1], offset: ?>>) outs(%t : memref<1x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.mulf %a, %s : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%in, %t : memref<1x8xf32, strided<[8, 1], offset: ?>>, memref<1x8xf32>) outs(%out : memref<1x8xf32, strided<[8, 1], offset: ?>>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
    }
  } {tg_cpu.kernel}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : memref<4x8xf32>) outs(%x : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// An unmarked loop, or a marked one that yields a value, stays in place:
// each linalg op on buffers inside it is its own kernel, called per
// iteration.
// CHECK-LABEL: func.func @not_whole(
// CHECK: scf.for
// CHECK-NEXT: memref.subview
// CHECK-NEXT: call @tg_kernel_{{[0-9]+}}(
// CHECK-NEXT: }
// CHECK: scf.for
// CHECK: call @tg_kernel_{{[0-9]+}}(
// CHECK: scf.yield
// CHECK-NEXT: } {tg_cpu.kernel}
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @not_whole(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %f: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %in = memref.subview %x[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%in : memref<1x8xf32, strided<[8, 1], offset: ?>>) {
    ^bb0(%o: f32):
      %r = arith.negf %o : f32
      linalg.yield %r : f32
    }
  }
  %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %f) -> f32 {
    %in = memref.subview %y[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%in : memref<1x8xf32, strided<[8, 1], offset: ?>>) {
    ^bb0(%o: f32):
      %r = arith.negf %o : f32
      linalg.yield %r : f32
    }
    %n = arith.addf %acc, %acc : f32
    scf.yield %n : f32
  } {tg_cpu.kernel}
  return %sum : f32
}
