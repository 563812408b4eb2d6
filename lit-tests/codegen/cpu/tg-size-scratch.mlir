// RUN: tg-opt %s --tg-size-scratch 2>&1 | FileCheck %s --implicit-check-not=warning
// RUN: tg-opt %s --tg-plan-memory=func=attention --tg-cpu-pipeline="arena=1 stop-after-scratch=1 entry-points=attention" | FileCheck %s --check-prefix=LOWERED

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

// Attention's online softmax carries its running max, sum and output tile
// across the key blocks in place (AttentionToLoops.cpp), so its lowering
// allocates nothing that escapes a loop and all of its block buffers are
// sized: the three carried tiles (64 x 16 f32 output, two rows of 64) and
// the score, probability and row temporaries of one key block. (They were
// yielded fresh per key block before, heap allocations left unsized, and
// the temporaries went after the plan: 49,664 B of GPT-2 small's step.)
// The backward accumulates dK and dV per (batch, head) and was sized before.
// CHECK-LABEL: func.func @attention
// CHECK: tg.attention {{.*}} {causal, scale = 2.500000e-01 : f64, tg.scratch = 37888 : i64}
// CHECK: tg.attention_grad {{.*}} {causal, scale = 2.500000e-01 : f64, tg.scratch = 49408 : i64}
// LOWERED-LABEL: func.func @attention
// LOWERED-NOT: memref.alloc
// LOWERED: return
func.func @attention(%q: tensor<1x2x128x16xf32>, %k: tensor<1x2x128x16xf32>, %v: tensor<1x2x128x16xf32>, %do: tensor<1x2x128x16xf32>, %dl: tensor<1x2x128xf32>)
    -> (tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>) {
  %o, %lse = tg.attention %q, %k, %v {causal, scale = 2.500000e-01 : f64} : tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32> -> tensor<1x2x128x16xf32>, tensor<1x2x128xf32>
  %dq, %dk, %dv = tg.attention_grad %do, %dl, %q, %k, %v, %o, %lse {causal, scale = 2.500000e-01 : f64} : tensor<1x2x128x16xf32>, tensor<1x2x128xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128xf32> -> tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>
  return %dq, %dk, %dv : tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>
}
