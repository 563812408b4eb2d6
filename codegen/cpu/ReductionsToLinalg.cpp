//===- ReductionsToLinalg.cpp - sum/mean/max and matmul to linalg -*- C++ -*-===//
//
// Reductions and contractions become linalg.generic ops with reduction
// iterators over a linalg.fill of the identity element. bf16/f16 operands
// accumulate in f32 and are rounded once at the end. matmul puts its
// transposes and its batch broadcasting into the indexing maps, so no
// operand is copied before the contraction. A float sum over axes that end
// with the innermost one but are not only trailing (a bias gradient) is
// partial sums along the contiguous axis first (partialSums), so that it
// runs as vector rows.
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

enum class Reduce { Sum, Mean, Max };

/// A float sum over axes that end with the innermost one and are not only
/// trailing (a bias gradient: (n, y, x) of (n, c, y, x)), in two steps that
/// run lanes at a time instead of one dependent add per element:
///
///  1. partial[kept..., k] += input[..., k]: the trailing reduced axes are
///     one contiguous axis k (`tensor.collapse_shape`), the kept axes are
///     the outer loops, the other reduced axes (n) the loops inside them and
///     k the innermost, parallel loop; a vector row of adds that
///     tg-vectorize-elementwise emits (LLVM kept the scalar adds serial, its
///     accumulator in an arena view it cannot prove apart from the input);
///  2. result[kept...] = sum over k of partial[kept..., k], in order.
///
/// Each element is then summed in a fixed order (over n, then over k), the
/// same for any thread count, but not the reference's row-major order: the
/// last bits differ from the one-step sum's. Returns null where the sum
/// does not have this form, or inside a fused group, whose producers fuse
/// into the reduction only without the reshape.
Value partialSums(OpBuilder &b, Location loc, Value input,
                  ArrayRef<int64_t> axes, Type acc,
                  ArrayRef<int64_t> resultShape, bool keepdims,
                  bool inGroup) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> inShape = shapeOf(input);
  int64_t rank = inShape.size();
  if (inGroup || !isa<FloatType>(acc) || rank < 2 ||
      !llvm::is_contained(axes, rank - 1) ||
      llvm::any_of(inShape, ShapedType::isDynamic))
    return nullptr;
  // The trailing run of reduced axes [t, rank) becomes axis t.
  int64_t t = rank - 1;
  while (t > 0 && llvm::is_contained(axes, t - 1))
    --t;
  SmallVector<int64_t> kept, outer; // dims < t, kept or reduced
  for (int64_t d = 0; d < t; ++d)
    (llvm::is_contained(axes, d) ? outer : kept).push_back(d);
  if (kept.empty() || outer.empty())
    return nullptr;
  int64_t inner = 1;
  for (int64_t d = t; d < rank; ++d)
    inner *= inShape[d];

  SmallVector<ReassociationIndices> collapse;
  SmallVector<int64_t> flatShape(inShape.take_front(t));
  for (int64_t d = 0; d < t; ++d)
    collapse.push_back({d});
  collapse.emplace_back();
  for (int64_t d = t; d < rank; ++d)
    collapse.back().push_back(d);
  flatShape.push_back(inner);
  Value flat = input;
  if (t != rank - 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get(flatShape, elementType(input)), input,
        collapse);

  // Step 1: loops (kept..., outer..., k); input dim d is read at the loop
  // position it has in that order.
  unsigned loops = t + 1;
  SmallVector<AffineExpr> inExprs(loops), partExprs;
  SmallVector<int64_t> partShape;
  SmallVector<utils::IteratorType> its;
  unsigned pos = 0;
  for (int64_t d : kept) {
    inExprs[d] = getAffineDimExpr(pos++, ctx);
    partExprs.push_back(inExprs[d]);
    partShape.push_back(inShape[d]);
    its.push_back(utils::IteratorType::parallel);
  }
  for (int64_t d : outer) {
    inExprs[d] = getAffineDimExpr(pos++, ctx);
    its.push_back(utils::IteratorType::reduction);
  }
  inExprs[t] = getAffineDimExpr(pos, ctx);
  partExprs.push_back(inExprs[t]);
  partShape.push_back(inner);
  its.push_back(utils::IteratorType::parallel);
  Value partial =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get(partShape, acc)}, flat,
          filledTensor(b, loc, partShape, acc, 0),
          ArrayRef<AffineMap>{AffineMap::get(loops, 0, inExprs, ctx),
                              AffineMap::get(loops, 0, partExprs, ctx)},
          its,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            linalg::YieldOp::create(
                nb, l,
                Value(arith::AddFOp::create(
                    nb, l, a[1], convertScalar(nb, l, a[0], acc))));
          })
          .getResult(0);

  // Step 2: loops (kept..., k), k reduced in order.
  unsigned loops2 = kept.size() + 1;
  SmallVector<AffineExpr> outExprs;
  unsigned next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(axes, d))
      outExprs.push_back(getAffineDimExpr(next++, ctx));
    else if (keepdims)
      outExprs.push_back(getAffineConstantExpr(0, ctx));
  }
  return linalg::GenericOp::create(
             b, loc, TypeRange{RankedTensorType::get(resultShape, acc)},
             partial, filledTensor(b, loc, resultShape, acc, 0),
             ArrayRef<AffineMap>{b.getMultiDimIdentityMap(loops2),
                                 AffineMap::get(loops2, 0, outExprs, ctx)},
             iterators(loops2 - 1, 1),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, Value(arith::AddFOp::create(nb, l, a[1], a[0])));
             })
      .getResult(0);
}

