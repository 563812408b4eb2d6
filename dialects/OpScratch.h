//===- OpScratch.h - the op scratch attributes ------------------*- C++ -*-===//
//
// Two discardable attributes of tg ops, spelled here only and verified by
// TGDialect::verifyOperationAttribute:
//
// - `tg.scratch` (i64): bytes of scratch a backend's lowering of the op
//   allocates for itself while the op runs (the CPU's f32 accumulators of
//   bf16 contractions, padded inputs, argmax indices, row temporaries,
//   attention's block buffers), measured by tg-size-scratch;
// - `tg.scratch_offset` (i64): its arena offset, which tg-plan-memory
//   chooses like a buffer's, live at the op's moment of the schedule only.
//
// They belong in TGDialect.td's discardableAttrs like the plan's other
// attributes; they are declared here instead because that change rebuilds
// every file of the tree (TGDialect.h.inc), which the shared build machine
// of 2026-12-02 could not afford. Moving them is mechanical: declare both
// there and make these accessors call the generated helpers.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_OPSCRATCH_H
#define TGC_DIALECTS_OPSCRATCH_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace mlir::tg {

inline constexpr llvm::StringLiteral kScratchAttr = "tg.scratch";
inline constexpr llvm::StringLiteral kScratchOffsetAttr = "tg.scratch_offset";

/// The op's tg.scratch bytes, or null.
inline IntegerAttr getScratchBytes(Operation *op) {
  return op->getAttrOfType<IntegerAttr>(kScratchAttr);
}
/// The op's tg.scratch_offset, or null.
inline IntegerAttr getScratchOffset(Operation *op) {
  return op->getAttrOfType<IntegerAttr>(kScratchOffsetAttr);
}
inline void setScratchBytes(Operation *op, int64_t bytes) {
  op->setAttr(kScratchAttr, Builder(op->getContext()).getI64IntegerAttr(bytes));
}
inline void setScratchOffset(Operation *op, int64_t offset) {
  op->setAttr(kScratchOffsetAttr,
              Builder(op->getContext()).getI64IntegerAttr(offset));
}

} // namespace mlir::tg

#endif // TGC_DIALECTS_OPSCRATCH_H
