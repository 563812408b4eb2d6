// RUN: tg-opt %s --split-input-file --tg-vectorize-contractions --canonicalize | FileCheck %s

#lhs = affine_map<(m, k, n) -> (m, k)>
#rhs = affine_map<(m, k, n) -> (k, n)>
#out = affine_map<(m, k, n) -> (m, n)>
// nn, 13 x 50 over k = 40: 6 x 32 tiles (12 accumulators carried over k,
// one rhs row of two vectors and six broadcasts per step), then the last
// 18 columns (a full and a masked vector of 2 lanes) and the last row. The
// loops over row tiles (and batches) are scf.parallel: each iteration owns
// its rows of the result (tg-parallelize-loops decides which run on threads).
// CHECK-LABEL: func.func @nn
// CHECK-NOT: linalg.generic
// CHECK: scf.parallel (%[[M0:.+]]) = (%{{.+}}) to (%c12) step (%c6)
// CHECK: %[[ACC:.+]] = vector.load %arg2[%[[M0]], %{{.+}}] : memref<13x50xf32>, vector<16xf32>
// CHECK: scf.for %[[K:.+]] = %c0 to %c40 step %c1 iter_args(%{{.+}} = %[[ACC]], {{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.load %arg1[%[[K]], %{{.+}}] : memref<40x50xf32>, vector<16xf32>
// CHECK: %[[A:.+]] = memref.load %arg0[%[[M0]], %[[K]]] : memref<13x40xf32>
// CHECK: %[[S:.+]] = vector.broadcast %[[A]] : f32 to vector<16xf32>
// CHECK: vector.fma %[[S]], %{{.+}}, %{{.+}} : vector<16xf32>
// The 18 columns left of each 6-row tile: the second vector masked.
// CHECK: %[[MASK:.+]] = vector.constant_mask [2] : vector<16xi1>
// CHECK: vector.maskedload %arg2[%{{.+}}, %c48], %[[MASK]]
// CHECK: vector.maskedstore %arg2[%{{.+}}, %c48], %[[MASK]]
// The last row (12).
// CHECK: vector.load %arg2[%c12, %{{.+}}]
func.func @nn(%a: memref<13x40xf32>, %b: memref<40x50xf32>, %c: memref<13x50xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<13x40xf32>, memref<40x50xf32>) outs(%c : memref<13x50xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs_t = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
// nt: both operands contiguous along k, so 4 x 4 dot products of 16-lane
// partial sums over k = 40 (two full steps, then one masked to 8 lanes),
// each reduced once into the result.
// CHECK-LABEL: func.func @nt
// CHECK-NOT: linalg.generic
// CHECK: scf.parallel (%[[M0:.+]]) = (%c0) to (%c8) step (%c4)
// CHECK: scf.for %[[N0:.+]] = %c0 to %c12 step %c4
// CHECK: scf.for %[[K:.+]] = %c0 to %c32 step %c16 iter_args
// CHECK: vector.load %arg0[%[[M0]], %[[K]]] : memref<8x40xf32>, vector<16xf32>
// CHECK: vector.load %arg1[%[[N0]], %[[K]]] : memref<12x40xf32>, vector<16xf32>
// CHECK: vector.fma
// CHECK: %[[MASK:.+]] = vector.constant_mask [8] : vector<16xi1>
// CHECK: vector.maskedload %arg0[%[[M0]], %c32], %[[MASK]]
// CHECK: %[[OLD:.+]] = memref.load %arg2[%[[M0]], %[[N0]]]
// CHECK: %[[SUM:.+]] = vector.reduction <add>, %{{.+}}, %[[OLD]] fastmath<reassoc,contract> : vector<16xf32> into f32
// CHECK: memref.store %[[SUM]], %arg2[%[[M0]], %[[N0]]]
func.func @nt(%a: memref<8x40xf32>, %b: memref<12x40xf32>, %c: memref<8x12xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs_t, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x40xf32>, memref<12x40xf32>) outs(%c : memref<8x12xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#lhs_t = affine_map<(b, m, k, n) -> (0, k, m)>
#rhs = affine_map<(b, m, k, n) -> (b, k, n)>
#out = affine_map<(b, m, k, n) -> (b, m, n)>
// tn with a broadcast batch: the batch is an outer loop, the lhs (read
// transposed, batch index 0) is broadcast element by element; the one
// 6 x 32 tile's loops fold away.
// CHECK-LABEL: func.func @tn_batched
// CHECK: scf.parallel (%[[B:.+]]) = (%c0) to (%c3) step (%c1)
// CHECK: scf.for %[[K:.+]] = %c0 to %c5 step %c1
// CHECK: vector.load %arg1[%[[B]], %[[K]], %c0] : memref<3x5x32xf32>, vector<16xf32>
// CHECK: memref.load %arg0[%c0, %[[K]], %c0] : memref<1x5x6xf32>
// CHECK: memref.load %arg0[%c0, %[[K]], %c1] : memref<1x5x6xf32>
func.func @tn_batched(%a: memref<1x5x6xf32>, %b: memref<3x5x32xf32>, %c: memref<3x6x32xf32>) {
  linalg.generic {indexing_maps = [#lhs_t, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%a, %b : memref<1x5x6xf32>, memref<3x5x32xf32>) outs(%c : memref<3x6x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#lhs_t = affine_map<(m, n, k) -> (k, m)>
#rhs_t = affine_map<(m, n, k) -> (n, k)>
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
// Left as loops: both operands transposed (no unit-stride vector of
// either kernel), a sum without reassoc (its order was promised), f64.
// CHECK-LABEL: func.func @tt
// CHECK: linalg.generic
// CHECK-LABEL: func.func @ordered
// CHECK: linalg.generic
// CHECK-LABEL: func.func @f64
// CHECK: linalg.generic
func.func @tt(%a: memref<16x8xf32>, %b: memref<32x16xf32>, %c: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [#lhs_t, #rhs_t, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<16x8xf32>, memref<32x16xf32>) outs(%c : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f32
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f32
    linalg.yield %s : f32
  }
  return
}
func.func @ordered(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %c: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @f64(%a: memref<8x16xf64>, %b: memref<16x32xf64>, %c: memref<8x32xf64>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x16xf64>, memref<16x32xf64>) outs(%c : memref<8x32xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y fastmath<reassoc,contract> : f64
    %s = arith.addf %acc, %p fastmath<reassoc,contract> : f64
    linalg.yield %s : f64
  }
  return
}
