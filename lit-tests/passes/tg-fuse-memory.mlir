// RUN: tg-opt %s --split-input-file --tg-fuse | FileCheck %s

// Fusion must not undo what the memory plan relies on (issue 19). Each case
// is a merge that is legal and saves bytes, refused or redirected because of
// when the merged kernel could run.

// A replay (tg.recomputed: autodiff's GELU derivative, read by the backward
// pass) stays out of the GEMM group that computes its input: merged, it ran
// in the forward pass and its x-sized results were kept until the backward
// pass. The replay and the backward op that reads it are one kernel.
// CHECK-LABEL: func.func @replay_stays_backward
// CHECK: %[[H:.+]]:2 = tg.fused <gemm>
// CHECK: tg.matmul
// CHECK-NEXT: tg.gelu
// CHECK-NOT: tg.recomputed
// CHECK: tg.yield
// CHECK: tg.fused <elementwise> ins(%[[H]]#0, %{{.+}} :
// CHECK: tg.tanh %{{.+}} {tg.recomputed}
// CHECK-NEXT: tg.mul
// CHECK-NEXT: tg.yield
func.func @replay_stays_backward(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %dy: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %h = tg.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %g = tg.gelu %h : tensor<8x32xf32>
  %t = tg.tanh %h {tg.recomputed} : tensor<8x32xf32>
  %d = tg.mul %t, %dy : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %g, %d : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// A backward op that reads a GEMM's product and a replay joins the replay's
// elementwise kernel (which reads the product and the kept input) rather
// than the GEMM's epilogue (which would read the replay's x-sized result
// from memory): the replay's group merges first.
// CHECK-LABEL: func.func @replay_before_epilogue
// CHECK: %[[P:.+]] = tg.matmul
// CHECK: tg.fused <elementwise> ins(%{{.+}}, %[[P]] :
// CHECK: tg.tanh %{{.+}} {tg.recomputed}
// CHECK-NEXT: tg.mul
// CHECK-NEXT: tg.yield
// CHECK-NOT: tg.fused <gemm>
func.func @replay_before_epilogue(%h: tensor<8x32xf32>, %dy: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %t = tg.tanh %h {tg.recomputed} : tensor<8x32xf32>
  %p = tg.matmul %dy, %w {transpose_rhs} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %d = tg.mul %t, %p : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %d : tensor<8x32xf32>
}

// -----

// A GEMM that is the last reader of more bytes than it writes (a tied head's
// weight gradient) takes no epilogue that waits for a value computed after
// it (the embedding's gradient): merged, its inputs lived until then. The
// add joins the late value's kernel instead.
// CHECK-LABEL: func.func @no_late_residual
// CHECK-NOT: tg.fused <gemm>
// CHECK: %[[M:.+]] = tg.matmul %{{.+}}, %{{.+}} {transpose_lhs}
// CHECK-NEXT: tg.fused <elementwise> ins(%arg2, %[[M]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tg.exp
// CHECK-NEXT: tg.add
// CHECK-NOT: tg.fused <gemm>
func.func @no_late_residual(%a0: tensor<64x8xf32>, %b0: tensor<64x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = tg.neg %a0 : tensor<64x8xf32>
  %b = tg.neg %b0 : tensor<64x8xf32>
  %m = tg.matmul %a, %b {transpose_lhs} : tensor<64x8xf32>, tensor<64x8xf32> -> tensor<8x8xf32>
  %e = tg.exp %c : tensor<8x8xf32>
  %s = tg.add %m, %e : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

// The same GEMM with a residual computed before it keeps its epilogue
// (the negations are elementwise kernels of their own: a GEMM reads its
// operands from memory).
// CHECK-LABEL: func.func @early_residual
// CHECK: tg.exp
// CHECK: tg.fused <gemm>
// CHECK: tg.matmul
// CHECK-NEXT: tg.add
func.func @early_residual(%a0: tensor<64x8xf32>, %b0: tensor<64x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tg.exp %c : tensor<8x8xf32>
  %a = tg.neg %a0 : tensor<64x8xf32>
  %b = tg.neg %b0 : tensor<64x8xf32>
  %m = tg.matmul %a, %b {transpose_lhs} : tensor<64x8xf32>, tensor<64x8xf32> -> tensor<8x8xf32>
  %s = tg.add %m, %e : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}
