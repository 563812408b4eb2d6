//===- ElementwiseToLinalg.cpp - elementwise tg ops to linalg ---*- C++ -*-===//
//
// Binary ops with broadcasting, cmp, select, the unary math ops, cast,
// constant, broadcast_to, causal_mask and one_hot: each becomes one parallel
// linalg.generic (or an arith.constant). The scalar formula of each op is
// one small function; the generic around it is shared.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cpu;

namespace {

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

//===----------------------------------------------------------------------===//
// Scalar formulas. Operands arrive in their compute type (f32 for bf16/f16).
//===----------------------------------------------------------------------===//

template <typename FOp, typename IOp>
Value arith2(OpBuilder &b, Location loc, ValueRange a) {
  if (isFloat(a[0]))
    return FOp::create(b, loc, a[0], a[1]);
  return IOp::create(b, loc, a[0], a[1]);
}

Value scalar(AddOp, OpBuilder &b, Location l, ValueRange a) {
  return arith2<arith::AddFOp, arith::AddIOp>(b, l, a);
}
Value scalar(SubOp, OpBuilder &b, Location l, ValueRange a) {
  return arith2<arith::SubFOp, arith::SubIOp>(b, l, a);
}
Value scalar(MulOp, OpBuilder &b, Location l, ValueRange a) {
  return arith2<arith::MulFOp, arith::MulIOp>(b, l, a);
}
Value scalar(DivOp, OpBuilder &b, Location l, ValueRange a) {
  if (isFloat(a[0]))
    return arith::DivFOp::create(b, l, a[0], a[1]);
  // x86 traps on x / 0 and INT_MIN / -1; both give 0 here instead of
  // killing the process (the reference has no integer answer for them).
  Type t = a[0].getType();
  Value zero = scalarConstant(b, l, t, 0), minusOne = scalarConstant(b, l, t, -1);
  Value min = arith::ConstantOp::create(
      b, l, b.getIntegerAttr(t, APInt::getSignedMinValue(t.getIntOrFloatBitWidth())));
  Value byZero =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a[1], zero);
  Value overflow = arith::AndIOp::create(
      b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a[0], min),
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a[1], minusOne));
  Value bad = arith::OrIOp::create(b, l, byZero, overflow);
  Value safe = arith::SelectOp::create(b, l, bad,
                                       scalarConstant(b, l, t, 1), a[1]);
  return arith::SelectOp::create(b, l, bad, zero,
                                 arith::DivSIOp::create(b, l, a[0], safe));
}
Value scalar(MaximumOp, OpBuilder &b, Location l, ValueRange a) {
  return arith2<arith::MaximumFOp, arith::MaxSIOp>(b, l, a);
}
Value scalar(MinimumOp, OpBuilder &b, Location l, ValueRange a) {
  return arith2<arith::MinimumFOp, arith::MinSIOp>(b, l, a);
}
Value scalar(PowOp, OpBuilder &b, Location l, ValueRange a) {
  return math::PowFOp::create(b, l, a[0], a[1]);
}
Value scalar(NegOp, OpBuilder &b, Location l, ValueRange a) {
  if (isFloat(a[0]))
    return arith::NegFOp::create(b, l, a[0]);
  return arith::SubIOp::create(b, l, scalarConstant(b, l, a[0].getType(), 0),
                               a[0]);
}
Value scalar(AbsOp, OpBuilder &b, Location l, ValueRange a) {
  if (isFloat(a[0]))
    return math::AbsFOp::create(b, l, a[0]);
  return math::AbsIOp::create(b, l, a[0]);
}
Value scalar(ReluOp, OpBuilder &b, Location l, ValueRange a) {
  Value zero = scalarConstant(b, l, a[0].getType(), 0);
  if (!isFloat(a[0]))
    return arith::MaxSIOp::create(b, l, a[0], zero);
  // x < 0 ? 0 : x keeps NaN, as PyTorch and the reference do.
  Value neg =
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, a[0], zero);
  return arith::SelectOp::create(b, l, neg, zero, a[0]);
}
Value scalar(RsqrtOp, OpBuilder &b, Location l, ValueRange a) {
  return arith::DivFOp::create(b, l, scalarConstant(b, l, a[0].getType(), 1),
                               math::SqrtOp::create(b, l, a[0]));
}
Value scalar(SigmoidOp, OpBuilder &b, Location l, ValueRange a) {
  Value one = scalarConstant(b, l, a[0].getType(), 1);
  Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, a[0]));
  return arith::DivFOp::create(b, l, one, arith::AddFOp::create(b, l, one, e));
}
Value scalar(SelectOp, OpBuilder &b, Location l, ValueRange a) {
  return arith::SelectOp::create(b, l, a[0], a[1], a[2]);
}
Value scalar(BroadcastToOp, OpBuilder &, Location, ValueRange a) {
  return a[0];
}
Value scalar(CastOp, OpBuilder &, Location, ValueRange a) { return a[0]; }

