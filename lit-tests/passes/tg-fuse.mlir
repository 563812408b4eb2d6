// RUN: tg-opt %s --split-input-file --tg-fuse | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-fuse=optimizer-group=false | FileCheck %s --check-prefix=NOOPT
// RUN: tg-opt %s --split-input-file --tg-fuse | tg-opt --split-input-file --tg-inline-fused | FileCheck %s --check-prefix=INLINE

// Each case checks the grouping and the cost model's record alone (no
// lowering); tg-inline-fused gives the ops back, transposes still folded.
// INLINE-LABEL: func.func @gemm
// INLINE-NOT: tg.fused
// INLINE: tg.matmul %{{.+}}, %{{.+}} {transpose_rhs}
// INLINE-NOT: tg.yield
// INLINE-NOT: tg.fused

// A matmul with its epilogue (bias, relu) is one gemm kernel; the transpose
// feeding only the matmul folds into transpose_rhs.
// CHECK-LABEL: func.func @gemm
// CHECK-NOT: tg.transpose
// CHECK: %[[G:.+]] = tg.fused <gemm> ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) attributes {tg.bytes_read = 2688 : i64, tg.bytes_written = 1024 : i64, tg.flops = 8704 : i64}
// CHECK: tg.matmul %{{.+}}, %{{.+}} {transpose_rhs} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
// CHECK-NEXT: tg.add
// CHECK-NEXT: %[[Y:.+]] = tg.relu
// CHECK-NEXT: tg.yield %[[Y]] : tensor<8x32xf32>
// CHECK: return %[[G]]
func.func @gemm(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %t = tg.transpose %w perm = [1, 0] : tensor<32x16xf32> -> tensor<16x32xf32>
  %m = tg.matmul %x, %t : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %s = tg.add %m, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %y = tg.relu %s : tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// An elementwise chain; the intermediate also needed later is a second result.
// CHECK-LABEL: func.func @elementwise
// CHECK: %[[E:.+]]:3 = tg.fused <elementwise>
// CHECK-SAME: tg.bytes_read = 160 : i64, tg.bytes_written = 384 : i64
// CHECK: %[[M:.+]] = tg.mul
// CHECK-NEXT: %[[X:.+]] = tg.exp %[[M]]
// CHECK-NEXT: %[[N:.+]] = tg.neg %[[X]]
// CHECK-NEXT: tg.yield %[[M]], %[[X]], %[[N]]
// CHECK: tg.matmul %[[E]]#1, %{{.+}} {transpose_rhs}
// CHECK-NOT: tg.fused
// CHECK: return %[[E]]#2, %[[E]]#0
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tg.mul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %1 = tg.exp %0 : tensor<4x8xf32>
  %2 = tg.neg %1 : tensor<4x8xf32>
  %3 = tg.matmul %1, %a {transpose_rhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
  %4 = tg.sum %3 axes = [1] : tensor<4x4xf32> -> tensor<4xf32>
  return %2, %0 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A decomposed softmax: both reductions over rows and the elementwise ops
// between and after them are one row_reduction kernel.
// CHECK-LABEL: func.func @softmax
// CHECK: tg.fused <row_reduction> ins(%{{.+}} : tensor<4x10xf32>) attributes {tg.bytes_read = 160 : i64, tg.bytes_written = 160 : i64, tg.flops = 200 : i64}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tg.max
// CHECK-NEXT: tg.sub
// CHECK-NEXT: tg.exp
// CHECK-NEXT: tg.sum
// CHECK-NEXT: tg.div
// CHECK-NEXT: tg.yield
func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %m = tg.max %x axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
  %d = tg.sub %x, %m : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
  %e = tg.exp %d : tensor<4x10xf32>
  %s = tg.sum %e axes = [1] keepdims : tensor<4x10xf32> -> tensor<4x1xf32>
  %p = tg.div %e, %s : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
  return %p : tensor<4x10xf32>
}

// -----

// A column sum (bias gradient) with its elementwise prologue; what reads the
// sum is another kernel.
// CHECK-LABEL: func.func @reduction
// CHECK: %[[R:.+]] = tg.fused <reduction> ins(%{{.+}}, %{{.+}} : tensor<16x8xf32>, tensor<16x8xf32>)
// CHECK-SAME: tg.bytes_written = 32 : i64
// CHECK: tg.relu
// CHECK-NEXT: tg.mul
// CHECK-NEXT: tg.sum
// CHECK-NEXT: tg.yield
// CHECK: tg.fused <elementwise> ins(%[[R]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tg.exp
// CHECK-NEXT: tg.neg
func.func @reduction(%g: tensor<16x8xf32>, %h: tensor<16x8xf32>) -> tensor<8xf32> {
  %0 = tg.relu %h : tensor<16x8xf32>
  %1 = tg.mul %g, %0 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %2 = tg.sum %1 axes = [0] : tensor<16x8xf32> -> tensor<8xf32>
  %3 = tg.exp %2 : tensor<8xf32>
  %4 = tg.neg %3 : tensor<8xf32>
  return %4 : tensor<8xf32>
}

// -----

// The update of every parameter is one optimizer kernel, whatever the shapes.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: tg.constant
// CHECK: %[[U:.+]]:2 = tg.fused <optimizer> ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tg.constant dense<1.000000e-01>
// CHECK-COUNT-2: tg.mul
// CHECK: tg.yield
// CHECK: return %[[U]]#0, %[[U]]#1
// NOOPT-LABEL: func.func @train_step
// NOOPT-NOT: <optimizer>
// NOOPT-COUNT-2: tg.fused <elementwise>
func.func @train_step(%w: tensor<4x8xf32> {tg.name = "w", tg.role = #tg.role<param>}, %b: tensor<8xf32> {tg.name = "b", tg.role = #tg.role<param>}, %gw: tensor<4x8xf32> {tg.name = "gw", tg.role = #tg.role<input>}, %gb: tensor<8xf32> {tg.name = "gb", tg.role = #tg.role<input>}) -> (tensor<4x8xf32> {tg.name = "w", tg.role = #tg.role<param>}, tensor<8xf32> {tg.name = "b", tg.role = #tg.role<param>}) {
  %lr = tg.constant dense<0.1> : tensor<f32>
  %0 = tg.mul %gw, %lr : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = tg.sub %w, %0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = tg.mul %gb, %lr : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %3 = tg.sub %b, %2 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %1, %3 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// A matmul whose operand is computed cannot take a prologue; a chain that
// would depend on itself through an outside op is not merged.
// CHECK-LABEL: func.func @unfusable
// CHECK: %[[X:.+]] = tg.exp
// CHECK-NEXT: tg.matmul %[[X]], %[[X]] :
// CHECK-NEXT: tg.reshape
// CHECK-NEXT: tg.reshape
// CHECK-NEXT: tg.fused <elementwise>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tg.add
// CHECK-NEXT: tg.add
// CHECK-NEXT: tg.yield
func.func @unfusable(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tg.exp %x : tensor<4x4xf32>
  %1 = tg.matmul %0, %0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %2 = tg.reshape %0 : tensor<4x4xf32> to tensor<16xf32>
  %3 = tg.reshape %2 : tensor<16xf32> to tensor<4x4xf32>
  %4 = tg.add %0, %3 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %5 = tg.add %4, %1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %5 : tensor<4x4xf32>
}

// -----

// In a gradient function, the backward's ops that read a forward value
// (here 1 - h * h, tanh's derivative) do not join the forward's kernel,
// though the merged group would be one legal reduction kernel: it would
// run in the forward pass and keep the backward's values until the
// backward. Two kernels, one per pass.
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[F:.+]]:3 = tg.fused <reduction>
// CHECK: tg.tanh
// CHECK-NEXT: tg.exp
// CHECK-NEXT: tg.sum
// CHECK-NEXT: tg.yield
// CHECK: %[[B:.+]] = tg.fused <elementwise> ins(%[[F]]#0, %[[F]]#1
// CHECK: tg.mul
// CHECK-NEXT: tg.sub
// CHECK-NEXT: tg.mul
// CHECK-NEXT: tg.yield
// CHECK: return %[[F]]#2, %[[B]]
func.func @forward_grad(%x: tensor<4x8xf32> {tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}, tensor<4x8xf32> {tg.role = #tg.role<grad>}) {
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %h = tg.tanh %x : tensor<4x8xf32>
  %e = tg.exp %h : tensor<4x8xf32>
  %l = tg.sum %e axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %hh = tg.mul %h, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d = tg.sub %one, %hh : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %g = tg.mul %d, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %l, %g : tensor<f32>, tensor<4x8xf32>
}

// -----

// The same ops in a function that returns no gradient are one kernel.
// CHECK-LABEL: func.func @no_grad
// CHECK: %[[K:.+]]:2 = tg.fused <reduction>
// CHECK: tg.constant
// CHECK-COUNT-6: tg.{{tanh|exp|sum|mul|sub}}
// CHECK-NEXT: tg.yield
// CHECK-NOT: tg.fused
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @no_grad(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x8xf32>) {
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %h = tg.tanh %x : tensor<4x8xf32>
  %e = tg.exp %h : tensor<4x8xf32>
  %l = tg.sum %e axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %hh = tg.mul %h, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %d = tg.sub %one, %hh : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %g = tg.mul %d, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %l, %g : tensor<f32>, tensor<4x8xf32>
}

// -----

// Cross-entropy forward and backward in ONE pass over each row (issue 14,
// the sibling merge): the loss's row reduction (log-softmax, the picked
// log-probability) and the gradient's (the softmax replayed minus the
// one-hot, times the row's scale) read the same logits; between them only
// per-row values are computed (the loss's mean, the scale from the
// labels), so they are one row_reduction kernel. Its replays are the
// forward values they replay: one max, one exp, one sum, one one_hot, no
// tg.recomputed inside. The scale is computed before it, from the labels.
// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK: tg.fused <reduction> ins(%arg1 : tensor<4xi64>)
// CHECK: tg.reshape
// CHECK: %[[CE:.+]]:3 = tg.fused <row_reduction> ins(%arg0, %arg1, %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4xi64>, tensor<4x1xf32>, tensor<f32>)
// CHECK-NOT: tg.recomputed
// CHECK: tg.max
// CHECK-NOT: tg.max
// CHECK: %[[E:.+]] = tg.exp
// CHECK-NOT: tg.exp
// CHECK: %[[S:.+]] = tg.sum %[[E]] axes = [1] keepdims
// CHECK: tg.log %[[S]]
// CHECK: %[[OH:.+]] = tg.one_hot
// CHECK-NOT: tg.one_hot
// CHECK: %[[P:.+]] = tg.div %[[E]], %[[S]]
// CHECK: %[[D:.+]] = tg.sub %[[P]], %[[OH]]
// CHECK: %[[G:.+]] = tg.mul %[[D]], %{{.+}} : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK: tg.yield %{{.+}}, %{{.+}}, %[[G]] : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>
// CHECK-NOT: tg.fused <row_reduction>
// CHECK: return %{{.+}}, %[[CE]]#2
func.func @cross_entropy_grad(%x: tensor<4x8xf32>, %y: tensor<4xi64>) -> (tensor<f32> {tg.role = #tg.role<loss>}, tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<grad>}) {
  %zero = tg.constant dense<0.000000e+00> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %ignore = tg.constant dense<-100> : tensor<i64>
  %c0 = tg.constant dense<0> : tensor<i64>
  %c8 = tg.constant dense<8> : tensor<i64>
  %m = tg.max %x axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %s = tg.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tg.exp %s : tensor<4x8xf32>
  %z = tg.sum %e axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %l = tg.log %z : tensor<4x1xf32>
  %lp = tg.sub %s, %l : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %oh = tg.one_hot %y : tensor<4xi64> -> tensor<4x8xf32>
  %is = tg.cmp ne %oh, %zero : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1>
  %pk = tg.select %is, %lp, %zero : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %picked = tg.sum %pk axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %valid = tg.cmp ne %y, %ignore : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %neg = tg.neg %picked : tensor<4xf32>
  %nll = tg.select %valid, %neg, %zero : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %cnt = tg.select %valid, %one, %zero : tensor<4xi1>, tensor<f32>, tensor<f32> -> tensor<4xf32>
  %tot = tg.sum %nll axes = [0] : tensor<4xf32> -> tensor<f32>
  %n = tg.sum %cnt axes = [0] : tensor<4xf32> -> tensor<f32>
  %nm = tg.maximum %n, %one : tensor<f32>, tensor<f32> -> tensor<f32>
  %loss = tg.div %tot, %nm : tensor<f32>, tensor<f32> -> tensor<f32>
  %m2 = tg.max %x axes = [1] keepdims {tg.recomputed} : tensor<4x8xf32> -> tensor<4x1xf32>
  %s2 = tg.sub %x, %m2 {tg.recomputed} : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e2 = tg.exp %s2 {tg.recomputed} : tensor<4x8xf32>
  %z2 = tg.sum %e2 axes = [1] keepdims {tg.recomputed} : tensor<4x8xf32> -> tensor<4x1xf32>
  %p = tg.div %e2, %z2 {tg.recomputed} : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %oh2 = tg.one_hot %y {tg.recomputed} : tensor<4xi64> -> tensor<4x8xf32>
  %valid2 = tg.cmp ne %y, %ignore {tg.recomputed} : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %cnt2 = tg.select %valid2, %one, %zero {tg.recomputed} : tensor<4xi1>, tensor<f32>, tensor<f32> -> tensor<4xf32>
  %n2 = tg.sum %cnt2 axes = [0] {tg.recomputed} : tensor<4xf32> -> tensor<f32>
  %nm2 = tg.maximum %n2, %one {tg.recomputed} : tensor<f32>, tensor<f32> -> tensor<f32>
  %lt = tg.cmp lt %y, %c8 {tg.recomputed} : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %ge = tg.cmp ge %y, %c0 {tg.recomputed} : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %w1 = tg.select %lt, %cnt2, %zero {tg.recomputed} : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %w = tg.select %ge, %w1, %zero {tg.recomputed} : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %rows = tg.reshape %w {tg.recomputed} : tensor<4xf32> to tensor<4x1xf32>
  %diff = tg.sub %p, %oh2 {tg.recomputed} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %scale = tg.div %one, %nm2 : tensor<f32>, tensor<f32> -> tensor<f32>
  %rw = tg.mul %rows, %scale : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %g = tg.mul %diff, %rw : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %loss, %g : tensor<f32>, tensor<4x8xf32>
}

// -----

// The same pair with a logits-sized value computed between them (here the
// gradient of another input, in the backward pass before the logits'):
// merged, the logits' gradient would be stored across it, so the two row
// reductions stay apart (rule 4).
// CHECK-LABEL: func.func @cross_entropy_grad_late
// CHECK-COUNT-2: tg.fused <row_reduction>
// CHECK-NOT: tg.fused <row_reduction>
// CHECK: return
func.func @cross_entropy_grad_late(%x: tensor<4x8xf32>, %y: tensor<4xi64>, %u: tensor<4x8xf32>) -> (tensor<f32> {tg.role = #tg.role<loss>}, tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<grad>}, tensor<4x8xf32> {tg.name = "u", tg.role = #tg.role<grad>}) {
  %zero = tg.constant dense<0.000000e+00> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %ignore = tg.constant dense<-100> : tensor<i64>
  %c0 = tg.constant dense<0> : tensor<i64>
  %c8 = tg.constant dense<8> : tensor<i64>
  %m = tg.max %x axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %s = tg.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tg.exp %s : tensor<4x8xf32>
  %z = tg.sum %e axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %l = tg.log %z : tensor<4x1xf32>
  %lp = tg.sub %s, %l : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %oh = tg.one_hot %y : tensor<4xi64> -> tensor<4x8xf32>
  %is = tg.cmp ne %oh, %zero : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1>
  %pk = tg.select %is, %lp, %zero : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %picked = tg.sum %pk axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %valid = tg.cmp ne %y, %ignore : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %neg = tg.neg %picked : tensor<4xf32>
  %nll = tg.select %valid, %neg, %zero : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %cnt = tg.select %valid, %one, %zero : tensor<4xi1>, tensor<f32>, tensor<f32> -> tensor<4xf32>
  %tot = tg.sum %nll axes = [0] : tensor<4xf32> -> tensor<f32>
  %n = tg.sum %cnt axes = [0] : tensor<4xf32> -> tensor<f32>
  %nm = tg.maximum %n, %one : tensor<f32>, tensor<f32> -> tensor<f32>
  %loss = tg.div %tot, %nm : tensor<f32>, tensor<f32> -> tensor<f32>
  %du = tg.mul %u, %u : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %m2 = tg.max %x axes = [1] keepdims {tg.recomputed} : tensor<4x8xf32> -> tensor<4x1xf32>
  %s2 = tg.sub %x, %m2 {tg.recomputed} : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e2 = tg.exp %s2 {tg.recomputed} : tensor<4x8xf32>
  %z2 = tg.sum %e2 axes = [1] keepdims {tg.recomputed} : tensor<4x8xf32> -> tensor<4x1xf32>
  %p = tg.div %e2, %z2 {tg.recomputed} : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %oh2 = tg.one_hot %y {tg.recomputed} : tensor<4xi64> -> tensor<4x8xf32>
  %valid2 = tg.cmp ne %y, %ignore {tg.recomputed} : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %cnt2 = tg.select %valid2, %one, %zero {tg.recomputed} : tensor<4xi1>, tensor<f32>, tensor<f32> -> tensor<4xf32>
  %n2 = tg.sum %cnt2 axes = [0] {tg.recomputed} : tensor<4xf32> -> tensor<f32>
  %nm2 = tg.maximum %n2, %one {tg.recomputed} : tensor<f32>, tensor<f32> -> tensor<f32>
  %lt = tg.cmp lt %y, %c8 {tg.recomputed} : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %ge = tg.cmp ge %y, %c0 {tg.recomputed} : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
  %w1 = tg.select %lt, %cnt2, %zero {tg.recomputed} : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %w = tg.select %ge, %w1, %zero {tg.recomputed} : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %rows = tg.reshape %w {tg.recomputed} : tensor<4xf32> to tensor<4x1xf32>
  %diff = tg.sub %p, %oh2 {tg.recomputed} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %scale = tg.div %one, %nm2 : tensor<f32>, tensor<f32> -> tensor<f32>
  %rw = tg.mul %rows, %scale : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %g = tg.mul %diff, %rw : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %loss, %g, %du : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>
}
