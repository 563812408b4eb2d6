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
//    reduction and after it (softmax's exp(x - max)) stays a loop nest of
//    its own, since linalg cannot write it from the reduction's nest and
//    recomputing it would read the group's operands later than the memory
//    plan allows;
//  - row reductions, then, are row-tiled (tileRows): one loop nest over the
//    rows runs all of the group's loop nests on one row, so such a value is
//    a row-sized temporary, not a buffer over the whole tensor.
//
// The row loop is marked `tg_cpu.kernel` (kKernelLoopAttr), so that
// tg-outline-kernels makes it one kernel function whose loop runs the
// group's loop nests row after row, rather than one call per op per row.
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
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/TilingInterface.h"
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
///
/// Returns the fused op, or null where no producer of `consumer` fuses;
/// producers in `taken` are not fused (see fuseGroupBody), the one fused is
/// `fusedProducer`.
Operation *fuseOneProducer(RewriterBase &rewriter, linalg::GenericOp consumer,
                           const llvm::SmallPtrSetImpl<Operation *> &taken,
                           Operation *&fusedProducer) {
  for (OpOperand &operand : consumer->getOpOperands()) {
    if (!linalg::areElementwiseOpsFusable(&operand))
      continue;
    auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
    if (taken.contains(producer))
      continue;
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
    fusedProducer = producer;
    rewriter.eraseOp(consumer);
    if (producer->use_empty())
      rewriter.eraseOp(producer);
    return fusedOp;
  }
  return nullptr;
}

/// Fuses the generics of a group's body in rounds. Each fusion clones both
/// bodies, so fusing a chain of k ops one producer at a time into a growing
/// consumer (the greedy driver's order) costs O(k^2) clones, folds and
/// erasures: 96% of `tgc --emit=train` on a 125-relu chain, whose backward
/// groups (the forward replayed for free) hold ~250 ops. In a round every
/// op takes part in at most one fusion, so a chain halves per round: log k
/// rounds of O(k) each. The canonicalizations run once per round and drop
/// the results and operands that fusion left unused.
LogicalResult fuseGroupBody(tg::FusedOp group,
                            const FrozenRewritePatternSet &cleanup) {
  IRRewriter rewriter(group.getContext());
  Block &body = group.getBodyBlock();
  while (true) {
    SmallVector<linalg::GenericOp> generics(body.getOps<linalg::GenericOp>());
    // Ops fused this round, erased ones included: the fused op replaces
    // them, and a producer erased here must not be read as a new one
    // allocated at its address.
    llvm::SmallPtrSet<Operation *, 32> taken;
    bool changed = false;
    for (linalg::GenericOp consumer : generics) {
      if (taken.contains(consumer))
        continue;
      rewriter.setInsertionPoint(consumer);
      Operation *consumerOp = consumer, *producer = nullptr;
      Operation *fused = fuseOneProducer(rewriter, consumer, taken, producer);
      if (!fused)
        continue;
      changed = true;
      taken.insert({consumerOp, producer, fused});
    }
    if (!changed)
      return success();
    if (failed(applyPatternsGreedily(group.getBody(), cleanup)))
      return group.emitOpError(
          "fusing the group's loop nests did not converge");
  }
}

/// The number of leading loops of a row-reduction group's body that are
/// its rows: those before the first reduction loop of its reductions (the
/// group reduces trailing axes only). 0 if the body has no reduction.
unsigned rowLoops(ArrayRef<linalg::LinalgOp> ops) {
  unsigned rows = 0;
  for (linalg::LinalgOp op : ops) {
    SmallVector<utils::IteratorType> its = op.getIteratorTypesArray();
    auto red = llvm::find(its, utils::IteratorType::reduction);
    if (red == its.end())
      continue;
    unsigned n = red - its.begin();
    rows = rows ? std::min(rows, n) : n;
  }
  return rows;
}

/// Whether two tile positions (offsets or sizes) are the same.
bool samePositions(ArrayRef<OpFoldResult> a, ArrayRef<OpFoldResult> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto p) {
           return isEqualConstantIntOrValue(std::get<0>(p), std::get<1>(p));
         });
}

