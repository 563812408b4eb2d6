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

/// True for the ops lowerReductionKernels takes: row_reduction and
/// reduction groups, and single tg.sum/mean/max ops.
bool isReductionKernelOp(mlir::Operation *op);

/// Lowers `op` (isReductionKernelOp) to one kernel launch; the contract of
/// lowerOpToKernels (KernelGen.h).
mlir::FailureOr<std::vector<KernelLaunch>>
lowerReductionKernels(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_SIMTREDUCTION_H
