//===- Arithmetic.cpp - the emulator's arithmetic and conversions ---------===//
//
// Integer arithmetic at the instruction's width, f32/f64 arithmetic with
// rounding modes, .ftz and .sat, f16/bf16 arithmetic per lane, setp's
// comparisons (ordered and unordered) and every cvt, as the PTX ISA defines
// them (docs/emulator.md says where the emulator is more exact than the
// hardware).
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Cta.h"

#include <cfenv>
#include <climits>
#include <cmath>

namespace tgrt::emu::detail {

/// Runs `f` with the C rounding mode of `r` (directed float arithmetic).
template <typename F> auto withRounding(Rnd r, F f) {
  int mode = r == Rnd::Rz ? FE_TOWARDZERO
             : r == Rnd::Rm ? FE_DOWNWARD
             : r == Rnd::Rp ? FE_UPWARD
                            : FE_TONEAREST;
  if (mode == FE_TONEAREST)
    return f();
  std::fesetround(mode);
  volatile auto v = f();
  std::fesetround(FE_TONEAREST);
  return v;
}

float ftz32(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

/// The value `v` of type `ty` read as a double (floats exactly).
double toDouble(uint64_t v, Ty ty) {
  switch (ty) {
  case Ty::F16: return f16ToF32(v);
  case Ty::BF16: return bf16ToF32(v);
  case Ty::F32: return asF32(v);
  case Ty::F64: return asF64(v);
  default:
    return isSigned(ty) ? double(sext(v, bitsOf(ty)))
                        : double(v & maskOf(bitsOf(ty)));
  }
}

uint64_t toFormat(double x, Ty ty, Rnd r) {
  // The common case on the hot path (epilogues storing bf16): an f32 value
  // rounded to nearest even by the bit trick, exact for any float.
  if ((ty == Ty::BF16 || ty == Ty::BF16x2) && (r == Rnd::Rn || r == Rnd::None) &&
      !std::isnan(x) && double(float(x)) == x) {
    uint32_t b = uint32_t(bitsF32(float(x)));
    return (b + 0x7fff + ((b >> 16) & 1)) >> 16;
  }
  switch (ty) {
  case Ty::F16: case Ty::F16x2: return roundToFormat(x, 5, 10, r);
  case Ty::BF16: case Ty::BF16x2: return roundToFormat(x, 8, 7, r);
  case Ty::F32:
    return r == Rnd::Rn || r == Rnd::None ? bitsF32(float(x))
                                          : roundToFormat(x, 8, 23, r);
  default: return bitsF64(x);
  }
}

bool Cta::compare(const Inst &in, uint64_t a, uint64_t b) const {
  Cmp c = Cmp(in.mode);
  if (isFloat(in.ty) || isHalf(in.ty)) {
    double x = toDouble(a, in.ty), y = toDouble(b, in.ty);
    if (in.ty == Ty::F32 && (in.flags & kFtz)) {
      x = ftz32(float(x));
      y = ftz32(float(y));
    }
    bool un = std::isnan(x) || std::isnan(y);
    switch (c) {
    case Cmp::Eq: return !un && x == y;
    case Cmp::Ne: return !un && x != y;
    case Cmp::Lt: return !un && x < y;
    case Cmp::Le: return !un && x <= y;
    case Cmp::Gt: return !un && x > y;
    case Cmp::Ge: return !un && x >= y;
    case Cmp::Equ: return un || x == y;
    case Cmp::Neu: return un || x != y;
    case Cmp::Ltu: return un || x < y;
    case Cmp::Leu: return un || x <= y;
    case Cmp::Gtu: return un || x > y;
    case Cmp::Geu: return un || x >= y;
    case Cmp::Num: return !un;
    case Cmp::Nan: return un;
    default: return false;
    }
  }
  uint64_t ua = a & maskOf(bitsOf(in.ty)), ub = b & maskOf(bitsOf(in.ty));
  int64_t sa = sext(a, bitsOf(in.ty)), sb = sext(b, bitsOf(in.ty));
  bool s = isSigned(in.ty);
  switch (c) {
  case Cmp::Eq: return ua == ub;
  case Cmp::Ne: return ua != ub;
  case Cmp::Lt: return s ? sa < sb : ua < ub;
  case Cmp::Le: return s ? sa <= sb : ua <= ub;
  case Cmp::Gt: return s ? sa > sb : ua > ub;
  case Cmp::Ge: return s ? sa >= sb : ua >= ub;
  case Cmp::Lo: return ua < ub;
  case Cmp::Ls: return ua <= ub;
  case Cmp::Hi: return ua > ub;
  case Cmp::Hs: return ua >= ub;
  default: return false;
  }
}

uint64_t Cta::intBinary(const Thread &t, const Inst &in, uint64_t a,
                        uint64_t b, const uint64_t *R) {
  const Ty ty = in.ty;
  const unsigned w = bitsOf(ty);
  const bool s = isSigned(ty);
  uint64_t ua = a & maskOf(w), ub = b & maskOf(w);
  int64_t sa = sext(a, w), sb = sext(b, w);
  switch (in.op) {
  case Op::Add:
  case Op::Sub: {
    uint64_t r = in.op == Op::Add ? ua + ub : ua - ub;
    if ((in.flags & kSat) && s && w == 32) {
      int64_t x = in.op == Op::Add ? sa + sb : sa - sb;
      return uint64_t(std::clamp<int64_t>(x, INT32_MIN, INT32_MAX));
    }
    return r;
  }
  case Op::Mul:
  case Op::Mad: {
    uint64_t r;
    if (in.flags & kWide) {
      // Low 64 bits of the product: the same for signed and unsigned
      // operands (sign-extended), computed without signed overflow.
      r = s ? uint64_t(sa) * uint64_t(sb) : ua * ub;
      if (in.op == Op::Mad)
        r += val(in.ops[3], t, R);
      return r;
    }
    if (in.flags & kHi) {
      if (w == 64) {
        r = s ? uint64_t((__int128(sa) * __int128(sb)) >> 64)
              : uint64_t((unsigned __int128)ua * ub >> 64);
      } else {
        r = s ? uint64_t((__int128(sa) * sb) >> w) : (ua * ub) >> w;
      }
    } else {
      r = ua * ub;
    }
    if (in.op == Op::Mad)
      r += val(in.ops[3], t, R);
    return r;
  }
  case Op::Div:
    if (ub == 0)
      return maskOf(w); // undefined in PTX; the hardware gives all ones
    if (s)
      return sb == -1 ? uint64_t(0) - ua : uint64_t(sa / sb);
    return ua / ub;
  case Op::Rem:
    if (ub == 0)
      return ua;
    if (s)
      return sb == -1 ? 0 : uint64_t(sa % sb);
    return ua % ub;
  case Op::Min: return s ? uint64_t(std::min(sa, sb)) : std::min(ua, ub);
  case Op::Max: return s ? uint64_t(std::max(sa, sb)) : std::max(ua, ub);
  case Op::And: return a & b;
  case Op::Or: return a | b;
  case Op::Xor: return a ^ b;
  case Op::Shl: {
    uint32_t n = uint32_t(b);
    return n >= w ? 0 : ua << n;
  }
  case Op::Shr: {
    uint32_t n = uint32_t(b);
    if (s)
      return uint64_t(sa >> std::min<uint32_t>(n, 63));
    return n >= w ? 0 : ua >> n;
  }
  default: fault(t, std::string("no integer form of ") + opName(in.op));
  }
}

/// The correctly rounded operations of f32 and f64 (in the instruction's
/// rounding mode): false when `in` is not one of them.
template <typename T>
static bool roundedOp(const Inst &in, T a, T b, T c, T &r) {
  switch (in.op) {
  case Op::Add: r = withRounding(in.rnd, [&] { return a + b; }); return true;
  case Op::Sub: r = withRounding(in.rnd, [&] { return a - b; }); return true;
  case Op::Mul: r = withRounding(in.rnd, [&] { return a * b; }); return true;
  case Op::Mad:
  case Op::Fma:
    r = withRounding(in.rnd, [&] { return std::fma(a, b, c); });
    return true;
  case Op::Div: r = withRounding(in.rnd, [&] { return a / b; }); return true;
  case Op::Rcp: r = withRounding(in.rnd, [&] { return T(1) / a; }); return true;
  case Op::Sqrt:
    r = withRounding(in.rnd, [&] { return std::sqrt(a); });
    return true;
  case Op::Copysign: r = std::copysign(b, a); return true;
  default: return false;
  }
}

/// Float arithmetic in the instruction's type (f32 or f64).
uint64_t Cta::floatOp(const Thread &t, const Inst &in, const uint64_t *R) {
  uint64_t ra = val(in.ops[1], t, R);
  uint64_t rb = in.nops > 2 ? val(in.ops[2], t, R) : 0;
  uint64_t rc = in.nops > 3 ? val(in.ops[3], t, R) : 0;
  if (in.ty == Ty::F64) {
    double a = asF64(ra), b = asF64(rb), c = asF64(rc), r;
    if (roundedOp(in, a, b, c, r))
      return bitsF64(r);
    switch (in.op) {
    case Op::Min: r = std::fmin(a, b); break;
    case Op::Max: r = std::fmax(a, b); break;
    case Op::Neg: return ra ^ (uint64_t(1) << 63);
    case Op::Abs: return ra & ~(uint64_t(1) << 63);
    case Op::Rsqrt: r = 1.0 / std::sqrt(a); break;
    default: fault(t, std::string("no f64 form of ") + opName(in.op));
    }
    return bitsF64(r);
  }
  if (isHalf(in.ty))
    return halfOp(t, in, ra, rb, rc);
  if (in.ty != Ty::F32)
    fault(t, std::string("unsupported type for ") + opName(in.op));
  float a = asF32(ra), b = asF32(rb), c = asF32(rc), r;
  const bool ftz = in.flags & kFtz;
  if (ftz) {
    a = ftz32(a);
    b = ftz32(b);
    c = ftz32(c);
  }
  if (!roundedOp(in, a, b, c, r)) {
    switch (in.op) {
    case Op::Min:
      r = (in.flags & kNanMode) && (std::isnan(a) || std::isnan(b))
              ? NAN
              : std::fmin(a, b);
      break;
    case Op::Max:
      r = (in.flags & kNanMode) && (std::isnan(a) || std::isnan(b))
              ? NAN
              : std::fmax(a, b);
      break;
    case Op::Neg: r = -a; break;
    case Op::Abs: r = std::fabs(a); break;
    case Op::Rsqrt: r = float(1.0 / std::sqrt(double(a))); break;
    case Op::Ex2: r = std::exp2(a); break;
    case Op::Lg2: r = std::log2(a); break;
    case Op::Sin: r = std::sin(a); break;
    case Op::Cos: r = std::cos(a); break;
    case Op::Tanh: r = std::tanh(a); break;
    default: fault(t, std::string("no f32 form of ") + opName(in.op));
    }
  }
  if (in.flags & kSat)
    r = std::isnan(r) ? 0.0f : std::clamp(r, 0.0f, 1.0f);
  if (ftz)
    r = ftz32(r);
  return bitsF32(r);
}

bool floatTy(Ty t) {
  return t == Ty::F16 || t == Ty::BF16 || t == Ty::F32 || t == Ty::F64 ||
         t == Ty::F16x2 || t == Ty::BF16x2;
}

/// f16/bf16 arithmetic, per 16-bit lane (one, or two for the x2 types):
/// computed in double and rounded once to the format.
uint64_t Cta::halfOp(const Thread &t, const Inst &in, uint64_t ra, uint64_t rb,
                     uint64_t rc) {
  const bool pair = in.ty == Ty::F16x2 || in.ty == Ty::BF16x2;
  const Ty lane = in.ty == Ty::F16 || in.ty == Ty::F16x2 ? Ty::F16 : Ty::BF16;
  const double minNormal = lane == Ty::F16 ? 6.103515625e-05 : 1.17549435e-38;
  auto flush = [&](double x) {
    return (in.flags & kFtz) && std::fabs(x) < minNormal ? std::copysign(0.0, x)
                                                         : x;
  };
  uint64_t res = 0;
  for (unsigned i = 0; i < (pair ? 2u : 1u); ++i) {
    unsigned sh = 16 * i;
    uint64_t ba = (ra >> sh) & 0xffff, bits;
    if (in.op == Op::Neg || in.op == Op::Abs) { // sign bit only, NaN kept
      bits = in.op == Op::Neg ? ba ^ 0x8000 : ba & 0x7fff;
      res |= bits << sh;
      continue;
    }
    double a = flush(toDouble(ba, lane)), b = flush(toDouble(rb >> sh, lane)),
           c = flush(toDouble(rc >> sh, lane)), r;
    bool nan = std::isnan(a) || std::isnan(b);
    switch (in.op) {
    case Op::Add: r = a + b; break;
    case Op::Sub: r = a - b; break;
    case Op::Mul: r = a * b; break;
    case Op::Fma: case Op::Mad: r = std::fma(a, b, c); break;
    case Op::Min:
      r = (in.flags & kNanMode) && nan ? NAN : std::fmin(a, b);
      break;
    case Op::Max:
      r = (in.flags & kNanMode) && nan ? NAN : std::fmax(a, b);
      break;
    case Op::Ex2: r = std::exp2(a); break;
    case Op::Tanh: r = std::tanh(a); break;
    default: fault(t, std::string("no 16-bit float form of ") + opName(in.op));
    }
    if ((in.flags & kRelu) && !std::isnan(r) && r < 0)
      r = 0;
    if (in.flags & kSat)
      r = std::isnan(r) ? 0.0 : std::clamp(r, 0.0, 1.0);
    bits = toFormat(flush(r), lane, in.rnd);
    res |= bits << sh;
  }
  return res;
}

uint64_t Cta::cvt(const Inst &in, uint64_t a, uint64_t b, bool pair) {
  const Ty d = in.ty, s = in.ty2;
  Rnd r = in.rnd;
  auto relu = [&](double x) {
    return (in.flags & kRelu) && x < 0 ? 0.0 : x;
  };
  if (pair) // cvt.rn{.relu}.{bf16x2,f16x2}.f32 d, hi, lo
    return (toFormat(relu(toDouble(a, s)), d, r) << 16) |
           toFormat(relu(toDouble(b, s)), d, r);
  if (!floatTy(d) && !floatTy(s)) {
    if (in.flags & kSat) {
      unsigned w = bitsOf(d);
      if (isSigned(s)) {
        int64_t v = sext(a, bitsOf(s));
        int64_t hi = isSigned(d) || w == 64 ? int64_t(maskOf(w - 1))
                                            : int64_t(maskOf(w));
        int64_t lo = isSigned(d) ? -hi - 1 : 0;
        return uint64_t(std::clamp(v, lo, hi));
      }
      uint64_t v = a & maskOf(bitsOf(s));
      uint64_t hi = isSigned(d) ? maskOf(w - 1) : maskOf(w);
      return std::min(v, hi);
    }
    return ival(a, s);
  }
  double x = toDouble(a, s);
  if ((in.flags & kFtz) && s == Ty::F32)
    x = ftz32(float(x));
  if (!floatTy(d)) { // float -> int: round, saturate, NaN -> 0
    if (std::isnan(x))
      return 0;
    switch (r) {
    case Rnd::Rni: x = std::nearbyint(x); break;
    case Rnd::Rmi: x = std::floor(x); break;
    case Rnd::Rpi: x = std::ceil(x); break;
    default: x = std::trunc(x);
    }
    unsigned w = bitsOf(d);
    if (isSigned(d)) {
      double lo = -std::ldexp(1.0, int(w) - 1), hi = std::ldexp(1.0, int(w) - 1);
      if (x <= lo)
        return uint64_t(int64_t(lo));
      if (x >= hi)
        return maskOf(w - 1);
      return uint64_t(int64_t(x));
    }
    if (x <= 0)
      return 0;
    if (x >= std::ldexp(1.0, int(w)))
      return maskOf(w);
    return uint64_t(x);
  }
  // To float: from an integer or a float.
  switch (r) { // cvt.rni.f32.f32 and friends: round to an integral value
  case Rnd::Rni: x = std::nearbyint(x); r = Rnd::Rn; break;
  case Rnd::Rzi: x = std::trunc(x); r = Rnd::Rn; break;
  case Rnd::Rmi: x = std::floor(x); r = Rnd::Rn; break;
  case Rnd::Rpi: x = std::ceil(x); r = Rnd::Rn; break;
  default: break;
  }
  if (in.flags & kSat)
    x = std::isnan(x) ? 0.0 : std::clamp(x, 0.0, 1.0);
  x = relu(x); // cvt.rn.relu: negative -> +0, NaN kept
  uint64_t bits = toFormat(x, d, r);
  if ((in.flags & kFtz) && d == Ty::F32)
    bits = bitsF32(ftz32(asF32(bits)));
  return bits;
}

} // namespace tgrt::emu::detail
