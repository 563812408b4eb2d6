//===- ConvertTGToLinalg.cpp - tg to linalg on tensors ----------*- C++ -*-===//
//
// The tg-convert-to-linalg pass: decomposes the composite ops, then applies
// the per-family conversion patterns with every tg op illegal, so that an op
// left over is an error at its location rather than silently kept.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "dialects/TGDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_CONVERTTGTOLINALGPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;
using namespace mlir::tg;

namespace {

struct ConvertTGToLinalgPass final
    : cpu::impl::ConvertTGToLinalgPassBase<ConvertTGToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Operation *root = getOperation();

    RewritePatternSet decompose(ctx);
    populateDecomposeCompositesPatterns(decompose);
    if (failed(applyPatternsGreedily(root, std::move(decompose))))
      return signalPassFailure();

    ConversionTarget target(*ctx);
    target.addIllegalDialect<TGDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(ctx);
    cpu::populateConvertTGToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(root, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::tg::cpu::populateConvertTGToLinalgPatterns(
    RewritePatternSet &patterns) {
  populateElementwiseToLinalgPatterns(patterns);
  populateReductionsToLinalgPatterns(patterns);
  populateMovementToLinalgPatterns(patterns);
  populateRandomToLinalgPatterns(patterns);
  populateConvPoolToLinalgPatterns(patterns);
}