/// Reduces `input` over `axes` into `resultType` (keepdims or not).
Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
             bool keepdims, Reduce kind, RankedTensorType resultType,
             bool inGroup) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> inShape = shapeOf(input);
  int64_t rank = inShape.size();
  Type acc = computeType(resultType.getElementType());
  bool isF = isa<FloatType>(acc);

  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> its;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(axes, d);
    its.push_back(reduced ? utils::IteratorType::reduction
                          : utils::IteratorType::parallel);
    if (reduced)
      count *= inShape[d];
    if (!reduced)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    else if (keepdims)
      outExprs.push_back(getAffineConstantExpr(0, ctx));
  }
  double identity = 0;
  if (kind == Reduce::Max)
    identity = isF ? -std::numeric_limits<double>::infinity()
                   : static_cast<double>(std::numeric_limits<int64_t>::min() >>
                                         (64 - acc.getIntOrFloatBitWidth()));
  Value r;
  if (kind != Reduce::Max)
    r = partialSums(b, loc, input, axes, acc, resultType.getShape(), keepdims,
                    inGroup);
  Value init = r ? Value() : filledTensor(b, loc, resultType.getShape(), acc,
                                          identity);
  SmallVector<AffineMap> maps = {
      b.getMultiDimIdentityMap(rank),
      AffineMap::get(rank, 0, outExprs, ctx)};
  auto accType = RankedTensorType::get(resultType.getShape(), acc);
  if (!r)
    r = linalg::GenericOp::create(
                b, loc, TypeRange{accType}, input, init, maps, its,
                [&](OpBuilder &nb, Location l, ValueRange a) {
                  Value x = convertScalar(nb, l, a[0], acc);
                  Value y;
                  if (kind == Reduce::Max)
                    y = isF ? Value(arith::MaximumFOp::create(nb, l, a[1], x))
                            : Value(arith::MaxSIOp::create(nb, l, a[1], x));
                  else
                    y = isF ? Value(arith::AddFOp::create(nb, l, a[1], x))
                            : Value(arith::AddIOp::create(nb, l, a[1], x));
                  linalg::YieldOp::create(nb, l, y);
                })
                .getResult(0);
  if (kind == Reduce::Mean && isF && acc == resultType.getElementType()) {
    // Divide the sums where they are (an outs-only generic), so that the
    // mean needs no buffer besides its result: a planned arena slot holds
    // both the sums and the means.
    double n = static_cast<double>(count);
    unsigned outRank = resultType.getRank();
    auto scale = linalg::GenericOp::create(
        b, loc, TypeRange{resultType}, ValueRange{}, ValueRange{r},
        ArrayRef<AffineMap>{b.getMultiDimIdentityMap(outRank)},
        iterators(outRank), [&](OpBuilder &nb, Location l, ValueRange a) {
          linalg::YieldOp::create(
              nb, l,
              Value(arith::DivFOp::create(
                  nb, l, a[0], scalarConstant(nb, l, a[0].getType(), n))));
        });
    return scale.getResult(0);
  }
  if (kind == Reduce::Mean) {
    double n = static_cast<double>(count);
    return buildElementwise(b, loc, resultType, r,
                            [&](OpBuilder &nb, Location l, ValueRange a) {
                              return arith::DivFOp::create(
                                  nb, l, a[0],
                                  scalarConstant(nb, l, a[0].getType(), n));
                            });
  }
  return convertTensor(b, loc, r, resultType.getElementType());
}

