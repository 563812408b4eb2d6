//===- MemoryPlanScratch.h - op scratch in the memory plan ------*- C++ -*-===//
//
// How tg-plan-memory plans each op's own scratch (tg.scratch,
// declared in TGDialect.td): a buffer of the plan live at the op's step only,
// so it fills a hole of the graph's buffers and the lower bound counts it;
// its offset becomes the op's tg.scratch_offset. Shared by MemoryPlan.cpp
// (liveness) and MemoryPlanOffsets.cpp (where they are defined).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_MEMORYPLANSCRATCH_H
#define TGC_PASSES_MEMORYPLANSCRATCH_H

#include "dialects/TGDialect.h"
#include "passes/MemoryPlan.h"

#include <utility>
#include <vector>

namespace mlir::tg {

/// The scratch a backend's lowering of `op` needs (tg.scratch, from
/// tg-size-scratch) as a buffer of its own (kind scratch, named after the
/// op with " scratch"), live at the op's step `at` only: the op's operands
/// and results are live then too, so it never shares bytes with them, and
/// between ops it fills the holes of the graph's buffers. Appended to
/// `buffers`; `scratchOf` says whose it is.
void addScratchBuffer(Operation *op, int64_t at, std::vector<Buffer> &buffers,
                      std::vector<std::pair<Operation *, size_t>> &scratchOf);

/// Records the offset that assignOffsets gave each op's scratch buffer as
/// the op's tg.scratch_offset (relative to the block's region, like
/// tg.offset, until planMemory shifts a loop body's offsets).
void recordScratchOffsets(ArrayRef<std::pair<Operation *, size_t>> scratchOf,
                          const std::vector<Buffer> &buffers);

} // namespace mlir::tg

#endif // TGC_PASSES_MEMORYPLANSCRATCH_H
