//===- SimtKernels.h - fp32 GEMM and single-op SIMT kernels -----*- C++ -*-===//
//
// The generators of engineer E's part of the GPU backend (issue 15): the
// fp32 shared-memory GEMM (SimtGemm.cpp: `tg.matmul` and `gemm` groups with
// f32 operands) and the data-movement and other single-op kernels
// (SimtMovement.cpp: reshape, transpose, slice, concat, broadcast_to,
// embedding and its gradient, random, splat constants; SimtConvPool.cpp:
// convolutions and max pooling). Both follow KernelGen.h's contract;
// the helpers here are what they share: a kernel function whose parameters
// are global pointers, the identity of a planned buffer, and the i32 index
// arithmetic on static shapes.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_SIMTKERNELS_H
#define TG_CODEGEN_NVPTX_SIMTKERNELS_H

#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/KernelGen.h"

#include "mlir/IR/Operation.h"

#include <memory>
#include <optional>
#include <utility>

namespace tg::nvptx::detail {

/// A kernel under construction: `fn` (an `llvm.func` with `nvvm.kernel`
/// whose parameters are all global pointers) and a builder at the end of
/// its entry block.
struct SimtKernel {
  mlir::LLVM::LLVMFuncOp fn;
  std::unique_ptr<KernelBuilder> w;
  /// The pointer parameters, in order.
  llvm::SmallVector<mlir::Value> params;
};

/// Starts kernel `symbol` in `kernels` with `numParams` global-pointer
/// parameters and at most `threads` threads per block.
SimtKernel beginSimtKernel(mlir::ModuleOp kernels, llvm::StringRef symbol,
                           unsigned numParams, int threads, mlir::Location loc);

/// Starts kernel `symbol` with one thread per point of `space` (launch it
/// with launchFor(numel, 256)); the builder is left inside the bounds
/// check. Returns the point's multi-index followed by its row-major linear
/// index (i32).
llvm::SmallVector<mlir::Value>
beginElementKernel(SimtKernel &k, mlir::ModuleOp kernels, llvm::StringRef symbol,
                   unsigned numParams, llvm::ArrayRef<int64_t> space,
                   mlir::Location loc);

/// Ends the kernel body (the return at the end of the entry block).
void endSimtKernel(SimtKernel &k);

/// blockIdx.x * blockDim.x + threadIdx.x, as i32.
mlir::Value globalThreadIndex(KernelBuilder &w);

/// Where a planned value lives: (-1, byte offset) in the arena, or
/// (argument number, 0) in a function argument's storage; nullopt when the
/// plan says nothing (an unplanned function).
std::optional<std::pair<int64_t, int64_t>> plannedBuffer(mlir::Value v);

/// True when the plan gives `result` the buffer of one of `op`'s operands.
bool resultSharesOperandBuffer(mlir::Operation *op, mlir::Value result);

/// Row-major strides of `shape` (in elements).
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// The multi-index of the i32 row-major `linear` index in `shape`.
llvm::SmallVector<mlir::Value> unravel(KernelBuilder &w, mlir::Value linear,
                                       llvm::ArrayRef<int64_t> shape);

/// An error at `op` when a tensor of `op` has 2^31 elements or more (the
/// kernels index with i32).
mlir::LogicalResult checkI32Indexable(mlir::Operation *op);

/// Launch geometry for `n` threads in blocks of `threads`.
KernelLaunch launchFor(llvm::StringRef symbol, int64_t n, int threads,
                       std::vector<KernelParam> params);

/// fp32 SIMT GEMM: a `tg.matmul` or `tg.fused <gemm>` with f32 operands.
mlir::FailureOr<std::vector<KernelLaunch>>
lowerSimtGemm(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

/// True when `op` (a matmul or gemm group) is an f32 product, the SIMT
/// GEMM's input (bf16/f16 go to the tensor-core generator).
bool isF32Gemm(mlir::Operation *op);

/// Data movement and the other single ops (see SimtMovement.cpp); nullopt
/// (and no diagnostic) when `op` is none of them.
std::optional<mlir::FailureOr<std::vector<KernelLaunch>>>
lowerMovementOp(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

/// conv2d, its two gradients, max_pool2d and its gradient
/// (SimtConvPool.cpp); nullopt when `op` is none of them.
std::optional<mlir::FailureOr<std::vector<KernelLaunch>>>
lowerConvPoolOp(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_SIMTKERNELS_H
