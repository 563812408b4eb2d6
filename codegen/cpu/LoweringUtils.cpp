//===- LoweringUtils.cpp - shared helpers of tg-convert-to-linalg -*- C++ -*-===//
//
// See LoweringUtils.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tg::cpu;

Type mlir::tg::cpu::computeType(Type elt) {
  if (elt.isBF16() || elt.isF16())
    return Float32Type::get(elt.getContext());
  return elt;
}

Value mlir::tg::cpu::convertScalar(OpBuilder &b, Location loc, Value v,
                                   Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromF = dyn_cast<FloatType>(from), toF = dyn_cast<FloatType>(to);
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0.0);
    if (fromF)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  if (fromF && toF) {
    if (fromF.getWidth() < toF.getWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    // bf16 <-> f16 have equal widths: go through f32.
    if (fromF.getWidth() == toF.getWidth())
      return arith::TruncFOp::create(
          b, loc, to, arith::ExtFOp::create(b, loc, b.getF32Type(), v));
    return arith::TruncFOp::create(b, loc, to, v);
  }
  if (toF && toF.getWidth() < 32)
    return convertScalar(b, loc, convertScalar(b, loc, v, b.getF32Type()), to);
  if (toF) {
    if (from.isInteger(1))
      return arith::UIToFPOp::create(b, loc, to, v);
    return arith::SIToFPOp::create(b, loc, to, v);
  }
  if (fromF)
    return arith::FPToSIOp::create(b, loc, to, v);
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (from.isInteger(1))
    return arith::ExtUIOp::create(b, loc, to, v);
  if (fw < tw)
    return arith::ExtSIOp::create(b, loc, to, v);
  return arith::TruncIOp::create(b, loc, to, v);
}

Value mlir::tg::cpu::scalarConstant(OpBuilder &b, Location loc, Type type,
                                    double v) {
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f, v));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(v)));
}

Value mlir::tg::cpu::indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value mlir::tg::cpu::emptyTensor(OpBuilder &b, Location loc,
                                 ArrayRef<int64_t> shape, Type elt) {
  return tensor::EmptyOp::create(b, loc, shape, elt);
}

Value mlir::tg::cpu::filledTensor(OpBuilder &b, Location loc,
                                  ArrayRef<int64_t> shape, Type elt, double v) {
  Value init = emptyTensor(b, loc, shape, elt);
  Value c = scalarConstant(b, loc, elt, v);
  return linalg::FillOp::create(b, loc, ValueRange{c}, ValueRange{init})
      .getResult(0);
}

AffineMap mlir::tg::cpu::broadcastMap(MLIRContext *ctx,
                                      ArrayRef<int64_t> operand,
                                      ArrayRef<int64_t> result) {
  int64_t lead = result.size() - operand.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(operand)) {
    int64_t d = lead + i;
    exprs.push_back(size == 1 && result[d] != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(d, ctx));
  }
  return AffineMap::get(result.size(), 0, exprs, ctx);
}

SmallVector<utils::IteratorType> mlir::tg::cpu::iterators(unsigned n,
                                                         unsigned r) {
  SmallVector<utils::IteratorType> its(n, utils::IteratorType::parallel);
  its.append(r, utils::IteratorType::reduction);
  return its;
}

Value mlir::tg::cpu::buildParallel(OpBuilder &b, Location loc,
                                   RankedTensorType resultType,
                                   ValueRange inputs,
                                   ArrayRef<AffineMap> inputMaps,
                                   ScalarFn body) {
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(shape.size()));
  Value init = emptyTensor(b, loc, shape, resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps,
      iterators(shape.size()),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> scalars;
        for (Value a : args.drop_back())
          scalars.push_back(
              convertScalar(nb, nloc, a, computeType(a.getType())));
        Value r = body(nb, nloc, scalars);
        linalg::YieldOp::create(
            nb, nloc, convertScalar(nb, nloc, r, resultType.getElementType()));
      });
  return generic.getResult(0);
}

Value mlir::tg::cpu::buildElementwise(OpBuilder &b, Location loc,
                                      RankedTensorType resultType,
                                      ValueRange inputs, ScalarFn body) {
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(
        broadcastMap(b.getContext(), shapeOf(in), resultType.getShape()));
  return buildParallel(b, loc, resultType, inputs, maps, body);
}

Value mlir::tg::cpu::convertTensor(OpBuilder &b, Location loc, Value t,
                                   Type elt) {
  if (elementType(t) == elt)
    return t;
  auto type = RankedTensorType::get(shapeOf(t), elt);
  return buildElementwise(b, loc, type, t,
                          [](OpBuilder &, Location, ValueRange a) {
                            return a[0];
                          });
}

LogicalResult mlir::tg::cpu::replaceWithConverted(RewriterBase &rw,
                                                  Operation *op, Value r) {
  Type elt = cast<RankedTensorType>(op->getResult(0).getType())
                 .getElementType();
  rw.replaceOp(op, convertTensor(rw, op->getLoc(), r, elt));
  return success();
}

Value mlir::tg::cpu::linearIndex(OpBuilder &b, Location loc,
                                 ArrayRef<int64_t> shape) {
  Value linear = indexConstant(b, loc, 0);
  for (auto [d, size] : llvm::enumerate(shape)) {
    Value idx = linalg::IndexOp::create(b, loc, d);
    linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, linear,
                                      indexConstant(b, loc, size)),
        idx);
  }
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), linear);
}

Value mlir::tg::cpu::firstElementPointer(OpBuilder &b, Location loc,
                                         Operation *metaOp, int64_t eltBytes) {
  auto meta = cast<memref::ExtractStridedMetadataOp>(metaOp);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, meta.getBaseBuffer());
  Value bytes = arith::MulIOp::create(
      b, loc, meta.getOffset(), arith::ConstantIndexOp::create(b, loc, eltBytes));
  Value addr = arith::IndexCastOp::create(
      b, loc, b.getI64Type(), arith::AddIOp::create(b, loc, base, bytes));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), addr);
}

Value mlir::tg::cpu::reshapeTensor(OpBuilder &b, Location loc, Value v,
                                   RankedTensorType type) {
  if (v.getType() == type)
    return v;
  auto src = cast<RankedTensorType>(v.getType());
  // Rank 0 on either side uses the empty reassociation (all sizes are 1).
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, v,
                                           ArrayRef<ReassociationIndices>{});
  if (src.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, type, v,
                                         ArrayRef<ReassociationIndices>{});
  auto all = [](int64_t rank) {
    ReassociationIndices dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
    return SmallVector<ReassociationIndices>{dims};
  };
  Value flat = src.getRank() == 1
                   ? v
                   : tensor::CollapseShapeOp::create(b, loc, v, all(src.getRank()));
  if (type.getRank() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(b, loc, type, flat, all(type.getRank()));
}
