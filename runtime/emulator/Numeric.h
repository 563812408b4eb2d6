//===- Numeric.h - PTX number formats for the emulator ----------*- C++ -*-===//
//
// Conversions between double and the binary floating-point formats PTX
// computes in (f16, bf16, f32), with every rounding mode of cvt, exactly:
// a value is scaled by a power of two (exact) and rounded to an integer
// significand in the requested direction. Internal to runtime/emulator.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_EMULATOR_NUMERIC_H
#define TG_RUNTIME_EMULATOR_NUMERIC_H

#include "runtime/emulator/Ptx.h"
#include "tgc/DType.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tgrt::emu {

inline float asF32(uint64_t v) {
  uint32_t b = uint32_t(v);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline double asF64(uint64_t v) {
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}
inline uint64_t bitsF32(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline uint64_t bitsF64(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

/// Rounds `x` to the binary format with `expBits` exponent and `mantBits`
/// fraction bits (IEEE layout, subnormals, infinities) in direction `r`
/// (Rn: to nearest even; Rz, Rm, Rp). NaN becomes the canonical NaN.
inline uint64_t roundToFormat(double x, int expBits, int mantBits, Rnd r) {
  const uint64_t signBit = uint64_t(1) << (expBits + mantBits);
  const uint64_t expMask = (uint64_t(1) << expBits) - 1;
  if (std::isnan(x))
    return (expMask << mantBits) | ((uint64_t(1) << mantBits) - 1);
  bool neg = std::signbit(x);
  uint64_t sign = neg ? signBit : 0;
  double a = std::fabs(x);
  const int bias = int(expMask >> 1);
  const uint64_t inf = expMask << mantBits;
  const uint64_t maxFinite = inf - 1;
  auto overflow = [&] {
    bool toInf = r == Rnd::Rn || r == Rnd::None || (r == Rnd::Rp && !neg) ||
                 (r == Rnd::Rm && neg);
    return sign | (toInf ? inf : maxFinite);
  };
  if (std::isinf(a))
    return sign | inf;
  if (a == 0)
    return sign;
  int e;
  std::frexp(a, &e);
  int E = e - 1;
  if (E < 1 - bias)
    E = 1 - bias;
  double n = std::ldexp(a, mantBits - E); // significand, exact
  double q;
  switch (r) {
  case Rnd::Rz: q = std::trunc(n); break;
  case Rnd::Rm: q = neg ? std::ceil(n) : std::floor(n); break;
  case Rnd::Rp: q = neg ? std::floor(n) : std::ceil(n); break;
  default: {
    q = std::floor(n);
    double frac = n - q;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(q, 2.0) != 0))
      q += 1;
  }
  }
  uint64_t m = uint64_t(q);
  if (m >> (mantBits + 1)) { // carried into the next binade
    m >>= 1;
    ++E;
  }
  if (E > bias)
    return overflow();
  if (m < (uint64_t(1) << mantBits)) // subnormal (or rounded to zero)
    return sign | m;
  return sign | (uint64_t(E + bias) << mantBits) |
         (m - (uint64_t(1) << mantBits));
}

/// The value of a format's bits (see roundToFormat).
inline double decodeFormat(uint64_t bits, int expBits, int mantBits) {
  const uint64_t expMask = (uint64_t(1) << expBits) - 1;
  bool neg = (bits >> (expBits + mantBits)) & 1;
  uint64_t ex = (bits >> mantBits) & expMask;
  uint64_t m = bits & ((uint64_t(1) << mantBits) - 1);
  double v;
  const int bias = int(expMask >> 1);
  if (ex == expMask)
    v = m ? NAN : INFINITY;
  else if (ex == 0)
    v = std::ldexp(double(m), 1 - bias - mantBits);
  else
    v = std::ldexp(double(m | (uint64_t(1) << mantBits)),
                   int(ex) - bias - mantBits);
  return neg ? -v : v;
}

/// A register's low 16 bits as bf16 / f16 (the project's one definition of
/// each widening, include/tgc/DType.h; widening is exact, so rounding modes
/// only matter in roundToFormat).
inline float bf16ToF32(uint64_t b) { return tgc::bf16ToFloat(uint16_t(b)); }
inline float f16ToF32(uint64_t b) { return tgc::halfToFloat(uint16_t(b)); }

} // namespace tgrt::emu

#endif // TG_RUNTIME_EMULATOR_NUMERIC_H
