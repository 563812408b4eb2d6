//===- ConvPoolToLinalg.cpp - conv2d and pooling to linalg ------*- C++ -*-===//
//
// Direct loop nests as linalg.generic, correctness first (no im2col, no
// tiling here). Groups become an explicit dimension (channels C = G x Cg,
// O = G x Og through expand_shape), so every forward map is a plain affine
// function of the loops. The forward ops and conv2d_grad_weight read a
// padded input; conv2d_grad_input and the pooling gradients gather from the
// cotangent (tensor.extract at computed positions, guarded by a validity
// test), because linalg outputs cannot be written at strided positions.
// Pooling loops over the window through a shape-only [KH, KW] operand, as
// upstream's linalg.pooling_* ops do.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"

#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cpu;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// `x` (NCHW) in its compute type, padded by `pad` (h, w) on both sides with
/// `value`.
Value padded(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> pad,
             double value) {
  Type acc = computeType(elementType(x));
  x = convertTensor(b, loc, x, acc);
  if (pad[0] == 0 && pad[1] == 0)
    return x;
  ArrayRef<int64_t> s = shapeOf(x);
  auto type = RankedTensorType::get(
      {s[0], s[1], s[2] + 2 * pad[0], s[3] + 2 * pad[1]}, acc);
  SmallVector<OpFoldResult> lo = {b.getIndexAttr(0), b.getIndexAttr(0),
                                  b.getIndexAttr(pad[0]),
                                  b.getIndexAttr(pad[1])};
  return tensor::PadOp::create(b, loc, type, x, lo, lo,
                               scalarConstant(b, loc, acc, value));
}

/// Splits dimension `dim` of `v` into (groups, size / groups).
Value splitGroups(OpBuilder &b, Location loc, Value v, int64_t dim,
                  int64_t groups) {
  ArrayRef<int64_t> s = shapeOf(v);
  SmallVector<int64_t> shape;
  SmallVector<ReassociationIndices> re;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d == dim) {
      re.push_back({static_cast<int64_t>(shape.size()),
                    static_cast<int64_t>(shape.size()) + 1});
      shape.append({groups, s[d] / groups});
    } else {
      re.push_back({static_cast<int64_t>(shape.size())});
      shape.push_back(s[d]);
    }
  }
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, elementType(v)), v, re);
}

/// Merges dimensions (dim, dim + 1) of `v`.
Value mergeGroups(OpBuilder &b, Location loc, Value v, int64_t dim) {
  int64_t rank = shapeOf(v).size();
  SmallVector<ReassociationIndices> re;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dim + 1)
      continue;
    if (d == dim)
      re.push_back({d, d + 1});
    else
      re.push_back({d});
  }
  return tensor::CollapseShapeOp::create(b, loc, v, re);
}

/// Sum-of-products contraction `out += a * b` over `maps` (a, b, out) into
/// a zero-filled tensor of `outShape`.
Value contractInto(OpBuilder &b, Location loc, Value lhs, Value rhs,
                   ArrayRef<int64_t> outShape, ArrayRef<AffineMap> maps,
                   unsigned parallel, unsigned reduction) {
  Type acc = elementType(lhs);
  Value init = filledTensor(b, loc, outShape, acc, 0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{RankedTensorType::get(outShape, acc)},
             ValueRange{lhs, rhs}, init, maps, iterators(parallel, reduction),
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{arith::AddFOp::create(
                       nb, l, a[2], arith::MulFOp::create(nb, l, a[0], a[1]))});
             })
      .getResult(0);
}

/// Affine helpers over a fixed number of loops.
struct Loops {
  MLIRContext *ctx;
  unsigned count;
  AffineExpr d(unsigned i) const { return getAffineDimExpr(i, ctx); }
  AffineMap map(ArrayRef<AffineExpr> exprs) const {
    return AffineMap::get(count, 0, exprs, ctx);
  }
};

