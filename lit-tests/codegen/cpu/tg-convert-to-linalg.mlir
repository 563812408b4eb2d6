// RUN: tg-opt %s --split-input-file --tg-convert-to-linalg | FileCheck %s

// Broadcasting is in the indexing maps: a size-1 dim reads index 0, a
// missing leading dim is not read at all.
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @binary_broadcast
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ROW]], #[[$COL]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: outs(%[[E]] : tensor<4x3xf32>)
// CHECK: arith.subf
func.func @binary_broadcast(%a: tensor<4x1xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %r = tg.sub %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// bf16 is computed in f32 and rounded once.
// CHECK-LABEL: func.func @bf16_math
// CHECK: ^bb0(%[[IN:.+]]: bf16, %{{.+}}: bf16):
// CHECK: %[[X:.+]] = arith.extf %[[IN]] : bf16 to f32
// CHECK: %[[T:.+]] = math.tanh %[[X]] : f32
// CHECK: %[[R:.+]] = arith.truncf %[[T]] : f32 to bf16
// CHECK: linalg.yield %[[R]] : bf16
func.func @bf16_math(%a: tensor<8xbf16>) -> tensor<8xbf16> {
  %r = tg.tanh %a : tensor<8xbf16>
  return %r : tensor<8xbf16>
}

// -----

// CHECK-LABEL: func.func @integer_ops
// CHECK: arith.divsi
// CHECK: arith.cmpi slt
// CHECK: arith.select
func.func @integer_ops(%a: tensor<5xi32>, %b: tensor<5xi32>) -> tensor<5xi32> {
  %d = tg.div %a, %b : tensor<5xi32>, tensor<5xi32> -> tensor<5xi32>
  %m = tg.cmp lt %d, %b : tensor<5xi32>, tensor<5xi32> -> tensor<5xi1>
  %r = tg.select %m, %a, %b : tensor<5xi1>, tensor<5xi32>, tensor<5xi32> -> tensor<5xi32>
  return %r : tensor<5xi32>
}

// -----

// A splat constant is a fill, never a dense constant: the latter becomes a
// global as large as the tensor in the artifact.
// CHECK-LABEL: func.func @cast_and_constant
// CHECK-NOT: dense<
// CHECK: %[[C:.+]] = arith.constant 2.500000e+00 : f32
// CHECK: linalg.fill ins(%[[C]] : f32) outs(%{{.+}} : tensor<3xf32>)
// CHECK: arith.fptosi %{{.+}} : f32 to i64
func.func @cast_and_constant(%a: tensor<3xf32>) -> tensor<3xi64> {
  %c = tg.constant dense<2.5> : tensor<3xf32>
  %m = tg.mul %a, %c : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %r = tg.cast %m : tensor<3xf32> to tensor<3xi64>
  return %r : tensor<3xi64>
}

// -----

// Each reader of a splat gets its own fill right before it, not one fill
// at the top that lives until the last reader (scratch across every op in
// between, which a per-op scratch estimate cannot see). The tanh between
// the two readers runs while no fill is live.
// CHECK-LABEL: func.func @splat_fill_per_reader
// CHECK: linalg.fill {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.generic
// CHECK: arith.subf
// CHECK-NOT: linalg.fill
// CHECK: math.tanh
// CHECK: linalg.fill {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.generic
// CHECK: arith.mulf
func.func @splat_fill_per_reader(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = tg.constant dense<2.0> : tensor<4x8xf32>
  %s = tg.sub %a, %z : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t = tg.tanh %s : tensor<4x8xf32>
  %r = tg.mul %t, %z : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Transposes and batch broadcasting of matmul live in the maps: loops are
// (batch, m, n, k); the rank-2 rhs has no batch dim and is read as (n, k).
// CHECK-DAG: #[[$LHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$RHS:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @batched_matmul
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x4x3xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$LHS]], #[[$RHS]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[Z]] : tensor<2x4x3xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @batched_matmul(%a: tensor<2x4x6xf32>, %b: tensor<3x6xf32>) -> tensor<2x4x3xf32> {
  %r = tg.matmul %a, %b {transpose_rhs} : tensor<2x4x6xf32>, tensor<3x6xf32> -> tensor<2x4x3xf32>
  return %r : tensor<2x4x3xf32>
}

// -----

