//===- Pipelines.cpp - TGC's pass pipelines ---------------------*- C++ -*-===//
//
// See Pipelines.h.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

mlir::tg::RematerializePassOptions
mlir::tg::rematLevelOptions(int64_t level, StringRef gradFunc) {
  // Level 1 is the cheap chains of old; 2 adds matmuls that are cheap per
  // byte (attention scores: 2 * head_dim FLOPs per element of 4 bytes);
  // 3 adds projections up to d_model = 2048; 4 replays all it can.
  struct Level {
    unsigned depth;
    double flopsPerByte;
    bool matmuls;
  };
  const Level levels[] = {{2, 4.0, false},
                          {16, 64.0, true},
                          {32, 1024.0, true},
                          {64, 1e30, true}};
  const Level &l = levels[std::clamp<int64_t>(level, 1, 4) - 1];
  RematerializePassOptions remat;
  remat.funcName = gradFunc.str();
  // Every level, 0 included, replays mixed precision's widening casts.
  remat.wideningCasts = true;
  remat.maxDepth = level > 0 ? l.depth : 0;
  remat.maxFlopsPerByte = l.flopsPerByte;
  remat.recomputeMatmuls = l.matmuls;
  return remat;
}

void mlir::tg::addFreeReplays(OpPassManager &pm, StringRef gradFunc) {
  RematerializePassOptions free;
  free.funcName = gradFunc.str();
  free.elementwiseOnly = true;
  // A GELU (tanh form) is 9 ops of about one FLOP per element: 2.25 FLOPs
  // per byte freed; the limits leave room for longer chains, never for a
  // matmul (refused by `elementwise` whatever its cost).
  free.maxDepth = 32;
  free.maxFlopsPerByte = 8.0;
  pm.addPass(createRematerializePass(free));
}

void mlir::tg::buildTrainingPipeline(OpPassManager &pm,
                                     const TrainingPipelineOptions &options) {
  // Spelled-out attention becomes tg.attention first, so that precision
  // assignment gives it its rule and autodiff its O(T)-memory backward.
  pm.addPass(createFormAttentionPass());
  if (options.budget > 0) {
    FitBudgetPassOptions fit;
    fit.funcName = options.forward;
    fit.budget = options.budget;
    fit.precision = options.precision;
    fit.decompose = options.decompose;
    fit.keepAttention = options.keepAttention;
    fit.ranks = options.ranks;
    fit.bucketBytes = options.bucketBytes;
    fit.zero = options.zero;
    fit.keepCollectives = options.keepCollectives;
    fit.commDtype = options.commDtype;
    pm.addPass(createFitBudgetPass(fit));
    if (options.planMemory)
      pm.addPass(createPlanMemoryPass());
    return;
  }
  // Before the training step, so autodiff differentiates its casts; a no-op
  // for precision = fp32.
  AssignPrecisionPassOptions precision;
  precision.funcName = options.forward;
  precision.precision = options.precision;
  pm.addPass(createAssignPrecisionPass(precision));
  BuildTrainStepPassOptions build;
  build.funcName = options.forward;
  pm.addPass(createBuildTrainStepPass(build));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // After CSE: the collectives have side effects and stay where they are.
  if (options.ranks > 1 || options.keepCollectives) {
    DataParallelPassOptions dp;
    dp.ranks = options.ranks;
    dp.bucketBytes = options.bucketBytes;
    dp.zero = options.zero;
    dp.keepCollectives = options.keepCollectives;
    dp.commDtype = options.commDtype;
    pm.addPass(createDataParallelPass(dp));
  }
  int64_t level = options.rematerialize ? std::max<int64_t>(1, options.rematLevel)
                                        : options.rematLevel;
  pm.addPass(createRematerializePass(
      rematLevelOptions(level, options.forward.getValue() + "_grad")));
  if (options.decompose) {
    DecomposeCompositesPassOptions decompose;
    if (options.keepAttention)
      for (StringRef name : compositeOpNames())
        if (!name.starts_with("attention"))
          decompose.ops.push_back(name.str());
    pm.addPass(createDecomposeCompositesPass(decompose));
    pm.addPass(createCSEPass());
  }
  // After the step is complete and simplified, before planning: values
  // internal to a kernel get no buffer. Before grouping, the forward values
  // that the backward pass reads and that elementwise ops compute from
  // values it keeps anyway (a GELU's output from its input, a layer norm's
  // `xh s + b` from `xh`) are replayed where they are read: fused, each
  // replay is one kernel with no intermediate buffer, so it frees the
  // value's bytes for a few FLOPs per element and costs no memory
  // (docs/memory.md). Unfused, its intermediates would be buffers.
  if (options.fuse) {
    if (options.decompose)
      addFreeReplays(pm, options.forward.getValue() + "_grad");
    pm.addPass(createFusePass());
  }
  if (options.planMemory)
    pm.addPass(createPlanMemoryPass());
}

void mlir::tg::registerPipelines() {
  PassPipelineRegistration<TrainingPipelineOptions>(
      "tg-training-pipeline",
      "Build init/train_step/eval from a model and its train block, "
      "simplify, and optionally plan memory",
      buildTrainingPipeline);
}