/// out[n, g, og, y, x] += in[n, g, ic, y*sh + i*dh, x*sw + j*dw] *
///                        w[g, og, ic, i, j]
struct Conv2dLowering final : OpConversionPattern<Conv2dOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2dOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t g = op.getGroups();
    ArrayRef<int64_t> s = op.getStride(), dl = op.getDilation();
    ArrayRef<int64_t> out = type.getShape();
    Value xp = padded(rw, loc, adaptor.getInput(), op.getPadding(), 0);
    Value wc = convertTensor(rw, loc, adaptor.getWeight(),
                             computeType(type.getElementType()));
    if (g == 1) {
      // Ungrouped: 4-D maps, so the result is the contraction's own
      // buffer. Loops: n oc y x | ic i j.
      Loops L{rw.getContext(), 7};
      SmallVector<AffineMap> maps = {
          L.map({L.d(0), L.d(4), L.d(2) * s[0] + L.d(5) * dl[0],
                 L.d(3) * s[1] + L.d(6) * dl[1]}),
          L.map({L.d(1), L.d(4), L.d(5), L.d(6)}),
          L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
      Value r = contractInto(rw, loc, xp, wc, out, maps, 4, 3);
      rw.replaceOp(op, convertTensor(rw, loc, r, type.getElementType()));
      return success();
    }
    Value x = splitGroups(rw, loc, xp, 1, g);
    Value w = splitGroups(rw, loc, wc, 0, g);
    // Loops: n g og y x | ic i j.
    Loops L{rw.getContext(), 8};
    SmallVector<AffineMap> maps = {
        L.map({L.d(0), L.d(1), L.d(5), L.d(3) * s[0] + L.d(6) * dl[0],
               L.d(4) * s[1] + L.d(7) * dl[1]}),
        L.map({L.d(1), L.d(2), L.d(5), L.d(6), L.d(7)}),
        L.map({L.d(0), L.d(1), L.d(2), L.d(3), L.d(4)})};
    Value r = contractInto(rw, loc, x, w,
                           {out[0], g, out[1] / g, out[2], out[3]}, maps, 5, 3);
    rw.replaceOp(op, convertTensor(rw, loc, mergeGroups(rw, loc, r, 1),
                                   type.getElementType()));
    return success();
  }
};

/// dw[g, og, ic, i, j] += in[n, g, ic, y*sh + i*dh, x*sw + j*dw] *
///                        grad[n, g, og, y, x]
struct Conv2dGradWeightLowering final
    : OpConversionPattern<Conv2dGradWeightOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2dGradWeightOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t g = op.getGroups();
    ArrayRef<int64_t> s = op.getStride(), dl = op.getDilation();
    ArrayRef<int64_t> wt = type.getShape();
    Value xp = padded(rw, loc, adaptor.getInput(), op.getPadding(), 0);
    Value gc = convertTensor(rw, loc, adaptor.getGrad(),
                             computeType(type.getElementType()));
    if (g == 1) {
      // Loops: oc ic i j | n y x.
      Loops L{rw.getContext(), 7};
      SmallVector<AffineMap> maps = {
          L.map({L.d(4), L.d(1), L.d(5) * s[0] + L.d(2) * dl[0],
                 L.d(6) * s[1] + L.d(3) * dl[1]}),
          L.map({L.d(4), L.d(0), L.d(5), L.d(6)}),
          L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
      Value r = contractInto(rw, loc, xp, gc, wt, maps, 4, 3);
      rw.replaceOp(op, convertTensor(rw, loc, r, type.getElementType()));
      return success();
    }
    Value x = splitGroups(rw, loc, xp, 1, g);
    Value gr = splitGroups(rw, loc, gc, 1, g);
    // Loops: g og ic i j | n y x.
    Loops L{rw.getContext(), 8};
    SmallVector<AffineMap> maps = {
        L.map({L.d(5), L.d(0), L.d(2), L.d(6) * s[0] + L.d(3) * dl[0],
               L.d(7) * s[1] + L.d(4) * dl[1]}),
        L.map({L.d(5), L.d(0), L.d(1), L.d(6), L.d(7)}),
        L.map({L.d(0), L.d(1), L.d(2), L.d(3), L.d(4)})};
    Value r = contractInto(rw, loc, x, gr,
                           {g, wt[0] / g, wt[1], wt[2], wt[3]}, maps, 5, 3);
    rw.replaceOp(op, convertTensor(rw, loc, mergeGroups(rw, loc, r, 0),
                                   type.getElementType()));
    return success();
  }
};

