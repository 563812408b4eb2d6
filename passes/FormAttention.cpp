//===- FormAttention.cpp - recognise spelled-out attention ------*- C++ -*-===//
//
// tg-form-attention: softmax(mask(scale * q k^T)) @ v becomes tg.attention
// (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::tg {
#define GEN_PASS_DEF_FORMATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// The value of a rank-0 or splat float constant, if `v` is one.
std::optional<double> constantScalar(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto splat = c ? dyn_cast<SplatElementsAttr>(c.getValue()) : nullptr;
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>().convertToDouble();
}

/// If `v` is `x * c`, `c * x` or `x / c` with a constant scalar `c` that
/// does not broadcast `x`, returns x and the factor.
std::optional<std::pair<Value, double>> scaled(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || !isa<MulOp, DivOp>(op))
    return std::nullopt;
  Value l = op->getOperand(0), r = op->getOperand(1);
  if (isa<MulOp>(op))
    if (std::optional<double> c = constantScalar(l);
        c && r.getType() == v.getType())
      return std::make_pair(r, *c);
  std::optional<double> c = constantScalar(r);
  if (!c || l.getType() != v.getType())
    return std::nullopt;
  double factor = isa<MulOp>(op) ? *c : 1.0 / *c;
  if (!std::isfinite(factor) || factor == 0)
    return std::nullopt;
  return std::make_pair(l, factor);
}

bool isRank4(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank() == 4;
}

struct FormAttention final : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rw) const override {
    if (pv.getTransposeLhs() || pv.getTransposeRhs())
      return failure();
    auto softmax = pv.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax || !softmax->hasOneUse())
      return failure();
    int64_t axis = softmax.getAxisAttr().getInt();
    if (axis != -1 && axis != 3)
      return failure();
    // Peel the mask and the scaling, in either order, down to q k^T.
    Value x = softmax.getInput();
    bool causal = false, maskedBeforeScale = false;
    double scale = 1.0;
    bool seenScale = false;
    for (int i = 0; i < 2; ++i) {
      if (!x.hasOneUse())
        return failure();
      if (auto mask = x.getDefiningOp<CausalMaskOp>(); mask && !causal) {
        double fill = mask.getValue().convertToDouble();
        if (!(std::isinf(fill) && fill < 0))
          return failure();
        causal = true;
        maskedBeforeScale = !seenScale;
        x = mask.getInput();
      } else if (auto s = scaled(x); s && !seenScale) {
        seenScale = true;
        scale = s->second;
        x = s->first;
      }
    }
    // A negative factor after the mask would turn its -inf into +inf.
    if (!x.hasOneUse() || (causal && maskedBeforeScale && seenScale &&
                           scale < 0))
      return failure();
    auto qk = x.getDefiningOp<MatmulOp>();
    if (!qk || qk.getTransposeLhs() || !qk.getTransposeRhs())
      return failure();
    Value q = qk.getLhs(), k = qk.getRhs(), v = pv.getRhs();
    if (!isRank4(q) || !isRank4(k) || !isRank4(v))
      return failure();
    // The op's own inference rejects broadcast batch dimensions and mixed
    // element types; those stay as they are.
    SmallVector<Type> types;
    if (failed(AttentionOp::inferReturnTypes(
            rw.getContext(), std::nullopt,
            AttentionOp::Adaptor(ValueRange{q, k, v},
                                 rw.getDictionaryAttr({})),
            types)) ||
        types[0] != pv.getType())
      return failure();
    auto attention = AttentionOp::create(
        rw, pv.getLoc(), q, k, v, causal ? rw.getUnitAttr() : UnitAttr(),
        rw.getF64FloatAttr(scale));
    rw.replaceOp(pv, attention.getOutput());
    return success();
  }
};

struct FormAttentionPass final
    : tg::impl::FormAttentionPassBase<FormAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FormAttention>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
