//===- TGGradElementwise.cpp - VJPs of elementwise tg ops -------*- C++ -*-===//
//
// The derivative of every elementwise op (binary with broadcasting, unary,
// select, cast), each stated as tg ops by the op's own buildVJP. Operands
// that were broadcast get their cotangent summed back to their shape.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGBuilder.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;

using TB = TensorBuilder;

/// Appends the cotangents `da`, `db` of a binary op, summed back to the
/// operands' shapes.
static LogicalResult binaryGrads(TB &t, Value lhs, Value rhs, Value da,
                                 Value db, SmallVectorImpl<Value> &out) {
  out.push_back(da ? t.reduceToShape(da, TB::typeOf(lhs)) : Value());
  out.push_back(db ? t.reduceToShape(db, TB::typeOf(rhs)) : Value());
  return success();
}

LogicalResult AddOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  return binaryGrads(t, getLhs(), getRhs(), g[0], g[0], out);
}

LogicalResult SubOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  return binaryGrads(t, getLhs(), getRhs(), g[0], t.neg(g[0]), out);
}

LogicalResult MulOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  return binaryGrads(t, getLhs(), getRhs(), t.mul(g[0], getRhs()),
                     t.mul(g[0], getLhs()), out);
}

LogicalResult DivOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  // d(a/b) = g/b, -g*a/b^2 = -g*(a/b)/b.
  TB t{b, getLoc()};
  Value da = t.div(g[0], getRhs());
  Value db = t.neg(t.mul(da, getResult()));
  return binaryGrads(t, getLhs(), getRhs(), da, db, out);
}

LogicalResult PowOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  // d(a^c) = g*c*a^(c-1), g*a^c*log(a), with PyTorch's guards at the zero
  // base, where the formulas give 0*inf: the base's cotangent is 0 wherever
  // c == 0 (a^c is constant in a there, whatever g is), and the exponent's
  // is g*0 wherever a == 0 and c >= 0 (0^c does not move with c there).
  TB t{b, getLoc()};
  Value a = getLhs(), c = getRhs();
  Type e = TB::elt(c);
  Value zero = t.scalar(e, 0.0);
  Value cm1 = t.sub(c, t.scalar(e, 1.0));
  Value da = t.select(t.cmp(CmpPredicate::eq, c, zero), zero,
                      t.mul(g[0], t.mul(c, PowOp::create(b, getLoc(), a, cm1))));
  Value ylog = t.mul(getResult(), LogOp::create(b, getLoc(), a));
  Value flat = t.select(t.cmp(CmpPredicate::ge, c, zero), zero, ylog);
  Value dc = t.mul(g[0], t.select(t.cmp(CmpPredicate::eq, a, zero), flat, ylog));
  return binaryGrads(t, a, c, da, dc, out);
}

/// maximum/minimum, as PyTorch: the operand that loses gets nothing, a tie
/// splits the cotangent in halves, and where either operand is NaN (no
/// order) both get the whole cotangent. `lhsLoses` is lt for maximum and gt
/// for minimum; the right-hand side loses under the converse.
static LogicalResult extremumGrads(TB &t, CmpPredicate lhsLoses,
                                   CmpPredicate rhsLoses, Value lhs, Value rhs,
                                   Value g, SmallVectorImpl<Value> &out) {
  Type e = TB::elt(g);
  Value zero = t.scalar(e, 0.0);
  Value shared = t.select(t.cmp(CmpPredicate::eq, lhs, rhs),
                          t.mul(g, t.scalar(e, 0.5)), g);
  return binaryGrads(t, lhs, rhs,
                     t.select(t.cmp(lhsLoses, lhs, rhs), zero, shared),
                     t.select(t.cmp(rhsLoses, lhs, rhs), zero, shared), out);
}

LogicalResult MaximumOp::buildVJP(OpBuilder &b, ValueRange g,
                                  SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  return extremumGrads(t, CmpPredicate::lt, CmpPredicate::gt, getLhs(),
                       getRhs(), g[0], out);
}

LogicalResult MinimumOp::buildVJP(OpBuilder &b, ValueRange g,
                                  SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  return extremumGrads(t, CmpPredicate::gt, CmpPredicate::lt, getLhs(),
                       getRhs(), g[0], out);
}

