//===- ConvertMatmulToBlas.cpp - f32 matmuls to cblas_sgemm -----*- C++ -*-===//
//
// The tg-convert-matmul-to-blas pass. It recognises the contraction through
// linalg's own contraction analysis (mul-add body, one m, n and k
// dimension, no batch), reads transposes from the operand maps and row
// strides from the buffers' strided metadata, and calls CBLAS.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_CONVERTMATMULTOBLASPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

// CBLAS enumerators (cblas.h).
constexpr int32_t kRowMajor = 101, kNoTrans = 111, kTrans = 112;
constexpr llvm::StringLiteral kSgemm = "cblas_sgemm";

/// How one operand is read: whether its map is the transpose of (row, col),
/// or failure when it is neither.
FailureOr<bool> transposed(AffineMap map, unsigned row, unsigned col) {
  if (map.getNumResults() != 2)
    return failure();
  auto r0 = dyn_cast<AffineDimExpr>(map.getResult(0));
  auto r1 = dyn_cast<AffineDimExpr>(map.getResult(1));
  if (!r0 || !r1)
    return failure();
  if (r0.getPosition() == row && r1.getPosition() == col)
    return false;
  if (r0.getPosition() == col && r1.getPosition() == row)
    return true;
  return failure();
}

/// A rank-2 f32 buffer whose rows are contiguous.
bool isRowContiguous(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || type.getRank() != 2 || !type.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides[1] == 1;
}

/// The address of element (0, 0) of `v` and its row stride (i32).
std::pair<Value, Value> pointerAndLeading(OpBuilder &b, Location loc,
                                          Value v) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, v);
  Value ptr = tg::cpu::firstElementPointer(b, loc, meta, 4);
  Value ld = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                        meta.getStrides()[0]);
  return {ptr, ld};
}

struct ConvertMatmulToBlasPass final
    : tg::cpu::impl::ConvertMatmulToBlasPassBase<ConvertMatmulToBlasPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::GenericOp> matmuls;
    module.walk([&](linalg::GenericOp op) {
      if (op.hasPureBufferSemantics() && op.getNumDpsInputs() == 2 &&
          op.getNumDpsInits() == 1 &&
          llvm::all_of(op->getOperands(), isRowContiguous) &&
          linalg::isaContractionOpInterface(op))
        matmuls.push_back(op);
    });
    for (linalg::GenericOp op : matmuls)
      (void)rewrite(op);
  }

  LogicalResult rewrite(linalg::GenericOp op) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || !dims->batch.empty() || dims->m.size() != 1 ||
        dims->n.size() != 1 || dims->k.size() != 1)
      return failure();
    unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    FailureOr<bool> ta = transposed(maps[0], m, k);
    FailureOr<bool> tb = transposed(maps[1], k, n);
    FailureOr<bool> tc = transposed(maps[2], m, n);
    if (failed(ta) || failed(tb) || failed(tc) || *tc)
      return failure();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic) ||
        ranges[m] * ranges[n] * ranges[k] < minSize)
      return failure();

    OpBuilder b(op);
    Location loc = op.getLoc();
    func::FuncOp sgemm = declareSgemm(b);
    auto i32 = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, v, 32);
    };
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    auto [pa, lda] = pointerAndLeading(b, loc, op.getDpsInputs()[0]);
    auto [pb, ldb] = pointerAndLeading(b, loc, op.getDpsInputs()[1]);
    auto [pc, ldc] = pointerAndLeading(b, loc, op.getDpsInits()[0]);
    func::CallOp::create(
        b, loc, sgemm,
        ValueRange{i32(kRowMajor), i32(*ta ? kTrans : kNoTrans),
                   i32(*tb ? kTrans : kNoTrans), i32(ranges[m]),
                   i32(ranges[n]), i32(ranges[k]), one, pa, lda, pb, ldb, one,
                   pc, ldc});
    op.erase();
    return success();
  }

  /// `func.func private @cblas_sgemm(...)`, declared once per module.
  func::FuncOp declareSgemm(OpBuilder &b) {
    ModuleOp module = getOperation();
    if (auto fn = module.lookupSymbol<func::FuncOp>(kSgemm))
      return fn;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    Type i32 = b.getI32Type(), f32 = b.getF32Type();
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    auto type = b.getFunctionType(
        {i32, i32, i32, i32, i32, i32, f32, ptr, i32, ptr, i32, f32, ptr, i32},
        {});
    auto fn = func::FuncOp::create(b, module.getLoc(), kSgemm, type);
    fn.setPrivate();
    return fn;
  }
};

} // namespace
