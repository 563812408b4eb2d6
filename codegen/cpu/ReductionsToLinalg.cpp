//===- ReductionsToLinalg.cpp - sum/mean/max and matmul to linalg -*- C++ -*-===//
//
// Reductions and contractions become linalg.generic ops with reduction
// iterators over a linalg.fill of the identity element. bf16/f16 operands
// accumulate in f32 and are rounded once at the end. matmul puts its
// transposes and its batch broadcasting into the indexing maps, so no
// operand is copied before the contraction.
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

/// Reduces `input` over `axes` into `resultType` (keepdims or not).
Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
             bool keepdims, Reduce kind, RankedTensorType resultType) {
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
  Value init = filledTensor(b, loc, resultType.getShape(), acc, identity);
  SmallVector<AffineMap> maps = {
      b.getMultiDimIdentityMap(rank),
      AffineMap::get(rank, 0, outExprs, ctx)};
  auto accType = RankedTensorType::get(resultType.getShape(), acc);
  Value r = linalg::GenericOp::create(
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
                            cast<RankedTensorType>(op.getType())));
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
