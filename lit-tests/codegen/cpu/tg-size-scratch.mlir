// RUN: tg-opt %s --tg-size-scratch | FileCheck %s

// Each tg op is lowered alone (tg-cpu-pipeline as far as tg-plan-scratch, in
// a function planned like the step) and what its lowering allocates besides
// its planned result becomes its tg.scratch. A bf16 matmul accumulates in an
// f32 tensor of its result's shape (64 x 16 x 4 = 4096 bytes), which it
// rounds into its bf16 result; equal ops (the same printed kernel) are
// lowered once and both annotated. An f32 matmul and an elementwise op
// write their planned result directly and need none.
// CHECK-LABEL: func.func @f
// CHECK: tg.matmul %{{.*}}, %{{.*}} {tg.acc = f32, tg.scratch = 4096 : i64} : tensor<64x32xbf16>
// CHECK: tg.matmul %{{.*}}, %{{.*}} {tg.acc = f32, tg.scratch = 4096 : i64} : tensor<64x32xbf16>
// CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<64x32xf32>
// CHECK-NOT: tg.scratch
// CHECK: return
func.func @f(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %c: tensor<64x32xbf16>,
             %x: tensor<64x32xf32>, %y: tensor<32x16xf32>)
    -> (tensor<64x16xbf16>, tensor<64x16xbf16>, tensor<64x16xf32>) {
  %0 = tg.matmul %a, %b {tg.acc = f32} : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  %1 = tg.matmul %c, %b {tg.acc = f32} : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  %2 = tg.matmul %x, %y : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  %3 = tg.add %2, %2 : tensor<64x16xf32>, tensor<64x16xf32> -> tensor<64x16xf32>
  return %0, %1, %3 : tensor<64x16xbf16>, tensor<64x16xbf16>, tensor<64x16xf32>
}
