//===- AttentionCommon.cpp - pieces of both attention generators -*- C++ -*-===//
//
// See AttentionCommon.h.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/AttentionCommon.h"
#include "codegen/nvptx/SimtScalar.h"

#include "dialects/TGOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <limits>

namespace tg::nvptx::detail {

using namespace mlir;

namespace {
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
} // namespace

AttnShape attentionShape(Operation *op) {
  bool forward = isa<mlir::tg::AttentionOp>(op);
  Value q = op->getOperand(forward ? 0 : 2), k = op->getOperand(forward ? 1 : 3);
  AttnShape s;
  ArrayRef<int64_t> qs = shapeOf(q);
  s.bh = qs[0] * qs[1];
  s.tq = qs[2];
  s.tk = shapeOf(k)[2];
  s.d = qs[3];
  s.bf16 = getElementTypeOrSelf(q.getType()).isBF16();
  s.causal = op->hasAttr("causal");
  s.scale = cast<FloatAttr>(op->getAttr("scale")).getValueAsDouble();
  return s;
}

AttnBase::AttnBase(KernelBuilder &w, const AttnShape &s)
    : w(w), b(w.b), loc(w.loc), s(s) {
  elt = s.bf16 ? Type(b.getBF16Type()) : Type(b.getF16Type());
  c2 = s.scale * kLog2e;
}

std::vector<Quad> AttnBase::quads(Value acc) {
  auto n = cast<LLVM::LLVMStructType>(acc.getType()).getBody().size() / 4;
  std::vector<Quad> q(n);
  for (size_t t = 0; t < n; ++t)
    for (int e = 0; e < 4; ++e)
      q[t][e] = w.extractvalue(acc, static_cast<int64_t>(4 * t + e));
  return q;
}

Value AttnBase::fromQuads(Type ty, const std::vector<Quad> &q) {
  Value r = LLVM::UndefOp::create(b, loc, ty);
  for (size_t t = 0; t < q.size(); ++t)
    for (int e = 0; e < 4; ++e)
      r = LLVM::InsertValueOp::create(b, loc, r, q[t][e],
                                      ArrayRef<int64_t>{int64_t(4 * t + e)});
  return r;
}

Value AttnBase::matrix(Value base, int64_t rows, int64_t cols, Type e) {
  return w.gep(base, w.mul(w.zext64(bh), w.i64c(rows * cols)), e);
}

Value AttnBase::ex2(Value x) {
  // ex2.approx: relative error 2^-22; -inf gives +0, which is what masked
  // scores need.
  return LLVM::InlineAsmOp::create(
             b, loc, w.f32, ValueRange{x}, "ex2.approx.ftz.f32 $0, $1;", "=f,f",
             /*has_side_effects=*/false, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
             ArrayAttr())
      .getResult(0);
}

Value AttnBase::shflXor(Value x, int m) {
  return NVVM::ShflOp::create(b, loc, x.getType(), w.i32c(-1), x, w.i32c(m),
                              w.i32c(0x1f), NVVM::ShflKind::bfly, UnitAttr())
      .getResult();
}

Value AttnBase::fmax(Value x, Value y) { return LLVM::MaxNumOp::create(b, loc, x, y); }
Value AttnBase::fsub(Value x, Value y) { return LLVM::FSubOp::create(b, loc, x, y); }
void AttnBase::closeIf() {
  b.setInsertionPointAfter(b.getInsertionBlock()->getParentOp());
}

Value AttnBase::validKey(Value query, Value key) {
  Value ok = w.ult(key, w.i32c(s.tk));
  ok = w.and_(ok, w.ult(query, w.i32c(s.tq)));
  if (s.causal)
    ok = w.and_(ok, w.icmp(LLVM::ICmpPredicate::ule, key, query));
  return ok;
}

void AttnBase::onlineSoftmax(std::vector<Quad> &x, Value row, Value col0,
                             Value m[2], Value l[2], Value alpha[2]) {
  // Scaled, masked scores in base 2, and the row maxima (rows g, g+8).
  Value negInf = w.f32c(-std::numeric_limits<double>::infinity());
  Value rowMax[2] = {negInf, negInf};
  for (size_t t = 0; t < x.size(); ++t)
    for (int e = 0; e < 4; ++e) {
      Value r = w.addi(row, e >= 2 ? 8 : 0);
      Value col = w.addi(col0, static_cast<int64_t>(t) * 8 + (e & 1));
      x[t][e] = w.select(validKey(r, col), w.fmul(x[t][e], w.f32c(c2)), negInf);
      rowMax[e / 2] = fmax(rowMax[e / 2], x[t][e]);
    }
  for (int h = 0; h < 2; ++h) {
    rowMax[h] = fmax(rowMax[h], shflXor(rowMax[h], 1));
    rowMax[h] = fmax(rowMax[h], shflXor(rowMax[h], 2));
    Value mNew = fmax(m[h], rowMax[h]);
    // A row with every score masked so far keeps max -inf: subtract 0
    // instead, so exp gives 0 and not NaN.
    Value isInf = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::oeq, mNew, negInf);
    Value base = w.select(isInf, w.f32c(0), mNew);
    alpha[h] = ex2(fsub(m[h], base));
    m[h] = w.select(isInf, negInf, mNew);
    l[h] = w.fmul(l[h], alpha[h]);
    for (auto &t : x)
      for (int e = 2 * h; e < 2 * h + 2; ++e) {
        t[e] = ex2(fsub(t[e], base));
        l[h] = w.fadd(l[h], t[e]);
      }
  }
}

