// RUN: tg-opt %s | tg-opt | FileCheck %s
// RUN: tg-opt %s --mlir-print-op-generic | tg-opt | FileCheck %s

// Every tg op, parsed, printed and parsed again: the printed form is stable.



// CHECK-LABEL: func.func @binary
// CHECK: %{{[a-z0-9_]+}} = tg.add %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.sub %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.mul %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.div %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.pow %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.maximum %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.minimum %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x3xi32>, tensor<4x3xi32> -> tensor<4x3xi32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.cmp lt %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xi1>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.select %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x3xi1>, tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
func.func @binary(%a: tensor<4x1xf32>, %b: tensor<3xf32>, %i: tensor<4x3xi32>) {
  %0 = tg.add %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %1 = tg.sub %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %2 = tg.mul %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %3 = tg.div %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %4 = tg.pow %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %5 = tg.maximum %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %6 = tg.minimum %i, %i : tensor<4x3xi32>, tensor<4x3xi32> -> tensor<4x3xi32>
  %7 = tg.cmp lt %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xi1>
  %8 = tg.select %7, %0, %b : tensor<4x3xi1>, tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return
}

// CHECK-LABEL: func.func @unary
// CHECK: %{{[a-z0-9_]+}} = tg.neg %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.abs %{{[a-z0-9_]+}} : tensor<5xi64>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.exp %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.log %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.sqrt %{{[a-z0-9_]+}} : tensor<2x8xbf16>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.rsqrt %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.tanh %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.erf %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.sigmoid %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.relu %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.silu %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.gelu %{{[a-z0-9_]+}} : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.gelu %{{[a-z0-9_]+}} approximate = tanh : tensor<2x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.cast %{{[a-z0-9_]+}} : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.cast %{{[a-z0-9_]+}} : tensor<5xi64> to tensor<5xf16>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.constant dense<[1, 2]> : tensor<2xi32>
func.func @unary(%x: tensor<2x8xf32>, %h: tensor<2x8xbf16>, %i: tensor<5xi64>) {
  %0 = tg.neg %x : tensor<2x8xf32>
  %1 = tg.abs %i : tensor<5xi64>
  %2 = tg.exp %x : tensor<2x8xf32>
  %3 = tg.log %x : tensor<2x8xf32>
  %4 = tg.sqrt %h : tensor<2x8xbf16>
  %5 = tg.rsqrt %x : tensor<2x8xf32>
  %6 = tg.tanh %x : tensor<2x8xf32>
  %7 = tg.erf %x : tensor<2x8xf32>
  %8 = tg.sigmoid %x : tensor<2x8xf32>
  %9 = tg.relu %x : tensor<2x8xf32>
  %10 = tg.silu %x : tensor<2x8xf32>
  %11 = tg.gelu %x : tensor<2x8xf32>
  %12 = tg.gelu %x approximate = tanh : tensor<2x8xf32>
  %13 = tg.cast %x : tensor<2x8xf32> to tensor<2x8xbf16>
  %14 = tg.cast %i : tensor<5xi64> to tensor<5xf16>
  %15 = tg.constant dense<5.000000e-01> : tensor<f32>
  %16 = tg.constant dense<[1, 2]> : tensor<2xi32>
  return
}

