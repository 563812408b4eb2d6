//===- SimtScalar.cpp - one element of a tg elementwise op on the GPU -*- C++ -*-===//
//
// See SimtScalar.h for the compute types and the accuracy of each function.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/SimtScalar.h"

#include "dialects/TGOps.h"
#include "tgc/Philox.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace tg::nvptx::detail {

using namespace mlir;
namespace tgd = mlir::tg;

namespace {

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

bool isHalf(Type elem) { return isa<BFloat16Type, Float16Type>(elem); }

/// `text` (one PTX instruction, $0 = f32 result, $1 = f32 operand).
Value asmF32(KernelBuilder &w, StringRef text, Value x) {
  return LLVM::InlineAsmOp::create(
             w.b, w.loc, w.f32, ValueRange{x}, text, "=f,f",
             /*has_side_effects=*/false, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
             ArrayAttr())
      .getResult(0);
}

Value fsub(KernelBuilder &w, Value x, Value y) {
  return LLVM::FSubOp::create(w.b, w.loc, x, y);
}
Value fdiv(KernelBuilder &w, Value x, Value y) {
  return LLVM::FDivOp::create(w.b, w.loc, x, y);
}
Value fma(KernelBuilder &w, Value x, Value y, Value z) {
  return LLVM::FMAOp::create(w.b, w.loc, x, y, z);
}
Value fabs(KernelBuilder &w, Value x) {
  return LLVM::FAbsOp::create(w.b, w.loc, x);
}
Value fcmp(KernelBuilder &w, LLVM::FCmpPredicate p, Value x, Value y) {
  return LLVM::FCmpOp::create(w.b, w.loc, p, x, y);
}
Value copysign(KernelBuilder &w, Value mag, Value sign) {
  return LLVM::CopySignOp::create(w.b, w.loc, mag, sign);
}

/// sum(coeffs[k] * x^k), by Horner's rule with fma.
Value polynomial(KernelBuilder &w, Value x, ArrayRef<double> coeffs) {
  Value acc = w.f32c(coeffs.back());
  for (int k = static_cast<int>(coeffs.size()) - 2; k >= 0; --k)
    acc = fma(w, acc, x, w.f32c(coeffs[k]));
  return acc;
}

/// A constant in the compute type `t` (float or integer).
Value constantOf(KernelBuilder &w, Type t, double v) {
  if (t == w.f32)
    return w.f32c(v);
  if (auto ft = dyn_cast<FloatType>(t))
    return LLVM::ConstantOp::create(w.b, w.loc, t, w.b.getFloatAttr(ft, v));
  if (t == w.i1)
    return LLVM::ConstantOp::create(w.b, w.loc, t,
                                    w.b.getIntegerAttr(t, v != 0 ? 1 : 0));
  if (t == w.i64)
    return w.i64c(static_cast<int64_t>(v));
  if (t == w.i32)
    return w.i32c(static_cast<int64_t>(v));
  return LLVM::ConstantOp::create(w.b, w.loc, t,
                                  w.b.getIntegerAttr(t, static_cast<int64_t>(v)));
}

/// Rounds an f32 compute value to a 16-bit result type and widens it back,
/// so the next op sees the value the tg program stored.
Value roundTo(KernelBuilder &w, Value v, Type elem) {
  if (!isHalf(elem) || v.getType() != w.f32)
    return v;
  return toCompute(w, toStorage(w, v, elem), elem);
}

/// Converts a compute value of element type `from` to the compute type of
/// `to`, as tg.cast does (see its description and the reference driver).
Value emitCast(KernelBuilder &w, Value v, Type from, Type to) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  Type src = computeType(from), dst = computeType(to);
  if (isa<FloatType>(src) && isa<FloatType>(dst)) {
    unsigned sw = src.getIntOrFloatBitWidth(), dw = dst.getIntOrFloatBitWidth();
    if (sw < dw)
      v = LLVM::FPExtOp::create(b, loc, dst, v);
    else if (sw > dw)
      v = LLVM::FPTruncOp::create(b, loc, dst, v);
    return roundTo(w, v, to);
  }
  if (isa<FloatType>(src)) {
    // To bool: nonzero (NaN included) is true, as in the reference.
    if (dst == w.i1)
      return fcmp(w, LLVM::FCmpPredicate::une, v, constantOf(w, src, 0));
    // Truncation toward zero; through i64 so that i32 wraps (two's
    // complement) like the reference instead of giving poison.
    Value i = LLVM::FPToSIOp::create(b, loc, w.i64, v);
    return dst == w.i64 ? i : LLVM::TruncOp::create(b, loc, dst, i).getResult();
  }
  if (isa<FloatType>(dst)) {
    if (src == w.i1)
      v = LLVM::UIToFPOp::create(b, loc, dst, v);
    else
      v = LLVM::SIToFPOp::create(b, loc, dst, v);
    return roundTo(w, v, to);
  }
  // Integer to integer.
  if (dst == w.i1)
    return w.icmp(LLVM::ICmpPredicate::ne, v, constantOf(w, src, 0));
  unsigned sw = src.getIntOrFloatBitWidth(), dw = dst.getIntOrFloatBitWidth();
  if (sw == dw)
    return v;
  if (sw > dw)
    return LLVM::TruncOp::create(b, loc, dst, v);
  if (src == w.i1)
    return LLVM::ZExtOp::create(b, loc, dst, v);
  return LLVM::SExtOp::create(b, loc, dst, v);
}

