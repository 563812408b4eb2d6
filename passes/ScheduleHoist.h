//===- ScheduleHoist.h - hoist shrinking ops in a schedule ------*- C++ -*-===//
//
// Passes over a memory-aware schedule, kept apart from the planner
// (MemoryPlan.cpp), which calls them after each of its list schedules.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_SCHEDULEHOIST_H
#define TGC_PASSES_SCHEDULEHOIST_H

#include "mlir/IR/Block.h"

namespace mlir::tg {

/// Moves every op of `block` that frees at least as many bytes as its
/// results take (it is the last reader of values at least as large) up to
/// right after the last of its operands' producers and of the other readers
/// of what it frees: those values then die earlier. The views and replays
/// that only it reads move with it, unless they already run before that
/// point. Pure ops and fusion groups only. Linear in the block (each op's
/// order key is at most 8 entries long, at most 6 producers move with an
/// op).
void hoistShrinkingOps(Block &block);

/// Moves every replay of `block` (an op marked `tg.recomputed`, or a fusion
/// group all of whose ops are), and the view of it that is its only reader,
/// down to right before its first reader, when each value it reads is read
/// again at or after that reader (so the move keeps nothing alive longer):
/// its results then live only as long as their readers need. The top-down list schedule runs a replay as soon as
/// a tie lets it, which put the GELU's replayed output back into the
/// forward pass. O(n log n) in the block.
void sinkReplays(Block &block);

} // namespace mlir::tg

#endif // TGC_PASSES_SCHEDULEHOIST_H
