//===- GemmStaging.cpp - realigning copies for wgmma on odd pitches -------===//
//
// The copy kernel of GemmStaging.h: an odd-pitch GEMM operand into the op's
// scratch with rows padded to 16 bytes, for the wgmma kernel's TMA.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmStaging.h"
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/SimtKernels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinTypes.h"

#include <string>

namespace tg::nvptx::detail {

using namespace mlir;

KernelLaunch stagingCopy(ModuleOp kernels, Location loc, Target t,
                         const TensorMapParam &map, unsigned operand,
                         uint64_t scratchBytes) {
  const uint64_t cols = map.cols, pitch = map.rowPitch();
  const uint64_t rows = map.batches * map.rows; // batches are dense too
  const uint64_t chunksPerRow = pitch / 8, chunks = rows * chunksPerRow;
  // The kernel depends only on the shape and where the copy goes, so the
  // ops that stage alike (the GPT's two products of the logits' gradient)
  // share it.
  std::string symbol = "tg_gemm_stage_" + toString(t) + "_" +
                       std::to_string(rows) + "x" + std::to_string(cols) +
                       "_p" + std::to_string(pitch) + "_o" +
                       std::to_string(map.scratchOffset);
  constexpr int kThreads = 256;
  KernelLaunch l =
      launchFor(symbol, int64_t(chunks), kThreads,
                {KernelParam(KernelParam::Kind::Operand, operand),
                 KernelParam(KernelParam::Kind::Scratch)});
  l.scratchBytes = scratchBytes;
  if (hasKernel(kernels, symbol))
    return l;

  SimtKernel k = beginSimtKernel(kernels, symbol, 2, kThreads, loc);
  KernelBuilder &w = *k.w;
  MLIRContext *ctx = kernels.getContext();
  Type i16 = IntegerType::get(ctx, 16);
  Type v4i32 = VectorType::get({4}, w.i32);
  Value chunk = globalThreadIndex(w);
  w.openIf(w.ult(chunk, w.i32c(int64_t(chunks))));
  Value row = w.udiv(chunk, w.i32c(int64_t(chunksPerRow)));
  Value col0 = w.muli(w.urem(chunk, w.i32c(int64_t(chunksPerRow))), 8);
  Value rowStart = w.muli(row, int64_t(cols));
  // Eight elements; those past the row's end (the last chunk's padding)
  // load the row's last element again, in bounds, and store zero.
  Value lanes[8];
  for (int e = 0; e < 8; ++e) {
    Value col = w.addi(col0, e);
    Value inRow = w.ult(col, w.i32c(int64_t(cols)));
    Value at = w.add(rowStart, w.select(inRow, col, w.i32c(int64_t(cols) - 1)));
    Value v = LLVM::LoadOp::create(w.b, loc, i16, w.gep(k.params[0], at, i16),
                                   /*alignment=*/2);
    lanes[e] = w.select(inRow, LLVM::ZExtOp::create(w.b, loc, w.i32, v),
                        w.i32c(0));
  }
  Value vec = LLVM::UndefOp::create(w.b, loc, v4i32);
  for (int i = 0; i < 4; ++i) {
    Value word = w.or_(lanes[2 * i],
                       LLVM::ShlOp::create(w.b, loc, lanes[2 * i + 1], w.i32c(16)));
    vec = LLVM::InsertElementOp::create(w.b, loc, vec, word, w.i32c(i));
  }
  Value to = w.gep(k.params[1],
                   w.add(chunk, w.i32c(int64_t(map.scratchOffset / 16))), v4i32);
  LLVM::StoreOp::create(w.b, loc, vec, to, /*alignment=*/16);
  endSimtKernel(k);
  return l;
}

} // namespace tg::nvptx::detail
