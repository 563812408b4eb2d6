//===- SimtReductionRows.cpp - long rows: online max-sum, split rows -*- C++ -*-===//
//
// Two things the row kernel (SimtReduction.cpp) does for long rows:
//
// Online max-and-sum. A max over x whose row value m feeds a sum of
// exp(x - m) over the same x (softmax, log_softmax and cross-entropy after
// tg-decompose) is reduced in one pass, as FlashAttention does: each
// thread keeps a running (m, l), l the sum of exp(x - m) for the running
// m, and rescales l by exp(m - m') when the max grows to m'. The pairs of
// two threads (lanes, warps, blocks) merge as m = max(m1, m2),
// l = l_big + l_small * exp(m_small - m_big), where "big" is the pair with
// the larger m: written so, the merge gives the same bits whichever
// operand comes first, even when ptxas contracts the product into an fma,
// so every lane of a butterfly ends with the same value. exp(x - m') is
// the program's own expression (the sub and exp ops, rounded to their
// types), evaluated at the running max.
//
// Rows split over blocks. Few long rows (a [4, 50257] vocabulary
// log-sum-exp) would run on as many SMs as there are rows, so
// tg-configure-row-reductions records `kRowBlocksAttr` = S blocks per row,
// and the row becomes one launch per phase plus one: the statistics kernel
// of phase p (tg_rowp<p>, grid S x rows) folds the earlier phases'
// partials from scratch, reduces its slice of the row (groups slice * 256
// + t, step 256 * S) and writes the block's partial, unfinished, to the
// 8-byte slot [reduction][row][slice] of the launch's scratch; the last
// kernel (tg_rowc) folds every phase and writes the full-shape results of
// its slice, and block 0 of the row the row results. Every block folds
// the slices in slice order, so all of a row's blocks hold the same bits,
// and the results are bit-reproducible run to run.
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/SimtReduction.h"
#include "codegen/nvptx/SimtKernels.h"
#include "codegen/nvptx/SimtReductionLowering.h"
#include "codegen/nvptx/SimtScalar.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace tgd = mlir::tg;

namespace tg::nvptx::detail {

namespace {
/// Blocks a split row aims for, all rows together: two per H200 SM.
constexpr int64_t kRowTargetBlocks = 264;
/// Loop iterations a thread of a split row runs at least (256 threads a
/// block): below that a block's fixed cost (the fold, the barrier)
/// outweighs its share of the row.
constexpr int64_t kMinRowGroupsPerThread = 4;
/// Most blocks per row (every block folds that many partials per
/// reduction before its pass).
constexpr int64_t kMaxRowBlocks = 64;
} // namespace

int64_t chooseRowBlocks(Operation *op) {
  using namespace reduction;
  Operation *first = nullptr;
  if (auto f = dyn_cast<tgd::FusedOp>(op)) {
    if (f.getKind() != tgd::KernelKind::row_reduction)
      return 1;
    for (Operation &inner : f.getBodyBlock().without_terminator())
      if (redKind(&inner)) {
        first = &inner;
        break;
      }
  } else if (redKind(op)) {
    first = op;
  }
  if (!first)
    return 1;
  auto [in, axes] = domainOf(first);
  ArrayRef<int64_t> dom = shapeOf(in);
  // The row kernel's case: reduced axes trailing, some kept.
  if (axes.empty() || axes.size() >= dom.size() ||
      axes.front() != static_cast<int64_t>(dom.size() - axes.size()))
    return 1;
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1)
      return 1;
  int64_t rn = numElements(dom.take_back(axes.size()));
  int64_t kn = numElements(dom.drop_back(axes.size()));
  // Short rows take a warp each; enough rows fill the GPU unsplit.
  if (rn <= 1024 || kn == 0 || kn >= kRowTargetBlocks)
    return 1;
  // The last block writes the row results while the others may still read
  // the row's operands: a row result in place of an operand stays unsplit.
  for (Value r : op->getResults()) {
    auto mine = plannedBuffer(r);
    if (!mine || shapeOf(r) == dom)
      continue;
    for (Value operand : op->getOperands())
      if (plannedBuffer(operand) == mine)
        return 1;
  }
  int64_t vec = rn % 4 == 0 && rn >= 128 ? 4 : 1;
  int64_t s = std::min({(kRowTargetBlocks + kn - 1) / kn,
                        (rn / vec) / (256 * kMinRowGroupsPerThread),
                        kMaxRowBlocks});
  return s >= 2 ? s : 1;
}

