// RUN: tg-opt %s --tg-bind-arena | FileCheck %s
// RUN: tg-opt %s --tg-bind-arena '--tg-cpu-pipeline=arena=1' | FileCheck %s --check-prefix=LLVM
// RUN: tg-opt %s '--tg-cpu-pipeline=arena=1' | FileCheck %s --check-prefix=VIEW

// A planned function gets one arena argument; each value with a tg.offset
// is materialised in its slice, in-place updates (tg.alias_arg) in their
// argument (now writable), and the loop's carried value in its result's
// slot, with the next value written over the current one.

// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[W:[a-z0-9_]+]]: tensor<4xf32> {bufferization.writable = true, tg.name = "w", tg.role = #tg.role<param>}
// CHECK-SAME: %[[ARENA:[a-z0-9_]+]]: memref<1024xi8> {tg.arena})
// CHECK: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK: %[[V:[a-z0-9_]+]] = memref.view %[[ARENA]][%[[C256]]][] : memref<1024xi8> to memref<4xf32>
// CHECK: %[[D:[a-z0-9_]+]] = bufferization.to_tensor %[[V]] restrict writable
// CHECK: %[[E:[a-z0-9_]+]] = tg.exp %[[W]]
// CHECK: %[[M:[a-z0-9_]+]] = bufferization.materialize_in_destination %[[E]] in %[[D]]
// CHECK: %[[INIT:[a-z0-9_]+]] = bufferization.materialize_in_destination %{{.*}} in %{{.*}}
// CHECK: scf.for {{.*}} iter_args(%[[ACC:[a-z0-9_]+]] = %[[INIT]])
// CHECK:   %[[SUM:[a-z0-9_]+]] = tg.add %[[ACC]], %[[M]]
// CHECK:   %[[NEXT:[a-z0-9_]+]] = bufferization.materialize_in_destination %{{.*}} in %[[ACC]]
// CHECK:   scf.yield %[[NEXT]]
// CHECK: %[[U:[a-z0-9_]+]] = tg.sub %[[W]], %{{.*}} {tg.alias_arg = 0 : i64
// CHECK: %[[UW:[a-z0-9_]+]] = bufferization.materialize_in_destination %[[U]] in %[[W]]
// CHECK: return %{{.*}}, %[[UW]]

// After lowering, nothing but the arena holds the step's values.
// LLVM-LABEL: llvm.func @step(
// LLVM-NOT: @malloc
// LLVM-NOT: @aligned_alloc
// LLVM: llvm.return

func.func @step(%w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<4xf32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>}) attributes {tg.memory = #tg.memory<params_bytes = 16, optimizer_bytes = 0, inputs_bytes = 0, grads_bytes = 0, activations_bytes = 1024, workspace_bytes = 0, persistent_bytes = 16, transient_bytes = 1024, peak_bytes = 1040, lower_bound_bytes = 1040, naive_bytes = 1040>} {
  %e = tg.exp %w {tg.offset = 256 : i64} : tensor<4xf32>
  %z = tg.constant dense<0.0> : tensor<4xf32>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %s = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %z) -> (tensor<4xf32>) {
    %n = tg.add %acc, %e {tg.offset = 768 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  } {tg.offset = 512 : i64}
  %u = tg.sub %w, %s {tg.alias_arg = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %s, %u : tensor<4xf32>, tensor<4xf32>
}

// A reshape the plan made a view (its operand's tg.offset) is not
// materialised: it collapses the operand's materialised value, which
// bufferizes to a view of the same arena bytes, so the code copies nothing
// and allocates nothing.
// CHECK-LABEL: func.func @view(
// CHECK: %[[VV:[a-z0-9_]+]] = memref.view %{{.*}}[%{{.*}}][] : memref<512xi8> to memref<2x4xf32>
// CHECK: %[[VD:[a-z0-9_]+]] = bufferization.to_tensor %[[VV]] restrict writable
// CHECK: %[[VE:[a-z0-9_]+]] = tg.exp
// CHECK: %[[VM:[a-z0-9_]+]] = bufferization.materialize_in_destination %[[VE]] in %[[VD]]
// CHECK: %[[VR:[a-z0-9_]+]] = tg.reshape %[[VM]] {tg.bytes = 32 : i64, tg.offset = 0 : i64}
// CHECK-NOT: materialize_in_destination %[[VR]]
// CHECK: tg.matmul %[[VR]]
// Lowered (tg-bind-arena once, as tgc runs it), the matmul reads the
// exp's arena bytes through memref.collapse_shape/expand_shape: the one
// copy left is the result's into the caller's buffer (a copy of the
// reshape would be a second).
// VIEW-LABEL: llvm.func @view(
// VIEW-NOT: @malloc
// VIEW: llvm.intr.memcpy
// VIEW-NOT: llvm.intr.memcpy
// VIEW: llvm.return
func.func @view(%x: tensor<2x4xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<8x2xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<1x2xf32> {tg.name = "y", tg.role = #tg.role<output>}) attributes {tg.memory = #tg.memory<params_bytes = 64, optimizer_bytes = 0, inputs_bytes = 32, grads_bytes = 0, activations_bytes = 0, workspace_bytes = 512, persistent_bytes = 512, transient_bytes = 512, peak_bytes = 1024, lower_bound_bytes = 1024, naive_bytes = 1024>} {
  %e = tg.exp %x {tg.bytes = 32 : i64, tg.offset = 0 : i64} : tensor<2x4xf32>
  %v = tg.reshape %e {tg.bytes = 32 : i64, tg.offset = 0 : i64} : tensor<2x4xf32> to tensor<1x8xf32>
  %y = tg.matmul %v, %w {tg.bytes = 8 : i64, tg.offset = 256 : i64} : tensor<1x8xf32>, tensor<8x2xf32> -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}
