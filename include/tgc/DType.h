//===- DType.h - the element types a TGC tensor can hold --------*- C++ -*-===//
//
// One definition of the element types for every part of TGC that has no
// MLIR: the runtime (buffers, manifests, safetensors files), the public
// graph-builder API, the host JIT API and the GPU GEMM generator. Their names
// are those of MLIR's types and the `.tgx` manifest ("f32", "bf16", ...).
// Header-only and dependent on the C++ library alone, so `libtgrt` and
// `tg-run` include it without linking anything.
//
// It also holds the one host implementation of the bf16 and f16 encodings
// (round to nearest even, like the hardware; NaN stays NaN).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DTYPE_H
#define TGC_DTYPE_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace tgc {

/// An element type. I1 is stored as one byte (as in LLVM's memory layout).
enum class DType : uint8_t { F32, F64, BF16, F16, I32, I64, I1 };

/// Every DType, for lookups and tests.
inline constexpr DType kAllDTypes[] = {DType::F32, DType::F64, DType::BF16,
                                       DType::F16, DType::I32, DType::I64,
                                       DType::I1};

/// "f32", "f64", "bf16", "f16", "i32", "i64" or "i1".
constexpr const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::F64: return "f64";
  case DType::BF16: return "bf16";
  case DType::F16: return "f16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::I1: return "i1";
  }
  return "?";
}

/// The DType called `name` (as dtypeName spells it), or nullopt.
inline std::optional<DType> parseDType(std::string_view name) {
  for (DType t : kAllDTypes)
    if (name == dtypeName(t))
      return t;
  return std::nullopt;
}

/// Bytes per element.
constexpr size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F64:
  case DType::I64: return 8;
  case DType::F32:
  case DType::I32: return 4;
  case DType::BF16:
  case DType::F16: return 2;
  case DType::I1: return 1;
  }
  return 1;
}

constexpr bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 ||
         t == DType::F16;
}

/// i32 and i64 (not i1, which is a truth value).
constexpr bool isInteger(DType t) { return t == DType::I32 || t == DType::I64; }

/// The bf16 bits of `f`, rounded to nearest even.
inline uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) // keep it a NaN: rounding could carry into infinity
    return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// The IEEE binary16 bits of `f`, rounded to nearest even (overflow gives
/// infinity, small values become subnormals).
inline uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = (x >> 16) & 0x8000;
  float a = std::fabs(f);
  if (std::isnan(f))
    return sign | 0x7e00;
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < 6.103515625e-05f) // subnormal: multiples of 2^-24, nearest even
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  uint32_t ax = x & 0x7fffffff;
  uint32_t rounded = ax + 0xfff + ((ax >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded >> 13) - (112u << 10));
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f,
           man = h & 0x3ff, bits;
  if (exp == 0) {
    float f = std::ldexp(static_cast<float>(man), -24);
    return sign ? -f : f;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | (man << 13);
  else
    bits = sign | ((exp + 112) << 23) | (man << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace tgc

#endif // TGC_DTYPE_H