namespace reduction {

void ReductionLowering::detectOnlinePairs() {
  for (Operation *op : p.ops) {
    auto sum = dyn_cast<tgd::SumOp>(op);
    auto exp = sum ? sum->getOperand(0).getDefiningOp<tgd::ExpOp>() : nullptr;
    auto sub = exp ? exp->getOperand(0).getDefiningOp<tgd::SubOp>() : nullptr;
    auto max = sub ? sub->getOperand(1).getDefiningOp<tgd::MaxOp>() : nullptr;
    if (!max || onlineSumOf.count(max) || !llvm::is_contained(p.ops, max) ||
        sub->getOperand(0) != max->getOperand(0) ||
        domainOf(max).second != domainOf(sum).second ||
        shapeOf(max->getOperand(0)) != shapeOf(sum->getOperand(0)))
      continue;
    // f32 arithmetic throughout (f32, bf16, f16 values); f64 has no exp.
    auto f32Compute = [](Value v) { return computeType(elemOf(v)).isF32(); };
    if (!f32Compute(max->getOperand(0)) || !f32Compute(sub->getResult(0)) ||
        !f32Compute(exp->getResult(0)))
      continue;
    onlineSumOf[max] = sum;
    onlineMaxOf[sum] = max;
  }
}

int ReductionLowering::partnerIndex(ArrayRef<Operation *> reds,
                                    unsigned i) const {
  auto it = onlineSumOf.find(reds[i]);
  if (it == onlineSumOf.end())
    return -1;
  const auto *at = llvm::find(reds, it->second);
  return at == reds.end() ? -1 : static_cast<int>(at - reds.begin());
}

/// exp(mOld - mNew), exactly 1 when the two are equal (both -inf
/// included, where the difference is NaN).
Value ReductionLowering::rescale(Value mOld, Value mNew) {
  Value same = LLVM::FCmpOp::create(w->b, w->loc, LLVM::FCmpPredicate::oeq,
                                    mOld, mNew);
  Value d = LLVM::FSubOp::create(w->b, w->loc, mOld, mNew);
  return w->select(same, w->f32c(1), emitExp(*w, d));
}

/// One element x of the running pair (m, l) of `max` and its online sum:
/// m' = max(m, x), l' = l exp(m - m') + exp(x - m'), the last term the
/// program's sub and exp at m'. With f32 sub and exp, one exp serves
/// both: when x raises the max, l' = l exp(m - x) + exp(x - x) = l E + 1,
/// else l' = l + exp(x - m) = l + E. A NaN term (x = m = -inf: the row's
/// -inf elements before any finite one) adds nothing; a row whose max is
/// not finite gets l = NaN when finished, as the program computes it.
FailureOr<std::pair<Value, Value>>
ReductionLowering::onlineStep(Operation *max, Value m, Value l, Value x) {
  Operation *sum = onlineSumOf.lookup(max);
  Operation *exp = sum->getOperand(0).getDefiningOp();
  Operation *sub = exp->getOperand(0).getDefiningOp();
  OpBuilder &b = w->b;
  Location loc = w->loc;
  auto notNaN = [&](Value v) {
    Value nan = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::uno, v, v);
    return w->select(nan, w->f32c(0), v);
  };
  Value mNew = combine(RedKind::Max, m, x);
  bool f32Pair = elemOf(sub->getResult(0)).isF32() && elemOf(exp->getResult(0)).isF32();
  if (f32Pair) {
    Value grow = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::ogt, x, m);
    FailureOr<Value> d = emitScalarOp(*w, sub, {x, m}, nullptr);
    if (failed(d))
      return failure();
    Value arg = w->select(grow, LLVM::FNegOp::create(b, loc, *d), *d);
    FailureOr<Value> e = emitScalarOp(*w, exp, {arg}, nullptr);
    if (failed(e))
      return failure();
    Value eTerm = notNaN(*e);
    Value l2 = w->select(grow, w->fadd(w->fmul(l, eTerm), w->f32c(1)),
                         w->fadd(l, eTerm));
    return std::make_pair(mNew, l2);
  }
  FailureOr<Value> d = emitScalarOp(*w, sub, {x, mNew}, nullptr);
  if (failed(d))
    return failure();
  FailureOr<Value> e = emitScalarOp(*w, exp, {*d}, nullptr);
  if (failed(e))
    return failure();
  return std::make_pair(mNew,
                        w->fadd(w->fmul(l, rescale(m, mNew)), notNaN(*e)));
}

