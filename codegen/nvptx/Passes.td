//===- Passes.td - GPU code generation passes --------------*- tablegen -*-===//
//
// The passes of codegen/nvptx. They know the GPU (its tile shapes, shared
// memory and SM count), so they live with the backend rather than in
// passes/; codegen/registry registers them for tg-opt and tgc.
//
//===----------------------------------------------------------------------===//

#ifndef TG_NVPTX_PASSES_TD
#define TG_NVPTX_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConfigureGemmsPass : Pass<"tg-configure-gemms", "::mlir::ModuleOp"> {
  let summary = "Choose the tensor-core tile configuration of every 16-bit GEMM";
  let description = [{
    Attaches `tg.tile_configs`, one `#tg.tile_config<...>` per target, to
    every `gemm` group (`tg.fused <gemm>`) and every tg.matmul outside a
    group whose operands are bf16 or f16: the generator and configuration
    `configureGemm` picks for the product's M, N, K, layout and batch on
    that target (docs/nvptx.md, "Tile configurations and the heuristic",
    "Ragged shapes"): the SIMT kernel for a product under 8 in M, N or K,
    on sm_90a the mma.sync kernel when an operand's rows are not 16-byte
    aligned, else the target's tensor-core kernel. The
    GPU backend's GEMM lowering reads it and refuses a GEMM without one;
    fp32 products are left to the SIMT GEMM and get none. Keeping the
    decision an attribute lets a test, or a person, change it without
    touching the lowering.

    ```mlir
    %r = tg.fused <gemm> ins(%x, %w : tensor<256x512xbf16>, tensor<512x1024xbf16>) {...}
    // becomes
    %r = tg.fused <gemm> ins(...) {tg.tile_configs = [
        #tg.tile_config<bm = 64, bn = 128, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">,
        #tg.tile_config<bm = 128, bn = 128, bk = 64, stages = 6, ..., target = "sm_90a">], ...} {...}
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    ListOption<"targets", "targets", "std::string",
               "GPU targets to configure (sm_80, sm_90a; default both)">
  ];
}

def ConfigureRowReductionsPass
    : Pass<"tg-configure-row-reductions", "::mlir::ModuleOp"> {
  let summary = "Choose how many blocks each long row of a row reduction takes";
  let description = [{
    Attaches `tg_nvptx.row_blocks = S` to every row reduction (a
    `row_reduction` group, or a lone tg.sum/mean/max over trailing axes)
    whose rows should be split over S blocks: rows over 1024 elements that
    are too few to fill an H200 (under 264 rows, two blocks per SM), S =
    min(ceil(264 / rows), groups of the row / (256 threads x 4), 64), when
    that is 2 or more and no row result is planned in place of an operand
    (docs/nvptx.md, "Long rows over several blocks"). The GPU reduction
    lowering reads it: the row becomes one statistics launch per phase of
    dependent reductions (a softmax's max and sum of exp are one phase,
    reduced online) and one launch that writes the outputs, the partials
    in the launches' scratch. Without the attribute each row is one warp
    or one block. Run it after the memory plan.

    ```mlir
    %0:3 = tg.fused <row_reduction> ins(%x, %l : tensor<4x50257xf32>, tensor<4xi64>) {...}
    // becomes
    %0:3 = tg.fused <row_reduction> ins(...) {tg_nvptx.row_blocks = 49 : i64} {...}
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def SizeGpuScratchPass : Pass<"tg-size-gpu-scratch", "::mlir::ModuleOp"> {
  let summary = "Record each GPU op's kernel scratch as tg.scratch before the plan";
  let description = [{
    Sets `tg.scratch` (bytes, TGDialect.td) on every op whose GPU launches
    take scratch (`KernelLaunch::scratchBytes`), so that tg-plan-memory
    places it as a buffer live at the op's step only and records its
    `tg.scratch_offset`, which the GPU schedule reads (docs/nvptx.md, "Op
    scratch in the plan"). Two kinds of op take scratch, and both sizes
    depend only on shapes and the tile configs: a split reduction's or a
    long row's partials (8 bytes x reductions x slices x outputs; rows split
    as tg-configure-row-reductions would split them before any in-place
    choice, the most the lowering can then ask for), and an sm_90a
    `wgmma_staged` GEMM's realigned copies (each odd-pitch operand padded
    to 16-byte rows, each copy 256-byte aligned). One plan serves every
    target of an artifact, so an op's size is the largest over `targets`.
    Ops that take no GPU scratch lose any `tg.scratch` they carried (the
    CPU backend's). Run it after tg-configure-gemms, before tg-plan-memory.

    ```mlir
    %r = tg.fused <gemm> ins(%dy, %w : tensor<8192x50257xbf16>, tensor<50257x768xbf16>) {tg.tile_configs = [..., #tg.tile_config<..., kernel = "wgmma_staged", target = "sm_90a">]} {...}
    // becomes
    %r = tg.fused <gemm> ins(...) {tg.scratch = 823525376 : i64, tg.tile_configs = [...]} {...}
    ```
  }];
  let dependentDialects = ["::mlir::tg::TGDialect"];
  let options = [
    ListOption<"targets", "targets", "std::string",
               "GPU targets whose scratch to size (sm_80, sm_90a; default both)">
  ];
}

#endif // TG_NVPTX_PASSES_TD
