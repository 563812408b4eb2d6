//===- MemoryPlanCollectives.cpp - collectives in the memory plan -*- C++ -*-===//
//
// The bucket buffers and the early issue of the data-parallel collectives in
// tg-plan-memory; see MemoryPlanCollectives.h.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlanCollectives.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "dialects/TGOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tg;

namespace mlir::tg::plan {

/// The top-level op of `block` that contains `op`.
Operation *topLevel(Operation *op, Block &block) {
  while (op && op->getBlock() != &block)
    op = op->getParentOp();
  return op;
}

/// Values defined outside `op` that `op` (or its regions) reads.
SmallVector<Value> readsOf(Operation *op) {
  SmallVector<Value> reads(op->getOperands());
  op->walk([&](Operation *inner) {
    if (inner == op)
      return;
    for (Value v : inner->getOperands())
      if (!op->isAncestor(v.getParentRegion()->getParentOp()))
        reads.push_back(v);
  });
  return reads;
}

/// A collective that communicates (not tg.shard, a local copy).
bool isCommunication(Operation *op) {
  return isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op);
}

/// Bytes of the flat f32 buffer the CPU backend packs a collective's
/// bucket into (codegen/cpu/CommToCalls.cpp): an all_reduce's tensors end
/// to end, or ranks rows of a reduce_scatter's or all_gather's shards; 0
/// for anything else. f32 whatever the tensors' type: a bf16 or f16 bucket
/// (tgc --comm-dtype) is packed widened.
int64_t flatBucketBytes(Operation *op) {
  auto f32Bytes = [](Type t) {
    return tensorBytes(
        cast<ShapedType>(t).clone(Float32Type::get(t.getContext())));
  };
  int64_t bytes = 0;
  if (auto r = dyn_cast<AllReduceOp>(op))
    for (Type t : r.getInputs().getTypes())
      bytes += f32Bytes(t);
  else if (auto r = dyn_cast<ReduceScatterOp>(op))
    for (Type t : r.getResultTypes())
      bytes += r.getRanks() * f32Bytes(t);
  else if (auto g = dyn_cast<AllGatherOp>(op))
    for (Type t : g.getInputs().getTypes())
      bytes += g.getRanks() * f32Bytes(t);
  return bytes;
}

/// Records (or, with nullopt, removes) the arena offset of `op`'s bucket
/// buffer: the `bucket_offset` of the communicating collectives.
void setBucketOffset(Operation *op, std::optional<int64_t> offset) {
  Builder b(op->getContext());
  IntegerAttr attr = offset ? b.getI64IntegerAttr(*offset) : IntegerAttr();
  llvm::TypeSwitch<Operation *>(op)
      .Case<AllReduceOp, ReduceScatterOp, AllGatherOp>([&](auto c) {
        if (attr)
          c.setBucketOffsetAttr(attr);
        else
          c.removeBucketOffsetAttr();
      });
}

/// The arena offset of `op`'s bucket buffer, if it has one.
std::optional<int64_t> bucketOffsetOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(op)
      .Case<AllReduceOp, ReduceScatterOp, AllGatherOp>(
          [](auto c) -> std::optional<int64_t> {
            if (std::optional<uint64_t> o = c.getBucketOffset())
              return int64_t(*o);
            return std::nullopt;
          })
      .Default([](Operation *) { return std::nullopt; });
}

/// Moves each collective of `block` up to right after the last op it reads
/// from (its bucket complete) and after the collective before it (the
/// ranks issue them in one order), so that on the GPU it starts as soon as
/// it can and overlaps the ops that follow, and what reads its results
/// down (PlanOptions::asyncCollectives).
void hoistCollectives(Block &block) {
  SmallVector<Operation *> collectives;
  for (Operation &op : block.without_terminator())
    if (isCommunication(&op))
      collectives.push_back(&op);
  Operation *previous = nullptr;
  for (Operation *op : collectives) {
    Operation *after = previous;
    for (Value v : readsOf(op)) {
      Operation *def = v.getDefiningOp();
      def = def ? topLevel(def, block) : nullptr;
      if (def && def->getBlock() == &block &&
          (!after || after->isBeforeInBlock(def)))
        after = def;
    }
    if (after)
      op->moveAfter(after);
    else
      op->moveBefore(&block.front());
    previous = op;
  }
  // What reads a collective's results, directly or not (the optimizer
  // after its all_reduce, clip_grad_norm's sums), moves down to right
  // before its first reader: the runtime waits for the collective at its
  // first reader, so the rest of the backward pass runs before, while it
  // is in flight. Latest first, so each op's readers have moved already.
  DenseSet<Operation *> downstream;
  SmallVector<Operation *> cone;
  for (Operation &op : block.without_terminator()) {
    bool reads = false;
    for (Value v : readsOf(&op)) {
      Operation *def = v.getDefiningOp();
      def = def ? topLevel(def, block) : nullptr;
      reads |= def && (isCommunication(def) || downstream.contains(def));
    }
    if (reads) {
      downstream.insert(&op);
      if (!isCommunication(&op))
        cone.push_back(&op);
    }
  }
  for (Operation *op : llvm::reverse(cone)) {
    Operation *first = block.getTerminator();
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers()) {
        user = topLevel(user, block);
        if (user->isBeforeInBlock(first))
          first = user;
      }
    op->moveBefore(first);
  }
}

} // namespace mlir::tg::plan
