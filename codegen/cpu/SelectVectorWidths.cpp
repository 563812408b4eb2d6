//===- SelectVectorWidths.cpp - vector width of each loop nest --*- C++ -*-===//
//
// The tg-select-vector-widths pass (see Passes.td): the configuration half
// of the elementwise vectorisation. It records, on each linalg.generic on
// buffers that tg-vectorize-elementwise can vectorise, how many lanes its
// innermost loop gets, so the decision shows in tg-opt output and is tested
// apart from the lowering that honours it.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_SELECTVECTORWIDTHSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

struct SelectVectorWidthsPass final
    : tg::cpu::impl::SelectVectorWidthsPassBase<SelectVectorWidthsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (lanes < 2 || lanes > 64 || !llvm::isPowerOf2_64(lanes)) {
      getOperation().emitError()
          << "tg-select-vector-widths: lanes must be a power of two from 2 "
             "to 64, got "
          << static_cast<int64_t>(lanes);
      return signalPassFailure();
    }
    Builder b(&getContext());
    getOperation()->walk([&](linalg::GenericOp op) {
      FailureOr<unsigned> bits = tg::cpu::vectorizableElementBits(op);
      if (failed(bits))
        return;
      // As many lanes of the widest element as fit the register (64-bit
      // elements get half the f32 lanes), but no more than the innermost
      // extent needs: a row of 4 is one unmasked vector of 4.
      int64_t width = std::max<int64_t>(2, lanes * 32 / *bits);
      int64_t extent = op.getStaticLoopRanges().back();
      width = std::min<int64_t>(width, llvm::PowerOf2Ceil(extent));
      op->setAttr(tg::cpu::kVectorWidthAttr, b.getI64IntegerAttr(width));
    });
  }
};

} // namespace