// CHECK-DAG: #[[$KEEP:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @reductions
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[$KEEP]]], iterator_types = ["parallel", "reduction"]}
// CHECK: arith.maximumf
// CHECK: iterator_types = ["reduction", "reduction"]
// CHECK: arith.addf
// CHECK: arith.divf
func.func @reductions(%a: tensor<4x6xf32>) -> (tensor<4x1xf32>, tensor<f32>) {
  %m = tg.max %a axes = [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %s = tg.mean %a axes = [0, 1] : tensor<4x6xf32> -> tensor<f32>
  return %m, %s : tensor<4x1xf32>, tensor<f32>
}

// -----

// Composites go through tg-decompose first.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: tg.
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
func.func @softmax(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %r = tg.softmax %a axis = 1 : tensor<2x5xf32>
  return %r : tensor<2x5xf32>
}

// -----

// CHECK-LABEL: func.func @movement
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
// CHECK: linalg.transpose ins(%{{.+}} : tensor<6x4xf32>) outs(%{{.+}} : tensor<4x6xf32>) permutation = [1, 0]
// CHECK: tensor.extract_slice %{{.+}}[1, 0] [2, 3] [2, 2] : tensor<4x6xf32> to tensor<2x3xf32>
// CHECK: %[[A:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x5xf32>
// CHECK: tensor.insert_slice %{{.+}} into %[[A]][0, 3] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x5xf32>
func.func @movement(%a: tensor<2x3x4xf32>, %b: tensor<2x2xf32>) -> tensor<2x5xf32> {
  %r = tg.reshape %a : tensor<2x3x4xf32> to tensor<6x4xf32>
  %t = tg.transpose %r perm = [1, 0] : tensor<6x4xf32> -> tensor<4x6xf32>
  %s = tg.slice %t start [1, 0] limit [4, 6] step [2, 2] : tensor<4x6xf32> -> tensor<2x3xf32>
  %c = tg.concat %s, %b axis = 1 : tensor<2x3xf32>, tensor<2x2xf32> -> tensor<2x5xf32>
  return %c : tensor<2x5xf32>
}

// -----

// Gather and scatter-add: ids are clamped to the table.
// CHECK-LABEL: func.func @embedding
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<10x4xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.insert
func.func @embedding(%t: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> (tensor<2x3x4xf32>, tensor<10x4xf32>) {
  %e = tg.embedding %t, %i : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %g = tg.embedding_grad %e, %i : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<10x4xf32>
  return %e, %g : tensor<2x3x4xf32>, tensor<10x4xf32>
}

// -----

// CHECK-LABEL: func.func @masks
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: arith.cmpi ugt
// CHECK: linalg.index 1
// CHECK: arith.cmpi eq
func.func @masks(%a: tensor<2x4x4xf32>, %l: tensor<3xi32>) -> (tensor<2x4x4xf32>, tensor<3x5xf32>) {
  %m = tg.causal_mask %a : tensor<2x4x4xf32>
  %o = tg.one_hot %l : tensor<3xi32> -> tensor<3x5xf32>
  return %m, %o : tensor<2x4x4xf32>, tensor<3x5xf32>
}

// -----

// Philox-4x32-10: ten rounds of two 32x32->64 multiplies.
// CHECK-LABEL: func.func @dropout
// CHECK: %[[SEED:.+]] = tensor.extract %{{.+}}[] : tensor<i64>
// CHECK: linalg.generic
// CHECK-COUNT-20: arith.mului_extended
// CHECK: arith.cmpi uge
// CHECK: arith.select
func.func @dropout(%a: tensor<16xf32>, %s: tensor<i64>) -> tensor<16xf32> {
  %r = tg.dropout %a, %s {p = 0.25 : f64, stream = 2 : i64} : tensor<16xf32>, tensor<i64>
  return %r : tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @random_normal
// CHECK: arith.mului_extended
// CHECK: math.log %{{.+}} : f64
// CHECK: math.sin
// CHECK: math.cos
// CHECK: arith.truncf %{{.+}} : f64 to f32
func.func @random_normal(%s: tensor<i64>) -> tensor<3x4xf32> {
  %r = tg.random normal %s {a = 0.0 : f64, b = 1.0 : f64, stream = 1 : i64} : tensor<i64> -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// -----

// A convolution is a GEMM per image over its im2col matrix: the image is
// padded, copied to col[g, (ic, i, j), (y, x)] through strided, dilated
// reads, and W[g] (Og x K) times col (K x P) is written in place into the
// image's slice of the result, in the matmul's loop order (g, og, k | p:
// innermost over the output positions, reassoc + contract). The images
// go in blocks (kScratchSlots = 2 at most; here 2 of 1 image): a loop over the blocks,
// marked tg_cpu.slots (tg-plan-scratch gives each its own scratch,
// tg-parallelize-loops runs them on threads), around the block's images.
// The padding: a zero-filled image whose interior a copy writes at +1
// (not tensor.pad, whose bufferized copy is an element-by-element memrefCopy).
// CHECK-DAG: #[[$PAD:.+]] = affine_map<(d0, d1, d2) -> (d0, d1 + 1, d2 + 1)>
// CHECK-DAG: #[[$COL:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2, d5 * 2 + d3)>
// CHECK-DAG: #[[$W:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$Y:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @conv2d
// CHECK: tensor.expand_shape %{{.+}} output_shape [2, 3, 18] : tensor<108xf32> into tensor<2x3x18xf32>
// CHECK: scf.for %[[B:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[OUTB:.+]] = %{{.+}}) -> (tensor<2x6x4x4xf32>)
// CHECK: %[[FIRST:.+]] = arith.muli %[[B]], %{{.+}} : index
// CHECK: %[[END:.+]] = arith.addi %[[FIRST]], %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.minsi %[[END]], %{{.+}} : index
// CHECK: scf.for %[[N:.+]] = %[[FIRST]] to %[[LAST]] step %{{.+}} iter_args(%[[OUT:.+]] = %[[OUTB]]) -> (tensor<2x6x4x4xf32>)
// CHECK: tensor.extract_slice %{{.+}}[%[[N]], 0, 0, 0] [1, 4, 8, 8] [1, 1, 1, 1] : tensor<2x4x8x8xf32> to tensor<4x8x8xf32>
// CHECK: %[[ZP:.+]] = linalg.fill {{.*}} -> tensor<4x10x10xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[$PAD]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.+}} : tensor<4x8x8xf32>) outs(%[[ZP]] : tensor<4x10x10xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$COL]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.+}} : tensor<2x2x10x10xf32>) outs(%{{.+}} : tensor<2x2x3x3x4x4xf32>)
// CHECK: tensor.extract_slice %[[OUT]][%[[N]], 0, 0, 0] [1, 6, 4, 4]
// CHECK: linalg.fill {{.*}} -> tensor<2x3x16xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$W]], #[[$C]], #[[$Y]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%{{.+}}, %{{.+}} : tensor<2x3x18xf32>, tensor<2x18x16xf32>) outs(%{{.+}} : tensor<2x3x16xf32>)
// CHECK: arith.mulf %{{.+}}, %{{.+}} fastmath<reassoc,contract>
// CHECK: tensor.insert_slice %{{.+}} into %[[OUT]][%[[N]], 0, 0, 0] [1, 6, 4, 4]
// CHECK: scf.yield
// CHECK: scf.yield
// CHECK-NEXT: } {tg_cpu.slots = 2 : i64}
func.func @conv2d(%x: tensor<2x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<2x6x4x4xf32> {
  %r = tg.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<2x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x4x4xf32>
  return %r : tensor<2x6x4x4xf32>
}

// -----

// The weight gradient accumulates dy[n] (Og x P) times col^T over the
// images of each block into the block's own partial sum (slice b of a
// zeroed [blocks, G, Og, K] tensor carried by the loops): loops (g, og, k |
// p), a dot product over the output positions innermost. The partials are
// then summed in block order (the blocks, not the threads, decide it).
// CHECK-DAG: #[[$DY:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$C:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$DW:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$PART:.+]] = affine_map<(d0, d1, d2, d3) -> (d3, d0, d1, d2)>
// CHECK-LABEL: func.func @conv2d_grad_weight
// CHECK: %[[ZERO:.+]] = linalg.fill {{.*}} -> tensor<2x1x6x27xf32>
// CHECK: scf.for %[[B:.+]] = {{.*}} iter_args(%[[PB:.+]] = %[[ZERO]]) -> (tensor<2x1x6x27xf32>)
// CHECK: scf.for {{.*}} iter_args(%[[P:.+]] = %[[PB]]) -> (tensor<2x1x6x27xf32>)
// CHECK: %[[DWI:.+]] = tensor.extract_slice %[[P]][%[[B]], 0, 0, 0] [1, 1, 6, 27] [1, 1, 1, 1] : tensor<2x1x6x27xf32> to tensor<1x6x27xf32>
// CHECK: %[[DW:.+]] = linalg.generic {indexing_maps = [#[[$DY]], #[[$C]], #[[$DW]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<1x6x64xf32>, tensor<1x27x64xf32>) outs(%[[DWI]] : tensor<1x6x27xf32>)
// CHECK: tensor.insert_slice %[[DW]] into %[[P]][%[[B]], 0, 0, 0]
// CHECK: scf.yield
// CHECK: } {tg_cpu.slots = 2 : i64}
// CHECK: linalg.generic {indexing_maps = [#[[$PART]], #[[$DW]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}} : tensor<2x1x6x27xf32>) outs(%{{.+}} : tensor<1x6x27xf32>)
// CHECK: tensor.expand_shape %{{.+}} output_shape [6, 3, 3, 3]
func.func @conv2d_grad_weight(%x: tensor<2x3x8x8xf32>, %g: tensor<2x6x8x8xf32>) -> tensor<6x3x3x3xf32> {
  %r = tg.conv2d_grad_weight %x, %g {padding = array<i64: 1, 1>} : tensor<2x3x8x8xf32>, tensor<2x6x8x8xf32> -> tensor<6x3x3x3xf32>
  return %r : tensor<6x3x3x3xf32>
}

// -----

// The input gradient: dcol = W[g]^T dy[n] (loops g, k, og | p), scattered
// through a strided output map (y*2 + 1: stride 2, in front the padding
// lo = (3 - 1) - 1) into a [G, Cg, KH, KW, 10, 10] tensor zeroed per block
// of images and carried by the block's loop, then summed over the taps:
// dx[iy] reads it at iy + 1 + 1 - i, the taps looped between a row (iy)
// and its elements (ix), so each row is summed in registers. One image:
// one block.
// CHECK-DAG: #[[$WT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1)>
// CHECK-DAG: #[[$SCATTER:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4 * 2 + 1, d5 * 2 + 1)>
// CHECK-DAG: #[[$TAPS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3, d4, d2 - d3 + 2, d5 - d4 + 2)>
// CHECK-DAG: #[[$ROWS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func.func @conv2d_grad_input
// CHECK: scf.for {{.*}} iter_args(%[[DXB:.+]] = %{{.+}}) -> (tensor<1x4x8x8xf32>)
// CHECK: %[[Z:.+]] = linalg.fill {{.*}} -> tensor<2x2x3x3x10x10xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.+}} = %[[DXB]], %[[ZI:.+]] = %[[Z]])
// CHECK: linalg.generic {indexing_maps = [#[[$WT]], #{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} {{.*}} outs(%{{.+}} : tensor<2x18x16xf32>)
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #[[$SCATTER]]], {{.*}} ins(%{{.+}} : tensor<2x2x3x3x4x4xf32>) outs(%[[ZI]] : tensor<2x2x3x3x10x10xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$TAPS]], #[[$ROWS]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%[[S]] : tensor<2x2x3x3x10x10xf32>) outs(%{{.+}} : tensor<2x2x8x8xf32>)
// CHECK: scf.yield %{{.+}}, %[[S]]
func.func @conv2d_grad_input(%g: tensor<1x6x4x4xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %r = tg.conv2d_grad_input %g, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<1x6x4x4xf32>, tensor<6x2x3x3xf32> -> tensor<1x4x8x8xf32>
  return %r : tensor<1x4x8x8xf32>
}

// -----

// CHECK-DAG: #[[$PAD4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 + 1, d3 + 1)>
// CHECK-LABEL: func.func @pooling
// CHECK: %[[NEG:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[P:.+]] = linalg.fill ins(%[[NEG]] : f32) {{.*}} -> tensor<1x2x7x7xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[$PAD4]]], {{.*}} outs(%[[P]] : tensor<1x2x7x7xf32>)
// CHECK: arith.constant dense<0.000000e+00> : tensor<3x3xf32>
// CHECK: arith.maximumf
// CHECK: arith.addf
// CHECK: arith.divf
func.func @pooling(%x: tensor<1x2x5x5xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %m = tg.max_pool2d %x kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  %a = tg.avg_pool2d %x kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  return %m, %a : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// -----

// The max-pool gradient finds each window's first maximum (value and
// position, two outputs), then gathers: overlapping windows (3x3, stride 2)
// may each hold a position.
// CHECK-LABEL: func.func @max_pool_grad
// CHECK: linalg.generic {{.+}} outs(%{{.+}}, %{{.+}} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>)
// CHECK: arith.cmpf uno
// CHECK: linalg.generic
// CHECK: tensor.extract %{{.+}} : tensor<1x1x3x3xi64>
func.func @max_pool_grad(%g: tensor<1x1x3x3xf32>, %x: tensor<1x1x5x5xf32>) -> tensor<1x1x5x5xf32> {
  %r = tg.max_pool2d_grad %g, %x kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<1x1x3x3xf32>, tensor<1x1x5x5xf32>
  return %r : tensor<1x1x5x5xf32>
}

// -----

// Disjoint windows inside the input (2x2, stride 2, no padding): each
// window writes its taps through a strided output map, no gather.
// CHECK-DAG: #[[$TAP:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-LABEL: func.func @max_pool_grad_disjoint
// CHECK: %[[ARG:.+]]:2 = linalg.generic {{.+}} outs(%{{.+}}, %{{.+}} : tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>)
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}, #[[$TAP]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.+}}, %[[ARG]]#1, %{{.+}} : tensor<2x2xf32>, tensor<1x1x2x2xi64>, tensor<1x1x2x2xf32>)
// CHECK-NOT: tensor.extract
// CHECK: return
func.func @max_pool_grad_disjoint(%g: tensor<1x1x2x2xf32>, %x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %r = tg.max_pool2d_grad %g, %x kernel = [2, 2] stride = [2, 2] : tensor<1x1x2x2xf32>, tensor<1x1x4x4xf32>
  return %r : tensor<1x1x4x4xf32>
}