/// Scalar index arithmetic inside a generic body.
struct Idx {
  OpBuilder &b;
  Location l;
  Value c(int64_t v) { return indexConstant(b, l, v); }
  Value loop(unsigned d) { return linalg::IndexOp::create(b, l, d); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, l, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, l, x, y); }
  Value mul(Value x, int64_t k) { return arith::MulIOp::create(b, l, x, c(k)); }
  Value div(Value x, int64_t k) { return arith::DivSIOp::create(b, l, x, c(k)); }
  Value rem(Value x, int64_t k) { return arith::RemSIOp::create(b, l, x, c(k)); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, l, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, l, x, y); }
  Value pick(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, l, cond, x, y);
  }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, l, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, l, x, y); }

  /// For an input position `pos` and window tap `tap`: the output position
  /// `(pos + pad - tap * dil) / stride` and whether it exists (divisible,
  /// in [0, size)). The returned position is 0 when it does not.
  std::pair<Value, Value> source(Value pos, Value tap, int64_t pad,
                                 int64_t dil, int64_t stride, int64_t size) {
    Value t = sub(add(pos, c(pad)), mul(tap, dil));
    Value q = div(t, stride);
    Value ok = both(both(cmp(arith::CmpIPredicate::sge, t, c(0)),
                         cmp(arith::CmpIPredicate::eq, rem(t, stride), c(0))),
                    cmp(arith::CmpIPredicate::slt, q, c(size)));
    return {pick(ok, q, c(0)), ok};
  }

  /// The number of unpadded positions of pooling window `o` along one axis.
  Value windowCount(Value o, int64_t stride, int64_t pad, int64_t k,
                    int64_t size) {
    Value start = sub(mul(o, stride), c(pad));
    return sub(min(add(start, c(k)), c(size)), max(start, c(0)));
  }

  /// The divisor, as a float of type `t`, of average-pooling window (y, x)
  /// over an input of spatial size `in`: the whole window with
  /// count_include_pad (PyTorch's default), else its unpadded positions (at
  /// least 1, so that an all-padding window averages to 0). Shared by the
  /// forward and the gradient so that they cannot disagree.
  Value avgDivisor(Type t, Value y, Value x, ArrayRef<int64_t> k,
                   ArrayRef<int64_t> s, ArrayRef<int64_t> p,
                   ArrayRef<int64_t> in, bool countIncludePad) {
    Value n = c(k[0] * k[1]);
    if (!countIncludePad)
      n = max(arith::MulIOp::create(b, l, windowCount(y, s[0], p[0], k[0], in[0]),
                                    windowCount(x, s[1], p[1], k[1], in[1])),
              c(1));
    return arith::SIToFPOp::create(
        b, l, t, arith::IndexCastOp::create(b, l, b.getI64Type(), n));
  }
};

