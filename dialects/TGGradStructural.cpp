//===- TGGradStructural.cpp - VJPs of non-elementwise tg ops ----*- C++ -*-===//
//
// Derivatives of contractions, reductions, normalisations, losses, data
// movement, masking, convolution and pooling, each stated as tg ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGBuilder.h"

using namespace mlir;
using namespace mlir::tg;

using TB = TensorBuilder;

LogicalResult MatmulOp::buildVJP(OpBuilder &b, ValueRange g,
                                 SmallVectorImpl<Value> &out) {
  // With A' = op(A), B' = op(B): dA' = g B'^T and dB' = A'^T g; a transposed
  // operand takes the transpose of its cotangent. Batch dimensions that were
  // broadcast are summed back.
  TB t{b, getLoc()};
  Value a = getLhs(), c = getRhs(), gr = g[0];
  bool ta = getTransposeLhs(), tc = getTransposeRhs();
  Value da = ta ? MatmulOp::create(b, getLoc(), c, gr, tc, true)
                : MatmulOp::create(b, getLoc(), gr, c, false, !tc);
  Value dc;
  if (TB::typeOf(c).getRank() == 2 && TB::typeOf(a).getRank() > 2 && !ta) {
    // A weight shared by every batch row (x [.., M, K] @ w [K, N]): the
    // batch is folded into the rows, dw = x'^T g' with x' [B M, K] and
    // g' [B M, N], instead of one [K, N] product per batch element summed
    // afterwards. That [B, K, N] product was the backward pass's largest
    // buffer (8 MiB for a 1 MiB gradient in the 2-layer GPT, docs/memory.md).
    auto rows = [&](Value v) {
      auto type = TB::typeOf(v);
      int64_t n = type.getNumElements() / type.getShape().back();
      return t.reshape(v, RankedTensorType::get({n, type.getShape().back()},
                                                type.getElementType()));
    };
    Value a2 = rows(a), g2 = rows(gr);
    dc = tc ? MatmulOp::create(b, getLoc(), g2, a2, true, false)
            : MatmulOp::create(b, getLoc(), a2, g2, true, false);
  } else {
    dc = tc ? MatmulOp::create(b, getLoc(), gr, a, true, ta)
            : MatmulOp::create(b, getLoc(), a, gr, !ta, false);
  }
  out.push_back(t.reduceToShape(da, TB::typeOf(a)));
  out.push_back(t.reduceToShape(dc, TB::typeOf(c)));
  return success();
}

LogicalResult SumOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  out.push_back(t.expandReduced(g[0], getAxes(), TB::typeOf(getInput())));
  return success();
}

LogicalResult MeanOp::buildVJP(OpBuilder &b, ValueRange g,
                               SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  auto in = TB::typeOf(getInput());
  int64_t n = 1;
  for (int64_t a : getAxes())
    n *= in.getDimSize(a);
  Value scaled = t.div(g[0], t.scalar(in.getElementType(), double(n)));
  out.push_back(t.expandReduced(scaled, getAxes(), in));
  return success();
}

LogicalResult MaxOp::buildVJP(OpBuilder &b, ValueRange g,
                              SmallVectorImpl<Value> &out) {
  // The cotangent is shared evenly by the positions that hold the maximum.
  TB t{b, getLoc()};
  auto in = TB::typeOf(getInput());
  Value y = t.expandReduced(getResult(), getAxes(), in);
  Value hit = t.cmp(CmpPredicate::eq, getInput(), y);
  Value zero = t.scalar(in.getElementType(), 0.0);
  Value ones = t.select(hit, t.scalar(in.getElementType(), 1.0), zero);
  Value count = t.expandReduced(t.sum(ones, getAxes(), getKeepdims()),
                                getAxes(), in);
  Value spread = t.expandReduced(g[0], getAxes(), in);
  out.push_back(t.div(t.mul(spread, ones), count));
  return success();
}

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ValueRange g,
                                  SmallVectorImpl<Value> &out) {
  // dx = y (g - sum(g y)).
  TB t{b, getLoc()};
  Value y = getResult();
  int64_t axis = TB::normAxis(y, getAxis());
  Value dot = t.sum(t.mul(g[0], y), axis, true);
  out.push_back(t.mul(y, t.sub(g[0], dot)));
  return success();
}

