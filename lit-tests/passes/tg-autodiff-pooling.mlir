// RUN: tg-opt %s --split-input-file --tg-autodiff --canonicalize | FileCheck %s

// A max pooling whose windows tile its input is differentiated as a running
// maximum of selects (passes/PoolingMasks.cpp): the backward pass reads the
// selects' i1 conditions, one byte per window and position after the first,
// instead of max_pool2d_grad reading the input (4 bytes per position). The
// relu before it moves after it, so relu's mask reads the pooled output.
// Positions are taken in row-major order; a position wins when greater or
// NaN, so ties keep the first maximum (as max_pool2d and PyTorch).
// The windows' positions are rows of the input viewed as [rows, kh, wo, kw]
// and transposed to [kh kw, rows wo]: contiguous slices, whose cotangents
// sum to one concatenation (strided ones were element-by-element copies on
// the CPU).
// CHECK-LABEL: func.func @forward_grad(
// CHECK-NOT: tg.max_pool2d
// CHECK: %[[V:.+]] = tg.reshape %arg0 : tensor<1x2x4x4xf32> to tensor<4x2x2x2xf32>
// CHECK: %[[T:.+]] = tg.transpose %[[V]] perm = [1, 3, 0, 2] : tensor<4x2x2x2xf32> -> tensor<2x2x4x2xf32>
// CHECK: %[[F:.+]] = tg.reshape %[[T]] : tensor<2x2x4x2xf32> to tensor<4x8xf32>
// CHECK: %[[S0:.+]] = tg.slice %[[F]] start [0, 0] limit [1, 8]
// CHECK: %[[S1:.+]] = tg.slice %[[F]] start [1, 0] limit [2, 8]
// CHECK: %[[NAN1:.+]] = tg.cmp ne %[[S1]], %[[S1]]
// CHECK: %[[GT1:.+]] = tg.cmp gt %[[S1]], %[[S0]]
// CHECK: %[[W1:.+]] = tg.select %[[NAN1]], %[[NAN1]], %[[GT1]] : tensor<1x8xi1>, tensor<1x8xi1>, tensor<1x8xi1>
// CHECK: %[[M1:.+]] = tg.select %[[W1]], %[[S1]], %[[S0]]
// CHECK: %[[S2:.+]] = tg.slice %[[F]] start [2, 0] limit [3, 8]
// CHECK: %[[W2:.+]] = tg.select %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x8xi1>, tensor<1x8xi1>, tensor<1x8xi1>
// CHECK: %[[M2:.+]] = tg.select %[[W2]], %[[S2]], %[[M1]]
// CHECK: %[[S3:.+]] = tg.slice %[[F]] start [3, 0] limit [4, 8]
// CHECK: %[[W3:.+]] = tg.select %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x8xi1>, tensor<1x8xi1>, tensor<1x8xi1>
// CHECK: %[[M3:.+]] = tg.select %[[W3]], %[[S3]], %[[M2]]
// CHECK: %[[P:.+]] = tg.reshape %[[M3]] : tensor<1x8xf32> to tensor<1x2x2x2xf32>
// CHECK: %[[Y:.+]] = tg.relu %[[P]]
// CHECK: %[[LOSS:.+]] = tg.sum %[[Y]]
// The backward pass reads the pooled relu output and the three conditions.
// CHECK: tg.cmp le %[[Y]],
// CHECK: %[[G:.+]] = tg.reshape %{{.+}} : tensor<1x2x2x2xf32> to tensor<1x8xf32>
// CHECK: %[[D3:.+]] = tg.select %[[W3]], %[[G]], %{{.+}} :
// CHECK: %[[G2:.+]] = tg.select %[[W3]], %{{.+}}, %[[G]] :
// CHECK: %[[D2:.+]] = tg.select %[[W2]], %[[G2]], %{{.+}} :
// CHECK: %[[G1:.+]] = tg.select %[[W2]], %{{.+}}, %[[G2]] :
// CHECK: %[[D1:.+]] = tg.select %[[W1]], %[[G1]], %{{.+}} :
// CHECK: %[[D0:.+]] = tg.select %[[W1]], %{{.+}}, %[[G1]] :
// CHECK: %[[DF:.+]] = tg.concat %[[D0]], %[[D1]], %[[D2]], %[[D3]] axis = 0 : tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK: %[[DT:.+]] = tg.reshape %[[DF]] : tensor<4x8xf32> to tensor<2x2x4x2xf32>
// CHECK: %[[DV:.+]] = tg.transpose %[[DT]] perm = [2, 0, 3, 1]
// CHECK: %[[DX:.+]] = tg.reshape %[[DV]] : tensor<4x2x2x2xf32> to tensor<1x2x4x4xf32>
// CHECK: return %[[LOSS]], %[[DX]]
// The forward function keeps its max_pool2d.
// CHECK-LABEL: func.func @forward(
// CHECK: tg.relu %arg0
// CHECK: tg.max_pool2d
func.func @forward(%x: tensor<1x2x4x4xf32> {tg.name = "x", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.relu %x : tensor<1x2x4x4xf32>
  %1 = tg.max_pool2d %0 kernel = [2, 2] stride = [2, 2] : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
  %2 = tg.sum %1 axes = [0, 1, 2, 3] : tensor<1x2x2x2xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// A relu read by another op too stays where it is (its output is needed
// anyway); the pooling is still rewritten, over the relu's output.
// CHECK-LABEL: func.func @forward_grad(
// CHECK: %[[R:.+]] = tg.relu %arg0
// CHECK: tg.reshape %[[R]] : tensor<1x1x2x4xf32> to tensor<1x2x2x2xf32>
// CHECK-NOT: tg.max_pool2d
// CHECK: return
func.func @forward(%x: tensor<1x1x2x4xf32> {tg.name = "x", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.relu %x : tensor<1x1x2x4xf32>
  %1 = tg.max_pool2d %0 kernel = [2, 2] stride = [2, 2] : tensor<1x1x2x4xf32> -> tensor<1x1x1x2xf32>
  %2 = tg.sum %1 axes = [0, 1, 2, 3] : tensor<1x1x1x2xf32> -> tensor<f32>
  %3 = tg.sum %0 axes = [0, 1, 2, 3] : tensor<1x1x2x4xf32> -> tensor<f32>
  %4 = tg.add %2, %3 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// Overlapping windows (stride < kernel), padding or sizes the kernel does
// not divide keep max_pool2d and its gradient op.
// CHECK-LABEL: func.func @forward_grad(
// CHECK: tg.max_pool2d %{{.+}} kernel = [2, 2] stride = [1, 1]
// CHECK: tg.max_pool2d %{{.+}} kernel = [2, 2] stride = [2, 2] {padding = array<i64: 1, 1>}
// CHECK: tg.max_pool2d %{{.+}} kernel = [2, 2] stride = [2, 2]
// CHECK-DAG: tg.max_pool2d_grad %{{.+}}, %{{.+}} kernel = [2, 2] stride = [1, 1]
// CHECK-DAG: tg.max_pool2d_grad %{{.+}}, %{{.+}} kernel = [2, 2] stride = [2, 2] {padding
// CHECK-DAG: tg.max_pool2d_grad %{{.+}}, %{{.+}} kernel = [2, 2] stride = [2, 2] :
func.func @forward(%x: tensor<1x1x3x3xf32> {tg.name = "x", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.max_pool2d %x kernel = [2, 2] stride = [1, 1] : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
  %1 = tg.max_pool2d %x kernel = [2, 2] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
  %2 = tg.max_pool2d %x kernel = [2, 2] stride = [2, 2] : tensor<1x1x3x3xf32> -> tensor<1x1x1x1xf32>
  %3 = tg.sum %0 axes = [0, 1, 2, 3] : tensor<1x1x2x2xf32> -> tensor<f32>
  %4 = tg.sum %1 axes = [0, 1, 2, 3] : tensor<1x1x2x2xf32> -> tensor<f32>
  %5 = tg.sum %2 axes = [0, 1, 2, 3] : tensor<1x1x1x1xf32> -> tensor<f32>
  %6 = tg.add %3, %4 : tensor<f32>, tensor<f32> -> tensor<f32>
  %7 = tg.add %6, %5 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %7 : tensor<f32>
}
