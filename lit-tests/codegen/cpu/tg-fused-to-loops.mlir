// RUN: tg-opt %s --split-input-file --tg-convert-to-linalg | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-convert-to-linalg=fuse-groups=false | FileCheck %s --check-prefix=UNFUSED
// RUN: tg-opt %s --split-input-file --tg-bind-arena | FileCheck %s --check-prefix=ARENA

// The CPU backend consumes tg-fuse's groups (codegen/cpu/FusedToLoops.cpp):
// each group's body is lowered, its loop nests fused, and the body inlined.
// With fuse-groups=false each op of a group is its own loop nest.

// An elementwise group with a broadcast operand and three results (the
// intermediates needed later): one loop nest writing all three.
// CHECK-LABEL: func.func @elementwise
// CHECK-COUNT-1: linalg.generic
// CHECK-SAME: indexing_maps = [#[[ID:map[0-9]*]], #[[ROW:map[0-9]*]], #[[ID]], #[[ID]], #[[ID]]]
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.mulf
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.negf
// CHECK-NEXT: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return
// UNFUSED-LABEL: func.func @elementwise
// UNFUSED-COUNT-3: linalg.generic
// UNFUSED-NOT: linalg.generic
// UNFUSED: return
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %r:3 = tg.fused <elementwise> ins(%a, %b : tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<8xf32>):
    %0 = tg.mul %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %1 = tg.exp %0 : tensor<4x8xf32>
    %2 = tg.neg %1 : tensor<4x8xf32>
    tg.yield %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  } -> tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  return %r#0, %r#1, %r#2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A gemm group: the contraction, then its whole epilogue (bias, relu) as one
// loop nest, which also writes the pre-activation the backward pass needs.
// CHECK-LABEL: func.func @gemm
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: "reduction"
// CHECK: %[[EPI:.+]]:2 = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: arith.addf
// CHECK: arith.select
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[EPI]]#1, %[[EPI]]#0
// UNFUSED-LABEL: func.func @gemm
// UNFUSED-COUNT-3: linalg.generic
// UNFUSED-NOT: linalg.generic
// UNFUSED: return
func.func @gemm(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %r:2 = tg.fused <gemm> ins(%x, %w, %b : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) {
  ^bb0(%a: tensor<8x16xf32>, %c: tensor<16x32xf32>, %d: tensor<32xf32>):
    %m = tg.matmul %a, %c : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %s = tg.add %m, %d : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %y = tg.relu %s : tensor<8x32xf32>
    tg.yield %y, %s : tensor<8x32xf32>, tensor<8x32xf32>
  } -> tensor<8x32xf32>, tensor<8x32xf32>
  return %r#0, %r#1 : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// A row reduction (softmax) is row-tiled: ONE loop over the rows whose body
// computes the row's max, exp(x - max), sum and output. exp(x - max) is read
// by the sum and by the output after it, so it stays a loop nest of its own,
// but over one row (a 1x10 temporary), not the whole tensor; the output is
// written into the loop-carried result, row by row. The loop is marked
// tg_cpu.kernel: tg-outline-kernels makes it one kernel.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: tensor<4x10xf32>)
// CHECK: %[[R:.+]] = scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (tensor<4x10xf32>)
// CHECK: tensor.empty() : tensor<1x1xf32>
// CHECK: tensor.extract_slice %[[X]][%[[I]], 0] [1, 10] [1, 1]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[E0:.+]] = tensor.empty() : tensor<1x10xf32>
// CHECK: %[[E:.+]] = linalg.generic
// CHECK-SAME: outs(%[[E0]] : tensor<1x10xf32>)
// CHECK: arith.subf
// CHECK-NEXT: math.exp
// CHECK: %[[S:.+]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[E]] : tensor<1x10xf32>)
// CHECK: arith.addf
// CHECK: %[[OUT:.+]] = tensor.extract_slice %[[ACC]][%[[I]], 0] [1, 10] [1, 1]
// CHECK: %[[P:.+]] = linalg.generic
// CHECK-SAME: ins(%[[E]], %[[S]] : tensor<1x10xf32>, tensor<1x1xf32>) outs(%[[OUT]] : tensor<1x10xf32>)
// CHECK: arith.divf
// CHECK: %[[INS:.+]] = tensor.insert_slice %[[P]] into %[[ACC]][%[[I]], 0] [1, 10] [1, 1]
// CHECK: scf.yield %[[INS]]
// CHECK-NEXT: } {tg_cpu.kernel}
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
// UNFUSED-LABEL: func.func @softmax
// UNFUSED-NOT: scf.for
// UNFUSED-COUNT-5: linalg.generic
// UNFUSED-NOT: linalg.generic
// UNFUSED: return
func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %r = tg.fused <row_reduction> ins(%x : tensor<4x10xf32>) {
  ^bb0(%a: tensor<4x10xf32>):
    %m = tg.max %a axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
    %d = tg.sub %a, %m : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
    %e = tg.exp %d : tensor<4x10xf32>
    %s = tg.sum %e axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
    %p = tg.div %e, %s : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
    tg.yield %p : tensor<4x10xf32>
  } -> tensor<4x10xf32>
  return %r : tensor<4x10xf32>
}

