//===- GemmStaging.h - realigning copies for wgmma on odd pitches -*- C++ -*-===//
//
// TMA needs 16-byte global strides, so an sm_90a GEMM operand whose rows
// are not a multiple of 8 elements (GPT-2's vocabulary, 50257) cannot be
// read by the wgmma kernel where it lives. With kernel = "wgmma_staged"
// (tg-configure-gemms' cost rule, GemmConfig.h stagingCost) the GEMM's
// lowering first launches, per such operand, the copy built here: it
// writes the operand into the op's scratch with every row padded to a
// multiple of 8 elements (16-byte stores), and the wgmma kernel's tensor
// map describes that copy (TensorMapParam::staged; docs/nvptx.md, "wgmma
// for odd row pitches").
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_GEMMSTAGING_H
#define TG_CODEGEN_NVPTX_GEMMSTAGING_H

#include "codegen/nvptx/KernelGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"

namespace tg::nvptx::detail {

/// The launch (and, unless `kernels` has it, the kernel) that copies
/// operand `operand` of the lowered op, `map.batches` dense row-major
/// `map.rows` x `map.cols` matrices of 16-bit elements, to `map`'s staged
/// place: `map.scratchOffset` bytes into the launch's scratch (of
/// `scratchBytes` bytes), rows map.rowPitch() elements apart, the padding
/// zeroed. One thread per 16-byte chunk of the copy: eight 2-byte loads
/// (the source rows are only 2-byte aligned; a warp reads 512 contiguous
/// bytes), one 16-byte store.
KernelLaunch stagingCopy(mlir::ModuleOp kernels, mlir::Location loc, Target t,
                         const TensorMapParam &map, unsigned operand,
                         uint64_t scratchBytes);

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_GEMMSTAGING_H
