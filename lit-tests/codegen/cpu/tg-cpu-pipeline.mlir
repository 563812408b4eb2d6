// RUN: tg-opt %s --tg-build-train-step --tg-cpu-pipeline | FileCheck %s
// RUN: tg-opt %s --tg-build-train-step --tg-cpu-pipeline="entry-points=train_step" | FileCheck %s --check-prefix=ONLY
// RUN: tg-opt %s --tg-build-train-step --tg-cpu-pipeline | FileCheck %s --check-prefix=COS

// A whole training module (func.call, scf.for over micro-batches,
// tensor.extract_slice, index arithmetic, tg.random in @init) lowers to the
// LLVM dialect. Every result is an out-parameter, so the C interface of
// train_step takes 4 arguments + 4 results, each a memref descriptor
// pointer, and returns nothing; every intermediate buffer is freed.
// CHECK-NOT: = tg.
// CHECK-LABEL: llvm.func @forward_grad(
// CHECK-LABEL: llvm.func @train_step(
// CHECK: llvm.call @forward_grad(
// CHECK: llvm.call @free
// CHECK-LABEL: llvm.func @_mlir_ciface_train_step(
// CHECK-SAME: %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: !llvm.ptr)
// CHECK-NOT: ->
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-LABEL: llvm.func @init(
// CHECK-LABEL: llvm.func @_mlir_ciface_init(
// CHECK-LABEL: llvm.func @_mlir_ciface_eval(

// The cosine schedule's cos lowers to the intrinsic (in @init or in a
// kernel that tg-outline-kernels moved out of it).
// COS: llvm.intr.cos

// ONLY-NOT: @_mlir_ciface_init
// ONLY: llvm.func @_mlir_ciface_train_step(
// ONLY-NOT: @_mlir_ciface_
module attributes {tg.train = {accumulate = 2 : i64, optimizer = {kind = "momentum", lr = 0.1 : f64, momentum = 0.9 : f64, nesterov = 1 : i64, weight_decay = 0.0 : f64}, schedule = {kind = "warmup", steps = 10 : i64}}} {
func.func @forward(%x: tensor<4x3xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<3xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<normal(0.0, 1.0)>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = tg.mean %0 axes = [0, 1] : tensor<4x3xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
}