/// Row tiling of a lowered row-reduction group: its linalg ops become the
/// body of ONE loop nest over the rows (tile size 1 over the leading loops,
/// the whole row otherwise), so each row is read, reduced and written in one
/// pass and a value read both by a reduction and after it (softmax's
/// `exp(x - max)`) is a row-sized temporary instead of a buffer over the
/// whole tensor. Each op is tiled by upstream's TilingInterface; an operand
/// produced by another op of the group is that op's tile of the same row,
/// checked position by position, and the group's results are written into
/// loop-carried destinations row by row (a reduction's fill writes there
/// too). Each element is computed by the same scalar ops in the same order,
/// so results are bit-identical. Every row reads its inputs before it
/// writes its results, and each row of a result is written by the
/// iteration of that row only, so a result the memory plan put over an
/// operand read index by index (tg-plan-memory's in-place rule) is still
/// read before it is overwritten. A body this does not fit (an op over
/// other loops, an operand not read row by row, a non-linalg op) is left
/// as it was.
void tileRows(tg::FusedOp group) {
  Block &body = group.getBodyBlock();
  Operation *yield = body.getTerminator();
  SmallVector<linalg::LinalgOp> ops;
  for (Operation &op : body.without_terminator()) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      if (!isa<TilingInterface>(op) || !linalgOp.hasPureTensorSemantics())
        return;
      ops.push_back(linalgOp);
    } else if (!isa<tensor::EmptyOp, arith::ConstantOp>(op)) {
      return;
    }
  }
  unsigned rows = rowLoops(ops);
  if (ops.size() < 2 || rows == 0)
    return;
  SmallVector<int64_t> rowShape =
      llvm::to_vector(ArrayRef(ops.front().getStaticLoopRanges()).take_front(rows));
  llvm::SmallPtrSet<Operation *, 16> inGroup;
  for (linalg::LinalgOp op : ops) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<utils::IteratorType> its = op.getIteratorTypesArray();
    if (ranges.size() < rows ||
        ArrayRef(ranges).take_front(rows) != ArrayRef(rowShape) ||
        llvm::any_of(ranges, ShapedType::isDynamic) ||
        llvm::any_of(ArrayRef(its).take_front(rows), [](auto it) {
          return it != utils::IteratorType::parallel;
        }))
      return;
    inGroup.insert(op);
  }
  // A result read outside the ops (other than by the yield) would need the
  // whole tensor.
  for (linalg::LinalgOp op : ops)
    for (Operation *user : op->getUsers())
      if (user != yield && !inGroup.contains(user))
        return;

  // Each yielded value, and the chain of in-place inits that computes it (a
  // reduction's fill), writes into one loop-carried destination.
  SmallVector<Value> yielded;
  llvm::DenseMap<Value, unsigned> carried; // op result -> iter_arg
  SmallVector<Value> inits;
  for (Value v : yield->getOperands()) {
    if (llvm::is_contained(yielded, v))
      continue;
    auto res = dyn_cast<OpResult>(v);
    if (!res || !inGroup.contains(res.getOwner()))
      return;
    unsigned index = yielded.size();
    yielded.push_back(v);
    Value dest = v;
    while (true) {
      carried[dest] = index;
      auto owner = cast<linalg::LinalgOp>(cast<OpResult>(dest).getOwner());
      Value init =
          owner.getDpsInitOperand(cast<OpResult>(dest).getResultNumber())->get();
      auto def = dyn_cast<OpResult>(init);
      if (!def || !inGroup.contains(def.getOwner()) || !def.hasOneUse() ||
          carried.count(def)) {
        if (!init.getDefiningOp<tensor::EmptyOp>())
          return;
        inits.push_back(init);
        break;
      }
      dest = def;
    }
  }

  OpBuilder b(yield);
  Location loc = group.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> lbs(rows, zero), steps(rows, one), ubs;
  for (int64_t n : rowShape)
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, n));
  bool failedTiling = false;
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, inits,
      [&](OpBuilder &nb, Location nloc, ValueRange ivs,
          ValueRange args) -> scf::ValueVector {
        SmallVector<Value> current(args);
        // Original result -> its tile in this row, and the tile's position.
        llvm::DenseMap<Value, Value> tiles;
        llvm::DenseMap<Value, std::pair<SmallVector<OpFoldResult>,
                                        SmallVector<OpFoldResult>>>
            positions;
        auto fail = [&] {
          failedTiling = true;
          return scf::ValueVector(args.begin(), args.end());
        };
        for (linalg::LinalgOp op : ops) {
          unsigned numLoops = op.getNumLoops();
          SmallVector<OpFoldResult> offsets(numLoops, nb.getIndexAttr(0));
          SmallVector<OpFoldResult> sizes;
          for (int64_t n : op.getStaticLoopRanges())
            sizes.push_back(nb.getIndexAttr(n));
          for (unsigned i = 0; i < rows; ++i) {
            offsets[i] = ivs[i];
            sizes[i] = nb.getIndexAttr(1);
          }
          auto tiling = cast<TilingInterface>(op.getOperation());
          FailureOr<TilingResult> tiled =
              tiling.getTiledImplementation(nb, offsets, sizes);
          if (failed(tiled) || tiled->tiledOps.size() != 1)
            return fail();
          auto tiledOp = cast<linalg::LinalgOp>(tiled->tiledOps.front());
          for (OpOperand &operand : tiledOp->getOpOperands()) {
            Value v = operand.get();
            if (auto res = dyn_cast<OpResult>(v);
                res && inGroup.contains(res.getOwner()))
              return fail(); // a value of the group read whole
            auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
            if (!slice)
              continue;
            Value source = slice.getSource();
            bool isInit = tiledOp.isDpsInit(&operand);
            if (auto it = tiles.find(source); it != tiles.end()) {
              auto &[tileOffsets, tileSizes] = positions[source];
              if (!samePositions(slice.getMixedOffsets(), tileOffsets) ||
                  !samePositions(slice.getMixedSizes(), tileSizes) ||
                  !llvm::all_of(slice.getMixedStrides(), [](OpFoldResult s) {
                    return isConstantIntValue(s, 1);
                  }))
                return fail();
              operand.set(it->second);
            } else if (isInit && source.getDefiningOp<tensor::EmptyOp>()) {
              Value result = op->getResult(
                  tiledOp.getTiedOpResult(&operand).getResultNumber());
              if (auto c = carried.find(result); c != carried.end()) {
                // Written in place in the loop-carried destination.
                slice.getSourceMutable().set(current[c->second]);
                continue;
              }
              // A row-sized temporary, not a slice of a whole buffer.
              auto type = cast<RankedTensorType>(slice.getType());
              OpBuilder before(tiledOp);
              operand.set(tensor::EmptyOp::create(
                  before, nloc, type.getShape(), type.getElementType()));
            } else if (source.getParentBlock() != &body ||
                       isa<BlockArgument>(source)) {
              continue; // a group operand, read row by row
            } else if (!isInit) {
              continue; // a constant
            } else {
              return fail();
            }
            if (slice->use_empty())
              slice->erase();
          }
          for (OpResult res : op->getResults()) {
            SmallVector<OpFoldResult> resOffsets, resSizes;
            if (failed(tiling.getResultTilePosition(nb, res.getResultNumber(),
                                                    offsets, sizes, resOffsets,
                                                    resSizes)))
              return fail();
            Value tile = tiledOp->getResult(res.getResultNumber());
            tiles[res] = tile;
            positions[res] = {resOffsets, resSizes};
          }
        }
        for (auto [i, v] : llvm::enumerate(yielded)) {
          auto &[resOffsets, resSizes] = positions[v];
          SmallVector<OpFoldResult> strides(resOffsets.size(),
                                            nb.getIndexAttr(1));
          current[i] = tensor::InsertSliceOp::create(
              nb, nloc, tiles[v], current[i], resOffsets, resSizes, strides);
        }
        return scf::ValueVector(current.begin(), current.end());
      });
  if (failedTiling) {
    nest.loops.front()->erase();
    return;
  }
  // The whole row loop is one kernel (tg-outline-kernels): a row costs one
  // iteration, not a call of a small kernel per op of the group.
  nest.loops.front()->setAttr(tg::cpu::kKernelLoopAttr, b.getUnitAttr());
  for (auto [v, result] : llvm::zip(yielded, nest.results))
    v.replaceUsesWithIf(result, [&](OpOperand &use) {
      return use.getOwner() == yield;
    });
  for (linalg::LinalgOp op : llvm::reverse(ops))
    op->erase();
}

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
  // Every producer in the group fuses, also one read by several consumers
  // or yielded; the canonicalizations drop the results and operands that
  // fusion leaves unused.
  RewritePatternSet patterns(ctx);
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
  linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
  ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
      patterns);
  tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
  FrozenRewritePatternSet frozen(std::move(patterns));
  for (FusedOp group : groups) {
    // The body is isolated from above: the rewrites stay inside it.
    if (failed(fuseGroupBody(group, frozen)))
      return failure();
    if (group.getKind() == KernelKind::row_reduction)
      tileRows(group);
    inlineGroup(group);
  }
  return success();
}