/// Finishes the reductions of `reds` from their accumulators `vals` into
/// `reduced`; an online sum whose max is not finite is NaN (the program's
/// exp(x - max) is NaN at every element there).
void ReductionLowering::finishAll(ArrayRef<Operation *> reds,
                                  ArrayRef<Value> vals) {
  for (auto [i, r] : llvm::enumerate(reds))
    reduced[r] = finishReduction(r, vals[i]);
  for (auto [i, r] : llvm::enumerate(reds)) {
    int pi = partnerIndex(reds, i);
    if (pi < 0)
      continue;
    Value finite = LLVM::FCmpOp::create(
        w->b, w->loc, LLVM::FCmpPredicate::olt,
        LLVM::FAbsOp::create(w->b, w->loc, vals[i]), w->f32c(INFINITY));
    reduced[reds[pi]] = w->select(finite, reduced[reds[pi]], w->f32c(NAN));
  }
}

/// acc[i] op= x[i] for every reduction of `reds`; an online pair merges
/// (m, l) with (m', l') symmetrically (the file comment).
void ReductionLowering::combineAll(ArrayRef<Operation *> reds,
                                   MutableArrayRef<Value> acc,
                                   ArrayRef<Value> x) {
  for (unsigned i = 0; i < reds.size(); ++i) {
    if (onlineMaxOf.count(reds[i]))
      continue; // merged with its max
    int pi = partnerIndex(reds, i);
    if (pi < 0) {
      acc[i] = combine(*redKind(reds[i]), acc[i], x[i]);
      continue;
    }
    Value mA = acc[i], lA = acc[pi], mB = x[i], lB = x[pi];
    Value aBig = LLVM::FCmpOp::create(w->b, w->loc, LLVM::FCmpPredicate::oge,
                                      mA, mB);
    Value mBig = w->select(aBig, mA, mB), lBig = w->select(aBig, lA, lB);
    Value mSmall = w->select(aBig, mB, mA), lSmall = w->select(aBig, lB, lA);
    acc[i] = combine(RedKind::Max, mA, mB);
    acc[pi] = w->fadd(lBig, w->fmul(lSmall, rescale(mSmall, mBig)));
  }
}

/// The butterfly of warpReduce over all of `reds` at once (an online
/// pair's two values travel together).
SmallVector<Value> ReductionLowering::warpReduceAll(ArrayRef<Operation *> reds,
                                                    ArrayRef<Value> vals) {
  SmallVector<Value> acc(vals);
  for (int lane = 16; lane >= 1; lane /= 2) {
    SmallVector<Value> x;
    for (Value v : acc)
      x.push_back(shflXor(v, lane));
    combineAll(reds, acc, x);
  }
  return acc;
}

LogicalResult ReductionLowering::readRowBlocks() {
  Attribute a = p.anchor->getAttr(kRowBlocksAttr);
  if (!a)
    return success();
  auto n = dyn_cast<IntegerAttr>(a);
  if (!n || n.getInt() < 1 || n.getInt() > kMaxRowBlocks)
    return p.anchor->emitOpError("'")
           << kRowBlocksAttr << "' must be an integer from 1 to "
           << kMaxRowBlocks;
  rowBlocks = n.getInt();
  if (rowBlocks == 1)
    return success();
  if (rn <= 1024)
    return p.anchor->emitOpError("has '")
           << kRowBlocksAttr << "' = " << rowBlocks << " on rows of " << rn
           << " elements, which take a warp each (only rows over 1024 split)";
  if (kn > 65535)
    return p.anchor->emitOpError("splits ")
           << kn << " rows over blocks, more than a grid's 65535 rows";
  for (unsigned i = 0; i < p.results.size(); ++i)
    if (!isFull(i) && resultSharesOperandBuffer(p.anchor, p.anchor->getResult(i)))
      return p.anchor->emitOpError("the memory plan puts row result #")
             << i << " in an operand's buffer, which a row split over "
             << "blocks cannot compute in place (other blocks still read it)";
  return success();
}

