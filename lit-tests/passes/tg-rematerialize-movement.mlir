// RUN: tg-opt %s --split-input-file --tg-autodiff --tg-decompose --cse --tg-rematerialize="elementwise=1 max-depth=32 max-flops-per-byte=8" | FileCheck %s

// Free replays may move data: the transpose read by the second matmul's
// weight gradient is replayed there from `y`, which the derivative of
// `y y` keeps until later in the backward pass, so the transpose's buffer
// no longer lives across the step (the attention output's [B, T, D]
// transpose in a GPT).
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: tg.remat = #tg.remat<bytes = 256,
// CHECK: %[[Y:.+]] = tg.matmul %arg0, %arg1 :
// CHECK: tg.transpose %[[Y]] perm = [1, 0, 2] :
// CHECK: %[[T:.+]] = tg.transpose %[[Y]] perm = [1, 0, 2] {tg.recomputed}
// CHECK-NEXT: tg.reshape %[[T]] :
// CHECK: tg.mul %{{.+}}, %[[Y]]
func.func @forward(%x: tensor<2x4x8xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %y = tg.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %q = tg.mul %y, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %t = tg.transpose %y perm = [1, 0, 2] : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %m = tg.matmul %t, %w : tensor<4x2x8xf32>, tensor<8x8xf32> -> tensor<4x2x8xf32>
  %a = tg.mean %m axes = [0, 1, 2] : tensor<4x2x8xf32> -> tensor<f32>
  %b = tg.mean %q axes = [0, 1, 2] : tensor<2x4x8xf32> -> tensor<f32>
  %s = tg.add %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A transpose inside a replayed chain is not taken: its buffer would live
// beside the value the chain replays (`-(y^T)`, which the weight gradient
// reads, stays stored).
// CHECK-LABEL: func.func @forward_grad
// CHECK-NOT: tg.remat
// CHECK-NOT: tg.recomputed
// CHECK: return
func.func @forward(%x: tensor<2x4x8xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %y = tg.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %q = tg.mul %y, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %t = tg.transpose %y perm = [1, 0, 2] : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  %u = tg.neg %t : tensor<4x2x8xf32>
  %m = tg.matmul %u, %w : tensor<4x2x8xf32>, tensor<8x8xf32> -> tensor<4x2x8xf32>
  %a = tg.mean %m axes = [0, 1, 2] : tensor<4x2x8xf32> -> tensor<f32>
  %b = tg.mean %q axes = [0, 1, 2] : tensor<2x4x8xf32> -> tensor<f32>
  %s = tg.add %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
  return %s : tensor<f32>
}
