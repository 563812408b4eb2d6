// RUN: tg-opt %s --tg-cpu-pipeline --mlir-print-ir-after=tg-outline-kernels -o /dev/null 2>&1 | FileCheck %s

// Issue 14: a row-reduction group is ONE kernel through the whole CPU
// pipeline. Each group's row loop (FusedToLoops.cpp tileRows) is outlined
// whole by tg-outline-kernels, so the step calls one kernel per group (not
// one per linalg op per row), and the two softmax groups of one shape share
// their kernel; the layer norm (rows of a 3-D tensor: a nest of two loops)
// is another.
// CHECK-LABEL: func.func @step(
// CHECK-NOT: scf.for
// CHECK: call @[[SOFTMAX:tg_kernel_[0-9]+]](
// CHECK-NOT: scf.for
// CHECK: call @[[SOFTMAX]](
// CHECK-NOT: scf.for
// CHECK: call @[[NORM:tg_kernel_[0-9]+]](
// CHECK-NOT: scf.for
// CHECK: return
// CHECK: func.func private @[[SOFTMAX]](
// CHECK: scf.for
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: } {tg_cpu.kernel}
// CHECK-NEXT: return
// CHECK: func.func private @[[NORM]](
// CHECK: scf.for
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK: } {tg_cpu.kernel}
// CHECK-NEXT: return
// CHECK-NOT: func.func private @tg_kernel
func.func @step(%x: tensor<4x10xf32>, %z: tensor<2x3x8xf32>) -> (tensor<4x10xf32>, tensor<2x3x8xf32>) {
  %r = tg.fused <row_reduction> ins(%x : tensor<4x10xf32>) {
  ^bb0(%a: tensor<4x10xf32>):
    %m = tg.max %a axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
    %d = tg.sub %a, %m : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
    %e = tg.exp %d : tensor<4x10xf32>
    %s = tg.sum %e axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
    %p = tg.div %e, %s : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
    tg.yield %p : tensor<4x10xf32>
  } -> tensor<4x10xf32>
  %q = tg.fused <row_reduction> ins(%r : tensor<4x10xf32>) {
  ^bb0(%a: tensor<4x10xf32>):
    %m = tg.max %a axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
    %d = tg.sub %a, %m : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
    %e = tg.exp %d : tensor<4x10xf32>
    %s = tg.sum %e axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
    %p = tg.div %e, %s : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
    tg.yield %p : tensor<4x10xf32>
  } -> tensor<4x10xf32>
  %n = tg.fused <row_reduction> ins(%z : tensor<2x3x8xf32>) {
  ^bb0(%a: tensor<2x3x8xf32>):
    %m = tg.mean %a axes = [2] keepdims : tensor<2x3x8xf32> -> tensor<2x3x1xf32>
    %d = tg.sub %a, %m : tensor<2x3x8xf32>, tensor<2x3x1xf32> -> tensor<2x3x8xf32>
    %y = tg.mul %d, %d : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
    tg.yield %y : tensor<2x3x8xf32>
  } -> tensor<2x3x8xf32>
  return %q, %n : tensor<4x10xf32>, tensor<2x3x8xf32>
}