/// pow(x, y) in f32 with C's special cases: pow(x, 0) = pow(1, y) = 1; a
/// negative base gives NaN unless y is an integer (then the sign of x^y).
Value emitPow(KernelBuilder &w, Value x, Value y) {
  Value mag = emitExp(w, w.fmul(y, emitLog(w, fabs(w, x))));
  Value yInt = fcmp(w, LLVM::FCmpPredicate::oeq,
                    LLVM::RintOp::create(w.b, w.loc, y), y);
  // y odd: y/2 is not an integer (|y| >= 2^24 is always even in f32).
  Value half = w.fmul(y, w.f32c(0.5));
  Value yOdd = w.and_(yInt, fcmp(w, LLVM::FCmpPredicate::one,
                                 LLVM::RintOp::create(w.b, w.loc, half), half));
  Value neg = fcmp(w, LLVM::FCmpPredicate::olt, x, w.f32c(0));
  Value r = w.select(yOdd, copysign(w, mag, x), mag);
  r = w.select(w.and_(neg, w.xor_(yInt, constantOf(w, w.i1, 1))),
               w.f32c(NAN), r);
  Value one = w.f32c(1);
  Value trivial = w.or_(fcmp(w, LLVM::FCmpPredicate::oeq, y, w.f32c(0)),
                        fcmp(w, LLVM::FCmpPredicate::oeq, x, one));
  return w.select(trivial, one, r);
}

/// sin or cos in f32: x reduced to [-pi, pi] by k = rint(x / 2pi) with a
/// two-constant Cody-Waite split of 2pi, then the approx instruction.
Value emitSinCos(KernelBuilder &w, Value x, bool sin) {
  Value k = LLVM::RintOp::create(w.b, w.loc,
                                 w.fmul(x, w.f32c(0.15915494309189535)));
  Value r = fma(w, k, w.f32c(-6.28125), x);
  r = fma(w, k, w.f32c(-1.9353071795864769e-3), r);
  return asmF32(w, sin ? "sin.approx.f32 $0, $1;" : "cos.approx.f32 $0, $1;",
                r);
}