Value AttnBase::rowDot(Value gdO, Value gO, Value row, Value part,
                       int perRow) {
  int cols = static_cast<int>(s.d) / perRow;
  Type v8 = VectorType::get({8}, elt), v8f = VectorType::get({8}, w.f32);
  Value base = w.add(w.mul(w.zext64(row), w.i64c(s.d)),
                     w.zext64(w.muli(part, cols)));
  Value sum = w.zero(v8f);
  for (int c = 0; c < cols; c += 8) {
    Value at = w.add(base, w.i64c(c));
    Value x = LLVM::LoadOp::create(b, loc, v8, w.gep(gdO, at, elt), 16);
    Value y = LLVM::LoadOp::create(b, loc, v8, w.gep(gO, at, elt), 16);
    x = LLVM::FPExtOp::create(b, loc, v8f, x);
    y = LLVM::FPExtOp::create(b, loc, v8f, y);
    sum = LLVM::FMAOp::create(b, loc, x, y, sum);
  }
  Value d = w.f32c(0);
  for (int i = 0; i < 8; ++i)
    d = w.fadd(d, LLVM::ExtractElementOp::create(b, loc, sum, w.i32c(i)));
  for (int m = 1; m < perRow; m *= 2)
    d = w.fadd(d, shflXor(d, m));
  return d;
}

void AttnBase::rescale(std::vector<Quad> &acc, const Value alpha[2]) {
  for (Quad &q : acc)
    for (int e = 0; e < 4; ++e)
      q[e] = w.fmul(q[e], alpha[e / 2]);
}

void AttnBase::storeOutput(Value o, Value lse, Value row,
                           const std::vector<Quad> &acc, const Value m[2],
                           const Value l[2]) {
  // The per-thread partial sums cover the thread's columns; the quad's
  // four threads together hold the row.
  Value inv[2], lseV[2];
  for (int h = 0; h < 2; ++h) {
    Value sum = w.fadd(l[h], shflXor(l[h], 1));
    sum = w.fadd(sum, shflXor(sum, 2));
    inv[h] = LLVM::FDivOp::create(b, loc, w.f32c(1), sum);
    lseV[h] = w.fadd(w.fmul(m[h], w.f32c(1 / kLog2e)), emitLog(w, sum));
  }
  storeRows(matrix(o, s.tq, s.d, elt), s.tq, row, acc, inv[0], inv[1]);
  Value gL = matrix(lse, s.tq, 1, w.f32);
  for (int h = 0; h < 2; ++h) {
    Value r = w.addi(row, h * 8);
    w.openIf(w.and_(w.ult(r, w.i32c(s.tq)),
                    w.icmp(LLVM::ICmpPredicate::eq, w.andi(lane, 3), w.i32c(0))));
    LLVM::StoreOp::create(b, loc, lseV[h], w.gep(gL, w.zext64(r), w.f32));
    closeIf();
  }
}

void AttnBase::storeRows(Value mat, int64_t rowBound, Value row,
                         const std::vector<Quad> &acc, Value mulA, Value mulB) {
  Type v2 = VectorType::get({2}, elt);
  for (int h = 0; h < 2; ++h) {
    Value r = w.addi(row, h * 8);
    w.openIf(w.ult(r, w.i32c(rowBound)));
    Value rowOff = w.mul(w.zext64(r), w.i64c(s.d));
    Value m = h ? mulB : mulA;
    for (size_t t = 0; t < acc.size(); ++t) {
      Value v = LLVM::UndefOp::create(b, loc, w.v2f32);
      for (int e = 0; e < 2; ++e)
        v = LLVM::InsertElementOp::create(b, loc, v, w.fmul(acc[t][2 * h + e], m),
                                          w.i32c(e));
      Value col = w.zext64(w.addi(q2, static_cast<int64_t>(t) * 8));
      Value ptr = w.gep(mat, w.add(rowOff, col), elt);
      LLVM::StoreOp::create(b, loc, LLVM::FPTruncOp::create(b, loc, v2, v), ptr, 4);
    }
    closeIf();
  }
}

} // namespace tg::nvptx::detail
