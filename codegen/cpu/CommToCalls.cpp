//===- CommToCalls.cpp - tg collectives to runtime calls --------*- C++ -*-===//
//
// tg.all_reduce becomes one call of the artifact's support function
//
//   void tgx_all_reduce_f32(float *data, int64_t n, float scale);
//
// on one flat buffer that holds the whole bucket (so a bucket is one
// message, whatever its tensor count): the operands are copied in, the
// runtime sums the buffer over the ranks in place and scales it (1 for a
// sum, 1/ranks for a mean), and the results are slices of it. The support
// code forwards to the communicator that the runtime installed
// (tgx_set_all_reduce; tg-run's is MPI_Allreduce), so the artifact links no
// MPI and runs unchanged on one process.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

constexpr llvm::StringLiteral kAllReduce = "tgx_all_reduce_f32";

/// `func.func private @tgx_all_reduce_f32(!llvm.ptr, i64, f32)`, declared
/// once per module.
func::FuncOp declareAllReduce(OpBuilder &b, Operation *from) {
  auto module = from->getParentOfType<ModuleOp>();
  if (auto fn = module.lookupSymbol<func::FuncOp>(kAllReduce))
    return fn;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto type =
      b.getFunctionType({ptr, b.getI64Type(), b.getF32Type()}, TypeRange{});
  auto fn = func::FuncOp::create(b, module.getLoc(), kAllReduce, type);
  fn.setPrivate();
  return fn;
}

/// All dimensions of a rank-`rank` tensor in one group (rank 0: none).
SmallVector<ReassociationIndices> allInOne(int64_t rank) {
  if (rank == 0)
    return {};
  ReassociationIndices all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  return {all};
}

struct AllReduceLowering final : OpConversionPattern<AllReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type f32 = rw.getF32Type();
    int64_t total = 0;
    for (Value v : adaptor.getInputs()) {
      auto type = cast<RankedTensorType>(v.getType());
      if (!type.getElementType().isF32())
        return op.emitOpError("the CPU backend communicates f32 tensors, "
                              "not ")
               << type;
      total += type.getNumElements();
    }
    auto flatType = RankedTensorType::get({total}, f32);
    Value flat = tensor::EmptyOp::create(rw, loc, flatType.getShape(), f32);
    int64_t offset = 0;
    auto at = [&](int64_t v) -> OpFoldResult { return rw.getIndexAttr(v); };
    for (Value v : adaptor.getInputs()) {
      auto type = cast<RankedTensorType>(v.getType());
      int64_t n = type.getNumElements();
      auto lineType = RankedTensorType::get({n}, f32);
      Value line = v;
      if (type.getRank() == 0)
        line = tensor::ExpandShapeOp::create(rw, loc, lineType, v,
                                             allInOne(0));
      else if (type.getRank() > 1)
        line = tensor::CollapseShapeOp::create(rw, loc, lineType, v,
                                               allInOne(type.getRank()));
      flat = tensor::InsertSliceOp::create(rw, loc, line, flat, {at(offset)},
                                           {at(n)}, {at(1)});
      offset += n;
    }

    // The buffer may be a view into the arena: its offset is added to the
    // aligned pointer, as the BLAS calls do.
    auto layout = StridedLayoutAttr::get(rw.getContext(), ShapedType::kDynamic,
                                         {1});
    auto bufType = MemRefType::get({total}, f32, layout);
    Value buf = bufferization::ToBufferOp::create(rw, loc, bufType, flat);
    auto meta = memref::ExtractStridedMetadataOp::create(rw, loc, buf);
    Value ptr = cpu::firstElementPointer(rw, loc, meta, 4);
    Value count = arith::ConstantIntOp::create(rw, loc, total, 64);
    float scale =
        op.getOp() == "mean" ? 1.0f / static_cast<float>(op.getRanks()) : 1.0f;
    Value scaleValue =
        arith::ConstantOp::create(rw, loc, rw.getF32FloatAttr(scale));
    func::CallOp::create(rw, loc, declareAllReduce(rw, op),
                         ValueRange{ptr, count, scaleValue});
    Value reduced = bufferization::ToTensorOp::create(
        rw, loc, flatType, buf, rw.getUnitAttr(), rw.getUnitAttr());

    SmallVector<Value> results;
    offset = 0;
    for (Value v : adaptor.getInputs()) {
      auto type = cast<RankedTensorType>(v.getType());
      int64_t n = type.getNumElements();
      auto lineType = RankedTensorType::get({n}, f32);
      Value line = tensor::ExtractSliceOp::create(
          rw, loc, lineType, reduced, {at(offset)}, {at(n)}, {at(1)});
      if (type.getRank() == 0)
        line = tensor::CollapseShapeOp::create(rw, loc, type, line,
                                               allInOne(0));
      else if (type.getRank() > 1)
        line = tensor::ExpandShapeOp::create(rw, loc, type, line,
                                             allInOne(type.getRank()));
      results.push_back(line);
      offset += n;
    }
    rw.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::tg::cpu::populateCommToCallsPatterns(RewritePatternSet &patterns) {
  patterns.add<AllReduceLowering>(patterns.getContext());
}