/// x · Phi(x) in either GELU form.
Value emitGelu(KernelBuilder &w, Value x, tgd::GeluApproximation approx) {
  Value inner;
  if (approx == tgd::GeluApproximation::tanh) {
    Value x3 = w.fmul(w.fmul(x, x), x);
    inner = emitTanh(
        w, w.fmul(fma(w, x3, w.f32c(0.044715), x), w.f32c(0.7978845608028654)));
  } else {
    inner = emitErf(w, w.fmul(x, w.f32c(0.7071067811865476)));
  }
  return w.fmul(w.fmul(x, w.f32c(0.5)), w.fadd(inner, w.f32c(1)));
}

/// Ops whose float form needs f32 (the approximations are f32 only).
bool needsF32(Operation *op) {
  return isa<tgd::ExpOp, tgd::LogOp, tgd::TanhOp, tgd::ErfOp, tgd::CosOp,
             tgd::SinOp, tgd::SigmoidOp, tgd::SiluOp, tgd::GeluOp, tgd::PowOp>(
      op);
}

/// The linear index as i64.
Value linear64(KernelBuilder &w, const ElementPosition &pos) {
  return pos.linear.getType() == w.i64 ? pos.linear : w.zext64(pos.linear);
}

Value emitDropout(KernelBuilder &w, tgd::DropoutOp op, Value x, Value seed,
                  const ElementPosition &pos) {
  double p = op.getP().convertToDouble();
  auto stream = static_cast<uint64_t>(op.getStreamAttr().getInt());
  Value word = emitPhiloxWord(w, seed, stream, linear64(w, pos));
  Value keep = w.icmp(LLVM::ICmpPredicate::uge, w.zext64(word),
                      w.i64c(static_cast<int64_t>(tgc::dropoutThreshold(p))));
  // The CPU backend multiplies by the factor in the element type, so the
  // factor is rounded to it first; x * 0 keeps a dropped inf or NaN NaN.
  Type elem = elementTypeOf(op.getResult());
  Value factor = roundTo(w, constantOf(w, x.getType(), 1.0 / (1.0 - p)), elem);
  Value scale = w.select(keep, factor, constantOf(w, x.getType(), 0));
  return w.fmul(x, scale);
}

} // namespace

//===----------------------------------------------------------------------===//
// Types, loads, stores, constants
//===----------------------------------------------------------------------===//

Type computeType(Type elem) {
  if (isHalf(elem))
    return Float32Type::get(elem.getContext());
  return elem;
}

Type storageType(Type elem) {
  if (elem.isInteger(1))
    return IntegerType::get(elem.getContext(), 8);
  return elem;
}

/// `t` with the shape of `like` when `like` is a vector.
static Type likeShape(Type t, Type like) {
  if (auto v = dyn_cast<VectorType>(like))
    return VectorType::get(v.getShape(), t);
  return t;
}

Value toCompute(KernelBuilder &w, Value stored, Type elem) {
  if (isHalf(elem))
    return LLVM::FPExtOp::create(w.b, w.loc, likeShape(w.f32, stored.getType()),
                                 stored);
  if (elem.isInteger(1))
    return LLVM::TruncOp::create(w.b, w.loc, likeShape(w.i1, stored.getType()),
                                 stored);
  return stored;
}

Value toStorage(KernelBuilder &w, Value v, Type elem) {
  if (isHalf(elem))
    return LLVM::FPTruncOp::create(w.b, w.loc, likeShape(elem, v.getType()), v);
  if (elem.isInteger(1))
    return LLVM::ZExtOp::create(
        w.b, w.loc, likeShape(storageType(elem), v.getType()), v);
  return v;
}

Value loadElement(KernelBuilder &w, Value base, Value index, Type elem) {
  Type st = storageType(elem);
  Value p = w.gep(base, index, st);
  Value v = LLVM::LoadOp::create(w.b, w.loc, st, p,
                                 /*alignment=*/st.getIntOrFloatBitWidth() / 8);
  return toCompute(w, v, elem);
}

