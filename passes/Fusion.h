//===- Fusion.h - fusion groups: cost model and helpers ---------*- C++ -*-===//
//
// The cost model that tg-fuse decides with and records (FLOPs and bytes of
// an op or a group), shared by the kernel report, and the inverse of the
// pass (inlining every tg.fused body), which a backend that runs groups op
// by op calls.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_FUSION_H
#define TGC_PASSES_FUSION_H

#include "mlir/IR/Operation.h"

namespace mlir::tg {

/// Replaces every tg.fused under `root` by the ops of its body, moving the
/// memory plan's attributes of each group result (tg.offset, tg.offsets,
/// tg.alias_arg) to the op that computes it inside, so that a backend
/// which runs groups op by op keeps the plan.
void inlineFusedGroups(Operation *root);

} // namespace mlir::tg

#endif // TGC_PASSES_FUSION_H
