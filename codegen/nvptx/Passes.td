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

#endif // TG_NVPTX_PASSES_TD
