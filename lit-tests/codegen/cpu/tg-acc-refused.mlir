// RUN: not tg-opt %s --split-input-file --tg-convert-to-linalg 2>&1 | FileCheck %s

// No backend may run a precision it cannot honour (issue 13): the CPU
// backend accumulates bf16/f16 contractions in f32 only, so a tg.acc asking
// for less is one error at the op, not a silent f32 accumulation.
// CHECK: tg-acc-refused.mlir:[[@LINE+2]]:8: error: 'tg.matmul' op the CPU backend accumulates 'bf16' contractions in 'f32', not in tg.acc = 'bf16'
func.func @bf16_acc(%a: tensor<4x8xbf16>, %b: tensor<8x3xbf16>) -> tensor<4x3xbf16> {
  %0 = tg.matmul %a, %b {tg.acc = bf16} : tensor<4x8xbf16>, tensor<8x3xbf16> -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// The same for f16 and for the convolution's contractions.
// CHECK: tg-acc-refused.mlir:[[@LINE+2]]:8: error: 'tg.conv2d' op the CPU backend accumulates 'f16' contractions in 'f32', not in tg.acc = 'f16'
func.func @f16_conv_acc(%x: tensor<1x1x4x4xf16>, %w: tensor<1x1x3x3xf16>) -> tensor<1x1x2x2xf16> {
  %0 = tg.conv2d %x, %w {tg.acc = f16} : tensor<1x1x4x4xf16>, tensor<1x1x3x3xf16> -> tensor<1x1x2x2xf16>
  return %0 : tensor<1x1x2x2xf16>
}
