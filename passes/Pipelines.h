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
#include "passes/Passes.h"

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
      llvm::cl::desc("Recompute cheap activations in the backward pass "
                     "(remat-level=1)"),
      llvm::cl::init(false)};
  Option<int64_t> rematLevel{
      *this, "remat-level",
      llvm::cl::desc("Rematerialisation level, 0 (none) to 4 (everything "
                     "that can be replayed); see tg-fit-budget"),
      llvm::cl::init(0)};
  Option<int64_t> budget{
      *this, "budget",
      llvm::cl::desc("Fit @train_step into this many bytes (tg-fit-budget; "
                     "0: no fit)"),
      llvm::cl::init(0)};
  Option<bool> decompose{
      *this, "decompose",
      llvm::cl::desc("Decompose composite ops (softmax, cross_entropy, ...) "
                     "so that the plan sees every buffer the code will have"),
      llvm::cl::init(false)};
  Option<bool> keepAttention{
      *this, "keep-attention",
      llvm::cl::desc("With decompose: leave tg.attention and "
                     "tg.attention_grad whole (the GPU backend's fused "
                     "kernels take them; what no kernel takes is decomposed "
                     "by the backend)"),
      llvm::cl::init(false)};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Group ops into kernels (tg-fuse) before "
                                   "planning memory"),
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
  Option<int64_t> zero{
      *this, "zero",
      llvm::cl::desc("ZeRO stage with ranks > 1: 1 shards the optimizer "
                     "state over the ranks"),
      llvm::cl::init(0)};
  Option<bool> keepCollectives{
      *this, "keep-collectives",
      llvm::cl::desc("With ranks = 1: insert the collectives anyway (over a "
                     "communicator of one rank), to measure their cost"),
      llvm::cl::init(false)};
  Option<std::string> commDtype{
      *this, "comm-dtype",
      llvm::cl::desc("Element type of the gradient buckets on the wire: "
                     "f32, bf16 or f16 (tg-data-parallel)"),
      llvm::cl::init("f32")};
  Option<bool> planMemory{*this, "plan-memory",
                          llvm::cl::desc("Plan the memory of @train_step"),
                          llvm::cl::init(false)};
};

/// forward -> precision assignment (tg-assign-precision) ->
/// init/train_step/eval (tg-build-train-step), simplified with
/// canonicalize and CSE, optionally rematerialized (tg-rematerialize, after
/// CSE, which would undo it), decomposed, fused (tg-fuse) and planned
/// (tg-plan-memory). With a budget, tg-fit-budget builds the step instead
/// (it runs this pipeline, without a budget, for each candidate it tries).
void buildTrainingPipeline(OpPassManager &pm,
                           const TrainingPipelineOptions &options);

/// The tg-rematerialize options of rematerialisation level `level` (0-4)
/// for the gradient function `gradFunc`: each level replays a superset of
/// the previous one (the same cost order, a higher FLOPs-per-byte limit);
/// level 0 replays only mixed precision's widening casts.
RematerializePassOptions rematLevelOptions(int64_t level,
                                           StringRef gradFunc);

/// Adds, before tg-fuse on a decomposed step, the free replays of the
/// gradient function `gradFunc`: tg-rematerialize with `elementwise`, which
/// replays in the backward pass the forward values that elementwise ops
/// compute from values the backward pass keeps anyway (a GELU's output, a
/// layer norm's `xh s + b`). Fused, each replay is one kernel without
/// intermediate buffers: it frees its value's bytes at no memory cost.
void addFreeReplays(OpPassManager &pm, StringRef gradFunc);

/// Registers the pipelines with tg-opt (`--tg-training-pipeline`).
void registerPipelines();

} // namespace mlir::tg

#endif // TGC_PASSES_PIPELINES_H
