//===- FusedToLoops.cpp - one loop nest per fusion group --------*- C++ -*-===//
//
// The CPU backend's consumption of tg-fuse's groups. tg-convert-to-linalg
// converts each group's body in place (the tg.fused op and its tg.yield
// stay legal during the conversion), then fuseLoweredGroups fuses the
// body's linalg ops producer into consumer with upstream's elementwise
// fusion, and inlines the body:
//
//  - elementwise group: one parallel linalg.generic over the group's
//    iteration space, broadcasts as indexing maps, one output per group
//    result;
//  - gemm: the contraction, then its whole epilogue as one generic;
//  - reductions: each reduction with the elementwise prologue only it
//    reads, the elementwise tail as one generic; a value read both by a
//    reduction and after it (softmax's exp(x - max)) stays a loop nest and
//    a buffer of its own, since linalg cannot write it from the reduction's
//    nest and recomputing it would read the group's operands later than
//    the memory plan allows.
//
// The body is isolated from above, so fusion never crosses a group: the
// groups (and the cost model that chose them) decide what shares a loop
// nest, and fused values get no buffer, as the memory planner assumed.
// Fusion only moves scalar code into one loop body: each value is computed
// by the same arith/math ops in the same order, so results are
// bit-identical to the op-by-op lowering.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace {

/// Fuses a producer generic into `consumer` (upstream's elementwise
/// fusion) where that is safe for the memory plan. Upstream's own pattern
/// leaves every other use of the producer on the producer, so a value the
/// group also yields would be computed twice, in two loop nests; here the
/// uses after the fused op read the result the fused op keeps for them: a
/// chain whose intermediates are needed later is one loop nest with several
/// outputs. A producer fuses only where it then disappears, so the fused
/// op computes nothing twice and reads nothing later than the plan assumed.
struct FuseProducerInGroup final : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand &operand : consumer->getOpOperands()) {
      if (!linalg::areElementwiseOpsFusable(&operand))
        continue;
      auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
      // A producer that updates its init in place (a mean: the sum divided
      // in its own buffer) would become a read-modify-write of that buffer
      // at every point of the consumer's broadcast: divided again and again.
      if (llvm::any_of(producer.getDpsInitsMutable(), [&](OpOperand &init) {
            return producer.payloadUsesValueFromOperand(&init);
          }))
        continue;
      // The producer's results are written once per point of the fused
      // loop nest only when the consumer reads them through a permutation
      // (no broadcast) in a nest without reductions.
      bool writtenOnce =
          consumer.getMatchingIndexingMap(&operand).isPermutation() &&
          consumer.getNumReductionLoops() == 0;
      // Only where the producer then disappears: a producer kept for other
      // readers while the consumer recomputes it would read the producer's
      // operands later than the op-by-op order the memory planner checked
      // its in-place reuse against (a group result may overwrite an operand
      // after its last read).
      bool othersAfter = llvm::all_of(producer->getUses(), [&](OpOperand &use) {
        if (use.getOwner() == consumer.getOperation())
          return true;
        Operation *user =
            consumer->getBlock()->findAncestorOpInBlock(*use.getOwner());
        return user && consumer->isBeforeInBlock(user);
      });
      if (!producer->hasOneUse() && !(writtenOnce && othersAfter))
        continue;
      // Fusion moves the producer's reads down to the consumer. The plan
      // may put a group result over an operand once the op-by-op order has
      // read it for the last time, so no group result may be computed
      // between the two (the optimizer group interleaves its parameters).
      Operation *yield = consumer->getBlock()->getTerminator();
      bool resultBetween = false;
      for (Operation *op = producer->getNextNode(); op && op != consumer;
           op = op->getNextNode())
        resultBetween |= llvm::is_contained(op->getUsers(), yield);
      if (resultBetween)
        continue;
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (failed(fused))
        continue;
      Operation *fusedOp = fused->fusedOp;
      for (auto [orig, repl] : fused->replacements) {
        bool ofProducer = orig.getDefiningOp() == producer.getOperation();
        if (ofProducer && !writtenOnce)
          continue;
        rewriter.replaceUsesWithIf(orig, repl, [&](OpOperand &use) {
          if (use.getOwner() == fusedOp)
            return false;
          if (!ofProducer)
            return true; // the consumer's uses all come after it
          Operation *user =
              fusedOp->getBlock()->findAncestorOpInBlock(*use.getOwner());
          return user && fusedOp->isBeforeInBlock(user);
        });
      }
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

/// Replaces `group` by its (lowered) body.
void inlineGroup(tg::FusedOp group) {
  Block &body = group.getBodyBlock();
  tg::YieldOp yield = group.getYield();
  SmallVector<Value> results(yield.getValues());
  yield.erase();
  for (auto [arg, in] : llvm::zip(body.getArguments(), group.getInputs()))
    arg.replaceAllUsesWith(in);
  group->getBlock()->getOperations().splice(group->getIterator(),
                                            body.getOperations());
  group->replaceAllUsesWith(results);
  group.erase();
}

} // namespace

LogicalResult mlir::tg::cpu::fuseLoweredGroups(Operation *root) {
  SmallVector<FusedOp> groups;
  root->walk([&](FusedOp op) { groups.push_back(op); });
  if (groups.empty())
    return success();
  MLIRContext *ctx = root->getContext();
  RewritePatternSet patterns(ctx);
  // Every producer in the group fuses, also one read by several consumers
  // or yielded; the canonicalizations drop the results and operands that
  // fusion leaves unused.
  patterns.add<FuseProducerInGroup>(ctx);
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
  linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
  ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
      patterns);
  tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
  FrozenRewritePatternSet frozen(std::move(patterns));
  for (FusedOp group : groups) {
    // The body is isolated from above: the rewrites stay inside it.
    if (failed(applyPatternsGreedily(group.getBody(), frozen)))
      return group.emitOpError("fusing the group's loop nests did not converge");
    inlineGroup(group);
  }
  return success();
}