/// dx[n, g, ic, iy, ix] = sum over (og, i, j) of grad[n, g*Og + og, y, x] *
/// w[g, og, ic, i, j] where iy = y*sh - ph + i*dh (and x likewise).
struct Conv2dGradInputLowering final
    : OpConversionPattern<Conv2dGradInputOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2dGradInputOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = computeType(type.getElementType());
    int64_t g = op.getGroups();
    ArrayRef<int64_t> s = op.getStride(), dl = op.getDilation(),
                      p = op.getPadding();
    ArrayRef<int64_t> dx = type.getShape();
    Value grad = adaptor.getGrad();
    ArrayRef<int64_t> gs = shapeOf(grad);
    int64_t og = gs[1] / g;
    Value w = splitGroups(rw, loc, convertTensor(rw, loc, adaptor.getWeight(), acc),
                          0, g);
    // Loops: n g ic iy ix | og i j.
    Loops L{rw.getContext(), 8};
    SmallVector<AffineMap> maps = {
        L.map({L.d(1), L.d(5), L.d(2), L.d(6), L.d(7)}),
        L.map({L.d(0), L.d(1), L.d(2), L.d(3), L.d(4)})};
    SmallVector<int64_t> outShape = {dx[0], g, dx[1] / g, dx[2], dx[3]};
    Value init = filledTensor(rw, loc, outShape, acc, 0);
    Value r =
        linalg::GenericOp::create(
            rw, loc, TypeRange{RankedTensorType::get(outShape, acc)}, w, init,
            maps, iterators(5, 3),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Idx I{b, l};
              auto [y, okY] = I.source(I.loop(3), I.loop(6), p[0], dl[0], s[0],
                                       gs[2]);
              auto [x, okX] = I.source(I.loop(4), I.loop(7), p[1], dl[1], s[1],
                                       gs[3]);
              Value oc = I.add(I.mul(I.loop(1), og), I.loop(5));
              Value gv = convertScalar(
                  b, l,
                  tensor::ExtractOp::create(b, l, grad,
                                            ValueRange{I.loop(0), oc, y, x}),
                  acc);
              Value prod = arith::MulFOp::create(b, l, gv, a[0]);
              Value add = arith::AddFOp::create(b, l, a[1], prod);
              linalg::YieldOp::create(
                  b, l, ValueRange{I.pick(I.both(okY, okX), add, a[1])});
            })
            .getResult(0);
    rw.replaceOp(op, convertTensor(rw, loc, mergeGroups(rw, loc, r, 1),
                                   type.getElementType()));
    return success();
  }
};

/// A [KH, KW] tensor whose only use is to give the window loops their
/// extent.
Value windowShape(OpBuilder &b, Location loc, ArrayRef<int64_t> kernel) {
  // A constant, not an empty tensor: it becomes a read-only global instead
  // of an allocation per call.
  auto type = RankedTensorType::get({kernel[0], kernel[1]}, b.getF32Type());
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
}

/// Whether a pooling op divides by the whole window; only avg_pool2d divides.
bool countIncludePad(AvgPool2dOp op) { return op.getCountIncludePad(); }
bool countIncludePad(MaxPool2dOp) { return false; }

/// Pooling forward: loops (n, c, y, x | i, j) over the padded input.
template <typename OpTy, bool isMax>
struct PoolLowering final : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = computeType(type.getElementType());
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStride(),
                      p = op.getPadding();
    ArrayRef<int64_t> in = shapeOf(adaptor.getInput());
    Value x = padded(rw, loc, adaptor.getInput(), p, isMax ? kNegInf : 0.0);
    Loops L{rw.getContext(), 6};
    SmallVector<AffineMap> maps = {
        L.map({L.d(0), L.d(1), L.d(2) * s[0] + L.d(4), L.d(3) * s[1] + L.d(5)}),
        L.map({L.d(4), L.d(5)}), L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
    Value init =
        filledTensor(rw, loc, type.getShape(), acc, isMax ? kNegInf : 0.0);
    auto accType = RankedTensorType::get(type.getShape(), acc);
    Value r = linalg::GenericOp::create(
                  rw, loc, TypeRange{accType},
                  ValueRange{x, windowShape(rw, loc, k)}, init, maps,
                  iterators(4, 2),
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value v = isMax ? Value(arith::MaximumFOp::create(
                                          b, l, a[2], a[0]))
                                    : Value(arith::AddFOp::create(b, l, a[2],
                                                                  a[0]));
                    linalg::YieldOp::create(b, l, v);
                  })
                  .getResult(0);
    if (isMax) {
      rw.replaceOp(op, convertTensor(rw, loc, r, type.getElementType()));
      return success();
    }
    // Divide each window's sum by its count (see Idx::avgDivisor).
    r = buildElementwise(
        rw, loc, type, r, [&](OpBuilder &b, Location l, ValueRange a) {
          Value n = Idx{b, l}.avgDivisor(a[0].getType(), linalg::IndexOp::create(b, l, 2),
                                         linalg::IndexOp::create(b, l, 3), k, s, p,
                                         in.drop_front(2), countIncludePad(op));
          return arith::DivFOp::create(b, l, a[0], n);
        });
    rw.replaceOp(op, r);
    return success();
  }
};

