//===- SimtReduction.h - reduction and row-reduction kernels ----*- C++ -*-===//
//
// The SIMT generator for every kernel that reduces: `tg.fused
// <row_reduction>` groups (softmax, the norms, cross-entropy forward and
// backward after tg-decompose), `tg.fused <reduction>` groups (column sums,
// reductions over everything) and single tg.sum/mean/max ops outside
// groups. See SimtReduction.cpp for the thread mapping.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_SIMTREDUCTION_H
#define TG_CODEGEN_NVPTX_SIMTREDUCTION_H

#include "codegen/nvptx/KernelGen.h"

namespace tg::nvptx::detail {

/// The attribute tg-configure-row-reductions records on a row reduction
/// whose rows are split over several blocks: the blocks per row (an
/// integer, 2 to 64; absent or 1: a warp or a block per row). Spelled only
/// here; it belongs in TGDialect.td's discardableAttrs once that file is
/// next rebuilt anyway (the tg dialect refuses unknown `tg.` names).
inline constexpr llvm::StringLiteral kRowBlocksAttr = "tg_nvptx.row_blocks";

/// The blocks per row the row kernel should split `op`'s rows over
/// (SimtReductionRows.cpp): more than 1 only for row reductions of rows
/// over 1024 elements that are too few to fill an H200 (under 264 rows),
/// with enough of each row per thread, and no row result planned in place
/// of an operand.
int64_t chooseRowBlocks(mlir::Operation *op);

/// The bytes of scratch lowerReductionKernels' launches of `op`
/// (isReductionKernelOp) take with `rowBlocks` blocks per row (the value
/// kRowBlocksAttr would carry; 1 for none): the split partials, 0 when the
/// op is one launch. Depends on the shapes only, so tg-size-gpu-scratch
/// calls it before the plan. Fails, without a diagnostic, where the
/// lowering would fail (it says why).
mlir::FailureOr<uint64_t> reductionScratchBytes(mlir::Operation *op,
                                                int64_t rowBlocks);

/// True for the ops lowerReductionKernels takes: row_reduction and
/// reduction groups, and single tg.sum/mean/max ops.
bool isReductionKernelOp(mlir::Operation *op);

/// Lowers `op` (isReductionKernelOp) to one kernel launch; the contract of
/// lowerOpToKernels (KernelGen.h).
mlir::FailureOr<std::vector<KernelLaunch>>
lowerReductionKernels(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_SIMTREDUCTION_H
