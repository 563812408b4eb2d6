// The pass is registered when codegen/nvptx is built, as tg-bench-gemm is.
// REQUIRES: tg-bench-gemm
// RUN: tg-opt %s --split-input-file --tg-configure-gemms | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-configure-gemms=targets=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: not tg-opt %s --split-input-file --tg-configure-gemms=targets=sm_70 2>&1 | FileCheck %s --check-prefix=BADTARGET

// tg-configure-gemms records chooseTileConfig's pick per target on every
// 16-bit GEMM (docs/nvptx.md): wave quantisation x a per-tile prior.
// BADTARGET: error: tg-configure-gemms: unknown target 'sm_70' (the GEMM generators know sm_80 and sm_90a)

// A gemm group gets the configs; the matmul inside it does not. 256x1024
// in 64x64 tiles is 64 CTAs, one wave on 108 SMs and the cheapest on sm_80;
// on sm_90a 64x128 (32 tiles, one wave) beats the larger tiles.
// CHECK-LABEL: func.func @group
// CHECK: tg.fused <gemm>
// CHECK-SAME: tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">, #tg.tile_config<bm = 64, bn = 128, bk = 64, stages = 8, group_m = 8, warps_m = 1, warps_n = 1, consumer_warpgroups = 1, persistent = true, target = "sm_90a">]
// CHECK: tg.matmul
// CHECK-NOT: tile_config
// CHECK: tg.yield
// SM80-LABEL: func.func @group
// SM80: tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">]
func.func @group(%x: tensor<256x512xbf16>, %w: tensor<512x1024xbf16>, %b: tensor<1024xbf16>) -> (tensor<256x1024xbf16>, tensor<256x1024xbf16>) {
  %r:2 = tg.fused <gemm> ins(%x, %w, %b : tensor<256x512xbf16>, tensor<512x1024xbf16>, tensor<1024xbf16>) {
  ^bb0(%a: tensor<256x512xbf16>, %c: tensor<512x1024xbf16>, %d: tensor<1024xbf16>):
    %m = tg.matmul %a, %c {tg.acc = f32} : tensor<256x512xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>
    %s = tg.add %m, %d : tensor<256x1024xbf16>, tensor<1024xbf16> -> tensor<256x1024xbf16>
    %y = tg.relu %s : tensor<256x1024xbf16>
    tg.yield %s, %y : tensor<256x1024xbf16>, tensor<256x1024xbf16>
  } -> tensor<256x1024xbf16>, tensor<256x1024xbf16>
  return %r#0, %r#1 : tensor<256x1024xbf16>, tensor<256x1024xbf16>
}

// -----

// A large lone f16 matmul (the transposed-rhs form): 8192x8192 fills
// several waves of the largest tiles on both targets.
// CHECK-LABEL: func.func @lone
// CHECK: tg.matmul
// CHECK-SAME: tg.tile_configs = [#tg.tile_config<bm = 128, bn = 256, bk = 32, stages = 3, group_m = 8, warps_m = 2, warps_n = 4, consumer_warpgroups = 0, persistent = false, target = "sm_80">, #tg.tile_config<bm = 128, bn = 256, bk = 64, stages = 4, group_m = 8, warps_m = 1, warps_n = 1, consumer_warpgroups = 2, persistent = true, target = "sm_90a">]
func.func @lone(%a: tensor<8192x1024xf16>, %b: tensor<8192x1024xf16>) -> tensor<8192x8192xf16> {
  %c = tg.matmul %a, %b {transpose_rhs, tg.acc = f32} : tensor<8192x1024xf16>, tensor<8192x1024xf16> -> tensor<8192x8192xf16>
  return %c : tensor<8192x8192xf16>
}

// -----

// The batch counts in the wave model: 48 heads of 128x128 on sm_80 are 192
// tiles of 64x64 (two waves on 108 SMs) but 96 of 64x128 (one), so 64x128
// wins; a single 128x128 product would take 64x64.
// CHECK-LABEL: func.func @batched
// CHECK: tg.matmul
// CHECK-SAME: #tg.tile_config<bm = 64, bn = 128, bk = 32, {{.*}} target = "sm_80">
// CHECK-SAME: #tg.tile_config<bm = 64, bn = 128, bk = 64, {{.*}} target = "sm_90a">
func.func @batched(%q: tensor<48x128x64xbf16>, %k: tensor<48x128x64xbf16>) -> tensor<48x128x128xbf16> {
  %s = tg.matmul %q, %k {transpose_rhs, tg.acc = f32} : tensor<48x128x64xbf16>, tensor<48x128x64xbf16> -> tensor<48x128x128xbf16>
  return %s : tensor<48x128x128xbf16>
}