void storeElement(KernelBuilder &w, Value base, Value index, Type elem, Value v) {
  Type st = storageType(elem);
  Value p = w.gep(base, index, st);
  LLVM::StoreOp::create(w.b, w.loc, toStorage(w, v, elem), p,
                        /*alignment=*/st.getIntOrFloatBitWidth() / 8);
}

Value scalarConstant(KernelBuilder &w, Type elem, double v) {
  Type ct = computeType(elem);
  if (isHalf(elem)) {
    // The value the tensor holds: rounded to the 16-bit type.
    llvm::APFloat f(v);
    bool lost = false;
    f.convert(cast<FloatType>(elem).getFloatSemantics(),
              llvm::APFloat::rmNearestTiesToEven, &lost);
    v = f.convertToDouble();
  }
  return constantOf(w, ct, v);
}

FailureOr<Value> emitSplatConstant(KernelBuilder &w, Operation *constantOp) {
  auto c = dyn_cast<tgd::ConstantOp>(constantOp);
  if (!c)
    return constantOp->emitOpError("is not a tg.constant");
  auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!attr || !attr.isSplat())
    return constantOp->emitOpError(
        "the GPU backend folds only splat constants into kernels");
  Type elem = attr.getElementType();
  double v;
  if (isa<FloatType>(elem))
    v = attr.getSplatValue<APFloat>().convertToDouble();
  else if (elem.isInteger(1))
    v = attr.getSplatValue<bool>() ? 1 : 0;
  else
    // Integers exactly: an i64 beyond 2^53 would lose bits through double.
    return LLVM::ConstantOp::create(
               w.b, w.loc, elem,
               w.b.getIntegerAttr(elem, attr.getSplatValue<APInt>()))
        .getResult();
  return scalarConstant(w, elem, v);
}

//===----------------------------------------------------------------------===//
// Transcendental functions
//===----------------------------------------------------------------------===//

Value emitExp(KernelBuilder &w, Value x) {
  // x = t·ln2 + r with t = rint(x·log2 e) and r exact to f32 (ln2 split in
  // two for the fma), so ex2.approx sees a small argument; 2^t exactly.
  Value t = LLVM::RintOp::create(w.b, w.loc,
                                 w.fmul(x, w.f32c(1.4426950408889634)));
  Value r = fma(w, t, w.f32c(-0.693145751953125), x);
  r = fma(w, t, w.f32c(-1.4286068203094172e-6), r);
  Value er = asmF32(w, "ex2.approx.f32 $0, $1;",
                    w.fmul(r, w.f32c(1.4426950408889634)));
  Value et = asmF32(w, "ex2.approx.f32 $0, $1;", t);
  // For |x| large t is ±inf/NaN-free: x = ±inf gives t = ±inf, r = NaN;
  // take ex2(t) directly there (inf or 0), and x itself when NaN.
  Value finite = fcmp(w, LLVM::FCmpPredicate::olt, fabs(w, x), w.f32c(INFINITY));
  return w.select(finite, w.fmul(er, et), asmF32(w, "ex2.approx.f32 $0, $1;", x));
}

