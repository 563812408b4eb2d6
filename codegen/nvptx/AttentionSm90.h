//===- AttentionSm90.h - fused attention forward (wgmma + TMA) --*- C++ -*-===//
//
// tg.attention on sm_90a as a warp-specialised FlashAttention forward
// kernel: TMA loads of Q and of the streamed K/V blocks through an mbarrier
// ring, S = QK^T and O += PV as wgmma (bf16/f16 in, f32 accumulators), the
// online softmax in registers. docs/attention.md describes it;
// lowerAttentionToKernels (AttentionSm80.h) dispatches to it for sm_90a.
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

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_ATTENTIONSM90_H