// -----

// A layer norm over rows of a 3-D tensor yielding its row statistic too:
// one loop per row dimension (2 x 3 rows), the mean's fill and sum written
// into the loop-carried mean result in place, the output into its own; the
// weight (read by every row) is read whole. The outer loop is the kernel.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x8xf32>, %[[W:.+]]: tensor<8xf32>)
// CHECK: %[[R:.+]]:2 = scf.for %[[I:.+]] = {{.+}} iter_args(%[[Y0:.+]] = %{{.+}}, %[[M0:.+]] = %{{.+}}) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
// CHECK: %[[IN:.+]]:2 = scf.for %[[J:.+]] = {{.+}} iter_args(%[[Y:.+]] = %[[Y0]], %[[M:.+]] = %[[M0]]) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
// CHECK: %[[MS:.+]] = tensor.extract_slice %[[M]][%[[I]], %[[J]], 0] [1, 1, 1] [1, 1, 1]
// CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[MS]] : tensor<1x1x1xf32>)
// CHECK: tensor.extract_slice %[[X]][%[[I]], %[[J]], 0] [1, 1, 8] [1, 1, 1]
// CHECK: %[[SUM:.+]] = linalg.generic
// CHECK-SAME: outs(%[[FILL]] : tensor<1x1x1xf32>)
// CHECK: arith.addf
// CHECK: %[[MEAN:.+]] = linalg.generic
// CHECK-SAME: outs(%[[SUM]] : tensor<1x1x1xf32>)
// CHECK: arith.divf
// CHECK: tensor.extract_slice %[[W]][0] [8] [1]
// CHECK: %[[YS:.+]] = tensor.extract_slice %[[Y]][%[[I]], %[[J]], 0] [1, 1, 8] [1, 1, 1]
// CHECK: %[[OUT:.+]] = linalg.generic
// CHECK-SAME: ins(%{{.+}}, %[[MEAN]], %{{.+}} : tensor<1x1x8xf32>, tensor<1x1x1xf32>, tensor<8xf32>) outs(%[[YS]] : tensor<1x1x8xf32>)
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: %[[Y1:.+]] = tensor.insert_slice %[[OUT]] into %[[Y]][%[[I]], %[[J]], 0] [1, 1, 8] [1, 1, 1]
// CHECK: %[[M1:.+]] = tensor.insert_slice %[[MEAN]] into %[[M]][%[[I]], %[[J]], 0] [1, 1, 1] [1, 1, 1]
// CHECK: scf.yield %[[Y1]], %[[M1]]
// CHECK-NEXT: }{{$}}
// CHECK-NEXT: scf.yield %[[IN]]#0, %[[IN]]#1
// CHECK-NEXT: } {tg_cpu.kernel}
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @layer_norm(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>) {
  %r:2 = tg.fused <row_reduction> ins(%x, %w : tensor<2x3x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<2x3x8xf32>, %b: tensor<8xf32>):
    %m = tg.mean %a axes = [2] keepdims : tensor<2x3x8xf32> -> tensor<2x3x1xf32>
    %d = tg.sub %a, %m : tensor<2x3x8xf32>, tensor<2x3x1xf32> -> tensor<2x3x8xf32>
    %y = tg.mul %d, %b : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
    tg.yield %y, %m : tensor<2x3x8xf32>, tensor<2x3x1xf32>
  } -> tensor<2x3x8xf32>, tensor<2x3x1xf32>
  return %r#0, %r#1 : tensor<2x3x8xf32>, tensor<2x3x1xf32>
}

