//===- SizeGpuScratch.cpp - GPU kernel scratch sized before the plan -*- C++ -*-===//
//
// tg-size-gpu-scratch: records, on every op whose GPU launches take scratch
// (KernelLaunch::scratchBytes), how many bytes as the op's tg.scratch, so
// that tg-plan-memory places the scratch as a buffer live at the op's step
// only (passes/MemoryPlanScratch.h) and the schedule (Schedule.cpp) reads
// its tg.scratch_offset. Both kinds of GPU scratch follow from shapes and
// tile configs alone: a split reduction's or a split row's partials
// (reductionScratchBytes, SimtReduction.cpp) and an sm_90a wgmma_staged
// GEMM's realigned copies (stagingCost, GemmConfig.cpp, whose bytes the
// lowering lays out the same way).
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/AttentionSm80.h"
#include "codegen/nvptx/GemmLowering.h"
#include "codegen/nvptx/Passes.h"
#include "codegen/nvptx/SimtElementwise.h"
#include "codegen/nvptx/SimtReduction.h"

#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"

namespace tg::nvptx {

#define GEN_PASS_DEF_SIZEGPUSCRATCHPASS
#include "codegen/nvptx/Passes.h.inc"

namespace {

using namespace mlir;

/// The realigned copies of a wgmma_staged GEMM on any of `targets` (its
/// tile config for that target says so); 0 where no config stages.
int64_t stagedScratchBytes(Operation *op, ArrayRef<Target> targets) {
  auto list = op->getAttrOfType<ArrayAttr>(mlir::tg::attr::tileConfigs);
  if (!list)
    return 0;
  std::string why;
  FailureOr<GemmOpInfo> info = analyzeGemm(op, why);
  if (failed(info))
    return 0; // no kernel computes it: the lowering says why
  int64_t bytes = 0;
  for (Attribute a : list) {
    auto c = dyn_cast<mlir::tg::TileConfigAttr>(a);
    std::optional<Target> t = c ? parseTarget(c.getTarget().str()) : std::nullopt;
    if (!t || !llvm::is_contained(targets, *t) ||
        tileConfigFromAttr(c).kernel != GemmKernel::WgmmaStaged)
      continue;
    GemmProblem p = info->problem;
    p.target = *t;
    bytes = std::max(bytes, int64_t(stagingCost(p).scratchBytes));
  }
  return bytes;
}

/// The split partials of a reduction kernel op, its rows split as
/// tg-configure-row-reductions would split them with no plan yet (a plan
/// that computes a row result in place only keeps the row whole, which
/// takes no scratch) or as its kRowBlocksAttr already says.
int64_t reductionScratch(Operation *op) {
  int64_t blocks = detail::chooseRowBlocks(op);
  if (auto given = op->getAttrOfType<IntegerAttr>(detail::kRowBlocksAttr))
    blocks = given.getInt();
  FailureOr<uint64_t> bytes = detail::reductionScratchBytes(op, blocks);
  return succeeded(bytes) ? int64_t(*bytes) : 0;
}

struct SizeGpuScratchPass final
    : impl::SizeGpuScratchPassBase<SizeGpuScratchPass> {
  using SizeGpuScratchPassBase::SizeGpuScratchPassBase;

  void runOnOperation() override {
    SmallVector<Target> ts;
    for (const std::string &name : targets) {
      std::optional<Target> t = parseTarget(name);
      if (!t) {
        getOperation().emitError()
            << "tg-size-gpu-scratch: unknown target '" << name
            << "' (the GPU backend knows sm_80 and sm_90a)";
        return signalPassFailure();
      }
      if (!llvm::is_contained(ts, *t))
        ts.push_back(*t);
    }
    if (ts.empty())
      ts = {Target::SM80, Target::SM90a};
    // Each op the schedule lowers (a group whole, never its body), in the
    // order lowerOpToKernels tries the generators.
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      op->removeAttr(mlir::tg::attr::scratch);
      op->removeAttr(mlir::tg::attr::scratchOffset);
      int64_t bytes = 0;
      if (isTensorCoreGemm(op))
        bytes = stagedScratchBytes(op, ts);
      else if (!isAttentionOp(op) && !isElementwiseKernelOp(op) &&
               detail::isReductionKernelOp(op))
        bytes = reductionScratch(op);
      if (bytes > 0)
        mlir::tg::setScratchBytes(op, bytes);
      if (!isa<mlir::tg::FusedOp>(op))
        return WalkResult::advance();
      // What the CPU backend may have sized inside is not the GPU's.
      for (Region &body : op->getRegions())
        body.walk([](Operation *inner) {
          inner->removeAttr(mlir::tg::attr::scratch);
          inner->removeAttr(mlir::tg::attr::scratchOffset);
        });
      return WalkResult::skip();
    });
  }
};

} // namespace

} // namespace tg::nvptx
