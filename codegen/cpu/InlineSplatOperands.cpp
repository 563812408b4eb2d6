//===- InlineSplatOperands.cpp - splat operands as scalars ------*- C++ -*-===//
//
// The tg-inline-splat-operands pass (see Passes.td): each splat constant
// tensor that a linalg.generic reads becomes a scalar constant in its body,
// and the operand is dropped, so that no tensor is read by every op of the
// step (which made upstream's bufferization analyses quadratic in the
// step's length).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_INLINESPLATOPERANDSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// The scalar every element of `v` holds, if `v` is a splat integer or
/// float constant.
TypedAttr splatScalar(Value v) {
  SplatElementsAttr splat;
  if (!matchPattern(v, m_Constant(&splat)))
    return nullptr;
  auto scalar = splat.getSplatValue<Attribute>();
  return isa<IntegerAttr, FloatAttr>(scalar) ? cast<TypedAttr>(scalar)
                                             : nullptr;
}

/// Makes the body of `op` read each splat input as a constant; the inputs
/// are then unused (the erase patterns drop them). Returns whether any was.
bool inlineSplats(linalg::GenericOp op) {
  Block *body = op.getBody();
  OpBuilder b = OpBuilder::atBlockBegin(body);
  bool changed = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(input);
    TypedAttr scalar = splatScalar(input->get());
    if (!scalar || arg.use_empty() || scalar.getType() != arg.getType())
      continue;
    arg.replaceAllUsesWith(
        arith::ConstantOp::create(b, op.getLoc(), scalar).getResult());
    changed = true;
  }
  return changed;
}

struct InlineSplatOperandsPass final
    : tg::cpu::impl::InlineSplatOperandsPassBase<InlineSplatOperandsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<Operation *> changed;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (inlineSplats(op))
        changed.push_back(op);
    });
    if (changed.empty())
      return;
    // Only the ops just changed, and only to drop their unused operands:
    // no folding, so the rest of the IR is left as canonicalization left it.
    RewritePatternSet patterns(&getContext());
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false).setStrictness(
        GreedyRewriteStrictness::ExistingOps);
    if (failed(applyOpPatternsGreedily(changed, std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
