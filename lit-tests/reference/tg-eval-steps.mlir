// RUN: tg-eval %s --func=train_step --init --steps 3 | FileCheck %s
// RUN: not tg-eval %S/tg-eval.mlir --init 2>&1 | FileCheck %s --check-prefix=NOINIT
// NOINIT: tg-eval: error: --init needs a function @init(seed)

// --init takes @train_step's argument "w" from @init's result "w"; --steps
// feeds the result "w" back. Gradient descent on w^2 with rate 1/4 halves w.
// CHECK: step 0: loss = 16
// CHECK-NEXT: step 1: loss = 4
// CHECK-NEXT: step 2: loss = 1
// CHECK-NEXT: result 0: tensor<f32> [1] sum = 1
// CHECK-NEXT: result 1: tensor<f32> [0.5] sum = 0.5
func.func @init(%seed: tensor<i64> {tg.name = "seed"}) -> (tensor<f32> {tg.name = "w"}) {
  %w = tg.constant dense<4.0> : tensor<f32>
  return %w : tensor<f32>
}

func.func @train_step(%w: tensor<f32> {tg.name = "w", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}, tensor<f32> {tg.name = "w", tg.role = #tg.role<param>}) {
  %loss = tg.mul %w, %w : tensor<f32>, tensor<f32> -> tensor<f32>
  %half = tg.constant dense<0.5> : tensor<f32>
  %step = tg.mul %half, %w : tensor<f32>, tensor<f32> -> tensor<f32>
  %next = tg.sub %w, %step : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss, %next : tensor<f32>, tensor<f32>
}