Value emitLog(KernelBuilder &w, Value x) {
  // lg2.approx alone is off by up to 2^-22 absolute near x = 1, which is
  // the whole value there (Adam's 1 - beta^t goes through pow = exp(y log x)).
  // So: x = 2^e · m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
  // s = (m - 1)/(m + 1), |s| < 0.172, by its odd series through s^13
  // (truncation below 6e-11 relative); plus e · ln 2 (split in two).
  OpBuilder &b = w.b;
  Location loc = w.loc;
  // Subnormals: scale by 2^23 first so the exponent field is meaningful.
  Value tiny = fcmp(w, LLVM::FCmpPredicate::olt, x, w.f32c(0x1p-126));
  Value xs = w.select(tiny, w.fmul(x, w.f32c(0x1p23)), x);
  Value bits = LLVM::BitcastOp::create(b, loc, w.i32, xs);
  Value e = w.sub(w.andi(w.shri(bits, 23), 0xff), w.i32c(127));
  Value m = LLVM::BitcastOp::create(
      b, loc, w.f32, w.or_(w.andi(bits, 0x7fffff), w.i32c(0x3f800000)));
  Value big = fcmp(w, LLVM::FCmpPredicate::ogt, m, w.f32c(1.4142135623730951));
  m = w.select(big, w.fmul(m, w.f32c(0.5)), m);
  e = w.select(big, w.addi(e, 1), e);
  e = w.select(tiny, w.sub(e, w.i32c(23)), e);
  Value one = w.f32c(1);
  Value sv = fdiv(w, fsub(w, m, one), w.fadd(m, one));
  Value s2 = w.fmul(sv, sv);
  Value series = w.fmul(
      w.fmul(sv, w.f32c(2)),
      polynomial(w, s2,
                 {1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13}));
  Value ef = LLVM::SIToFPOp::create(b, loc, w.f32, e);
  Value r = fma(w, ef, w.f32c(0.693145751953125),
                fma(w, ef, w.f32c(1.4286068203094172e-6), series));
  // 0, negatives, inf and NaN: lg2.approx gives -inf, NaN, inf, NaN.
  Value normal = w.and_(fcmp(w, LLVM::FCmpPredicate::ogt, x, w.f32c(0)),
                        fcmp(w, LLVM::FCmpPredicate::olt, x, w.f32c(INFINITY)));
  return w.select(normal, r, asmF32(w, "lg2.approx.f32 $0, $1;", x));
}

Value emitSigmoid(KernelBuilder &w, Value x) {
  Value one = w.f32c(1);
  return fdiv(w, one, w.fadd(one, emitExp(w, LLVM::FNegOp::create(w.b, w.loc, x))));
}

Value emitTanh(KernelBuilder &w, Value x) {
  // Small |x|: the odd Taylor series through x^17 (relative error below
  // 5e-9 for |x| < 0.55); beyond, 1 - 2/(e^2|x| + 1) loses at most a bit to
  // cancellation and tends to 1 (e^2|x| = inf gives exactly 1).
  Value ax = fabs(w, x);
  Value x2 = w.fmul(x, x);
  Value small = w.fmul(
      x, polynomial(w, x2,
                    {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835,
                     -1382.0 / 155925, 21844.0 / 6081075,
                     -929569.0 / 638512875, 6404582.0 / 10854718875}));
  Value one = w.f32c(1);
  Value e = emitExp(w, w.fmul(ax, w.f32c(2)));
  Value large = copysign(w, fsub(w, one, fdiv(w, w.f32c(2), w.fadd(e, one))), x);
  return w.select(fcmp(w, LLVM::FCmpPredicate::olt, ax, w.f32c(0.55)), small,
                  large);
}

Value emitErf(KernelBuilder &w, Value x) {
  // |x| < 1: erf(x) = 2/sqrt(pi) · sum (-1)^n x^(2n+1) / (n! (2n+1)), 12
  // terms (truncation below 1e-10). |x| >= 1: 1 - erfc(|x|) with Numerical
  // Recipes' erfcc, erfc(z) = t·exp(-z² + P(t)), t = 1/(1 + z/2), whose
  // fractional error is below 1.2e-7 (so below 2e-8 absolute for erf).
  Value ax = fabs(w, x);
  SmallVector<double, 12> taylor;
  double fact = 1;
  for (int n = 0; n < 12; ++n) {
    if (n > 0)
      fact *= n;
    taylor.push_back((n % 2 ? -1.0 : 1.0) / (fact * (2 * n + 1)) *
                     1.1283791670955126);
  }
  Value small = w.fmul(x, polynomial(w, w.fmul(x, x), taylor));
  Value one = w.f32c(1);
  Value t = fdiv(w, one, fma(w, ax, w.f32c(0.5), one));
  Value p = polynomial(w, t,
                       {-1.26551223, 1.00002368, 0.37409196, 0.09678418,
                        -0.18628806, 0.27886807, -1.13520398, 1.48851587,
                        -0.82215223, 0.17087277});
  Value erfc = w.fmul(t, emitExp(w, fsub(w, p, w.fmul(ax, ax))));
  Value large = copysign(w, fsub(w, one, erfc), x);
  return w.select(fcmp(w, LLVM::FCmpPredicate::olt, ax, one), small, large);
}

