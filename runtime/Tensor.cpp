//===- Tensor.cpp - dense host tensors of the runtime ---------------------===//
//
// Safetensors' element-type names, and conversions between the dtypes the
// runtime reads from files (f32, i64) and those a model may declare (bf16,
// f16, i32).
//
//===----------------------------------------------------------------------===//
#include "runtime/Tensor.h"

#include <cmath>
#include <cstring>

namespace tgrt {

namespace {
/// Safetensors names, indexed by DType.
constexpr const char *kSafetensorsNames[] = {"F32", "F64", "BF16", "F16",
                                             "I32", "I64", "BOOL"};
} // namespace

const char *dtypeSafetensorsName(DType t) {
  return kSafetensorsNames[static_cast<int>(t)];
}

bool parseSafetensorsDType(std::string_view s, DType &out) {
  for (DType t : tgc::kAllDTypes)
    if (s == dtypeSafetensorsName(t)) {
      out = t;
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

double Tensor::at(uint64_t i) const {
  const uint8_t *p = bytes.data() + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
  case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
  case DType::BF16: { uint16_t v; std::memcpy(&v, p, 2); return tgc::bf16ToFloat(v); }
  case DType::F16: { uint16_t v; std::memcpy(&v, p, 2); return tgc::halfToFloat(v); }
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
  case DType::BF16: { uint16_t x = tgc::floatToBf16(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
  case DType::F16: { uint16_t x = tgc::floatToHalf(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
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