LogicalResult LogSoftmaxOp::buildVJP(OpBuilder &b, ValueRange g,
                                     SmallVectorImpl<Value> &out) {
  // dx = g - exp(y) sum(g).
  TB t{b, getLoc()};
  Value y = getResult();
  int64_t axis = TB::normAxis(y, getAxis());
  out.push_back(t.sub(g[0], t.mul(t.exp(y), t.sum(g[0], axis, true))));
  return success();
}

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ValueRange g,
                                       SmallVectorImpl<Value> &out) {
  // d logits = g (softmax(x) - onehot(y)) [y != ignore] [y in range] /
  // max(count, 1). A label outside [0, C) that is not ignored counts in the
  // mean with the constant loss 0, so its row gets no gradient.
  TB t{b, getLoc()};
  Value logits = getLogits(), labels = getLabels();
  auto type = TB::typeOf(logits);
  Type e = type.getElementType();
  int64_t last = type.getRank() - 1;
  Value zero = t.scalar(e, 0.0), one = t.scalar(e, 1.0);
  Value ignore = t.integer(TB::elt(labels), getIgnoreIndexAttr().getInt());
  Value diff, rows, count;
  {
    // Replayed from the logits and labels: the forward's exp and one-hot
    // (logits-sized) are not kept for the backward pass.
    ReplayScope replay(b);
    Value p = SoftmaxOp::create(b, getLoc(), logits, last);
    Value onehot = OneHotOp::create(b, getLoc(), type, labels);
    Value valid = t.cmp(CmpPredicate::ne, labels, ignore);
    Value counted = t.select(valid, one, zero);
    count = MaximumOp::create(
        b, getLoc(), t.sum(counted, TB::allAxes(counted), false), one);
    // In range (0 <= y < C, where the one-hot row is not all zeros), from
    // the labels alone: the row's scale is then known before the pass over
    // the logits row, which the loss's row reduction and this gradient's
    // share in one kernel (tg-fuse's sibling merge, docs/fusion.md).
    Type labelType = TB::elt(labels);
    Value belowEnd = t.cmp(CmpPredicate::lt, labels,
                           t.integer(labelType, type.getShape()[last]));
    Value notNegative =
        t.cmp(CmpPredicate::ge, labels, t.integer(labelType, 0));
    Value weight = t.select(notNegative, t.select(belowEnd, counted, zero),
                            zero);
    auto keptType = RankedTensorType::get(
        llvm::to_vector(llvm::concat<const int64_t>(
            TB::typeOf(weight).getShape(), ArrayRef<int64_t>{1})),
        e);
    rows = t.reshape(weight, keptType);
    diff = t.sub(p, onehot);
  }
  Value rowWeight = t.mul(rows, t.div(g[0], count));
  out.push_back(t.mul(diff, rowWeight));
  out.push_back(Value());
  return success();
}

