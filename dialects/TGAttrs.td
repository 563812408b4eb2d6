//===- TGAttrs.td - tg attributes and enums ----------------*- tablegen -*-===//
//
// Enums of op semantics, the parameter-initializer attribute that tags model
// parameters, and the typed attributes that passes hand to each other (the
// role of a function argument or result, the memory plan's summary, the
// rematerialisation record). The dialect's discardable attributes that carry
// them are declared in TGDialect.td.
//
//===----------------------------------------------------------------------===//

#ifndef TG_ATTRS_TD
#define TG_ATTRS_TD

include "dialects/TGDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def TG_CmpPredicate : I32EnumAttr<"CmpPredicate", "comparison predicate", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::tg";
}

def TG_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU formula: exact (erf) or the tanh approximation", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::mlir::tg";
}

def TG_InitializerAttr : AttrDef<TG_Dialect, "Initializer"> {
  let mnemonic = "init";
  let summary = "How a parameter is initialised";
  let description = [{
    `#tg.init<KIND>` or `#tg.init<KIND(a, b)>`. Kinds and their arguments:
    `zeros`, `ones`, `constant(v)`, `normal(mean, std)`, `uniform(lo, hi)`,
    `glorot_uniform`, `glorot_normal`, `kaiming_uniform`, `kaiming_normal`
    (fan-in/fan-out come from the parameter's shape).

    ```mlir
    func.func @forward(%w: tensor<784x256xf32> {tg.name = "fc1.weight",
        tg.role = #tg.role<param>, tg.init = #tg.init<normal(0.0, 2.0e-02)>})
    ```
  }];
  let parameters = (ins StringRefParameter<"initializer kind">:$kind,
                        "::mlir::DenseF64ArrayAttr":$args);
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$kind, "::llvm::ArrayRef<double>":$args), [{
      return $_get($_ctxt, kind, ::mlir::DenseF64ArrayAttr::get($_ctxt, args));
    }]>
  ];
  let extraClassDeclaration = [{
    /// The arguments as plain numbers.
    ::llvm::ArrayRef<double> getValues() const { return getArgs().asArrayRef(); }
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def TG_Role : I32EnumAttr<"Role",
    "what a model function's argument or result is", [
    I32EnumAttrCase<"input", 0>, I32EnumAttrCase<"param", 1>,
    I32EnumAttrCase<"state", 2>, I32EnumAttrCase<"step", 3>,
    I32EnumAttrCase<"loss", 4>, I32EnumAttrCase<"output", 5>,
    I32EnumAttrCase<"grad", 6>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}

def TG_RoleAttr : EnumAttr<TG_Dialect, TG_Role, "role"> {
  let summary = "Role of a model function's argument or result";
  let description = [{
    `#tg.role<param>`. Arguments are `input`, `param`, `state` (optimizer
    state) or `step` (the step counter); results are `loss`, `output`,
    `grad`, or the next value of a `param`, `state` or `step` argument.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def TG_MemoryPlanAttr : AttrDef<TG_Dialect, "MemoryPlan"> {
  let mnemonic = "memory";
  let summary = "Summary of a function's memory plan (tg-plan-memory)";
  let description = [{
    Bytes per category of the planned function, the persistent block
    (parameters, optimizer state, step), the transient arena, the planned
    peak, the lower bound and the unplanned (naive) total:
    `#tg.memory<params_bytes = 16384, ..., transient_bytes = 32768, ...>`.
    Backends size the arena from `transient_bytes`. Every field is printed
    (and required), so that `tg-opt` shows the whole plan.
  }];
  let parameters = (ins
    "int64_t":$params_bytes,
    "int64_t":$optimizer_bytes,
    "int64_t":$inputs_bytes,
    "int64_t":$grads_bytes,
    "int64_t":$activations_bytes,
    "int64_t":$workspace_bytes,
    "int64_t":$persistent_bytes,
    "int64_t":$transient_bytes,
    "int64_t":$peak_bytes,
    "int64_t":$lower_bound_bytes,
    "int64_t":$naive_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TG_RematAttr : AttrDef<TG_Dialect, "Remat"> {
  let mnemonic = "remat";
  let summary = "What tg-rematerialize did to a gradient function";
  let description = [{
    `#tg.remat<bytes = N, flops = M, step_flops = S>`: activation bytes no
    longer saved by the forward pass, the extra flops spent recomputing
    them, and the gradient function's FLOPs with the replays (so M / (S - M)
    is the extra work as a share of the step).
  }];
  let parameters = (ins "int64_t":$bytes,
                        "int64_t":$flops,
                        "int64_t":$step_flops);
  let assemblyFormat = "`<` struct(params) `>`";
}

def TG_BudgetFitAttr : AttrDef<TG_Dialect, "BudgetFit"> {
  let mnemonic = "budget_fit";
  let summary = "How tg-fit-budget fitted the training step into a budget";
  let description = [{
    On the module: `choice` is `none`, `shard`, `recompute`, `micro-batch`
    or `precision` (the most expensive means used; `shard` is ZeRO stage 1
    chosen by the fitter for a data-parallel step); `level` the
    rematerialisation level (0-4), `micro_batches` the batch split, `zero`
    the step's ZeRO stage (0, or 1: optimizer state sharded over the
    ranks), `precision` the step's precision; `budget`, `peak` and `unconstrained`
    planned bytes of @train_step; `extra_flops` the replayed FLOPs out of
    `step_flops` (the gradient function's, replays included); `fits` false
    when even the least peak is over the budget.

    ```mlir
    module attributes {tg.budget_fit = #tg.budget_fit<choice = "recompute", level = 2, micro_batches = 1, zero = 0, precision = "fp32", budget = 1000, peak = 900, unconstrained = 1500, extra_flops = 10, step_flops = 310, fits = true>}
    ```
  }];
  let parameters = (ins StringRefParameter<>:$choice,
                        "int64_t":$level,
                        "int64_t":$micro_batches,
                        "int64_t":$zero,
                        StringRefParameter<>:$precision,
                        "int64_t":$budget,
                        "int64_t":$peak,
                        "int64_t":$unconstrained,
                        "int64_t":$extra_flops,
                        "int64_t":$step_flops,
                        "bool":$fits);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TG_KernelKind : I32EnumAttr<"KernelKind",
    "what a fusion group (one kernel of the step) computes", [
    I32EnumAttrCase<"gemm", 0>, I32EnumAttrCase<"elementwise", 1>,
    I32EnumAttrCase<"row_reduction", 2>, I32EnumAttrCase<"reduction", 3>,
    I32EnumAttrCase<"optimizer", 4>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}

def TG_KernelKindAttr : EnumAttr<TG_Dialect, TG_KernelKind, "kernel"> {
  let summary = "Kind of a fusion group (tg.fused), which picks its codegen";
  let description = [{
    `#tg.kernel<gemm>`: a matmul with its epilogue; `elementwise`: a
    connected set of elementwise ops and broadcasts over one iteration
    space; `row_reduction`: reductions over the trailing axes of one row
    domain (softmax, norms, cross-entropy) with their elementwise producers
    and consumers; `reduction`: one reduction with its elementwise prologue;
    `optimizer`: the parameter update of every parameter in one kernel.
    docs/fusion.md says how each maps to a GPU kernel.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def TG_TileConfigAttr : AttrDef<TG_Dialect, "TileConfig"> {
  let mnemonic = "tile_config";
  let summary = "Tile configuration of one tensor-core GEMM kernel for one GPU";
  let description = [{
    What `tg-configure-gemms` chose for a GEMM on `target` and the GPU
    backend's GEMM lowering reads: a CTA computes a `bm`×`bn` tile of the
    output, stepping K by `bk` through a `stages`-deep shared-memory ring;
    tiles are rastered in groups of `group_m` along M. On `sm_80` the CTA is
    `warps_m`×`warps_n` warps of mma.sync (`consumer_warpgroups` is 0,
    `persistent` false); on `sm_90a` one producer warpgroup feeds
    `consumer_warpgroups` = bm/64 wgmma warpgroups and the grid is persistent
    (`warps_m` = `warps_n` = 1). The verifier admits only configurations the
    generators can build (docs/nvptx.md).

    `kernel` says which generator computes the product (docs/nvptx.md,
    "Ragged shapes"): `tensor_core` (the default, elided) is the target's
    own (mma.sync on sm_80, wgmma + TMA on sm_90a); `mma_sync` on sm_90a is
    the sm_80 kernel, for an operand whose rows TMA cannot describe (a
    contiguous dimension not a multiple of 8), with sm_80's tile fields;
    `wgmma_staged` (sm_90a only, with sm_90a's tile fields) is the wgmma +
    TMA kernel reading each operand whose rows TMA cannot describe from a
    realigned copy in the op's scratch (rows padded to 8 elements by one
    SIMT copy launch per operand before the GEMM), chosen when the copies
    pay (docs/nvptx.md, "wgmma for odd row pitches"); `simt` is the CUDA-core GEMM for products too small for a tensor-core
    tile (its fixed 64x64x16 tile: stages 1, one warp each way, no
    consumers, not persistent).

    ```mlir
    #tg.tile_config<bm = 128, bn = 128, bk = 32, stages = 4, group_m = 8, warps_m = 2, warps_n = 2, consumer_warpgroups = 0, persistent = false, target = "sm_80">
    #tg.tile_config<bm = 64, bn = 64, bk = 16, stages = 1, group_m = 1, warps_m = 1, warps_n = 1, consumer_warpgroups = 0, persistent = false, target = "sm_90a", kernel = "simt">
    ```
  }];
  let parameters = (ins "int64_t":$bm, "int64_t":$bn, "int64_t":$bk,
                        "int64_t":$stages, "int64_t":$group_m,
                        "int64_t":$warps_m, "int64_t":$warps_n,
                        "int64_t":$consumer_warpgroups, "bool":$persistent,
                        StringRefParameter<"GPU target">:$target,
                        StringRefParameter<"generator", [{"tensor_core"}]>:$kernel);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // TG_ATTRS_TD