/// Unary math ops map one to one onto the math dialect.
template <typename MathOp>
Value mathUnary(OpBuilder &b, Location l, ValueRange a) {
  return MathOp::create(b, l, a[0]);
}
Value scalar(ExpOp, OpBuilder &b, Location l, ValueRange a) {
  return mathUnary<math::ExpOp>(b, l, a);
}
Value scalar(LogOp, OpBuilder &b, Location l, ValueRange a) {
  return mathUnary<math::LogOp>(b, l, a);
}
Value scalar(SqrtOp, OpBuilder &b, Location l, ValueRange a) {
  return mathUnary<math::SqrtOp>(b, l, a);
}
Value scalar(TanhOp, OpBuilder &b, Location l, ValueRange a) {
  return mathUnary<math::TanhOp>(b, l, a);
}
Value scalar(ErfOp, OpBuilder &b, Location l, ValueRange a) {
  return mathUnary<math::ErfOp>(b, l, a);
}
Value scalar(CosOp, OpBuilder &b, Location l, ValueRange a) {
  return mathUnary<math::CosOp>(b, l, a);
}
Value scalar(SinOp, OpBuilder &b, Location l, ValueRange a) {
  return mathUnary<math::SinOp>(b, l, a);
}

Value scalar(CmpOp op, OpBuilder &b, Location l, ValueRange a) {
  if (isFloat(a[0])) {
    // Ordered predicates, except ne: NaN != x is true, as in C and NumPy.
    arith::CmpFPredicate p;
    switch (op.getPredicate()) {
    case CmpPredicate::eq: p = arith::CmpFPredicate::OEQ; break;
    case CmpPredicate::ne: p = arith::CmpFPredicate::UNE; break;
    case CmpPredicate::lt: p = arith::CmpFPredicate::OLT; break;
    case CmpPredicate::le: p = arith::CmpFPredicate::OLE; break;
    case CmpPredicate::gt: p = arith::CmpFPredicate::OGT; break;
    case CmpPredicate::ge: p = arith::CmpFPredicate::OGE; break;
    }
    return arith::CmpFOp::create(b, l, p, a[0], a[1]);
  }
  arith::CmpIPredicate p;
  switch (op.getPredicate()) {
  case CmpPredicate::eq: p = arith::CmpIPredicate::eq; break;
  case CmpPredicate::ne: p = arith::CmpIPredicate::ne; break;
  case CmpPredicate::lt: p = arith::CmpIPredicate::slt; break;
  case CmpPredicate::le: p = arith::CmpIPredicate::sle; break;
  case CmpPredicate::gt: p = arith::CmpIPredicate::sgt; break;
  case CmpPredicate::ge: p = arith::CmpIPredicate::sge; break;
  }
  return arith::CmpIOp::create(b, l, p, a[0], a[1]);
}