LogicalResult MseLossOp::buildVJP(OpBuilder &b, ValueRange g,
                                  SmallVectorImpl<Value> &out) {
  TB t{b, getLoc()};
  auto type = TB::typeOf(getInput());
  double n = double(type.getNumElements());
  Value d;
  {
    ReplayScope replay(b); // from the input and target, not kept apart
    d = t.sub(getInput(), getTarget());
  }
  Value dx = t.mul(d, t.mul(g[0], t.scalar(type.getElementType(), 2.0 / n)));
  out.push_back(dx);
  out.push_back(t.neg(dx));
  return success();
}

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ValueRange g,
                                    SmallVectorImpl<Value> &out) {
  // xh = (x - mu) r, r = rsqrt(var + eps), y = xh s + c:
  // dxh = g s; dx = r (dxh - mean(dxh) - xh mean(dxh xh)).
  TB t{b, getLoc()};
  Value x = getInput();
  auto type = TB::typeOf(x);
  int64_t last = type.getRank() - 1;
  Value centred = t.sub(x, t.mean(x, last, true));
  Value var = t.mean(t.mul(centred, centred), last, true);
  Value r = RsqrtOp::create(
      b, getLoc(), t.add(var, t.scalar(type.getElementType(),
                                       getEps().convertToDouble())));
  Value xh = t.mul(centred, r);
  Value dxh = getScale() ? t.mul(g[0], getScale()) : g[0];
  // g xh is shared by the scale's gradient and mean(dxh xh) = mean(g xh s):
  // one x-sized product that dies at its two reductions. Computed apart, the
  // scale gradient's own product was the last reader of g and xh, and a
  // scheduler that defers ops adding bytes kept both alive until the end of
  // the backward pass (two buffers per layer norm in the 2-layer GPT).
  Value gxh = t.mul(g[0], xh);
  Value dxhXh = getScale() ? t.mul(gxh, getScale()) : gxh;
  Value inner = t.sub(t.sub(dxh, t.mean(dxh, last, true)),
                      t.mul(xh, t.mean(dxhXh, last, true)));
  out.push_back(t.mul(r, inner));
  if (getScale())
    out.push_back(t.reduceToShape(gxh, TB::typeOf(getScale())));
  if (getBias())
    out.push_back(t.reduceToShape(g[0], TB::typeOf(getBias())));
  return success();
}

LogicalResult RmsNormOp::buildVJP(OpBuilder &b, ValueRange g,
                                  SmallVectorImpl<Value> &out) {
  // n = x r, r = rsqrt(mean(x^2) + eps), y = n s:
  // dn = g s; dx = r (dn - n mean(dn n)).
  TB t{b, getLoc()};
  Value x = getInput();
  auto type = TB::typeOf(x);
  int64_t last = type.getRank() - 1;
  Value ms = t.mean(t.mul(x, x), last, true);
  Value r = RsqrtOp::create(
      b, getLoc(),
      t.add(ms, t.scalar(type.getElementType(), getEps().convertToDouble())));
  Value n = t.mul(x, r);
  Value dn = getScale() ? t.mul(g[0], getScale()) : g[0];
  out.push_back(t.mul(r, t.sub(dn, t.mul(n, t.mean(t.mul(dn, n), last, true)))));
  if (getScale())
    out.push_back(t.reduceToShape(t.mul(g[0], n), TB::typeOf(getScale())));
  return success();
}

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ValueRange g,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(EmbeddingGradOp::create(b, getLoc(), getTable().getType(),
                                        g[0], getIndices()));
  out.push_back(Value());
  return success();
}

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ValueRange g,
                                  SmallVectorImpl<Value> &out) {
  out.push_back(TB{b, getLoc()}.reshape(g[0], TB::typeOf(getInput())));
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ValueRange g,
                                    SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  out.push_back(TransposeOp::create(b, getLoc(), g[0], inverse));
  return success();
}

