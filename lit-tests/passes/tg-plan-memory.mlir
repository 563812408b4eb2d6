// RUN: tg-opt %s --split-input-file --tg-plan-memory=func=chain | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-plan-memory="func=chain in-place=false" | FileCheck %s --check-prefix=NOREUSE
// RUN: not tg-opt %s --split-input-file --tg-plan-memory="func=chain alignment=100" 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not tg-opt %s --split-input-file --tg-plan-memory 2>&1 | FileCheck %s --check-prefix=MISSING

// ALIGN: tg-plan-memory: alignment must be a power of two, got 100
// MISSING: tg-plan-memory: no function named 'train_step'

// tanh and mul write over the matmul result they consume (it dies there);
// the second matmul cannot, so it gets the next slot; the sum reuses
// offset 0 once %2 is dead. Arguments are persistent (16 KiB + 256 B).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: tg.memory = #tg.memory<params_bytes = 16384, optimizer_bytes = 0, inputs_bytes = 256, grads_bytes = 0, activations_bytes = 0, workspace_bytes = 32768, persistent_bytes = 16640, transient_bytes = 32768, peak_bytes = 49408, lower_bound_bytes = 49408, naive_bytes = 49412>
// CHECK: tg.matmul {{.*}} {tg.bytes = 16384 : i64, tg.offset = 0 : i64}
// CHECK: tg.tanh {{.*}} {tg.bytes = 16384 : i64, tg.offset = 0 : i64}
// CHECK: tg.mul {{.*}} {tg.bytes = 16384 : i64, tg.offset = 0 : i64}
// CHECK: tg.matmul {{.*}} {tg.bytes = 16384 : i64, tg.offset = 16384 : i64}
// CHECK: tg.sum {{.*}} {tg.bytes = 4 : i64, tg.offset = 0 : i64}

// Without in-place reuse tanh cannot write over its operand; values whose
// lifetimes do not touch still share (%0 and %2).
// NOREUSE-LABEL: func.func @chain
// NOREUSE: tg.matmul {{.*}} tg.offset = 0 : i64
// NOREUSE: tg.tanh {{.*}} tg.offset = 16384 : i64
// NOREUSE: tg.mul {{.*}} tg.offset = 0 : i64
func.func @chain(%x: tensor<64xf32> {tg.name = "x", tg.role = #tg.role<input>}, %w: tensor<64x64xf32> {tg.name = "w", tg.role = #tg.role<param>}) -> tensor<f32> {
  %0 = tg.matmul %w, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %1 = tg.tanh %0 : tensor<64x64xf32>
  %2 = tg.mul %1, %x : tensor<64x64xf32>, tensor<64xf32> -> tensor<64x64xf32>
  %3 = tg.matmul %2, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %4 = tg.sum %3 axes = [0, 1] : tensor<64x64xf32> -> tensor<f32>
  return %4 : tensor<f32>
}
