//===- Pipelines.cpp - TGC's pass pipelines ---------------------*- C++ -*-===//
//
// See Pipelines.h.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::tg::buildTrainingPipeline(OpPassManager &pm,
                                     const TrainingPipelineOptions &options) {
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
  if (options.ranks > 1) {
    DataParallelPassOptions dp;
    dp.ranks = options.ranks;
    dp.bucketBytes = options.bucketBytes;
    pm.addPass(createDataParallelPass(dp));
  }
  if (options.rematerialize) {
    RematerializePassOptions remat;
    remat.funcName = options.forward.getValue() + "_grad";
    pm.addPass(createRematerializePass(remat));
  }
  if (options.decompose) {
    pm.addPass(createDecomposeCompositesPass());
    pm.addPass(createCSEPass());
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