LogicalResult BroadcastToOp::buildVJP(OpBuilder &b, ValueRange g,
                                      SmallVectorImpl<Value> &out) {
  out.push_back(TB{b, getLoc()}.reduceToShape(g[0], TB::typeOf(getInput())));
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, ValueRange g,
                                SmallVectorImpl<Value> &out) {
  // Pads the cotangent back with zeros, one dimension at a time, by
  // concatenation; strided slices would need a scatter and are refused.
  if (llvm::any_of(getStep(), [](int64_t s) { return s != 1; }))
    return emitOpError("cannot differentiate a strided slice yet (step != 1)");
  TB t{b, getLoc()};
  auto in = TB::typeOf(getInput());
  Value grad = g[0];
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t before = getStart()[d], after = in.getDimSize(d) - getLimit()[d];
    if (before == 0 && after == 0)
      continue;
    SmallVector<Value> parts;
    auto zeros = [&](int64_t n) {
      SmallVector<int64_t> shape(TB::typeOf(grad).getShape());
      shape[d] = n;
      return t.filled(RankedTensorType::get(shape, in.getElementType()), 0.0);
    };
    if (before)
      parts.push_back(zeros(before));
    parts.push_back(grad);
    if (after)
      parts.push_back(zeros(after));
    grad = ConcatOp::create(b, getLoc(), parts, d);
  }
  out.push_back(grad);
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ValueRange g,
                                 SmallVectorImpl<Value> &out) {
  int64_t axis = getAxis(), offset = 0;
  auto full = TB::typeOf(getResult());
  for (Value in : getInputs()) {
    int64_t size = TB::typeOf(in).getDimSize(axis);
    SmallVector<int64_t> start(full.getRank(), 0), limit(full.getShape()),
        step(full.getRank(), 1);
    start[axis] = offset;
    limit[axis] = offset + size;
    out.push_back(SliceOp::create(b, getLoc(), g[0], start, limit, step));
    offset += size;
  }
  return success();
}

LogicalResult CausalMaskOp::buildVJP(OpBuilder &b, ValueRange g,
                                     SmallVectorImpl<Value> &out) {
  // Masked positions were constants: their cotangent is zero.
  out.push_back(CausalMaskOp::create(b, getLoc(), g[0], b.getF64FloatAttr(0.0)));
  return success();
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ValueRange g,
                                   SmallVectorImpl<Value> &out) {
  // FlashAttention-2's backward from the saved output and log-sum-exp, so
  // that what the forward keeps for it is O(T) per row, not the T x T
  // probabilities. The log-sum-exp's cotangent (zero unless a model uses
  // it) enters the same formula, so the derivative is exact either way.
  auto grad = AttentionGradOp::create(
      b, getLoc(), g[0], g[1], getQuery(), getKey(), getValue(), getOutput(),
      getLse(), getCausalAttr(), getScaleAttr());
  out.append(grad->result_begin(), grad->result_end());
  return success();
}

LogicalResult DropoutOp::buildVJP(OpBuilder &b, ValueRange g,
                                  SmallVectorImpl<Value> &out) {
  // Dropout is linear in its input with a mask fixed by (seed, stream): the
  // same op applied to the cotangent is its transpose.
  out.push_back(DropoutOp::create(b, getLoc(), g[0], getSeed(), getPAttr(),
                                  getStreamAttr()));
  out.push_back(Value());
  return success();
}

LogicalResult Conv2dOp::buildVJP(OpBuilder &b, ValueRange g,
                                 SmallVectorImpl<Value> &out) {
  out.push_back(Conv2dGradInputOp::create(
      b, getLoc(), getInput().getType(), g[0], getWeight(), getStrideAttr(),
      getPaddingAttr(), getDilationAttr(), getGroupsAttr()));
  out.push_back(Conv2dGradWeightOp::create(
      b, getLoc(), getWeight().getType(), getInput(), g[0], getStrideAttr(),
      getPaddingAttr(), getDilationAttr(), getGroupsAttr()));
  return success();
}

LogicalResult MaxPool2dOp::buildVJP(OpBuilder &b, ValueRange g,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(MaxPool2dGradOp::create(b, getLoc(), getInput().getType(),
                                        g[0], getInput(),
                                        getKernelAttr(), getStrideAttr(),
                                        getPaddingAttr()));
  return success();
}

LogicalResult AvgPool2dOp::buildVJP(OpBuilder &b, ValueRange g,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(AvgPool2dGradOp::create(b, getLoc(), getInput().getType(),
                                        g[0], getKernelAttr(), getStrideAttr(),
                                        getPaddingAttr(),
                                        getCountIncludePadAttr()));
  return success();
}