LogicalResult SelectOp::buildVJP(OpBuilder &b, ValueRange g,
                                 SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  Value zero = t.scalar(TB::elt(g[0]), 0.0);
  out.push_back(Value());
  out.push_back(t.reduceToShape(t.select(getCond(), g[0], zero),
                                TB::typeOf(getTrueValue())));
  out.push_back(t.reduceToShape(t.select(getCond(), zero, g[0]),
                                TB::typeOf(getFalseValue())));
  return success();
}

LogicalResult NegOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  out.push_back(TB{b, getLoc()}.neg(g[0]));
  return success();
}

LogicalResult AbsOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  // g * sgn(x), as PyTorch: sgn is 0 at +-0 and at NaN (neither > 0 nor
  // < 0), so the subgradient at the kink is 0.
  TB t{b, getLoc()};
  Type e = TB::elt(g[0]);
  Value x = getInput(), zero = t.scalar(e, 0.0);
  Value sgn = t.select(t.cmp(CmpPredicate::gt, x, zero), t.scalar(e, 1.0),
                       t.select(t.cmp(CmpPredicate::lt, x, zero),
                                t.scalar(e, -1.0), zero));
  out.push_back(t.mul(g[0], sgn));
  return success();
}

LogicalResult ExpOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  out.push_back(TB{b, getLoc()}.mul(g[0], getResult()));
  return success();
}

LogicalResult LogOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  out.push_back(TB{b, getLoc()}.div(g[0], getInput()));
  return success();
}

LogicalResult SqrtOp::buildVJP(OpBuilder &b, ValueRange g,
                               SmallVectorImpl<Value> &out) {
  // d sqrt(x) = g / (2 sqrt(x)).
  TB t{b, getLoc()};
  out.push_back(t.div(t.mul(g[0], t.scalar(TB::elt(g[0]), 0.5)), getResult()));
  return success();
}

LogicalResult RsqrtOp::buildVJP(OpBuilder &b, ValueRange g,
                                SmallVectorImpl<Value> &out) {
  // d x^-1/2 = -1/2 x^-3/2 = -0.5 * y^3, from y alone (as PyTorch): -0.5*y/x
  // would give the wrong sign at x = -0, where y = -inf.
  TB t{b, getLoc()};
  Value y = getResult();
  Value y3 = t.mul(t.mul(y, y), y);
  out.push_back(t.mul(t.mul(g[0], t.scalar(TB::elt(g[0]), -0.5)), y3));
  return success();
}

LogicalResult TanhOp::buildVJP(OpBuilder &b, ValueRange g,
                               SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  Value y = getResult();
  out.push_back(
      t.mul(g[0], t.sub(t.scalar(TB::elt(y), 1.0), t.mul(y, y))));
  return success();
}

LogicalResult ErfOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  // d erf(x) = 2/sqrt(pi) exp(-x^2).
  TB t{b, getLoc()};
  Value x = getInput();
  Value e = t.exp(t.neg(t.mul(x, x)));
  out.push_back(t.mul(g[0], t.mul(t.scalar(TB::elt(x), M_2_SQRTPI), e)));
  return success();
}

LogicalResult CosOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  out.push_back(t.neg(t.mul(g[0], SinOp::create(b, getLoc(), getInput()))));
  return success();
}

LogicalResult SinOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  out.push_back(t.mul(g[0], CosOp::create(b, getLoc(), getInput())));
  return success();
}

LogicalResult SigmoidOp::buildVJP(OpBuilder &b, ValueRange g,
                                  SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  Value y = getResult();
  out.push_back(
      t.mul(g[0], t.mul(y, t.sub(t.scalar(TB::elt(y), 1.0), y))));
  return success();
}

