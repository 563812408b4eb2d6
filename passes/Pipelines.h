//===- Pipelines.h - TGC's pass pipelines -----------------------*- C++ -*-===//
//
// Pipelines as C++ functions with an options struct, registered for tg-opt
// and called by tgc.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_PIPELINES_H
#define TGC_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::tg {

/// Options of the training pipeline.
struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> forward{*this, "func",
                              llvm::cl::desc("The model's forward function"),
                              llvm::cl::init("forward")};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, bf16 or fp16; empty: the train block's"),
      llvm::cl::init("")};
  Option<bool> rematerialize{
      *this, "rematerialize",
      llvm::cl::desc("Recompute cheap activations in the backward pass"),
      llvm::cl::init(false)};
  Option<bool> decompose{
      *this, "decompose",
      llvm::cl::desc("Decompose composite ops (softmax, cross_entropy, ...) "
                     "so that the plan sees every buffer the code will have"),
      llvm::cl::init(false)};
  Option<int64_t> ranks{
      *this, "ranks",
      llvm::cl::desc("Data-parallel ranks: > 1 averages the gradients over "
                     "them (tg-data-parallel)"),
      llvm::cl::init(1)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("Bytes of gradients per all_reduce"),
      llvm::cl::init(25 * 1024 * 1024)};
  Option<bool> planMemory{*this, "plan-memory",
                          llvm::cl::desc("Plan the memory of @train_step"),
                          llvm::cl::init(false)};
};

/// forward -> precision assignment (tg-assign-precision) ->
/// init/train_step/eval (tg-build-train-step), simplified with
/// canonicalize and CSE, optionally rematerialized (tg-rematerialize, after
/// CSE, which would undo it) and planned (tg-plan-memory).
void buildTrainingPipeline(OpPassManager &pm,
                           const TrainingPipelineOptions &options);

/// Registers the pipelines with tg-opt (`--tg-training-pipeline`).
void registerPipelines();

} // namespace mlir::tg

#endif // TGC_PASSES_PIPELINES_H
