//===- DeallocateBuffers.cpp - free buffers where there are any -*- C++ -*-===//
//
// The tg-deallocate-buffers pass (see Passes.td): upstream's buffer
// deallocation pipeline, run on the module with the functions that allocate
// nothing (and call nothing, and are called by nothing) set aside, so that
// its passes do not walk a planned step that has nothing to free.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_DEALLOCATEBUFFERSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// True if deallocation has nothing to do in `fn`: no op allocates and no
/// call could hand it a buffer to own (or take one of its own).
bool allocatesNothing(func::FuncOp fn, ModuleOp module) {
  if (fn.isDeclaration() || !SymbolTable::symbolKnownUseEmpty(fn, module))
    return false;
  WalkResult found = fn.walk([](Operation *op) {
    if (isa<CallOpInterface>(op) ||
        hasEffect<MemoryEffects::Allocate>(op) ||
        hasEffect<MemoryEffects::Free>(op))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !found.wasInterrupted();
}

struct DeallocateBuffersPass final
    : tg::cpu::impl::DeallocateBuffersPassBase<DeallocateBuffersPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    OpPassManager pm(ModuleOp::getOperationName());
    bufferization::buildBufferDeallocationPipeline(pm);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Each set-aside function's body waits in a region of its own, the
    // function stays as a private declaration (a public one may not be).
    struct SetAside {
      func::FuncOp fn;
      SymbolTable::Visibility visibility;
      std::unique_ptr<Region> body;
    };
    SmallVector<SetAside> aside;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!allocatesNothing(fn, module))
        continue;
      aside.push_back({fn, fn.getVisibility(), std::make_unique<Region>()});
      aside.back().body->takeBody(fn.getBody());
      fn.setPrivate();
    }
    OpPassManager pm(ModuleOp::getOperationName());
    bufferization::buildBufferDeallocationPipeline(pm);
    LogicalResult result = runPipeline(pm, module);
    // What the pipeline's last passes do for every function: CSE merges
    // the equal views of the arena that tg-plan-scratch and bufferization
    // left, which turns copies between them into self-copies that the
    // canonicalizer erases (GPT-2 small's step: 188 copies).
    OpPassManager cleanup(func::FuncOp::getOperationName());
    cleanup.addPass(createCSEPass());
    // The step's regions are single blocks: no region simplification (the
    // pipeline's canonicalizers over the whole step skip it too).
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    cleanup.addPass(createCanonicalizerPass(config));
    for (SetAside &a : aside) {
      a.fn.getBody().takeBody(*a.body);
      a.fn.setVisibility(a.visibility);
      if (succeeded(result))
        result = runPipeline(cleanup, a.fn);
    }
    if (failed(result))
      signalPassFailure();
  }
};

} // namespace
