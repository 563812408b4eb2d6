//===- ApproximateMath.cpp - inline polynomials for f32 math ----*- C++ -*-===//
//
// The tg-approximate-math pass (see Passes.td): f32 tanh, exp, log and erf
// become upstream's polynomial approximations, arith and math ops that
// vectorise, instead of libm calls that LLVM issues one lane at a time.
// The default list holds only the functions whose approximation stays
// within a few ulp of the exact result over a dense sweep of f32 inputs
// (test/cpu/MathApproxTest.cpp prints and bounds the error).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSet.h"

#include <cfloat>
#include <cmath>

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// The functions approximated by default, by mnemonic.
constexpr llvm::StringLiteral kDefaultFunctions[] = {"tanh", "exp", "log",
                                                     "erf"};

/// `value` as a constant of `type` (f32 or a vector of f32).
Value constantLike(OpBuilder &b, Location loc, Type type, double value) {
  auto attr = b.getF32FloatAttr(float(value));
  if (auto vec = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(vec, {Attribute(attr)}));
  return arith::ConstantOp::create(b, loc, attr);
}

bool isF32(Value v) { return getElementTypeOrSelf(v.getType()).isF32(); }

/// Upstream's log raises subnormal arguments to the smallest normal float
/// (log(1e-40) would be -87.3, not -92.1): they are scaled by 2^24 first
/// and 24 log(2) subtracted after.
void scaleSubnormalLog(math::LogOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Type type = op.getType();
  Value x = op.getOperand();
  Value small = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                      constantLike(b, loc, type, FLT_MIN));
  Value scaled = arith::MulFOp::create(b, loc, x,
                                       constantLike(b, loc, type, 0x1p24));
  op.getOperandMutable().assign(
      arith::SelectOp::create(b, loc, small, scaled, x));
  b.setInsertionPointAfter(op);
  Value shifted = arith::SubFOp::create(
      b, loc, op.getResult(), constantLike(b, loc, type, 24 * M_LN2));
  auto select = arith::SelectOp::create(b, loc, small, shifted, op.getResult());
  op.getResult().replaceAllUsesExcept(
      select, SmallPtrSet<Operation *, 2>{select, shifted.getDefiningOp()});
}

struct ApproximateMathPass final
    : tg::cpu::impl::ApproximateMathPassBase<ApproximateMathPass> {
  using Base::Base;

  void runOnOperation() override {
    // Upstream names its patterns by operation name (`math.tanh`).
    llvm::StringSet<> names;
    auto add = [&](StringRef mnemonic) {
      names.insert(
          (Twine(math::MathDialect::getDialectNamespace()) + "." + mnemonic)
              .str());
    };
    if (functions.empty())
      llvm::for_each(kDefaultFunctions, add);
    for (const std::string &f : functions) {
      if (!RegisteredOperationName::lookup("math." + f, &getContext())) {
        getOperation()->emitError()
            << "tg-approximate-math: 'math." << f << "' is not a math op";
        return signalPassFailure();
      }
      add(f);
    }
    // The edge case upstream's patterns get wrong, fixed around the ops
    // they will replace (test/cpu/MathApproxTest.cpp finds it).
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (names.contains(op->getName().getStringRef()) &&
          op->getNumOperands() == 1 && isF32(op->getOperand(0)))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      if (auto log = dyn_cast<math::LogOp>(op))
        scaleSubnormalLog(log);
    RewritePatternSet patterns(&getContext());
    // The patterns match f32 (scalars and vectors) only; f64 keeps libm.
    populateMathPolynomialApproximationPatterns(
        patterns, [&](StringRef name) { return names.contains(name); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