// CHECK-LABEL: func.func @contract
// CHECK: %{{[a-z0-9_]+}} = tg.matmul %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {transpose_rhs} : tensor<8x64x32xf32>, tensor<16x32xf32> -> tensor<8x64x16xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.matmul %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {transpose_lhs} : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<64x64xbf16>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.sum %{{[a-z0-9_]+}} axes = [0, 2] : tensor<8x64x32xf32> -> tensor<64xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.mean %{{[a-z0-9_]+}} axes = [1] keepdims : tensor<8x64x32xf32> -> tensor<8x1x32xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.max %{{[a-z0-9_]+}} axes = [0, 1, 2] : tensor<8x64x32xf32> -> tensor<f32>
func.func @contract(%a: tensor<8x64x32xf32>, %b: tensor<16x32xf32>, %c: tensor<32x64xbf16>) {
  %0 = tg.matmul %a, %b {transpose_rhs} : tensor<8x64x32xf32>, tensor<16x32xf32> -> tensor<8x64x16xf32>
  %1 = tg.matmul %c, %c {transpose_lhs} : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<64x64xbf16>
  %2 = tg.sum %a axes = [0, 2] : tensor<8x64x32xf32> -> tensor<64xf32>
  %3 = tg.mean %a axes = [1] keepdims : tensor<8x64x32xf32> -> tensor<8x1x32xf32>
  %4 = tg.max %a axes = [0, 1, 2] : tensor<8x64x32xf32> -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @losses
// CHECK: %{{[a-z0-9_]+}} = tg.softmax %{{[a-z0-9_]+}} axis = 1 : tensor<4x10xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.log_softmax %{{[a-z0-9_]+}} axis = -1 : tensor<4x10xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.cross_entropy %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.cross_entropy %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {ignore_index = 0 : i64} : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.mse_loss %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x10xf32>, tensor<4x10xf32> -> tensor<f32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.layer_norm %{{[a-z0-9_]+}} scale(%{{[a-z0-9_]+}} : tensor<10xf32>) bias(%{{[a-z0-9_]+}} : tensor<10xf32>) : tensor<4x10xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.layer_norm %{{[a-z0-9_]+}} {eps = 9.9999999999999995E-7 : f64} : tensor<4x10xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.rms_norm %{{[a-z0-9_]+}} scale(%{{[a-z0-9_]+}} : tensor<10xf32>) : tensor<4x10xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.rms_norm %{{[a-z0-9_]+}} : tensor<4x10xf32>
func.func @losses(%x: tensor<4x10xf32>, %y: tensor<4xi64>, %t: tensor<4x10xf32>, %s: tensor<10xf32>) {
  %0 = tg.softmax %x axis = 1 : tensor<4x10xf32>
  %1 = tg.log_softmax %x axis = -1 : tensor<4x10xf32>
  %2 = tg.cross_entropy %x, %y : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  %3 = tg.cross_entropy %x, %y {ignore_index = 0 : i64} : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  %4 = tg.mse_loss %x, %t : tensor<4x10xf32>, tensor<4x10xf32> -> tensor<f32>
  %5 = tg.layer_norm %x scale(%s : tensor<10xf32>) bias(%s : tensor<10xf32>) : tensor<4x10xf32>
  %6 = tg.layer_norm %x {eps = 1.000000e-06 : f64} : tensor<4x10xf32>
  %7 = tg.rms_norm %x scale(%s : tensor<10xf32>) : tensor<4x10xf32>
  %8 = tg.rms_norm %x : tensor<4x10xf32>
  return
}

// CHECK-LABEL: func.func @movement
// CHECK: %{{[a-z0-9_]+}} = tg.embedding %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<100x16xf32>, tensor<2x5xi32> -> tensor<2x5x16xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.reshape %{{[a-z0-9_]+}} : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.transpose %{{[a-z0-9_]+}} perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.broadcast_to %{{[a-z0-9_]+}} : tensor<1x4xf32> to tensor<5x3x4xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.slice %{{[a-z0-9_]+}} start [0, 1, 0] limit [2, 3, 4] step [1, 1, 2] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.concat %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} axis = 1 : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x6x4xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.one_hot %{{[a-z0-9_]+}} : tensor<2x5xi32> -> tensor<2x5x7xf32>
func.func @movement(%t: tensor<100x16xf32>, %ids: tensor<2x5xi32>, %x: tensor<2x3x4xf32>, %r: tensor<1x4xf32>) {
  %0 = tg.embedding %t, %ids : tensor<100x16xf32>, tensor<2x5xi32> -> tensor<2x5x16xf32>
  %1 = tg.reshape %x : tensor<2x3x4xf32> to tensor<6x4xf32>
  %2 = tg.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %3 = tg.broadcast_to %r : tensor<1x4xf32> to tensor<5x3x4xf32>
  %4 = tg.slice %x start [0, 1, 0] limit [2, 3, 4] step [1, 1, 2] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  %5 = tg.concat %x, %x axis = 1 : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x6x4xf32>
  %6 = tg.one_hot %ids : tensor<2x5xi32> -> tensor<2x5x7xf32>
  return
}

// CHECK-LABEL: func.func @masks
// CHECK: %{{[a-z0-9_]+}} = tg.causal_mask %{{[a-z0-9_]+}} : tensor<2x4x4xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.causal_mask %{{[a-z0-9_]+}} {value = -1.000000e+09 : f64} : tensor<2x4x4xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.dropout %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {p = 1.000000e-01 : f64, stream = 3 : i64} : tensor<2x4x4xf32>, tensor<i64>
func.func @masks(%s: tensor<2x4x4xf32>, %seed: tensor<i64>) {
  %0 = tg.causal_mask %s : tensor<2x4x4xf32>
  %1 = tg.causal_mask %s {value = -1.000000e+09 : f64} : tensor<2x4x4xf32>
  %2 = tg.dropout %s, %seed {p = 1.000000e-01 : f64, stream = 3 : i64} : tensor<2x4x4xf32>, tensor<i64>
  return
}

// CHECK-LABEL: func.func @conv
// CHECK: %{{[a-z0-9_]+}} = tg.conv2d %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {groups = 2 : i64, padding = array<i64: 2, 2>} : tensor<8x4x28x28xf32>, tensor<6x2x5x5xf32> -> tensor<8x6x28x28xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.conv2d %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {dilation = array<i64: 2, 2>, groups = 2 : i64, stride = array<i64: 2, 2>} : tensor<8x4x28x28xf32>, tensor<6x2x5x5xf32> -> tensor<8x6x10x10xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.max_pool2d %{{[a-z0-9_]+}} kernel = [2, 2] stride = [2, 2] : tensor<8x6x28x28xf32> -> tensor<8x6x14x14xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.avg_pool2d %{{[a-z0-9_]+}} kernel = [3, 3] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<8x6x28x28xf32> -> tensor<8x6x28x28xf32>
// count_include_pad defaults to true (PyTorch's default) and prints only when false.
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.avg_pool2d %{{[a-z0-9_]+}} kernel = [3, 3] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<8x6x28x28xf32> -> tensor<8x6x28x28xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.avg_pool2d %{{[a-z0-9_]+}} kernel = [3, 3] stride = [1, 1] {count_include_pad = false, padding = array<i64: 1, 1>} : tensor<8x6x28x28xf32> -> tensor<8x6x28x28xf32>
func.func @conv(%x: tensor<8x4x28x28xf32>, %w: tensor<6x2x5x5xf32>) {
  %0 = tg.conv2d %x, %w {groups = 2 : i64, padding = array<i64: 2, 2>} : tensor<8x4x28x28xf32>, tensor<6x2x5x5xf32> -> tensor<8x6x28x28xf32>
  %1 = tg.conv2d %x, %w {dilation = array<i64: 2, 2>, groups = 2 : i64, stride = array<i64: 2, 2>} : tensor<8x4x28x28xf32>, tensor<6x2x5x5xf32> -> tensor<8x6x10x10xf32>
  %2 = tg.max_pool2d %0 kernel = [2, 2] stride = [2, 2] : tensor<8x6x28x28xf32> -> tensor<8x6x14x14xf32>
  %3 = tg.avg_pool2d %0 kernel = [3, 3] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<8x6x28x28xf32> -> tensor<8x6x28x28xf32>
  %4 = tg.avg_pool2d %0 kernel = [3, 3] stride = [1, 1] {count_include_pad = true, padding = array<i64: 1, 1>} : tensor<8x6x28x28xf32> -> tensor<8x6x28x28xf32>
  %5 = tg.avg_pool2d %0 kernel = [3, 3] stride = [1, 1] {count_include_pad = false, padding = array<i64: 1, 1>} : tensor<8x6x28x28xf32> -> tensor<8x6x28x28xf32>
  return
}

// CHECK-LABEL: func.func @model
// CHECK: %{{[a-z0-9_]+}} = tg.matmul %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x784xf32>, tensor<784x10xf32> -> tensor<4x10xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.add %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<4x10xf32>, tensor<10xf32> -> tensor<4x10xf32>
// CHECK-NEXT: return %{{[a-z0-9_]+}} : tensor<4x10xf32>
func.func @model(%x: tensor<4x784xf32> {tg.name = "x", tg.role = #tg.role<input>},
                 %w: tensor<784x10xf32> {tg.init = #tg.init<normal(0.000000e+00, 2.000000e-02)>, tg.name = "fc.weight", tg.role = #tg.role<param>},
                 %b: tensor<10xf32> {tg.init = #tg.init<zeros>, tg.name = "fc.bias", tg.role = #tg.role<param>})
    -> (tensor<4x10xf32> {tg.name = "logits", tg.role = #tg.role<output>}) {
  %0 = tg.matmul %x, %w : tensor<4x784xf32>, tensor<784x10xf32> -> tensor<4x10xf32>
  %1 = tg.add %0, %b : tensor<4x10xf32>, tensor<10xf32> -> tensor<4x10xf32>
  return %1 : tensor<4x10xf32>
}

// CHECK-LABEL: func.func @backward_ops
// CHECK: %{{[a-z0-9_]+}} = tg.embedding_grad %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<2x5x16xf32>, tensor<2x5xi32> -> tensor<100x16xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.conv2d_grad_input %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<8x6x24x24xf32>, tensor<6x1x5x5xf32> -> tensor<8x1x28x28xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.conv2d_grad_weight %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<8x1x28x28xf32>, tensor<8x6x24x24xf32> -> tensor<6x1x5x5xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.max_pool2d_grad %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} kernel = [2, 2] stride = [2, 2] : tensor<8x1x14x14xf32>, tensor<8x1x28x28xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.avg_pool2d_grad %{{[a-z0-9_]+}} kernel = [2, 2] stride = [2, 2] : tensor<8x1x14x14xf32> -> tensor<8x1x28x28xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.avg_pool2d_grad %{{[a-z0-9_]+}} kernel = [2, 2] stride = [2, 2] {count_include_pad = false} : tensor<8x1x14x14xf32> -> tensor<8x1x28x28xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.random uniform %{{[a-z0-9_]+}} {a = -1.000000e+00 : f64, b = 1.000000e+00 : f64, stream = 0 : i64} : tensor<i64> -> tensor<4x4xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.random normal %{{[a-z0-9_]+}} {a = 0.000000e+00 : f64, b = 2.000000e-02 : f64, stream = 1 : i64} : tensor<i64> -> tensor<4x4xbf16>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.cos %{{[a-z0-9_]+}} : tensor<3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}} = tg.sin %{{[a-z0-9_]+}} : tensor<3xf32>
func.func @backward_ops(%g: tensor<2x5x16xf32>, %ids: tensor<2x5xi32>, %gc: tensor<8x6x24x24xf32>, %w: tensor<6x1x5x5xf32>, %x: tensor<8x1x28x28xf32>, %gp: tensor<8x1x14x14xf32>, %seed: tensor<i64>, %v: tensor<3xf32>) {
  %0 = tg.embedding_grad %g, %ids : tensor<2x5x16xf32>, tensor<2x5xi32> -> tensor<100x16xf32>
  %1 = tg.conv2d_grad_input %gc, %w : tensor<8x6x24x24xf32>, tensor<6x1x5x5xf32> -> tensor<8x1x28x28xf32>
  %2 = tg.conv2d_grad_weight %x, %gc : tensor<8x1x28x28xf32>, tensor<8x6x24x24xf32> -> tensor<6x1x5x5xf32>
  %3 = tg.max_pool2d_grad %gp, %x kernel = [2, 2] stride = [2, 2] : tensor<8x1x14x14xf32>, tensor<8x1x28x28xf32>
  %4 = tg.avg_pool2d_grad %gp kernel = [2, 2] stride = [2, 2] : tensor<8x1x14x14xf32> -> tensor<8x1x28x28xf32>
  %9 = tg.avg_pool2d_grad %gp kernel = [2, 2] stride = [2, 2] {count_include_pad = false} : tensor<8x1x14x14xf32> -> tensor<8x1x28x28xf32>
  %5 = tg.random uniform %seed {a = -1.000000e+00 : f64, b = 1.000000e+00 : f64, stream = 0 : i64} : tensor<i64> -> tensor<4x4xf32>
  %6 = tg.random normal %seed {a = 0.000000e+00 : f64, b = 2.000000e-02 : f64, stream = 1 : i64} : tensor<i64> -> tensor<4x4xbf16>
  %7 = tg.cos %v : tensor<3xf32>
  %8 = tg.sin %v : tensor<3xf32>
  return
}

// A fusion group: its kind, its cost record and its isolated body.
// CHECK-LABEL: func.func @fused
// CHECK: %{{.+}}:2 = tg.fused <gemm> ins(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8x2xf32>) attributes {tg.bytes_read = 192 : i64, tg.bytes_written = 64 : i64, tg.flops = 144 : i64} {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8x2xf32>):
// CHECK-NEXT: %[[M:.+]] = tg.matmul %[[A]], %[[B]]
// CHECK-NEXT: %[[R:.+]] = tg.relu %[[M]]
// CHECK-NEXT: tg.yield %[[M]], %[[R]] : tensor<4x2xf32>, tensor<4x2xf32>
// CHECK-NEXT: } -> tensor<4x2xf32>, tensor<4x2xf32>
func.func @fused(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %0:2 = tg.fused <gemm> ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) attributes {tg.bytes_read = 192 : i64, tg.bytes_written = 64 : i64, tg.flops = 144 : i64} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>):
    %m = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    %r = tg.relu %m : tensor<4x2xf32>
    tg.yield %m, %r : tensor<4x2xf32>, tensor<4x2xf32>
  } -> tensor<4x2xf32>, tensor<4x2xf32>
  return %0#1 : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @attention
// CHECK: %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = tg.attention %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {causal, scale = 1.250000e-01 : f64} : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = tg.attention %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} {scale = 5.000000e-01 : f64} : tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x6xf32> -> tensor<1x2x3x6xf32>, tensor<1x2x3xf32>
// CHECK-NEXT: %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = tg.attention_grad
// CHECK-SAME: {causal, scale = 1.250000e-01 : f64} : tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xf32> -> tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
func.func @attention(%q: tensor<2x4x8x16xbf16>, %a: tensor<1x2x3x4xf32>, %b: tensor<1x2x5x4xf32>, %c: tensor<1x2x5x6xf32>) {
  %o, %lse = tg.attention %q, %q, %q {causal, scale = 1.250000e-01 : f64} : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
  %o2, %lse2 = tg.attention %a, %b, %c {scale = 5.000000e-01 : f64} : tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x6xf32> -> tensor<1x2x3x6xf32>, tensor<1x2x3xf32>
  %dq, %dk, %dv = tg.attention_grad %o, %lse, %q, %q, %q, %o, %lse {causal, scale = 1.250000e-01 : f64} : tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xf32> -> tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
  return
}

// Collectives (docs/data-parallel.md) run over a communicator, whose type
// carries the rank count: shards are flat, ceil(n / ranks) elements, so 255
// elements over 2 ranks give 128 each. bucket_offset is where the memory
// plan put the CPU backend's flat bucket buffer.
// CHECK-LABEL: func.func @collectives
// CHECK-SAME: tensor<128xf32> {tg.shard_of = array<i64: 255>}
// CHECK: %[[W:.+]] = tg.comm_world : !tg.comm<ranks = 2>
// CHECK-NEXT: tg.all_reduce %{{.+}}, %{{.+}} on %[[W]] {op = "mean"} : !tg.comm<ranks = 2>, tensor<4x8xf32>, tensor<255xf32>
// CHECK-NEXT: %[[S:.+]]:2 = tg.reduce_scatter %{{.+}}, %{{.+}} on %[[W]] {bucket_offset = 256 : i64, op = "mean"} : !tg.comm<ranks = 2>, tensor<4x8xf32>, tensor<255xf32> -> tensor<16xf32>, tensor<128xf32>
// CHECK-NEXT: %[[P:.+]] = tg.shard %{{.+}} on %[[W]] : !tg.comm<ranks = 2>, tensor<255xf32> -> tensor<128xf32>
// CHECK-NEXT: tg.all_gather %[[S]]#0, %[[P]] on %[[W]] : !tg.comm<ranks = 2>, tensor<16xf32>, tensor<128xf32> -> tensor<4x8xf32>, tensor<255xf32>
// CHECK-NEXT: %[[ONE:.+]] = tg.comm_world : !tg.comm<ranks = 1>
// CHECK-NEXT: tg.all_reduce %{{.+}} on %[[ONE]] {op = "sum"} : !tg.comm<ranks = 1>, tensor<128xf32>
func.func @collectives(%a: tensor<4x8xf32>, %b: tensor<255xf32>,
                       %s: tensor<128xf32> {tg.shard_of = array<i64: 255>}) -> (tensor<128xf32>, tensor<4x8xf32>) {
  %world = tg.comm_world : !tg.comm<ranks = 2>
  %r:2 = tg.all_reduce %a, %b on %world {op = "mean"} : !tg.comm<ranks = 2>, tensor<4x8xf32>, tensor<255xf32>
  %sh:2 = tg.reduce_scatter %a, %b on %world {op = "mean", bucket_offset = 256 : i64} : !tg.comm<ranks = 2>, tensor<4x8xf32>, tensor<255xf32> -> tensor<16xf32>, tensor<128xf32>
  %p = tg.shard %b on %world : !tg.comm<ranks = 2>, tensor<255xf32> -> tensor<128xf32>
  %g:2 = tg.all_gather %sh#0, %p on %world : !tg.comm<ranks = 2>, tensor<16xf32>, tensor<128xf32> -> tensor<4x8xf32>, tensor<255xf32>
  %one = tg.comm_world : !tg.comm<ranks = 1>
  %u = tg.all_reduce %s on %one {op = "sum"} : !tg.comm<ranks = 1>, tensor<128xf32>
  return %sh#1, %g#0 : tensor<128xf32>, tensor<4x8xf32>
}