/// max_pool2d_grad in two steps: the in-plane position (iy * W + ix) of the
/// first maximum of every window (or its last NaN, as in the reference), then a
/// gather: dx[iy, ix] sums grad[y, x] over the windows whose argmax it is.
struct MaxPoolGradLowering final : OpConversionPattern<MaxPool2dGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MaxPool2dGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = computeType(type.getElementType());
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStride(),
                      p = op.getPadding();
    Value input = adaptor.getInput(), grad = adaptor.getGrad();
    ArrayRef<int64_t> in = shapeOf(input), gs = shapeOf(grad);
    Type i64 = rw.getI64Type();

    Loops L{rw.getContext(), 6};
    SmallVector<AffineMap> argMaps = {
        L.map({L.d(4), L.d(5)}), L.map({L.d(0), L.d(1), L.d(2), L.d(3)}),
        L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
    Value best = filledTensor(rw, loc, gs, acc, 0);
    Value where = filledTensor(rw, loc, gs, i64, -1);
    auto arg = linalg::GenericOp::create(
        rw, loc,
        TypeRange{RankedTensorType::get(gs, acc), RankedTensorType::get(gs, i64)},
        windowShape(rw, loc, k), ValueRange{best, where}, argMaps,
        iterators(4, 2), [&](OpBuilder &b, Location l, ValueRange a) {
          Idx I{b, l};
          Value iy = I.add(I.sub(I.mul(I.loop(2), s[0]), I.c(p[0])), I.loop(4));
          Value ix = I.add(I.sub(I.mul(I.loop(3), s[1]), I.c(p[1])), I.loop(5));
          using P = arith::CmpIPredicate;
          Value inside = I.both(
              I.both(I.cmp(P::sge, iy, I.c(0)), I.cmp(P::slt, iy, I.c(in[2]))),
              I.both(I.cmp(P::sge, ix, I.c(0)), I.cmp(P::slt, ix, I.c(in[3]))));
          Value cy = I.pick(inside, iy, I.c(0)), cx = I.pick(inside, ix, I.c(0));
          Value v = convertScalar(
              b, l,
              tensor::ExtractOp::create(b, l, input,
                                        ValueRange{I.loop(0), I.loop(1), cy, cx}),
              acc);
          using F = arith::CmpFPredicate;
          Value none = arith::CmpIOp::create(
              b, l, P::eq, a[2], scalarConstant(b, l, i64, -1));
          // PyTorch's scan: a NaN always takes over (so the last NaN wins),
          // a number only when it is greater (so the first maximum wins).
          Value vNaN = arith::CmpFOp::create(b, l, F::UNO, v, v);
          Value greater = arith::CmpFOp::create(b, l, F::OGT, v, a[1]);
          Value take = arith::AndIOp::create(
              b, l, inside,
              arith::OrIOp::create(
                  b, l, none, arith::OrIOp::create(b, l, vNaN, greater)));
          Value pos = arith::IndexCastOp::create(
              b, l, i64, I.add(I.mul(cy, in[3]), cx));
          linalg::YieldOp::create(
              b, l,
              ValueRange{I.pick(take, v, a[1]), I.pick(take, pos, a[2])});
        });
    Value argmax = arg.getResult(1);

    SmallVector<AffineMap> maps = {L.map({L.d(4), L.d(5)}),
                                   L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
    Value init = filledTensor(rw, loc, in, acc, 0);
    Value r =
        linalg::GenericOp::create(
            rw, loc, TypeRange{RankedTensorType::get(in, acc)},
            windowShape(rw, loc, k), init, maps, iterators(4, 2),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Idx I{b, l};
              auto [y, okY] = I.source(I.loop(2), I.loop(4), p[0], 1, s[0], gs[2]);
              auto [x, okX] = I.source(I.loop(3), I.loop(5), p[1], 1, s[1], gs[3]);
              Value here = arith::IndexCastOp::create(
                  b, l, i64, I.add(I.mul(I.loop(2), in[3]), I.loop(3)));
              Value hit = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::eq,
                  tensor::ExtractOp::create(b, l, argmax,
                                            ValueRange{I.loop(0), I.loop(1), y, x}),
                  here);
              Value gv = convertScalar(
                  b, l,
                  tensor::ExtractOp::create(b, l, grad,
                                            ValueRange{I.loop(0), I.loop(1), y, x}),
                  acc);
              Value add = arith::AddFOp::create(b, l, a[1], gv);
              Value ok = I.both(I.both(okY, okX), hit);
              linalg::YieldOp::create(b, l, ValueRange{I.pick(ok, add, a[1])});
            })
            .getResult(0);
    rw.replaceOp(op, convertTensor(rw, loc, r, type.getElementType()));
    return success();
  }
};