template <typename OpTy, Reduce kind>
struct ReduceLowering final : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    rw.replaceOp(op, reduce(rw, op.getLoc(), adaptor.getInput(), op.getAxes(),
                            op.getKeepdims(), kind,
                            cast<RankedTensorType>(op.getType()),
                            op->template getParentOfType<FusedOp>() != nullptr));
    return success();
  }
};

/// `op(lhs) @ op(rhs)` with NumPy batch broadcasting: loops (batch..., m, n,
/// k); each operand's map reads its batch dims (0 where broadcast) and its
/// two matrix dims in stored order.
struct MatmulLowering final : OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    MLIRContext *ctx = rw.getContext();
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> out = type.getShape();
    int64_t rank = out.size();
    if (rank < 2 || shapeOf(adaptor.getLhs()).size() < 2 ||
        shapeOf(adaptor.getRhs()).size() < 2)
      return rw.notifyMatchFailure(op, "matmul operands must have rank >= 2");
    int64_t batch = rank - 2, loops = rank + 1;
    // Loop order (linalg-to-loops keeps it): with rhs stored [K, N] the
    // innermost loop runs over n, contiguous in rhs and in the result (an
    // axpy LLVM vectorises); with rhs stored [N, K] it runs over k,
    // contiguous in both operands (a dot product, vectorised thanks to
    // reassoc).
    bool kInner = op.getTransposeRhs();
    AffineExpr m = getAffineDimExpr(batch, ctx),
               n = getAffineDimExpr(batch + (kInner ? 1 : 2), ctx),
               k = getAffineDimExpr(batch + (kInner ? 2 : 1), ctx);
    auto operandMap = [&](Value v, AffineExpr rows, AffineExpr cols,
                          bool transposed) {
      ArrayRef<int64_t> shape = shapeOf(v);
      int64_t vb = shape.size() - 2;
      SmallVector<AffineExpr> exprs;
      for (int64_t i = 0; i < vb; ++i) {
        int64_t d = batch - vb + i;
        exprs.push_back(shape[i] == 1 && out[d] != 1
                            ? getAffineConstantExpr(0, ctx)
                            : getAffineDimExpr(d, ctx));
      }
      exprs.push_back(transposed ? cols : rows);
      exprs.push_back(transposed ? rows : cols);
      return AffineMap::get(loops, 0, exprs, ctx);
    };
    SmallVector<AffineExpr> outExprs;
    for (int64_t d = 0; d < batch; ++d)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    outExprs.append({m, n});
    SmallVector<utils::IteratorType> its = iterators(batch + 3);
    its[batch + (kInner ? 2 : 1)] = utils::IteratorType::reduction;
    SmallVector<AffineMap> maps = {
        operandMap(adaptor.getLhs(), m, k, op.getTransposeLhs()),
        operandMap(adaptor.getRhs(), k, n, op.getTransposeRhs()),
        AffineMap::get(loops, 0, outExprs, ctx)};
    Type acc = computeType(type.getElementType());
    bool isF = isa<FloatType>(acc);
    Value init = filledTensor(rw, loc, out, acc, 0);
    Value r =
        linalg::GenericOp::create(
            rw, loc, TypeRange{RankedTensorType::get(out, acc)},
            ValueRange{adaptor.getLhs(), adaptor.getRhs()}, init, maps,
            its,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value x = convertScalar(b, l, a[0], acc);
              Value y = convertScalar(b, l, a[1], acc);
              // A contraction may be summed in any order (reassoc) and use
              // FMA (contract): what lets LLVM vectorise it.
              auto fm = arith::FastMathFlags::reassoc |
                        arith::FastMathFlags::contract;
              Value s = isF ? Value(arith::AddFOp::create(
                                  b, l, a[2],
                                  arith::MulFOp::create(b, l, x, y, fm), fm))
                            : Value(arith::AddIOp::create(
                                  b, l, a[2], arith::MulIOp::create(b, l, x, y)));
              linalg::YieldOp::create(b, l, s);
            })
            .getResult(0);
    rw.replaceOp(op, convertTensor(rw, loc, r, type.getElementType()));
    return success();
  }
};

} // namespace

void mlir::tg::cpu::populateReductionsToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<SumOp, Reduce::Sum>,
               ReduceLowering<MeanOp, Reduce::Mean>,
               ReduceLowering<MaxOp, Reduce::Max>, MatmulLowering>(
      patterns.getContext());
}
