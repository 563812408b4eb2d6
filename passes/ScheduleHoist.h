//===- ScheduleHoist.h - hoist shrinking ops in a schedule ------*- C++ -*-===//
//
// A pass over a memory-aware schedule, kept apart from the planner
// (MemoryPlan.cpp), which calls it after each of its list schedules.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_SCHEDULEHOIST_H
#define TGC_PASSES_SCHEDULEHOIST_H

#include "mlir/IR/Block.h"

namespace mlir::tg {

/// Moves every op of `block` that frees at least as many bytes as its
/// results take (it is the last reader of values at least as large) up to
/// right after the last of its operands' producers and of the other readers
/// of what it frees: those values then die earlier. Pure ops without
/// regions only. Linear in the block (each op's order key is at most 8
/// entries long).
void hoistShrinkingOps(Block &block);

} // namespace mlir::tg

#endif // TGC_PASSES_SCHEDULEHOIST_H