/// dx[iy, ix] = sum over the windows (y, x) that contain it of grad[y, x] /
/// (the number of unpadded positions of that window).
struct AvgPoolGradLowering final : OpConversionPattern<AvgPool2dGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AvgPool2dGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = computeType(type.getElementType());
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStride(),
                      p = op.getPadding();
    Value grad = adaptor.getGrad();
    ArrayRef<int64_t> in = type.getShape(), gs = shapeOf(grad);
    Loops L{rw.getContext(), 6};
    SmallVector<AffineMap> maps = {L.map({L.d(4), L.d(5)}),
                                   L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
    Value init = filledTensor(rw, loc, in, acc, 0);
    Value r =
        linalg::GenericOp::create(
            rw, loc, TypeRange{RankedTensorType::get(in, acc)},
            windowShape(rw, loc, k), init, maps, iterators(4, 2),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Idx I{b, l};
              auto [y, okY] = I.source(I.loop(2), I.loop(4), p[0], 1, s[0], gs[2]);
              auto [x, okX] = I.source(I.loop(3), I.loop(5), p[1], 1, s[1], gs[3]);
              Value nf = I.avgDivisor(acc, y, x, k, s, p, in.drop_front(2),
                                      op.getCountIncludePad());
              Value gv = convertScalar(
                  b, l,
                  tensor::ExtractOp::create(b, l, grad,
                                            ValueRange{I.loop(0), I.loop(1), y, x}),
                  acc);
              Value add = arith::AddFOp::create(
                  b, l, a[1], arith::DivFOp::create(b, l, gv, nf));
              linalg::YieldOp::create(
                  b, l, ValueRange{I.pick(I.both(okY, okX), add, a[1])});
            })
            .getResult(0);
    rw.replaceOp(op, convertTensor(rw, loc, r, type.getElementType()));
    return success();
  }
};

} // namespace

void mlir::tg::cpu::populateConvPoolToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<Conv2dLowering, Conv2dGradWeightLowering,
               Conv2dGradInputLowering, PoolLowering<MaxPool2dOp, true>,
               PoolLowering<AvgPool2dOp, false>, MaxPoolGradLowering,
               AvgPoolGradLowering>(patterns.getContext());
}
