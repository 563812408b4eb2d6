//===- ConvertTGToLinalg.cpp - tg to linalg on tensors ----------*- C++ -*-===//
//
// The tg-convert-to-linalg pass: decomposes the composite ops, then applies
// the per-family conversion patterns with every tg op illegal, so that an op
// left over is an error at its location rather than silently kept.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"
#include "passes/Fusion.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_CONVERTTGTOLINALGPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Gives each reader of a multi-element splat tg.constant its own copy,
/// right before it. The CPU lowering turns such a splat into a fill of a
/// fresh buffer (ElementwiseToLinalg.cpp) that tg-plan-memory does not plan
/// (constants live in the code), so it is op scratch. One fill shared by
/// readers far apart, at the top of the function where the greedy rewrites
/// hoist constants, is scratch live across every op in between (BERT-large:
/// 64 MiB of zeros from the step's start to the concat of a slice's
/// gradient), which only a lowering of the whole step can place. A fill
/// per reader lives while its reader runs, like the rest of an op's
/// scratch, so tgc estimates the step's scratch op by op
/// (driver/Training.cpp). It costs one fill per reader instead of one.
void fillSplatsAtReaders(Operation *root) {
  SmallVector<ConstantOp> splats;
  root->walk([&](ConstantOp c) {
    auto type = dyn_cast<RankedTensorType>(c.getType());
    if (type && type.getNumElements() > 1 &&
        isa<SplatElementsAttr>(c.getValue()))
      splats.push_back(c);
  });
  for (ConstantOp c : splats) {
    for (OpOperand &use : llvm::make_early_inc_range(c->getUses())) {
      // At the reader's location: the fill is the reader's scratch, and
      // tg-plan-scratch finds where the plan put it by that location.
      OpBuilder b(use.getOwner());
      Operation *copy = b.clone(*c);
      copy->setLoc(use.getOwner()->getLoc());
      use.set(copy->getResult(0));
    }
    c->erase();
  }
}

struct ConvertTGToLinalgPass final
    : cpu::impl::ConvertTGToLinalgPassBase<ConvertTGToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Operation *root = getOperation();

    // Contractions accumulate in their compute type (f32 for bf16/f16, see
    // LoweringUtils.h); a tg.acc asking for anything else is refused here,
    // at the op, rather than silently computed at another precision.
    WalkResult accs = root->walk([&](Operation *op) {
      if (!isContraction(op))
        return WalkResult::advance();
      Type elt = cast<RankedTensorType>(op->getResult(0).getType())
                     .getElementType();
      Type acc = accumulatorType(op);
      if (acc == cpu::computeType(elt))
        return WalkResult::advance();
      op->emitOpError("the CPU backend accumulates ")
          << elt << " contractions in " << cpu::computeType(elt)
          << ", not in tg.acc = " << acc;
      return WalkResult::interrupt();
    });
    if (accs.wasInterrupted())
      return signalPassFailure();

    // Unfused lowering: every op of a group is its own loop nest.
    if (!fuseGroups)
      inlineFusedGroups(root);

    // Attention stays whole: its loop nests (AttentionToLoops.cpp) keep no
    // Tq x Tk tensor, where the decomposition has several per layer.
    SmallVector<std::string> composites;
    for (StringRef name : compositeOpNames())
      if (!name.starts_with("attention"))
        composites.push_back(name.str());
    RewritePatternSet decompose(ctx);
    populateDecomposeCompositesPatterns(decompose, composites);
    if (failed(applyPatternsGreedily(root, std::move(decompose))))
      return signalPassFailure();
    // After the greedy rewrites, which hoist and merge constants.
    fillSplatsAtReaders(root);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<TGDialect>();
    // Groups keep their (isolated) bodies through the conversion, so that
    // fusion below stays inside each of them.
    target.addLegalOp<FusedOp, YieldOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(ctx);
    cpu::populateConvertTGToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(root, target, std::move(patterns))) ||
        failed(cpu::fuseLoweredGroups(root)))
      signalPassFailure();
  }
};

} // namespace

void mlir::tg::cpu::populateConvertTGToLinalgPatterns(
    RewritePatternSet &patterns) {
  populateElementwiseToLinalgPatterns(patterns);
  populateReductionsToLinalgPatterns(patterns);
  populateMovementToLinalgPatterns(patterns);
  populateRandomToLinalgPatterns(patterns);
  populateConvPoolToLinalgPatterns(patterns);
  populateCommToCallsPatterns(patterns);
  populateAttentionToLoopsPatterns(patterns);
}
