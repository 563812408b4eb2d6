//===- MovementToLinalg.cpp - data movement tg ops to tensor/linalg -*- C++ -*-===//
//
// reshape, transpose, slice and concat become tensor-dialect views and
// copies that bufferization turns into subviews where it can; embedding is
// a gather (tensor.extract inside a linalg.generic) and embedding_grad a
// scatter-add in scf.for loops, since linalg has no scatter.
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

struct ReshapeLowering final : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    rw.replaceOp(op, reshapeTensor(rw, op.getLoc(), adaptor.getInput(),
                             cast<RankedTensorType>(op.getType())));
    return success();
  }
};

struct TransposeLowering final : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Value init = emptyTensor(rw, op.getLoc(), type.getShape(),
                             type.getElementType());
    rw.replaceOp(op, linalg::TransposeOp::create(rw, op.getLoc(),
                                                 adaptor.getInput(), init,
                                                 op.getPermutation())
                         .getResult());
    return success();
  }
};

struct SliceLowering final : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rw.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getInput(), ValueRange{}, ValueRange{}, ValueRange{},
        op.getStart(), type.getShape(), op.getStep());
    return success();
  }
};

/// Each input is inserted at its running offset along the axis.
struct ConcatLowering final : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
    Value result = emptyTensor(rw, op.getLoc(), type.getShape(),
                               type.getElementType());
    SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
    for (Value in : adaptor.getInputs()) {
      ArrayRef<int64_t> shape = shapeOf(in);
      result = tensor::InsertSliceOp::create(rw, op.getLoc(), in, result,
                                             ValueRange{}, ValueRange{},
                                             ValueRange{}, offsets, shape,
                                             strides);
      offsets[axis] += shape[axis];
    }
    rw.replaceOp(op, result);
    return success();
  }
};

/// An index value clamped to [0, rows).
Value clampRow(OpBuilder &b, Location loc, Value idx, int64_t rows) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), idx);
  i = arith::MaxSIOp::create(b, loc, i, indexConstant(b, loc, 0));
  return arith::MinSIOp::create(b, loc, i, indexConstant(b, loc, rows - 1));
}

/// result[i..., d] = table[clamp(indices[i...]), d].
struct EmbeddingLowering final : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    Value table = adaptor.getTable();
    int64_t rows = shapeOf(table)[0];
    AffineMap map = AffineMap::getMultiDimIdentityMap(rank, rw.getContext())
                        .dropResult(rank - 1);
    Value r = buildParallel(
        rw, op.getLoc(), type, adaptor.getIndices(), map,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value row = clampRow(b, l, a[0], rows);
          Value col = linalg::IndexOp::create(b, l, rank - 1);
          return tensor::ExtractOp::create(b, l, table, ValueRange{row, col});
        });
    rw.replaceOp(op, r);
    return success();
  }
};

/// result[v, :] += grad[p, :] for every position p with clamp(indices[p])
/// == v, as two scf.for loops over a zero-filled accumulator.
struct EmbeddingGradLowering final : OpConversionPattern<EmbeddingGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rows = type.getShape()[0], cols = type.getShape()[1];
    Type acc = computeType(type.getElementType());
    int64_t positions = 1;
    for (int64_t s : shapeOf(adaptor.getIndices()))
      positions *= s;
    Value ids = reshapeTensor(
        rw, loc, adaptor.getIndices(),
        RankedTensorType::get({positions}, elementType(adaptor.getIndices())));
    Value grad = reshapeTensor(
        rw, loc, adaptor.getGrad(),
        RankedTensorType::get({positions, cols}, elementType(adaptor.getGrad())));
    Value init = filledTensor(rw, loc, type.getShape(), acc, 0);
    Value zero = indexConstant(rw, loc, 0), one = indexConstant(rw, loc, 1);
    auto outer = scf::ForOp::create(
        rw, loc, zero, indexConstant(rw, loc, positions), one, init,
        [&](OpBuilder &b, Location l, Value p, ValueRange iter) {
          Value id = tensor::ExtractOp::create(b, l, ids, p);
          Value row = clampRow(b, l, id, rows);
          auto inner = scf::ForOp::create(
              b, l, zero, indexConstant(b, l, cols), one, iter,
              [&](OpBuilder &ib, Location il, Value c, ValueRange it) {
                Value g = convertScalar(
                    ib, il, tensor::ExtractOp::create(ib, il, grad, {p, c}),
                    acc);
                Value old =
                    tensor::ExtractOp::create(ib, il, it[0], {row, c});
                Value sum = isa<FloatType>(acc)
                                ? Value(arith::AddFOp::create(ib, il, old, g))
                                : Value(arith::AddIOp::create(ib, il, old, g));
                scf::YieldOp::create(
                    ib, il,
                    ValueRange{tensor::InsertOp::create(ib, il, sum, it[0],
                                                        {row, c})});
              });
          scf::YieldOp::create(b, l, inner.getResults());
        });
    return replaceWithConverted(rw, op, outer.getResult(0));
  }
};

} // namespace

void mlir::tg::cpu::populateMovementToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, SliceLowering,
               ConcatLowering, EmbeddingLowering, EmbeddingGradLowering>(
      patterns.getContext());
}
