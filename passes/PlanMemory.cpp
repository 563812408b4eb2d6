//===- PlanMemory.cpp - the tg-plan-memory pass -----------------*- C++ -*-===//
//
// Runs the planner of MemoryPlan.cpp on one function of the module.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

namespace mlir::tg {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {
struct PlanMemoryPass final : tg::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(funcName);
    if (!fn) {
      module.emitError() << "tg-plan-memory: no function named '" << funcName
                         << "'";
      return signalPassFailure();
    }
    if (alignment < 1 || (alignment & (alignment - 1))) {
      module.emitError() << "tg-plan-memory: alignment must be a power of "
                            "two, got "
                         << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    PlanOptions opts;
    opts.alignment = alignment;
    opts.reorder = reorder;
    opts.inPlace = inPlace;
    if (failed(planMemory(fn, opts)))
      signalPassFailure();
  }
};
} // namespace
