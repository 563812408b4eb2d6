//===- ConfigureRowReductions.cpp - blocks per row of long rows -*- C++ -*-===//
//
// tg-configure-row-reductions: records on every row reduction whose rows
// should be split over several blocks (few rows over 1024 elements: a
// vocabulary log-sum-exp of a few rows) how many blocks each row takes,
// as kRowBlocksAttr. The reduction lowering (SimtReductionRows.cpp) only
// reads it, so the decision is tested, and can be overridden, apart from
// code generation. It runs after the memory plan, whose in-place choices
// it respects.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/Passes.h"
#include "codegen/nvptx/SimtReduction.h"

#include "dialects/TGOps.h"

namespace tg::nvptx {

#define GEN_PASS_DEF_CONFIGUREROWREDUCTIONSPASS
#include "codegen/nvptx/Passes.h.inc"

namespace {

using namespace mlir;

struct ConfigureRowReductionsPass final
    : impl::ConfigureRowReductionsPassBase<ConfigureRowReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([&](Operation *op) {
      // Groups are kernels; the reductions inside them are not.
      if (!detail::isReductionKernelOp(op) ||
          op->getParentOfType<mlir::tg::FusedOp>())
        return;
      int64_t blocks = detail::chooseRowBlocks(op);
      if (blocks > 1)
        op->setAttr(detail::kRowBlocksAttr,
                    IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                     blocks));
      else
        op->removeAttr(detail::kRowBlocksAttr);
    });
  }
};

} // namespace

} // namespace tg::nvptx
