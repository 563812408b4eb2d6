//===- SimtReductionSplit.cpp - reductions split over blocks ----*- C++ -*-===//
//
// The second kernel of a reduction split over blocks (SimtReduction.cpp's
// file comment, "split"): the partial kernel writes each slice's unfinished
// partials to the launch's scratch; the combine kernel folds them in slice
// order (deterministic: the same bits run to run), finishes (mean,
// rounding) and stores the reduced results. Also the size of that scratch
// (and of a split row's), from the shapes alone: reductionScratchBytes,
// which tg-size-gpu-scratch records before the memory plan.
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/SimtReductionLowering.h"
#include "codegen/nvptx/SimtKernels.h"
#include "codegen/nvptx/SimtScalar.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Diagnostics.h"

namespace tg::nvptx::detail::reduction {

uint64_t ReductionLowering::launchScratchBytes() const {
  // One 8-byte slot per reduction, slice (or row block) and output; a
  // split row keeps every phase's partials (the output launch folds them).
  bool rowSplit = stage == Stage::RowPartial || stage == Stage::RowFinal;
  uint64_t reds = phases.front().size();
  if (rowSplit)
    for (size_t q = 1; q < phases.size(); ++q)
      reds += phases[q].size();
  return reds * uint64_t(rowSplit ? rowBlocks : slices) * uint64_t(kn) * 8;
}

FailureOr<uint64_t> ReductionLowering::scratchBytes(bool rowKernel,
                                                    int64_t blocks) {
  // run()'s decisions up to the launch, without a plan or a kernel.
  rowRequested = rowKernel;
  if (failed(analyze()))
    return failure();
  rowKernel = rowKernel && trailing;
  rowMajor = rowKernel || kn == 1;
  if (kn == 0)
    return uint64_t(0);
  // readRowBlocks refuses blocks on rows a warp takes.
  if (rowKernel && rn > 1024)
    rowBlocks = std::max<int64_t>(blocks, 1);
  geometry(rowKernel);
  return stage == Stage::Whole ? uint64_t(0) : launchScratchBytes();
}

/// The 8-byte scratch slot of reduction `red`'s partial of `slice` for
/// output k: [reduction][slice][output], so that the 32 outputs of a
/// column-sum block are written and read coalesced.
Value ReductionLowering::scratchSlot(unsigned red, Value slice) {
  Value kk = it == w->i64 ? k : w->zext64(k);
  Value s = w->zext64(slice);
  Value idx = w->add(w->mul(w->add(w->i64c(int64_t(red) * slices), s),
                            w->i64c(kn)),
                     kk);
  return w->gep(scratch, w->mul(idx, w->i64c(8)), w->b.getI8Type());
}

/// The partial kernel's end: `isFirst` stores the block's partial of each
/// reduction of the phase (accumulator type, unfinished) for `slice`.
void ReductionLowering::storePartials(ArrayRef<Value> vals, Value isFirst,
                                      Value slice) {
  w->openIf(isFirst);
  for (auto [i, v] : llvm::enumerate(vals))
    LLVM::StoreOp::create(w->b, w->loc, v, scratchSlot(i, slice), 8);
  w->b.setInsertionPointAfter(w->b.getInsertionBlock()->getParentOp());
}

/// The combine kernel of a split reduction: folds each output's `slices`
/// partials in slice order and writes the results that are not
/// full-shape. A reduction over everything is one block, thread s taking
/// slice s (slices <= threads) into the block's fixed tree; column sums
/// take a thread per output that adds its slices one after the other.
LogicalResult ReductionLowering::buildCombineKernel() {
  OpBuilder &b = w->b;
  Location loc = w->loc;
  ArrayRef<Operation *> reds = phases.front();
  Value tx = NVVM::ThreadIdXOp::create(b, loc, w->i32);
  auto load = [&](unsigned i, Value slice) -> Value {
    Type t = computeType(elemOf(reds[i]->getOperand(0)));
    return LLVM::LoadOp::create(b, loc, t, scratchSlot(i, slice), 8);
  };
  SmallVector<Value> vals;
  if (kn == 1) {
    k = ic(0);
    rowBase = ic(0);
    Value has = w->ult(tx, w->i32c(slices));
    Value slice = LLVM::UMinOp::create(b, loc, tx, w->i32c(slices - 1));
    for (auto [i, r] : llvm::enumerate(reds)) {
      Value x = load(i, slice);
      vals.push_back(warpReduce(
          *redKind(r), w->select(has, x, initOf(*redKind(r), x.getType()))));
    }
    if (block[0] > 32)
      vals = blockCombine(reds, vals, 0, block[0] / 32, w->shri(tx, 5),
                          w->andi(tx, 31));
    for (auto [i, v] : llvm::enumerate(vals))
      reduced[reds[i]] = finishReduction(reds[i], v);
    return storeRowResults(w->icmp(LLVM::ICmpPredicate::eq, tx, w->i32c(0)),
                           Sync::Block);
  }
  auto toIt = [&](Value v) { return it == w->i32 ? v : w->zext64(v); };
  Value bid = NVVM::BlockIdXOp::create(b, loc, w->i32);
  Value raw = toIt(w->add(w->muli(bid, block[0]), tx));
  Value valid = w->ult(raw, ic(kn));
  k = LLVM::UMinOp::create(b, loc, raw, ic(kn - 1));
  for (auto [i, r] : llvm::enumerate(reds)) {
    Value acc = load(i, w->i32c(0));
    for (int64_t s = 1; s < slices; ++s)
      acc = combine(*redKind(r), acc, load(i, w->i32c(s)));
    reduced[r] = finishReduction(r, acc);
  }
  // Each output's thread is the only one that reads or writes it.
  return storeRowResults(valid, Sync::None);
}

} // namespace tg::nvptx::detail::reduction

namespace tg::nvptx::detail {

using namespace reduction;

FailureOr<uint64_t> reductionScratchBytes(Operation *op, int64_t rowBlocks) {
  // The lowering reports what fails here; sizing only leaves it unsized.
  ScopedDiagnosticHandler quiet(op->getContext(),
                                [](Diagnostic &) { return success(); });
  bool row;
  Program p = programOf(op, row);
  if (llvm::any_of(p.results,
                   [&](Value r) { return llvm::is_contained(p.inputs, r); }))
    return failure(); // lowerReductionKernels says why
  // The split and its geometry are the same on every target.
  return ReductionLowering(p, Target::SM80, ModuleOp())
      .scratchBytes(row, rowBlocks);
}

} // namespace tg::nvptx::detail