/// The 8-byte scratch slot of `red`'s partial for (row, slice):
/// [reduction][row][slice], reductions numbered in phase order.
Value ReductionLowering::rowScratchSlot(Operation *red, Value row,
                                        Value slice) {
  int64_t index = 0;
  for (auto &ph : phases) {
    const auto *at = llvm::find(ph, red);
    if (at != ph.end()) {
      index += at - ph.begin();
      break;
    }
    index += ph.size();
  }
  Value at = w->add(w->mul(w->add(w->i64c(index * kn), w->zext64(row)),
                           w->i64c(rowBlocks)),
                    w->zext64(slice));
  return w->gep(scratch, w->mul(at, w->i64c(8)), w->b.getI8Type());
}

/// Folds the partials of phases [0, phasesDone) of `row`, slice by slice
/// in slice order, and records the finished row values in `reduced`.
void ReductionLowering::foldRowPartials(unsigned phasesDone, Value row) {
  for (unsigned q = 0; q < phasesDone; ++q) {
    ArrayRef<Operation *> reds = phases[q];
    auto load = [&](Operation *r, Value slice) -> Value {
      Type t = computeType(elemOf(r->getOperand(0)));
      return LLVM::LoadOp::create(w->b, w->loc, t,
                                  rowScratchSlot(r, row, slice), 8);
    };
    SmallVector<Value> acc;
    for (Operation *r : reds)
      acc.push_back(load(r, w->i32c(0)));
    scf::ForOp f = w->openFor(w->i32c(rowBlocks - 1), acc);
    Value slice = w->addi(f.getInductionVar(), 1);
    SmallVector<Value> cur(f.getRegionIterArgs()), x;
    for (Operation *r : reds)
      x.push_back(load(r, slice));
    combineAll(reds, cur, x);
    w->closeFor(f, cur);
    finishAll(reds, SmallVector<Value>(f.getResults()));
  }
}

/// A launch of a row split over `rowBlocks` blocks (the file comment):
/// block (slice, row) of the statistics kernel of `rowPhase`, or of the
/// kernel that writes the results.
LogicalResult ReductionLowering::buildSplitRowKernel() {
  OpBuilder &b = w->b;
  Location loc = w->loc;
  Value tid = NVVM::ThreadIdXOp::create(b, loc, w->i32);
  Value slice = NVVM::BlockIdXOp::create(b, loc, w->i32);
  Value row = NVVM::BlockIdYOp::create(b, loc, w->i32);
  auto toIt = [&](Value v) { return it == w->i32 ? v : w->zext64(v); };
  k = toIt(row);
  rowBase = w->mul(k, ic(rn));
  bool stats = stage == Stage::RowPartial;
  foldRowPartials(stats ? rowPhase : phases.size(), row);
  Value start = toIt(w->add(w->muli(slice, block[0]), tid));
  Value step = ic(int64_t(block[0]) * rowBlocks);
  if (stats) {
    ArrayRef<Operation *> reds = phases[rowPhase];
    FailureOr<SmallVector<Value>> partials =
        pass(reds, /*stores=*/false, start, ic(rn / vec), step);
    if (failed(partials))
      return failure();
    SmallVector<Value> vals = warpReduceAll(reds, *partials);
    vals = blockCombine(reds, vals, 0, block[0] / 32, w->shri(tid, 5),
                        w->andi(tid, 31));
    w->openIf(w->icmp(LLVM::ICmpPredicate::eq, tid, w->i32c(0)));
    for (auto [i, v] : llvm::enumerate(vals))
      LLVM::StoreOp::create(b, loc, v, rowScratchSlot(reds[i], row, slice), 8);
    w->after(w->b.getInsertionBlock()->getParentOp());
    return success();
  }
  if (llvm::any_of(llvm::seq<unsigned>(0, p.results.size()),
                   [&](unsigned i) { return isFull(i); }))
    if (failed(pass({}, /*stores=*/true, start, ic(rn / vec), step)))
      return failure();
  // No row result shares a buffer with an operand (readRowBlocks), so the
  // first block stores them without waiting for the others.
  Value isFirst = w->and_(w->icmp(LLVM::ICmpPredicate::eq, tid, w->i32c(0)),
                          w->icmp(LLVM::ICmpPredicate::eq, slice, w->i32c(0)));
  return storeRowResults(isFirst, Sync::None);
}

} // namespace reduction
} // namespace tg::nvptx::detail
