//===- RoundingTest.cpp - bf16/f16/f32 rounding of the reference -*- C++ -*-===//
//
// The reference evaluator rounds every result to its element type with
// ref::roundTo; the runtime and the data loaders encode with tgc::floatToHalf
// and tgc::floatToBf16 (include/tgc/DType.h). Both must round as the
// hardware does: IEEE round to nearest, ties to even, with gradual underflow
// (subnormals), overflow to infinity and NaN kept NaN. LLVM's APFloat is the
// independent oracle: every bf16 and f16 value, the midpoints between
// neighbours (the ties) and the points just beside them, plus the named edge
// cases.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/Evaluator.h"
#include "tgc/DType.h"

#include "llvm/ADT/APFloat.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using mlir::tg::ref::DType;
using mlir::tg::ref::roundTo;

namespace {

const llvm::fltSemantics &semantics(DType d) {
  switch (d) {
  case DType::F16: return llvm::APFloat::IEEEhalf();
  case DType::BF16: return llvm::APFloat::BFloat();
  default: return llvm::APFloat::IEEEsingle();
  }
}

/// `v` rounded to `d` by APFloat (nearest, ties to even), widened back.
double oracle(DType d, double v) {
  llvm::APFloat f(v);
  bool lost;
  f.convert(semantics(d), llvm::APFloat::rmNearestTiesToEven, &lost);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return f.convertToDouble();
}

/// The value of 16-bit pattern `bits` in `d`.
double decode(DType d, uint16_t bits) {
  llvm::APFloat f(semantics(d), llvm::APInt(16, bits));
  bool lost;
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return f.convertToDouble();
}

/// Equal as values, with the sign of zero and NaN-ness compared too.
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

/// The host encoder of `d` applied to the f32 `v`, decoded again.
double host(DType d, float v) {
  return d == DType::F16 ? tgc::halfToFloat(tgc::floatToHalf(v))
                         : tgc::bf16ToFloat(tgc::floatToBf16(v));
}

} // namespace

TEST_CASE("the reference and the host encoders round every bf16/f16 value, "
          "tie and near-tie as APFloat does",
          "[reference][rounding]") {
  for (DType d : {DType::F16, DType::BF16}) {
    INFO((d == DType::F16 ? "f16" : "bf16"));
    int64_t checked = 0, bad = 0;
    for (uint32_t bits = 0; bits < 0x10000 && bad < 5; ++bits) {
      double v = decode(d, uint16_t(bits));
      double next = decode(d, uint16_t(bits + 1));
      // Candidates: the value, the midpoint to the next pattern (of the
      // same sign and finite), and the doubles right beside the midpoint.
      std::vector<double> xs = {v};
      if (std::isfinite(v) && std::isfinite(next) &&
          std::signbit(v) == std::signbit(next) && (bits & 0x7fff) != 0x7fff) {
        double mid = (v + next) / 2;
        xs.push_back(mid);
        xs.push_back(std::nextafter(mid, 0.0));
        xs.push_back(std::nextafter(mid, mid * 2));
      }
      for (double x : xs) {
        ++checked;
        double want = oracle(d, x);
        if (!same(roundTo(d, x), want)) {
          ++bad;
          UNSCOPED_INFO("roundTo(" << x << ") = " << roundTo(d, x)
                                   << ", APFloat " << want);
        }
        // The host encoders take an f32: check the inputs that are one
        // (every value and every tie is; the neighbours of a tie may not be).
        float xf = float(x);
        if (double(xf) == x && !same(host(d, xf), want)) {
          ++bad;
          UNSCOPED_INFO("host encoder(" << x << ") = " << host(d, xf)
                                        << ", APFloat " << want);
        }
      }
    }
    CHECK(bad == 0);
    CHECK(checked > 4 * 60000);
  }
}

TEST_CASE("rounding edge cases: subnormals, overflow to inf, NaN, signed "
          "zero",
          "[reference][rounding]") {
  const double inf = std::numeric_limits<double>::infinity();
  // f16: largest finite 65504; 65520 is the tie between it and 2^16, which
  // rounds to even: infinity. Smallest subnormal 2^-24; half of it is a tie
  // with zero (even: zero), a little more rounds up.
  CHECK(roundTo(DType::F16, 65504.0) == 65504.0);
  CHECK(roundTo(DType::F16, 65519.99) == 65504.0);
  CHECK(roundTo(DType::F16, 65520.0) == inf);
  CHECK(roundTo(DType::F16, -1e6) == -inf);
  CHECK(roundTo(DType::F16, 0x1p-24) == 0x1p-24);
  CHECK(roundTo(DType::F16, 0x1p-25) == 0.0);
  CHECK(std::signbit(roundTo(DType::F16, -0x1p-25))); // -0, not +0
  CHECK(roundTo(DType::F16, 0x1.0000001p-25) == 0x1p-24);
  CHECK(roundTo(DType::F16, 3 * 0x1p-25) == 0x1p-23); // tie 1.5 ulp: even
  CHECK(roundTo(DType::F16, 0x1.ff8p-15) == 0x1.ff8p-15); // largest subnormal
  CHECK(roundTo(DType::F16, 0x1.ffcp-15) == 0x1p-14); // tie above it: normal
  // bf16: f32's exponent range with 8 significand bits.
  CHECK(roundTo(DType::BF16, 0x1.fep127) == 0x1.fep127);
  CHECK(roundTo(DType::BF16, 0x1.ffp127) == inf); // tie: even is 2^128
  CHECK(roundTo(DType::BF16, 0x1p-133) == 0x1p-133);
  CHECK(roundTo(DType::BF16, 0x1p-134) == 0.0);
  CHECK(roundTo(DType::BF16, 1.0 + 0x1p-8) == 1.0);              // tie, even
  CHECK(roundTo(DType::BF16, 1.0 + 3 * 0x1p-8) == 1.0 + 0x1p-6); // tie, even
  // f32.
  CHECK(roundTo(DType::F32, 0x1p-150) == 0.0);
  CHECK(roundTo(DType::F32, 0x1.8p-149) == 0x1p-148);
  CHECK(roundTo(DType::F32, 0x1.ffffffp127) == inf);
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    CHECK(std::isnan(roundTo(d, std::nan(""))));
    CHECK(roundTo(d, inf) == inf);
    CHECK(roundTo(d, -inf) == -inf);
    CHECK(std::signbit(roundTo(d, -0.0)));
  }
  // The host encoders on the same cases, from f32.
  CHECK(tgc::floatToHalf(65520.0f) == 0x7c00);
  CHECK(tgc::floatToHalf(65519.0f) == 0x7bff);
  CHECK(tgc::floatToHalf(0x1p-25f) == 0x0000);
  CHECK(tgc::floatToHalf(-0x1p-25f) == 0x8000);
  CHECK(tgc::floatToHalf(3 * 0x1p-25f) == 0x0002);
  CHECK((tgc::floatToHalf(std::nanf("")) & 0x7fff) > 0x7c00);
  CHECK(tgc::floatToBf16(0x1.ffp127f) == 0x7f80);
  CHECK(tgc::floatToBf16(0x1p-134f) == 0x0000);
  CHECK((tgc::floatToBf16(-std::nanf("")) & 0x7fff) > 0x7f80);
}
