//===- TGDialect.td - the tg dialect -----------------------*- tablegen -*-===//
//
// The dialect of training graphs: static-shaped tensor ops that TGC
// differentiates, plans and lowers.
//
//===----------------------------------------------------------------------===//

#ifndef TG_DIALECT_TD
#define TG_DIALECT_TD

include "mlir/IR/OpBase.td"

def TG_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::mlir::tg";
  let summary = "Training graphs: static-shaped tensor ops for TGC";
  let description = [{
    Values are builtin ranked tensors with static shapes; element types are
    f32, bf16, f16, f64 (for reference numerics), i32, i64 and i1 (the result
    of comparisons). A model is a `func.func` whose arguments are tagged with
    `tg.name`, `tg.role` ("param" or "input") and, for parameters, `tg.init`.
    Composite ops (softmax, layer_norm, gelu, cross_entropy, ...) are ops in
    their own right so that differentiation and fusion can treat them well;
    `tg-decompose` rewrites them into primitive tg ops.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  // Every attribute the passes, backends and tools exchange through the IR,
  // declared once: the generated helpers (getOffsetAttrHelper(), ...) give
  // typed access, and verifyOperationAttribute / verifyRegion*AttrVerify
  // check each of them where it may appear.
  let discardableAttrs = (ins
    // On model functions' arguments and results (frontend, autodiff).
    "::mlir::StringAttr":$name,
    "::mlir::tg::RoleAttr":$role,
    "::mlir::tg::InitializerAttr":$init,
    // On the module (frontend).
    "::mlir::StringAttr":$model,
    "::mlir::DictionaryAttr":$hyper,
    "::mlir::DictionaryAttr":$train,
    // The memory plan (tg-plan-memory): byte offset of an op's result in the
    // arena, one offset per result of a multi-result op (-1: none), the
    // bytes it occupies, the argument a result lives in place of, and the
    // plan's summary on the planned function.
    "::mlir::IntegerAttr":$offset,
    "::mlir::DenseI64ArrayAttr":$offsets,
    "::mlir::IntegerAttr":$bytes,
    "::mlir::IntegerAttr":$alias_arg,
    // Per result of a multi-result op (a fusion group): the argument each
    // result lives in place of (-1: none).
    "::mlir::DenseI64ArrayAttr":$alias_args,
    "::mlir::tg::MemoryPlanAttr":$memory,
    // Op scratch (tg-size-scratch, tg-plan-memory): the i64 bytes of
    // scratch a backend's lowering of the op allocates for itself while it
    // runs (accumulators, padded inputs, argmax indices, row temporaries),
    // and their arena offset, a buffer of the plan live at the op's step.
    "::mlir::IntegerAttr":$scratch,
    "::mlir::IntegerAttr":$scratch_offset,
    // Rematerialisation (tg-rematerialize): a recomputed op, and the record
    // on the gradient function.
    "::mlir::UnitAttr":$recomputed,
    "::mlir::tg::RematAttr":$remat,
    // Budget fitting (tg-fit-budget): how the step was fitted, on the module.
    "::mlir::tg::BudgetFitAttr":$budget_fit,
    // Precision (tg-assign-precision): the accumulator element type of a
    // contraction (matmul, conv2d and its gradients), which every backend
    // honours or refuses, and on ops the pass changed or inserted, the rule
    // that chose their result type (see docs/training.md).
    "::mlir::TypeAttr":$acc,
    "::mlir::StringAttr":$precision,
    // CPU backend (tg-bind-arena, tg-plan-scratch): the arena argument of an
    // entry point and, on the module, each entry's arena bytes by name.
    "::mlir::UnitAttr":$arena,
    "::mlir::DictionaryAttr":$arena_bytes,
    // Fusion (tg-fuse): the cost model's numbers on each tg.fused group,
    // which the kernel report and the GPU backend read.
    "::mlir::IntegerAttr":$flops,
    "::mlir::IntegerAttr":$bytes_read,
    "::mlir::IntegerAttr":$bytes_written,
    // GPU backend (tg-configure-gemms): on a `gemm` group or a lone
    // tg.matmul with 16-bit operands, one #tg.tile_config per GPU target.
    "::mlir::ArrayAttr":$tile_configs,
    // Data parallelism (tg-data-parallel): on the module, the number of
    // ranks its train_step averages gradients over, and the ZeRO stage
    // (1: optimizer state sharded over the ranks).
    "::mlir::IntegerAttr":$ranks,
    "::mlir::IntegerAttr":$zero,
    // ZeRO stage 1: on an argument or result that is one rank's flat shard
    // (tg.shard's layout), the shape of the whole tensor, which the
    // runtime gathers into checkpoints.
    "::mlir::DenseI64ArrayAttr":$shard_of
  );
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class TG_Op<string mnemonic, list<Trait> traits = []>
    : Op<TG_Dialect, mnemonic, traits>;

#endif // TG_DIALECT_TD
