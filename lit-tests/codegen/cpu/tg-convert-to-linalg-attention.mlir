// RUN: tg-opt %s --split-input-file --tg-convert-to-linalg | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-convert-to-linalg | FileCheck %s --check-prefix=WHOLE --implicit-check-not="tensor<70x70" --implicit-check-not="tensor<1x2x70x70"
// WHOLE-LABEL: func.func @causal

// tg.attention stays whole (no decomposition) and becomes FlashAttention-2
// loops: (batch, head) pairs, then blocks of 64 queries, then key blocks
// bounded by the causal diagonal (ceil((q0 + 64) / 64) of the one full
// block). T = 70 is one full block and a ragged block of 6, emitted with
// its own static tile shapes; no 70 x 70 tensor exists.
// CHECK-LABEL: func.func @causal
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[C2:.+]] step
// CHECK: scf.for %[[QB:.+]] = %{{.+}} to %{{.+}} step
// CHECK: %[[Q0:.+]] = arith.muli %[[QB]], %[[C64:.+]] : index
// CHECK: tensor.extract_slice %arg0[%{{.+}}, %{{.+}}, %[[Q0]], 0] [1, 1, 64, 8] [1, 1, 1, 1] : tensor<1x2x70x8xf32> to tensor<64x8xf32>
// CHECK: %[[END:.+]] = arith.addi %[[Q0]], %{{.+}} : index
// CHECK: %[[NEED:.+]] = arith.ceildivui %[[END]], %{{.+}} : index
// CHECK: %[[UB:.+]] = arith.minui %{{.+}}, %[[NEED]] : index
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[UB]] step
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.+}} : tensor<64x64xf32>)
// The mask: key index above query index is -inf.
// CHECK: arith.cmpi ugt
// CHECK: arith.select %{{.+}}, %{{.+}} : f32
// Online softmax: the running max, the rescaling and the new sum.
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: scf.yield %{{.+}}, %{{.+}}, %{{.+}} : tensor<64xf32>, tensor<64xf32>, tensor<64x8xf32>
// The ragged key block only where the query block reaches it.
// CHECK: %[[REACH:.+]] = arith.cmpi ult, %{{.+}}, %[[END]] : index
// CHECK: scf.if %[[REACH]] -> (tensor<64xf32>, tensor<64xf32>, tensor<64x8xf32>)
// CHECK: tensor.extract_slice %arg1{{.*}} [1, 1, 6, 8] [1, 1, 1, 1] : tensor<1x2x70x8xf32> to tensor<6x8xf32>
// CHECK: outs(%{{.+}} : tensor<64x6xf32>)
// O = acc / l and lse = m + log(l), written into the results.
// CHECK: arith.divf
// CHECK: math.log
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, %{{.+}}, %[[Q0]], 0] [1, 1, 64, 8] [1, 1, 1, 1] : tensor<64x8xf32> into tensor<1x2x70x8xf32>
// The ragged query block: 6 rows.
// CHECK: tensor.extract_slice %arg0{{.*}} [1, 1, 6, 8] [1, 1, 1, 1] : tensor<1x2x70x8xf32> to tensor<6x8xf32>
// CHECK: return
func.func @causal(%q: tensor<1x2x70x8xf32>, %k: tensor<1x2x70x8xf32>, %v: tensor<1x2x70x8xf32>) -> (tensor<1x2x70x8xf32>, tensor<1x2x70xf32>) {
  %o, %lse = tg.attention %q, %k, %v {causal, scale = 0.5 : f64} : tensor<1x2x70x8xf32>, tensor<1x2x70x8xf32>, tensor<1x2x70x8xf32> -> tensor<1x2x70x8xf32>, tensor<1x2x70xf32>
  return %o, %lse : tensor<1x2x70x8xf32>, tensor<1x2x70xf32>
}

// -----

// Not causal: every key block runs (no bound, no scf.if, no mask), and
// the backward is one pass: per (batch, head) f32 accumulators of dK and
// dV ([Tk, d]), per query block D = rowsum(dO * O) - dLSE and dQ, per key
// block P recomputed from lse and the five tile products. bf16 tiles are
// computed in f32 and rounded once where written.
// CHECK-LABEL: func.func @grad
// CHECK-NOT: scf.if
// CHECK-NOT: arith.cmpi
// CHECK: linalg.fill {{.*}} -> tensor<30x16xf32>
// CHECK: linalg.fill {{.*}} -> tensor<30x16xf32>
// CHECK: arith.negf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} outs(%{{.+}} : tensor<20xf32>)
// CHECK: linalg.fill {{.*}} -> tensor<20x16xf32>
// CHECK: ^bb0(%[[A:.+]]: bf16, %[[B:.+]]: bf16, %{{.+}}: f32):
// CHECK: arith.extf %[[A]] : bf16 to f32
// CHECK: outs(%{{.+}} : tensor<20x30xf32>)
// CHECK: math.exp
// CHECK-COUNT-2: tensor.insert_slice {{.*}} : tensor<30x16xf32> into tensor<30x16xf32>
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: tensor.insert_slice {{.*}} : tensor<20x16xbf16> into tensor<1x1x20x16xbf16>
// CHECK-COUNT-2: tensor.insert_slice {{.*}} : tensor<30x16xbf16> into tensor<1x1x30x16xbf16>
// CHECK: return
func.func @grad(%do: tensor<1x1x20x16xbf16>, %dl: tensor<1x1x20xf32>, %q: tensor<1x1x20x16xbf16>, %k: tensor<1x1x30x16xbf16>, %v: tensor<1x1x30x16xbf16>, %o: tensor<1x1x20x16xbf16>, %lse: tensor<1x1x20xf32>) -> (tensor<1x1x20x16xbf16>, tensor<1x1x30x16xbf16>, tensor<1x1x30x16xbf16>) {
  %dq, %dk, %dv = tg.attention_grad %do, %dl, %q, %k, %v, %o, %lse {scale = 2.500000e-01 : f64} : tensor<1x1x20x16xbf16>, tensor<1x1x20xf32>, tensor<1x1x20x16xbf16>, tensor<1x1x30x16xbf16>, tensor<1x1x30x16xbf16>, tensor<1x1x20x16xbf16>, tensor<1x1x20xf32> -> tensor<1x1x20x16xbf16>, tensor<1x1x30x16xbf16>, tensor<1x1x30x16xbf16>
  return %dq, %dk, %dv : tensor<1x1x20x16xbf16>, tensor<1x1x30x16xbf16>, tensor<1x1x30x16xbf16>
}
