//===- GemmLowering.h - gemm groups and matmuls to tensor-core GEMMs -*- C++ -*-===//
//
// The bridge from the pipeline's IR to the tensor-core GEMM generator: what
// GEMM a `gemm` fusion group (or a tg.matmul outside any group) computes,
// the typed tile-configuration attribute tg-configure-gemms attaches to it,
// and the lowering that turns it into one kernel whose epilogue is the
// group's body, element by element (docs/nvptx.md, "From the pipeline").
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_GEMMLOWERING_H
#define TG_CODEGEN_NVPTX_GEMMLOWERING_H

#include "codegen/nvptx/KernelGen.h"
#include "dialects/TGOps.h"

#include <string>
#include <vector>

namespace tg::nvptx {

/// The GEMM of a gemm group or a lone tg.matmul.
struct GemmOpInfo {
  /// The product (in the group's body, for a group).
  mlir::tg::MatmulOp matmul;
  /// M, N, K, the input type, the form and the batch; the target and the
  /// fixed epilogue are left at their defaults.
  GemmProblem problem;
  /// Non-zero when a batched lhs times a shared rhs was folded into one
  /// GEMM of batch x M rows (problem.m): the rows of one batch.
  int64_t rowsPerBatch = 0;
};

/// Reads the GEMM that `op` (a `gemm` group or a tg.matmul) computes. Fails,
/// with `why` set to a sentence naming the reason, when `op` is neither or
/// when no tensor-core kernel computes it: operands other than bf16/f16 of
/// one type, an accumulator other than f32, both operands transposed, or
/// batch dimensions an operand neither has in full nor broadcasts whole.
mlir::FailureOr<GemmOpInfo> analyzeGemm(mlir::Operation *op, std::string &why);

/// True for the ops the tensor-core path takes: a `gemm` group, or a
/// tg.matmul outside any group, whose operands are bf16 or f16.
bool isTensorCoreGemm(mlir::Operation *op);

/// `c` for target `t` as the `#tg.tile_config` attribute, and back.
mlir::tg::TileConfigAttr tileConfigAttr(mlir::MLIRContext *ctx,
                                        const TileConfig &c, Target t);
TileConfig tileConfigFromAttr(mlir::tg::TileConfigAttr a);

/// The lowering of a tensor-core GEMM op (isTensorCoreGemm) for
/// lowerOpToKernels: one kernel, launched once, with the tile config of
/// `t` from the op's `tg.tile_configs` (an error if there is none). Its
/// parameters are the two matrix operands (on sm_90a as TMA descriptors,
/// KernelParam::Kind::TensorMap), every other operand the epilogue reads,
/// then every result. An op whose epilogue has an op the kernels cannot
/// compute yet is an error naming that op.
mlir::FailureOr<std::vector<KernelLaunch>>
lowerGemmToKernels(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_GEMMLOWERING_H
