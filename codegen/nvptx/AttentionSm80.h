//===- AttentionSm80.h - fused attention kernels (mma.sync) -----*- C++ -*-===//
//
// tg.attention and tg.attention_grad as FlashAttention-2 kernels on the
// tensor cores (mma.sync m16n8k16, bf16/f16 in, f32 accumulation): the
// forward pass writes the output and the f32 log-sum-exp and never stores
// the T x T probabilities; the backward pass recomputes them from the
// log-sum-exp. docs/attention.md describes the kernels; KernelGen.cpp
// dispatches to them, and the GPU schedule keeps an attention op whole
// (instead of decomposing it) when attentionKernelRefusal says nothing.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_ATTENTIONSM80_H
#define TG_CODEGEN_NVPTX_ATTENTIONSM80_H

#include "codegen/nvptx/KernelGen.h"

#include "mlir/IR/Operation.h"

#include <optional>
#include <string>
#include <vector>

namespace tg::nvptx {

/// True when `op` is a tg.attention or tg.attention_grad.
bool isAttentionOp(mlir::Operation *op);

/// Why the fused kernels cannot compute the attention op `op` (its dtype,
/// head dimension, ...), or nullopt when they can. Such an op takes the
/// decomposition instead (never a wrong result).
std::optional<std::string> attentionKernelRefusal(mlir::Operation *op);

/// Lowers a tg.attention (one launch: output and log-sum-exp) or a
/// tg.attention_grad (sm_80: dQ, then dK and dV; sm_90a: a delta pass, dK
/// and dV, then dQ) to kernels for target `t`: mma.sync kernels on sm_80,
/// the wgmma + TMA kernels of AttentionSm90.h on sm_90a. An op the kernels
/// refuse is an error at `op` naming the reason.
mlir::FailureOr<std::vector<KernelLaunch>>
lowerAttentionToKernels(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_ATTENTIONSM80_H
