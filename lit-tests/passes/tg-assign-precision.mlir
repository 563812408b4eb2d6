// RUN: tg-opt %s --split-input-file --tg-assign-precision | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-assign-precision=precision=fp32 | FileCheck %s --check-prefix=FP32
// RUN: tg-opt %s --split-input-file --tg-training-pipeline | FileCheck %s --check-prefix=TRAIN
// RUN: tg-opt %s --split-input-file --tg-assign-precision=precision=fp16 | FileCheck %s --check-prefix=FP16
// RUN: not tg-opt %s --split-input-file --tg-assign-precision=precision=fp8 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// fp16: the bf16 policy with f16 copies and rules spelled fp16-...
// FP16-LABEL: func.func @forward
// FP16: tg.cast %arg2 {tg.precision = "compute-copy"} : tensor<12x8xf32> to tensor<12x8xf16>
// FP16: tg.matmul {{.*}} {tg.acc = f32, tg.precision = "fp16-acc-f32"} : tensor<4x12xf16>, tensor<12x8xf16> -> tensor<4x8xf16>
// FP16: tg.cross_entropy {{.*}} {tg.precision = "fp32-sensitive"}
// UNKNOWN: error: unknown precision 'fp8' (supported: fp32, bf16, fp16)

// An MLP under precision = bf16: one compute copy per parameter at the top
// (shared by every use), bf16 matmuls that accumulate in f32, bf16 bias add
// and relu (they follow their bf16 operand), cross_entropy in f32, and the
// logits output cast back to its declared f32.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<f32> {{.*}}, tensor<4x3xf32>
// CHECK-NEXT: %[[W1:.+]] = tg.cast %arg2 {tg.precision = "compute-copy"} : tensor<12x8xf32> to tensor<12x8xbf16>
// CHECK-NEXT: %[[B1:.+]] = tg.cast %arg3 {tg.precision = "compute-copy"} : tensor<8xf32> to tensor<8xbf16>
// CHECK-NEXT: %[[W2:.+]] = tg.cast %arg4 {tg.precision = "compute-copy"} : tensor<8x3xf32> to tensor<8x3xbf16>
// CHECK-NEXT: %[[X:.+]] = tg.cast %arg0 {tg.precision = "bf16-acc-f32"} : tensor<4x12xf32> to tensor<4x12xbf16>
// CHECK-NEXT: %[[H:.+]] = tg.matmul %[[X]], %[[W1]] {tg.acc = f32, tg.precision = "bf16-acc-f32"} : tensor<4x12xbf16>, tensor<12x8xbf16> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[A:.+]] = tg.add %[[H]], %[[B1]] {tg.precision = "follow"} : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[R:.+]] = tg.relu %[[A]] {tg.precision = "follow"} : tensor<4x8xbf16>
// CHECK-NEXT: %[[L:.+]] = tg.matmul %[[R]], %[[W2]] {tg.acc = f32, tg.precision = "bf16-acc-f32"} : tensor<4x8xbf16>, tensor<8x3xbf16> -> tensor<4x3xbf16>
// CHECK-NEXT: %[[L32:.+]] = tg.cast %[[L]] {tg.precision = "fp32-sensitive"} : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK-NEXT: %[[LOSS:.+]] = tg.cross_entropy %[[L32]], %arg1 {tg.precision = "fp32-sensitive"}
// CHECK-NEXT: %[[OUT:.+]] = tg.cast %[[L]] {tg.precision = "output"} : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK-NEXT: return %[[LOSS]], %[[OUT]] : tensor<f32>, tensor<4x3xf32>

// fp32 leaves the function as it is.
// FP32-LABEL: func.func @forward
// FP32-NOT: tg.cast
// FP32-NOT: tg.acc