//===----------------------------------------------------------------------===//
// Philox
//===----------------------------------------------------------------------===//

std::array<Value, 4> emitPhiloxBlock(KernelBuilder &w, std::array<Value, 4> c,
                                     std::array<Value, 2> k) {
  auto u32 = [&](uint32_t v) { return w.i32c(static_cast<int32_t>(v)); };
  // (hi, lo) of the 64-bit product of a constant and a word. mul.hi.u32
  // directly: written as an i64 multiply, LLVM keeps the whole round in
  // 64-bit registers and multiplies.
  auto mulWide = [&](uint32_t m, Value x) -> std::pair<Value, Value> {
    Value mc = u32(m);
    Value hi = LLVM::InlineAsmOp::create(
                   w.b, w.loc, w.i32, ValueRange{mc, x}, "mul.hi.u32 $0, $1, $2;",
                   "=r,r,r", /*has_side_effects=*/false,
                   /*is_align_stack=*/false,
                   LLVM::tailcallkind::TailCallKind::None,
                   LLVM::AsmDialectAttr(), ArrayAttr())
                   .getResult(0);
    return {hi, w.mul(mc, x)};
  };
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] = w.add(k[0], u32(0x9E3779B9u));
      k[1] = w.add(k[1], u32(0xBB67AE85u));
    }
    auto [hi0, lo0] = mulWide(0xD2511F53u, c[0]);
    auto [hi1, lo1] = mulWide(0xCD9E8D57u, c[2]);
    c = {w.xor_(w.xor_(hi1, c[1]), k[0]), lo1, w.xor_(w.xor_(hi0, c[3]), k[1]),
         lo0};
  }
  return c;
}

Value emitPhiloxWord(KernelBuilder &w, Value seed, uint64_t stream, Value index) {
  auto lo = [&](Value v) {
    return LLVM::TruncOp::create(w.b, w.loc, w.i32, v).getResult();
  };
  auto hi = [&](Value v) { return lo(w.lshr(v, w.i64c(32))); };
  Value block = w.lshr(index, w.i64c(2));
  std::array<Value, 4> words = emitPhiloxBlock(
      w,
      {lo(block), hi(block), w.i32c(static_cast<int32_t>(uint32_t(stream))),
       w.i32c(static_cast<int32_t>(uint32_t(stream >> 32)))},
      {lo(seed), hi(seed)});
  Value sel = lo(w.and_(index, w.i64c(3)));
  Value r = words[0];
  for (int k = 1; k < 4; ++k)
    r = w.select(w.icmp(LLVM::ICmpPredicate::eq, sel, w.i32c(k)), words[k], r);
  return r;
}

//===----------------------------------------------------------------------===//
// The op switch
//===----------------------------------------------------------------------===//

bool isScalarOp(Operation *op) {
  return isa<tgd::AddOp, tgd::SubOp, tgd::MulOp, tgd::DivOp, tgd::PowOp,
             tgd::MaximumOp, tgd::MinimumOp, tgd::CmpOp, tgd::SelectOp,
             tgd::NegOp, tgd::AbsOp, tgd::ExpOp, tgd::LogOp, tgd::SqrtOp,
             tgd::RsqrtOp, tgd::TanhOp, tgd::SigmoidOp, tgd::ReluOp,
             tgd::SiluOp, tgd::GeluOp, tgd::ErfOp, tgd::CosOp, tgd::SinOp,
             tgd::CastOp, tgd::BroadcastToOp, tgd::CausalMaskOp,
             tgd::DropoutOp, tgd::OneHotOp, tgd::ConstantOp>(op);
}