// -----

// A reduction group (a bias gradient with its prologue): one loop nest.
// CHECK-LABEL: func.func @reduction
// CHECK-COUNT-1: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK: arith.select
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @reduction(%g: tensor<16x8xf32>, %h: tensor<16x8xf32>) -> tensor<8xf32> {
  %r = tg.fused <reduction> ins(%g, %h : tensor<16x8xf32>, tensor<16x8xf32>) {
  ^bb0(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>):
    %0 = tg.relu %b : tensor<16x8xf32>
    %1 = tg.mul %a, %0 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
    %2 = tg.sum %1 axes = [0] : tensor<16x8xf32> -> tensor<8xf32>
    tg.yield %2 : tensor<8xf32>
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A mean divides the sum in the sum's own buffer: fused into a consumer that
// broadcasts it, the division would be applied at every point of the row.
// It stays its own (small) loop nest; the elementwise tail is one.
// CHECK-LABEL: func.func @mean_broadcast
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: %[[MEAN:.+]] = linalg.generic
// CHECK: arith.divf %out
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}}, %[[MEAN]] :
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @mean_broadcast(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %r = tg.fused <row_reduction> ins(%x : tensor<4x10xf32>) {
  ^bb0(%a: tensor<4x10xf32>):
    %m = tg.mean %a axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
    %d = tg.sub %a, %m : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
    %q = tg.mul %d, %d : tensor<4x10xf32>, tensor<4x10xf32> -> tensor<4x10xf32>
    tg.yield %q : tensor<4x10xf32>
  } -> tensor<4x10xf32>
  return %r : tensor<4x10xf32>
}

// -----

// Fusion would move the producer's read of %a below the op that computes
// the group's first result, which the plan may have put over %a: the
// producer stays its own loop nest.
// CHECK-LABEL: func.func @result_between
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @result_between(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = tg.fused <optimizer> ins(%a, %b : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %0 = tg.exp %x : tensor<4xf32>
    %1 = tg.neg %y : tensor<4xf32>
    %2 = tg.sub %0, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tg.yield %1, %2 : tensor<4xf32>, tensor<4xf32>
  } -> tensor<4xf32>, tensor<4xf32>
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The plan of a multi-result group (tg.offsets, tg.alias_args; -1: none)
// binds each result to its own slot or argument, before the group is
// lowered; the group's loop nest then writes there.
// ARENA-LABEL: func.func @planned(
// ARENA-SAME: %[[W:[a-z0-9_]+]]: tensor<4xf32> {bufferization.writable = true}
// ARENA-SAME: %[[ARENA:[a-z0-9_]+]]: memref<512xi8> {tg.arena})
// ARENA: %[[C64:.+]] = arith.constant 64 : index
// ARENA: memref.view %[[ARENA]][%[[C64]]][] : memref<512xi8> to memref<4xf32>
// ARENA: %[[D:.+]] = bufferization.to_tensor
// ARENA: %[[G:.+]]:3 = tg.fused <elementwise>
// ARENA-NOT: materialize_in_destination %[[G]]#1
// ARENA-DAG: bufferization.materialize_in_destination %[[G]]#0 in %[[D]]
// ARENA-DAG: bufferization.materialize_in_destination %[[G]]#2 in %[[W]]
// ARENA-NOT: materialize_in_destination %[[G]]#1
// ARENA: return
func.func @planned(%w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {tg.memory = #tg.memory<params_bytes = 16, optimizer_bytes = 0, inputs_bytes = 0, grads_bytes = 0, activations_bytes = 512, workspace_bytes = 0, persistent_bytes = 16, transient_bytes = 512, peak_bytes = 528, lower_bound_bytes = 528, naive_bytes = 528>} {
  %r:3 = tg.fused <elementwise> ins(%w : tensor<4xf32>) attributes {tg.offsets = array<i64: 64, -1, -1>, tg.alias_args = array<i64: -1, -1, 0>} {
  ^bb0(%a: tensor<4xf32>):
    %0 = tg.exp %a : tensor<4xf32>
    %1 = tg.neg %0 : tensor<4xf32>
    %2 = tg.sub %a, %1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tg.yield %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  } -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return %r#0, %r#2 : tensor<4xf32>, tensor<4xf32>
}
