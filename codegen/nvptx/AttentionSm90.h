//===- AttentionSm90.h - fused attention on sm_90a (wgmma + TMA) -*- C++ -*-===//
//
// tg.attention and tg.attention_grad on sm_90a as warp-specialised
// FlashAttention kernels: TMA loads of the CTA's own tiles and of the
// streamed blocks through an mbarrier ring, every matrix product as wgmma
// (bf16/f16 in, f32 accumulators). The forward keeps an online softmax in
// registers; the backward recomputes the probabilities from the
// log-sum-exp. docs/attention.md describes them; lowerAttentionToKernels
// (AttentionSm80.h) dispatches to them for sm_90a.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_ATTENTIONSM90_H
#define TG_CODEGEN_NVPTX_ATTENTIONSM90_H

#include "codegen/nvptx/KernelGen.h"

#include "mlir/IR/Operation.h"

#include <vector>

namespace tg::nvptx::detail {

/// Lowers a tg.attention that attentionKernelRefusal accepts (and whose
/// results have their own buffers) to the sm_90a forward kernel: one launch
/// whose parameters are TMA descriptors over q, k and v and pointers to
/// the output and the log-sum-exp.
mlir::FailureOr<std::vector<KernelLaunch>>
lowerAttentionForwardSm90(mlir::Operation *op, mlir::ModuleOp kernels);

/// Lowers a tg.attention_grad that attentionKernelRefusal accepts (and
/// whose results have their own buffers) to three launches: D = rowsum(dO *
/// O) - dLSE into the buffer of dQ (free until the last launch), the dK/dV
/// kernel, then the dQ kernel. q, k, v and dO reach the wgmma kernels as
/// TMA descriptors.
mlir::FailureOr<std::vector<KernelLaunch>>
lowerAttentionBackwardSm90(mlir::Operation *op, mlir::ModuleOp kernels);

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_ATTENTIONSM90_H