// CHECK-LABEL: func.func @single_head
// CHECK: #tg.tile_config<bm = 64, bn = 64, bk = 32, {{.*}} target = "sm_80">
func.func @single_head(%q: tensor<128x64xbf16>, %k: tensor<128x64xbf16>) -> tensor<128x128xbf16> {
  %s = tg.matmul %q, %k {transpose_rhs, tg.acc = f32} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xbf16>
  return %s : tensor<128x128xbf16>
}

// -----

// fp32 products are the SIMT GEMM's: no tile config.
// CHECK-LABEL: func.func @fp32
// CHECK-NOT: tile_config
// CHECK: return
func.func @fp32(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c = tg.matmul %a, %b : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

// Both operands transposed: no kernel form computes it, so no config (the
// lowering names the reason).
// CHECK-LABEL: func.func @tt
// CHECK-NOT: tile_config
// CHECK: return
func.func @tt(%a: tensor<64x32xbf16>, %b: tensor<16x64xbf16>) -> tensor<32x16xbf16> {
  %c = tg.matmul %a, %b {transpose_lhs, transpose_rhs} : tensor<64x32xbf16>, tensor<16x64xbf16> -> tensor<32x16xbf16>
  return %c : tensor<32x16xbf16>
}

// -----

// Ragged shapes (docs/nvptx.md, "Ragged shapes"). The MLP's classifier:
// B = [256, 10] has rows of 20 bytes. sm_80's mma.sync kernel copies them
// in 4-byte pieces (kernel elided: the default tensor_core); TMA needs
// 16-byte strides, so on sm_90a the mma.sync kernel runs, with sm_80's
// tile fields.
// CHECK-LABEL: func.func @ragged_n
// CHECK: tg.matmul
// CHECK-SAME: #tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">
// CHECK-SAME: #tg.tile_config<bm = 64, bn = 64, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_90a", kernel = "mma_sync">
func.func @ragged_n(%x: tensor<64x256xbf16>, %w: tensor<256x10xbf16>) -> tensor<64x10xbf16> {
  %c = tg.matmul %x, %w {tg.acc = f32} : tensor<64x256xbf16>, tensor<256x10xbf16> -> tensor<64x10xbf16>
  return %c : tensor<64x10xbf16>
}

// The same N = 10 with the weight stored [10, 256] (transpose_rhs): both
// operands' rows are K = 256 long, so TMA loads them; only the output is
// ragged, and wgmma takes it.
// CHECK-LABEL: func.func @ragged_n_aligned_rows
// CHECK: tg.matmul
// CHECK-SAME: target = "sm_80">
// CHECK-SAME: consumer_warpgroups = 1, persistent = true, target = "sm_90a">]
func.func @ragged_n_aligned_rows(%x: tensor<64x256xbf16>, %w: tensor<10x256xbf16>) -> tensor<64x10xbf16> {
  %c = tg.matmul %x, %w {transpose_rhs, tg.acc = f32} : tensor<64x256xbf16>, tensor<10x256xbf16> -> tensor<64x10xbf16>
  return %c : tensor<64x10xbf16>
}

// An odd K (the rows of A) is an mma.sync kernel on sm_90a as well.
// CHECK-LABEL: func.func @odd_k
// CHECK: target = "sm_90a", kernel = "mma_sync">
func.func @odd_k(%a: tensor<100x51xf16>, %b: tensor<51x64xf16>) -> tensor<100x64xf16> {
  %c = tg.matmul %a, %b {tg.acc = f32} : tensor<100x51xf16>, tensor<51x64xf16> -> tensor<100x64xf16>
  return %c : tensor<100x64xf16>
}

// GPT-2 small's vocabulary (50257) in the backward at B*T = 8192: the
// logits' gradient has odd rows, but the products are large enough that
// copying it into a padded staging buffer (one read and one write of
// 823 MB, ~0.46 ms at 75% of 4.8 TB/s) costs less than wgmma saves over
// mma.sync (632 GFLOP: ~1.03 ms vs ~2.20 ms at the H200's measured rates):
// kernel = "wgmma_staged" with sm_90a's own tile fields (docs/nvptx.md,
// "wgmma for odd row pitches"). sm_80 has no TMA and keeps its kernel.
// CHECK-LABEL: func.func @vocab_input_grad
// CHECK: tg.matmul
// CHECK-SAME: target = "sm_80">
// CHECK-SAME: #tg.tile_config<bm = 128, bn = 192, bk = 64, stages = 5, group_m = 8, warps_m = 1, warps_n = 1, consumer_warpgroups = 2, persistent = true, target = "sm_90a", kernel = "wgmma_staged">
func.func @vocab_input_grad(%g: tensor<8192x50257xbf16>, %w: tensor<50257x768xbf16>) -> tensor<8192x768xbf16> {
  %c = tg.matmul %g, %w {tg.acc = f32} : tensor<8192x50257xbf16>, tensor<50257x768xbf16> -> tensor<8192x768xbf16>
  return %c : tensor<8192x768xbf16>
}

// The weight gradient of the output embedding: TN with M = 50257.
// CHECK-LABEL: func.func @vocab_weight_grad
// CHECK: tg.matmul
// CHECK-SAME: #tg.tile_config<bm = 128, bn = 256, bk = 64, stages = 4, group_m = 8, warps_m = 1, warps_n = 1, consumer_warpgroups = 2, persistent = true, target = "sm_90a", kernel = "wgmma_staged">
func.func @vocab_weight_grad(%g: tensor<8192x50257xbf16>, %x: tensor<8192x768xbf16>) -> tensor<50257x768xbf16> {
  %c = tg.matmul %g, %x {transpose_lhs, tg.acc = f32} : tensor<8192x50257xbf16>, tensor<8192x768xbf16> -> tensor<50257x768xbf16>
  return %c : tensor<50257x768xbf16>
}

// The same odd operand times a thin matrix (N = 8): wgmma would save
// ~12 us, the copy costs ~0.46 ms; the mma.sync kernel stays.
// CHECK-LABEL: func.func @vocab_thin
// CHECK: target = "sm_90a", kernel = "mma_sync">
func.func @vocab_thin(%g: tensor<8192x50257xbf16>, %w: tensor<50257x8xbf16>) -> tensor<8192x8xbf16> {
  %c = tg.matmul %g, %w {tg.acc = f32} : tensor<8192x50257xbf16>, tensor<50257x8xbf16> -> tensor<8192x8xbf16>
  return %c : tensor<8192x8xbf16>
}

// Under 8 in M, N or K a tensor-core tile (16x8x16) is mostly zero
// padding: the SIMT GEMM's one tile, on both targets.
// CHECK-LABEL: func.func @tiny_k
// CHECK: tg.tile_configs = [#tg.tile_config<bm = 64, bn = 64, bk = 16, stages = 1, group_m = 1, warps_m = 1, warps_n = 1, consumer_warpgroups = 0, persistent = false, target = "sm_80", kernel = "simt">, #tg.tile_config<bm = 64, bn = 64, bk = 16, stages = 1, group_m = 1, warps_m = 1, warps_n = 1, consumer_warpgroups = 0, persistent = false, target = "sm_90a", kernel = "simt">]
func.func @tiny_k(%a: tensor<64x3xbf16>, %b: tensor<3x64xbf16>) -> tensor<64x64xbf16> {
  %c = tg.matmul %a, %b {tg.acc = f32} : tensor<64x3xbf16>, tensor<3x64xbf16> -> tensor<64x64xbf16>
  return %c : tensor<64x64xbf16>
}

// An accumulator other than f32 (tg.acc = f64, which the verifier allows:
// at least as wide as the result) has no tensor-core kernel: no config
// here, and the GEMM lowering refuses the op by name ("cannot become a
// tensor-core GEMM: it accumulates in a type other than f32",
// test/nvptx/GemmLoweringTest.cpp) instead of accumulating in f32.
// CHECK-LABEL: func.func @acc_not_f32
// CHECK: tg.matmul
// CHECK-NOT: tg.tile_configs
// CHECK: return
func.func @acc_not_f32(%a: tensor<256x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<256x1024xbf16> {
  %c = tg.matmul %a, %b {tg.acc = f64} : tensor<256x512xbf16>, tensor<512x1024xbf16> -> tensor<256x1024xbf16>
  return %c : tensor<256x1024xbf16>
}