/// result[..., i, j] = j > i ? value : input[..., i, j].
Value scalar(CausalMaskOp op, OpBuilder &b, Location l, ValueRange a) {
  int64_t rank = cast<RankedTensorType>(op.getType()).getRank();
  Value i = linalg::IndexOp::create(b, l, rank - 2);
  Value j = linalg::IndexOp::create(b, l, rank - 1);
  Value above = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt, j, i);
  Value fill =
      scalarConstant(b, l, a[0].getType(), op.getValue().convertToDouble());
  return arith::SelectOp::create(b, l, above, fill, a[0]);
}

/// Any op whose result is the scalar formula above applied elementwise to
/// its broadcast operands.
template <typename OpTy>
struct ElementwiseLowering final : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Value r = buildElementwise(
        rw, op.getLoc(), type, adaptor.getOperands(),
        [&](OpBuilder &b, Location l, ValueRange a) {
          return scalar(op, b, l, a);
        });
    rw.replaceOp(op, r);
    return success();
  }
};

struct ConstantLowering final : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rw) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value || value.getType() != op.getType())
      return rw.notifyMatchFailure(op, "constant value is not a typed "
                                       "attribute of the result type");
    // A splat (zeros for biases and optimizer state, above all) is a fill,
    // never a constant: a constant becomes a global in the artifact as
    // large as the tensor (GPT-2's embedding gradient: 150 MB of zeros).
    auto splat = dyn_cast<SplatElementsAttr>(value);
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (splat && type && type.getNumElements() > 1) {
      Value scalar = arith::ConstantOp::create(
          rw, op.getLoc(), splat.getSplatValue<TypedAttr>());
      Value init = emptyTensor(rw, op.getLoc(), type.getShape(),
                               type.getElementType());
      rw.replaceOp(op, linalg::FillOp::create(rw, op.getLoc(),
                                              ValueRange{scalar},
                                              ValueRange{init})
                           .getResult(0));
      return success();
    }
    rw.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

/// result[i..., c] = indices[i...] == c ? 1 : 0.
struct OneHotLowering final : OpConversionPattern<OneHotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OneHotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    AffineMap map = AffineMap::getMultiDimIdentityMap(rank, rw.getContext())
                        .dropResult(rank - 1);
    Value r = buildParallel(
        rw, op.getLoc(), type, adaptor.getIndices(), map,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value c = arith::IndexCastOp::create(
              b, l, a[0].getType(), linalg::IndexOp::create(b, l, rank - 1));
          Value hit =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a[0], c);
          Type t = computeType(type.getElementType());
          return arith::SelectOp::create(b, l, hit, scalarConstant(b, l, t, 1),
                                         scalarConstant(b, l, t, 0));
        });
    rw.replaceOp(op, r);
    return success();
  }
};

} // namespace

void mlir::tg::cpu::populateElementwiseToLinalgPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseLowering<AddOp>, ElementwiseLowering<SubOp>,
               ElementwiseLowering<MulOp>, ElementwiseLowering<DivOp>,
               ElementwiseLowering<PowOp>, ElementwiseLowering<MaximumOp>,
               ElementwiseLowering<MinimumOp>, ElementwiseLowering<CmpOp>,
               ElementwiseLowering<SelectOp>, ElementwiseLowering<NegOp>,
               ElementwiseLowering<AbsOp>, ElementwiseLowering<ExpOp>,
               ElementwiseLowering<LogOp>, ElementwiseLowering<SqrtOp>,
               ElementwiseLowering<RsqrtOp>, ElementwiseLowering<TanhOp>,
               ElementwiseLowering<ErfOp>, ElementwiseLowering<CosOp>,
               ElementwiseLowering<SinOp>, ElementwiseLowering<SigmoidOp>,
               ElementwiseLowering<ReluOp>, ElementwiseLowering<CastOp>,
               ElementwiseLowering<BroadcastToOp>,
               ElementwiseLowering<CausalMaskOp>, ConstantLowering,
               OneHotLowering>(ctx);
}