LogicalResult ReluOp::buildVJP(OpBuilder &b, ValueRange g,
                               SmallVectorImpl<Value> &out) {
  // Zero where y = relu(x) <= 0 (exactly where x <= 0; relu keeps NaN and
  // -0), the cotangent elsewhere: at NaN (unordered) the cotangent passes,
  // as in PyTorch's threshold_backward, which also reads the output. The
  // output is what the next layer saves anyway (its weight gradient, a
  // pooling's backward); reading the input kept a mask of it alive from
  // the forward pass (0.5 MiB of LeNet's peak).
  TB t{b, getLoc()};
  Value zero = t.scalar(TB::elt(g[0]), 0.0);
  out.push_back(
      t.select(t.cmp(CmpPredicate::le, getResult(), zero), zero, g[0]));
  return success();
}

LogicalResult SiluOp::buildVJP(OpBuilder &b, ValueRange g,
                               SmallVectorImpl<Value> &out) {
  // d x s(x) = s + x s (1 - s).
  TB t{b, getLoc()};
  Value x = getInput();
  Value one = t.scalar(TB::elt(x), 1.0);
  Value d;
  {
    ReplayScope replay(b); // from x alone: the forward's sigmoid is not kept
    Value s = SigmoidOp::create(b, getLoc(), x);
    d = t.add(s, t.mul(t.mul(x, s), t.sub(one, s)));
  }
  out.push_back(t.mul(g[0], d));
  return success();
}

LogicalResult GeluOp::buildVJP(OpBuilder &b, ValueRange g,
                               SmallVectorImpl<Value> &out) {
  // The derivative is replayed from x alone (ReplayScope): the forward
  // decomposition's x^2, tanh and halves (each x-sized) are not kept for it.
  // Its temporaries are x-sized too, and the backward pass's worst moment
  // is often here, so the formula is ordered to need few at once.
  TB t{b, getLoc()};
  Value x = getInput();
  Type e = TB::elt(x);
  Value half = t.scalar(e, 0.5), one = t.scalar(e, 1.0);
  if (getApproximate() == GeluApproximation::tanh) {
    // y = x/2 (1 + tanh u), u = k (x + c x^3):
    // dy = (1 + tanh u)/2 + x/2 (1 - tanh^2 u) k (1 + 3 c x^2)
    //    = A (1/2 + p (2 - A)), A = 1 + tanh u, p = x (k/2 + 3/2 c k x^2).
    // Each step overwrites a dying operand except the first of A, of 2 - A
    // and of p, and g is consumed early: four x-sized buffers with x.
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Value a, notA, p;
    {
      ReplayScope replay(b);
      Value u = t.mul(t.mul(t.add(t.mul(t.mul(x, x), t.scalar(e, c)), one), x),
                      t.scalar(e, k));
      a = t.add(TanhOp::create(b, getLoc(), u), one);
      notA = t.sub(t.scalar(e, 2.0), a);
    }
    Value ga = t.mul(g[0], a);
    Value rest;
    {
      ReplayScope replay(b);
      p = t.mul(t.add(t.mul(t.mul(x, x), t.scalar(e, 1.5 * c * k)),
                      t.scalar(e, 0.5 * k)),
                x);
      rest = t.add(t.mul(notA, p), half);
    }
    out.push_back(t.mul(ga, rest));
    return success();
  }
  // y = x Phi(x): dy = Phi(x) + x phi(x).
  Value d;
  {
    ReplayScope replay(b);
    Value cdf = t.mul(
        half, t.add(one, ErfOp::create(b, getLoc(),
                                       t.mul(x, t.scalar(e, M_SQRT1_2)))));
    Value pdf = t.mul(t.scalar(e, 0.5 * M_2_SQRTPI * M_SQRT1_2),
                      t.exp(t.mul(t.scalar(e, -0.5), t.mul(x, x))));
    d = t.add(cdf, t.mul(x, pdf));
  }
  out.push_back(t.mul(g[0], d));
  return success();
}

LogicalResult CastOp::buildVJP(OpBuilder &b, ValueRange g,
                               SmallVectorImpl<Value> &out) {
  // Only float-to-float casts carry a gradient.
  auto in = TB::typeOf(getInput());
  if (!isa<FloatType>(in.getElementType()) ||
      !isa<FloatType>(TB::elt(getResult()))) {
    out.push_back(Value());
    return success();
  }
  out.push_back(CastOp::create(b, getLoc(), in, g[0]));
  return success();
}
