//===- KernelGen.cpp - dispatch of planned tg ops to generators -*- C++ -*-===//
//
// One switch from an op (a `tg.fused` group by its kind, or a single tg op)
// to the generator that lowers it. Each generator lives in its own file and
// adds its case here; an op no generator takes is a compile-time error at
// its location, never a silent CPU fallback.
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/KernelGen.h"
#include "codegen/nvptx/AttentionSm80.h"
#include "codegen/nvptx/GemmLowering.h"
#include "codegen/nvptx/SimtElementwise.h"
#include "codegen/nvptx/SimtReduction.h"
#include "codegen/nvptx/SimtKernels.h"

#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;

namespace tg::nvptx {

bool hasKernel(ModuleOp kernels, llvm::StringRef symbol) {
  return kernels.lookupSymbol(symbol) != nullptr;
}

std::string kernelSymbol(Operation *op, llvm::StringRef prefix, Target t) {
  // Print a clone without the planner's discardable attributes, so that two
  // groups computing the same thing on different buffers share a kernel.
  Operation *copy = op->clone(Operation::CloneOptions::all().cloneOperands(
      /*enable=*/false));
  copy->walk([](Operation *inner) {
    for (llvm::StringRef a :
         {mlir::tg::attr::offset, mlir::tg::attr::offsets, mlir::tg::attr::bytes,
          mlir::tg::attr::aliasArg, mlir::tg::attr::aliasArgs, mlir::tg::attr::flops,
          mlir::tg::attr::bytesRead, mlir::tg::attr::bytesWritten,
          mlir::tg::attr::scratch, mlir::tg::attr::scratchOffset})
      inner->removeAttr(a);
  });
  std::string text;
  llvm::raw_string_ostream os(text);
  copy->print(os, OpPrintingFlags().printGenericOpForm().elideLargeElementsAttrs(
                      1 << 20));
  copy->destroy();
  // The clone has no operands, so its text lacks their types (a concat of
  // 64 + 32 columns printed like one of 32 + 32 + 32, and shared their
  // kernels) and which of them are one value (mul(x, x) against mul(x, y)):
  // both are part of what the kernel computes.
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    os << (i ? ", " : " operands: ") << v.getType();
    size_t first = llvm::find(op->getOperands(), v) - op->operand_begin();
    if (first != i)
      os << " = #" << first;
  }
  llvm::SmallString<64> name(prefix);
  name += "_";
  name += toString(t);
  name += "_";
  llvm::raw_svector_ostream(name)
      << llvm::format_hex_no_prefix(llvm::xxh3_64bits(text), 16);
  return std::string(name);
}

FailureOr<std::vector<KernelLaunch>> lowerOpToKernels(Operation *op, Target t,
                                                      ModuleOp kernels) {
  // bf16/f16 products (gemm groups and lone matmuls): tensor cores.
  if (isTensorCoreGemm(op))
    return lowerGemmToKernels(op, t, kernels);
  // Fused attention (bf16/f16, head dim 64/128; on sm_90a the forward is
  // the wgmma + TMA kernel); the schedule decomposes the others before
  // they get here.
  if (isAttentionOp(op))
    return lowerAttentionToKernels(op, t, kernels);
  if (isElementwiseKernelOp(op))
    return lowerElementwiseOp(op, t, kernels);
  // Reductions: row_reduction and reduction groups, single sum/mean/max.
  if (detail::isReductionKernelOp(op))
    return detail::lowerReductionKernels(op, t, kernels);
  if (auto fused = dyn_cast<mlir::tg::FusedOp>(op)) {
    // Generators add their kinds here.
    if (fused.getKind() == mlir::tg::KernelKind::gemm && detail::isF32Gemm(op))
      return detail::lowerSimtGemm(op, t, kernels);
    return fused.emitOpError()
           << "the GPU backend cannot compile a '"
           << mlir::tg::stringifyKernelKind(fused.getKind()) << "' kernel yet";
  }
  if (isa<mlir::tg::MatmulOp>(op) && detail::isF32Gemm(op))
    return detail::lowerSimtGemm(op, t, kernels);
  if (auto movement = detail::lowerMovementOp(op, t, kernels))
    return *movement;
  if (auto convPool = detail::lowerConvPoolOp(op, t, kernels))
    return *convPool;
  return op->emitOpError() << "the GPU backend cannot compile this op yet";
}

} // namespace tg::nvptx