FailureOr<Value> emitScalarOp(KernelBuilder &w, Operation *op,
                              ArrayRef<Value> in, const ElementPosition *pos) {
  if (!isScalarOp(op))
    return op->emitOpError("the GPU backend has no scalar form of this op");
  if (auto c = dyn_cast<tgd::ConstantOp>(op))
    return emitSplatConstant(w, c);
  if (in.size() != op->getNumOperands())
    return op->emitOpError("scalar code asked with ")
           << in.size() << " operand values for " << op->getNumOperands()
           << " operands";
  if (isa<tgd::CausalMaskOp, tgd::DropoutOp, tgd::OneHotOp>(op) && !pos)
    return op->emitOpError("needs the element position for its scalar code");
  Type resElem = elementTypeOf(op->getResult(0));
  Type ct = computeType(resElem);
  // The operand the float/integer choice follows (cmp's result is i1).
  Type argElem = isa<tgd::SelectOp>(op) ? elementTypeOf(op->getOperand(1))
                                        : elementTypeOf(op->getOperand(0));
  Type at = computeType(argElem);
  bool isFloat = isa<FloatType>(at);
  if (needsF32(op) && at != w.f32)
    return op->emitOpError("the GPU backend computes this op only for f32, "
                           "bf16 and f16, not ")
           << argElem;
  OpBuilder &b = w.b;
  Location loc = w.loc;
  using P = LLVM::ICmpPredicate;
  using FP = LLVM::FCmpPredicate;

  Value r = llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](tgd::AddOp) {
        return isFloat ? w.fadd(in[0], in[1]) : w.add(in[0], in[1]);
      })
      .Case([&](tgd::SubOp) {
        return isFloat ? fsub(w, in[0], in[1]) : w.sub(in[0], in[1]);
      })
      .Case([&](tgd::MulOp) {
        return isFloat ? w.fmul(in[0], in[1]) : w.mul(in[0], in[1]);
      })
      .Case([&](tgd::DivOp) {
        if (isFloat)
          return fdiv(w, in[0], in[1]);
        // Integer division truncates (the reference's trunc(a / b)); a zero
        // divisor gives 0 rather than undefined behaviour.
        Value zero = constantOf(w, at, 0);
        Value isZero = w.icmp(P::eq, in[1], zero);
        Value d = w.select(isZero, constantOf(w, at, 1), in[1]);
        return w.select(isZero, zero,
                        LLVM::SDivOp::create(b, loc, in[0], d).getResult());
      })
      .Case([&](tgd::PowOp) { return emitPow(w, in[0], in[1]); })
      .Case([&](tgd::MaximumOp) {
        // NaN-propagating, as the reference and PyTorch.
        return isFloat ? LLVM::MaximumOp::create(b, loc, in[0], in[1]).getResult()
                       : LLVM::SMaxOp::create(b, loc, in[0], in[1]).getResult();
      })
      .Case([&](tgd::MinimumOp) {
        return isFloat ? LLVM::MinimumOp::create(b, loc, in[0], in[1]).getResult()
                       : LLVM::SMinOp::create(b, loc, in[0], in[1]).getResult();
      })
      .Case([&](tgd::CmpOp c) {
        // `ne` is unordered (NaN != x is true), the rest ordered, as in C.
        static constexpr FP fps[] = {FP::oeq, FP::une, FP::olt,
                                     FP::ole, FP::ogt, FP::oge};
        static constexpr P ips[] = {P::eq, P::ne, P::slt, P::sle, P::sgt, P::sge};
        auto i = static_cast<unsigned>(c.getPredicate());
        return isFloat ? fcmp(w, fps[i], in[0], in[1])
                       : w.icmp(ips[i], in[0], in[1]);
      })
      .Case([&](tgd::SelectOp) { return w.select(in[0], in[1], in[2]); })
      .Case([&](tgd::NegOp) {
        return isFloat ? LLVM::FNegOp::create(b, loc, in[0]).getResult()
                       : w.sub(constantOf(w, at, 0), in[0]);
      })
      .Case([&](tgd::AbsOp) {
        return isFloat ? fabs(w, in[0])
                       : LLVM::AbsOp::create(b, loc, at, in[0],
                                             /*is_int_min_poison=*/false)
                             .getResult();
      })
      .Case([&](tgd::ExpOp) { return emitExp(w, in[0]); })
      .Case([&](tgd::LogOp) { return emitLog(w, in[0]); })
      .Case([&](tgd::SqrtOp) {
        // llvm.sqrt is sqrt.rn (correctly rounded) without fast-math flags.
        return LLVM::SqrtOp::create(b, loc, in[0]).getResult();
      })
      .Case([&](tgd::RsqrtOp) {
        return fdiv(w, constantOf(w, at, 1),
                    LLVM::SqrtOp::create(b, loc, in[0]).getResult());
      })
      .Case([&](tgd::TanhOp) { return emitTanh(w, in[0]); })
      .Case([&](tgd::ErfOp) { return emitErf(w, in[0]); })
      .Case([&](tgd::CosOp) { return emitSinCos(w, in[0], /*sin=*/false); })
      .Case([&](tgd::SinOp) { return emitSinCos(w, in[0], /*sin=*/true); })
      .Case([&](tgd::SigmoidOp) { return emitSigmoid(w, in[0]); })
      .Case([&](tgd::ReluOp) {
        Value zero = constantOf(w, at, 0);
        if (!isFloat)
          return LLVM::SMaxOp::create(b, loc, in[0], zero).getResult();
        // x < 0 ? 0 : x keeps NaN NaN (the reference's formula).
        return w.select(fcmp(w, FP::olt, in[0], zero), zero, in[0]);
      })
      .Case([&](tgd::SiluOp) { return w.fmul(in[0], emitSigmoid(w, in[0])); })
      .Case([&](tgd::GeluOp g) {
        return emitGelu(w, in[0], g.getApproximate());
      })
      .Case([&](tgd::CastOp) {
        return emitCast(w, in[0], argElem, resElem);
      })
      .Case([&](tgd::BroadcastToOp) { return in[0]; })
      .Case([&](tgd::CausalMaskOp c) {
        auto shape = cast<ShapedType>(c.getType()).getShape();
        int64_t rows = shape[shape.size() - 2], cols = shape.back();
        Value lin = linear64(w, *pos);
        Value col = w.urem(lin, w.i64c(cols));
        Value row = w.urem(w.udiv(lin, w.i64c(cols)), w.i64c(rows));
        Value fill =
            scalarConstant(w, resElem, c.getValue().convertToDouble());
        return w.select(w.icmp(P::ugt, col, row), fill, in[0]);
      })
      .Case([&](tgd::DropoutOp d) {
        return emitDropout(w, d, in[0], in[1], *pos);
      })
      .Case([&](tgd::OneHotOp o) {
        int64_t classes = cast<ShapedType>(o.getType()).getShape().back();
        Value cls = w.urem(linear64(w, *pos), w.i64c(classes));
        Value idx = in[0].getType() == w.i64 ? in[0] : LLVM::SExtOp::create(
                                                           b, loc, w.i64, in[0])
                                                           .getResult();
        return w.select(w.icmp(P::eq, idx, cls), constantOf(w, ct, 1),
                        constantOf(w, ct, 0));
      })
      .Default([](Operation *) { return Value(); });
  if (!r)
    return op->emitOpError("the GPU backend has no scalar form of this op");
  return roundTo(w, r, resElem);
}

} // namespace tg::nvptx::detail
