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
