//===- Tensor.cpp - dense host tensors of the runtime ---------------------===//
//
// Element-type names, sizes and conversions between the dtypes the runtime
// reads from files (f32, i64) and those a model may declare (bf16, f16, i32).
//
//===----------------------------------------------------------------------===//
#include "runtime/Tensor.h"

#include <cmath>
#include <cstring>

namespace tgrt {

namespace {
struct DTypeInfo {
  DType t;
  const char *name, *st;
  size_t size;
};
constexpr DTypeInfo kTypes[] = {
    {DType::F32, "f32", "F32", 4},   {DType::F64, "f64", "F64", 8},
    {DType::BF16, "bf16", "BF16", 2}, {DType::F16, "f16", "F16", 2},
    {DType::I32, "i32", "I32", 4},   {DType::I64, "i64", "I64", 8},
    {DType::I1, "i1", "BOOL", 1},
};
const DTypeInfo &info(DType t) { return kTypes[static_cast<int>(t)]; }
} // namespace

const char *dtypeName(DType t) { return info(t).name; }
const char *dtypeSafetensorsName(DType t) { return info(t).st; }
size_t dtypeSize(DType t) { return info(t).size; }
bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 ||
         t == DType::F16;
}

bool parseDType(std::string_view s, DType &out) {
  for (const DTypeInfo &i : kTypes)
    if (s == i.name) {
      out = i.t;
      return true;
    }
  return false;
}

bool parseSafetensorsDType(std::string_view s, DType &out) {
  for (const DTypeInfo &i : kTypes)
    if (s == i.st) {
      out = i.t;
      return true;
    }
  return false;
}

bool shapeNumel(const std::vector<int64_t> &shape, uint64_t &numel,
                uint64_t limit) {
  numel = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    if (d != 0 && numel > limit / static_cast<uint64_t>(d))
      return false;
    numel *= static_cast<uint64_t>(d);
  }
  return numel <= limit;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  uint64_t n = 0;
  shapeNumel(t.shape, n);
  t.bytes.assign(n * dtypeSize(dtype), 0);
  return t;
}

Tensor Tensor::scalarI64(int64_t v) {
  Tensor t = zeros(DType::I64, {});
  std::memcpy(t.data(), &v, 8);
  return t;
}

Tensor Tensor::scalarF32(float v) {
  Tensor t = zeros(DType::F32, {});
  std::memcpy(t.data(), &v, 4);
  return t;
}

uint64_t Tensor::numel() const { return bytes.size() / dtypeSize(dtype); }

float halfToFloat(uint16_t h) {
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

uint16_t floatToHalf(float f) {
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

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f))
    return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

double Tensor::at(uint64_t i) const {
  const uint8_t *p = bytes.data() + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
  case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
  case DType::BF16: { uint16_t v; std::memcpy(&v, p, 2); return bf16ToFloat(v); }
  case DType::F16: { uint16_t v; std::memcpy(&v, p, 2); return halfToFloat(v); }
  case DType::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case DType::I64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
  case DType::I1: return *p ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::set(uint64_t i, double v) {
  uint8_t *p = bytes.data() + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::F32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); return; }
  case DType::F64: std::memcpy(p, &v, 8); return;
  case DType::BF16: { uint16_t x = floatToBf16(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
  case DType::F16: { uint16_t x = floatToHalf(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
  case DType::I32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); return; }
  case DType::I64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); return; }
  case DType::I1: *p = v != 0; return;
  }
}

bool convertTensor(const Tensor &src, DType dtype,
                   const std::vector<int64_t> &shape, Tensor &out,
                   std::string &err) {
  uint64_t n = 0;
  if (!shapeNumel(shape, n) || n != src.numel()) {
    err = "cannot reshape " + shapeString(src.shape) + " to " +
          shapeString(shape);
    return false;
  }
  if (isFloat(src.dtype) != isFloat(dtype) && dtype != DType::I1) {
    err = std::string("cannot convert ") + dtypeName(src.dtype) + " to " +
          dtypeName(dtype);
    return false;
  }
  if (dtype == src.dtype) {
    out.dtype = dtype;
    out.shape = shape;
    out.bytes = src.bytes;
    return true;
  }
  out = Tensor::zeros(dtype, shape);
  // Integers pass exactly through double up to 2^53, more than any label.
  for (uint64_t i = 0; i < n; ++i)
    out.set(i, src.at(i));
  return true;
}

} // namespace tgrt
