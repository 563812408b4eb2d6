// RUN: tg-opt %s --split-input-file --tg-form-attention | FileCheck %s

// GPT-2's spelling before `attention` was a built-in: scale, mask, softmax.
// CHECK-LABEL: func.func @gpt
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[K:.+]]: tensor<2x4x8x16xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>)
// CHECK-NEXT: %[[O:[a-z0-9_]+]], %{{[a-z0-9_]+}} = tg.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[O]] :
func.func @gpt(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x8xf32>
  %c = tg.constant dense<2.500000e-01> : tensor<f32>
  %t = tg.mul %s, %c : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
  %m = tg.causal_mask %t : tensor<2x4x8x8xf32>
  %p = tg.softmax %m axis = -1 : tensor<2x4x8x8xf32>
  %o = tg.matmul %p, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// BERT's: no mask, a division, more keys than queries, dv != d.
// CHECK-LABEL: func.func @bert
// CHECK: tg.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.250000e-01 : f64} : tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x6xf32> -> tensor<1x2x3x6xf32>, tensor<1x2x3xf32>
// CHECK-NOT: tg.softmax
func.func @bert(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x6xf32>) -> tensor<1x2x3x6xf32> {
  %s = tg.matmul %q, %k {transpose_rhs} : tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32> -> tensor<1x2x3x5xf32>
  %c = tg.constant dense<8.0> : tensor<f32>
  %t = tg.div %s, %c : tensor<1x2x3x5xf32>, tensor<f32> -> tensor<1x2x3x5xf32>
  %p = tg.softmax %t axis = 3 : tensor<1x2x3x5xf32>
  %o = tg.matmul %p, %v : tensor<1x2x3x5xf32>, tensor<1x2x5x6xf32> -> tensor<1x2x3x6xf32>
  return %o : tensor<1x2x3x6xf32>
}

// -----

// Masked first, then scaled by a positive constant: the same attention.
// CHECK-LABEL: func.func @mask_then_scale
// CHECK: tg.attention {{.*}}{causal, scale = 5.000000e-01 : f64}
func.func @mask_then_scale(%q: tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32> {
  %s = tg.matmul %q, %q {transpose_rhs} : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x4xf32>
  %m = tg.causal_mask %s : tensor<1x1x4x4xf32>
  %c = tg.constant dense<5.000000e-01> : tensor<f32>
  %t = tg.mul %c, %m : tensor<f32>, tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32>
  %p = tg.softmax %t axis = -1 : tensor<1x1x4x4xf32>
  %o = tg.matmul %p, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32>
  return %o : tensor<1x1x4x2xf32>
}

// -----

// Left alone: the probabilities are also a result (they must exist), the
// mask fills a finite value, the softmax runs over the queries, the scale
// is not a constant, and the batch dimensions broadcast.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: tg.attention
// CHECK: return
func.func @not_attention(%q: tensor<1x1x4x2xf32>, %x: tensor<1x1x4x4xf32>, %k1: tensor<1x4x2xf32>) -> (tensor<1x1x4x2xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) {
  %s = tg.matmul %q, %q {transpose_rhs} : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x4xf32>
  %p = tg.softmax %s axis = -1 : tensor<1x1x4x4xf32>
  %o = tg.matmul %p, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32>
  %s2 = tg.matmul %q, %q {transpose_rhs} : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x4xf32>
  %m2 = tg.causal_mask %s2 {value = -1.0e+09 : f64} : tensor<1x1x4x4xf32>
  %p2 = tg.softmax %m2 axis = -1 : tensor<1x1x4x4xf32>
  %o2 = tg.matmul %p2, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32>
  %s3 = tg.matmul %q, %q {transpose_rhs} : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x4xf32>
  %p3 = tg.softmax %s3 axis = 2 : tensor<1x1x4x4xf32>
  %o3 = tg.matmul %p3, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32>
  %s4 = tg.matmul %q, %q {transpose_rhs} : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x4xf32>
  %t4 = tg.mul %s4, %x : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32>
  %p4 = tg.softmax %t4 axis = -1 : tensor<1x1x4x4xf32>
  %o4 = tg.matmul %p4, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32>
  %s5 = tg.matmul %q, %k1 {transpose_rhs} : tensor<1x1x4x2xf32>, tensor<1x4x2xf32> -> tensor<1x1x4x4xf32>
  %p5 = tg.softmax %s5 axis = -1 : tensor<1x1x4x4xf32>
  %o5 = tg.matmul %p5, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32>
  return %o, %p, %o2, %o3, %o4, %o5 : tensor<1x1x4x2xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>
}