// The training step: the casts are differentiated, so the gradients of the
// fp32 masters arrive in fp32 (the VJP of a compute copy is a cast back),
// the backward matmuls accumulate in f32 as their primals do, and the
// optimizer updates the fp32 masters with fp32 state.
// TRAIN-LABEL: func.func @forward_grad
// TRAIN-COUNT-3: tg.matmul {{.*}}tg.acc = f32{{.*}}transpose
// TRAIN: return {{.*}} : tensor<f32>, tensor<4x3xf32>, tensor<12x8xf32>, tensor<8xf32>, tensor<8x3xf32>
// TRAIN-LABEL: func.func @train_step
// TRAIN-NOT: bf16
// TRAIN: return
module attributes {tg.train = {precision = "bf16", optimizer = {kind = "adam", lr = 1.0e-2 : f64}}} {
func.func @forward(%x: tensor<4x12xf32> {tg.name = "images", tg.role = #tg.role<input>},
                   %y: tensor<4xi64> {tg.name = "labels", tg.role = #tg.role<input>},
                   %w1: tensor<12x8xf32> {tg.name = "fc1.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>},
                   %b1: tensor<8xf32> {tg.name = "fc1.bias", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %w2: tensor<8x3xf32> {tg.name = "fc2.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<4x3xf32> {tg.name = "logits", tg.role = #tg.role<output>}) {
  %0 = tg.matmul %x, %w1 : tensor<4x12xf32>, tensor<12x8xf32> -> tensor<4x8xf32>
  %1 = tg.add %0, %b1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %2 = tg.relu %1 : tensor<4x8xf32>
  %3 = tg.matmul %2, %w2 : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  %4 = tg.cross_entropy %3, %y : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  return %4, %3 : tensor<f32>, tensor<4x3xf32>
}
}

// -----

// A tied embedding and a layer norm: the table's one compute copy feeds both
// the gather and the head matmul; layer_norm takes f32 operands (its fp32
// scale and bias are the masters themselves, not copies); the residual add
// follows its bf16 operand; softmax stores bf16 (f32 inside the op); mean
// reduces in f32.
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[WTE:.+]] = tg.cast %arg1 {tg.precision = "compute-copy"} : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-NOT: tg.precision = "compute-copy"
// CHECK: %[[E:.+]] = tg.embedding %[[WTE]], %arg0 {tg.precision = "bf16-gather"} : tensor<16x8xbf16>, tensor<2x4xi64> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[E32:.+]] = tg.cast %[[E]] {tg.precision = "fp32-sensitive"} : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
// CHECK-NEXT: %[[N:.+]] = tg.layer_norm %[[E32]] scale(%arg2 : tensor<8xf32>) bias(%arg3 : tensor<8xf32>) {tg.precision = "fp32-sensitive"} : tensor<2x4x8xf32>
// CHECK-NEXT: %[[NB:.+]] = tg.cast %[[N]] {tg.precision = "follow"} : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// CHECK-NEXT: %[[S:.+]] = tg.add %[[NB]], %[[E]] {tg.precision = "follow"} : tensor<2x4x8xbf16>, tensor<2x4x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[HEAD:.+]] = tg.matmul %[[S]], %[[WTE]] {tg.acc = f32, tg.precision = "bf16-acc-f32", transpose_rhs} : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xbf16>
// CHECK-NEXT: %[[P:.+]] = tg.softmax %[[HEAD]] axis = -1 {tg.precision = "bf16-io-f32-math"} : tensor<2x4x16xbf16>
// CHECK-NEXT: %[[P32:.+]] = tg.cast %[[P]] {tg.precision = "fp32-sensitive"} : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
// CHECK-NEXT: tg.mean %[[P32]] axes = [0, 1, 2] {tg.precision = "fp32-sensitive"} : tensor<2x4x16xf32> -> tensor<f32>
module attributes {tg.train = {precision = "bf16"}} {
func.func @forward(%t: tensor<2x4xi64> {tg.name = "tokens", tg.role = #tg.role<input>},
                   %wte: tensor<16x8xf32> {tg.name = "wte", tg.role = #tg.role<param>},
                   %g: tensor<8xf32> {tg.name = "ln.weight", tg.role = #tg.role<param>},
                   %b: tensor<8xf32> {tg.name = "ln.bias", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.embedding %wte, %t : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %1 = tg.layer_norm %0 scale(%g : tensor<8xf32>) bias(%b : tensor<8xf32>) : tensor<2x4x8xf32>
  %2 = tg.add %1, %0 : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %3 = tg.matmul %2, %wte {transpose_rhs} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
  %4 = tg.softmax %3 axis = -1 : tensor<2x4x16xf32>
  %5 = tg.mean %4 axes = [0, 1, 2] : tensor<2x4x16xf32> -> tensor<f32>
  return %5 : tensor<f32>
}
}

// -----

// conv2d takes bf16 operands with an f32 accumulator; pooling follows.
// CHECK-LABEL: func.func @forward
// CHECK: tg.conv2d %{{.+}}, %{{.+}} {padding = array<i64: 1, 1>, tg.acc = f32, tg.precision = "bf16-acc-f32"} : tensor<2x1x4x4xbf16>, tensor<2x1x3x3xbf16> -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: tg.max_pool2d %{{.+}} kernel = [2, 2] stride = [2, 2] {tg.precision = "follow"} : tensor<2x2x4x4xbf16> -> tensor<2x2x2x2xbf16>
module attributes {tg.train = {precision = "bf16"}} {
func.func @forward(%x: tensor<2x1x4x4xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<2x1x3x3xf32> {tg.name = "w", tg.role = #tg.role<param>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<2x1x4x4xf32>, tensor<2x1x3x3xf32> -> tensor<2x2x4x4xf32>
  %1 = tg.max_pool2d %0 kernel = [2, 2] stride = [2, 2] : tensor<2x2x4x4xf32> -> tensor<2x2x2x2xf32>
  %2 = tg.sum %1 axes = [0, 1, 2, 3] : tensor<2x2x2x2xf32> -> tensor<f32>
  return %2 : tensor<f32>
}
}
