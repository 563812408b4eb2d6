//===- MemoryPlanCollectives.h - collectives in the memory plan -*- C++ -*-===//
//
// What tg-plan-memory does with the data-parallel collectives (tg.all_reduce,
// tg.reduce_scatter, tg.all_gather): the CPU backend's flat bucket buffer of
// each, its arena offset (`bucket_offset`), and the schedule that issues each
// collective as soon as its bucket is complete. Split from MemoryPlan.cpp
// (which keeps liveness and scheduling) with the two block helpers both use.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_MEMORYPLANCOLLECTIVES_H
#define TGC_PASSES_MEMORYPLANCOLLECTIVES_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::tg::plan {

/// The top-level op of `block` that contains `op`.
Operation *topLevel(Operation *op, Block &block);

/// Values defined outside `op` that `op` (or its regions) reads.
SmallVector<Value> readsOf(Operation *op);

/// A collective that communicates (not tg.shard, a local copy).
bool isCommunication(Operation *op);

/// Bytes of the flat buffer the CPU backend packs a collective's bucket
/// into (codegen/cpu/CommToCalls.cpp): an all_reduce's tensors end to end,
/// or ranks rows of a reduce_scatter's or all_gather's shards; 0 for
/// anything else.
int64_t flatBucketBytes(Operation *op);

/// Records (or, with nullopt, removes) the arena offset of `op`'s bucket
/// buffer: the `bucket_offset` of the communicating collectives.
void setBucketOffset(Operation *op, std::optional<int64_t> offset);

/// The arena offset of `op`'s bucket buffer, if it has one.
std::optional<int64_t> bucketOffsetOf(Operation *op);

/// Moves each collective of `block` up to right after the last op it reads
/// from (its bucket complete) and after the collective before it (the
/// ranks issue them in one order), and what reads its results down
/// (PlanOptions::asyncCollectives).
void hoistCollectives(Block &block);

} // namespace mlir::tg::plan

#endif // TGC_PASSES_MEMORYPLANCOLLECTIVES_H
