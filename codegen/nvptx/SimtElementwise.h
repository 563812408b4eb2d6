//===- SimtElementwise.h - elementwise and optimizer kernels ----*- C++ -*-===//
//
// The SIMT generator for `tg.fused <elementwise>` and `tg.fused <optimizer>`
// groups and single elementwise tg ops (see SimtElementwise.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_SIMTELEMENTWISE_H
#define TG_CODEGEN_NVPTX_SIMTELEMENTWISE_H

#include "codegen/nvptx/KernelGen.h"

namespace tg::nvptx {

/// True for what lowerElementwiseOp compiles: an elementwise or optimizer
/// group, or a single elementwise op (not tg.constant: SimtMovement fills).
bool isElementwiseKernelOp(mlir::Operation *op);

/// One kernel for `op` (see isElementwiseKernelOp): every result computed
/// from the operands in one grid-stride pass; the KernelGen.h contract.
mlir::FailureOr<std::vector<KernelLaunch>>
lowerElementwiseOp(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_SIMTELEMENTWISE_H
