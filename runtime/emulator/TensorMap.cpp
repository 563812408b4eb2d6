//===- TensorMap.cpp - the CUtensorMap encoding of the fake driver --------===//
//
// The rules checked are those the CUDA driver API documents for
// cuTensorMapEncodeTiled (alignment of the address and strides, ranges of
// dimensions, boxes and element strides, the swizzle span of the box's
// inner dimension), so a map the real driver refuses is refused here too.
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/TensorMap.h"

#include <cstring>

namespace tgrt::emu {
namespace {

constexpr uint32_t kMagic = 0x4D544754; // "TGTM"

std::string at(const char *what, uint32_t i) {
  return std::string(what) + "[" + std::to_string(i) + "]";
}

/// The rules of cuTensorMapEncodeTiled; "" or the first one broken.
std::string check(const TmaDescriptor &m) {
  uint32_t elem = tensorMapElementBytes(m.dataType);
  if (!elem)
    return "unknown tensor data type " + std::to_string(m.dataType);
  if (m.interleave > kTmaInterleave32B)
    return "unknown interleave " + std::to_string(m.interleave);
  if (m.swizzle > kTmaSwizzle128B)
    return "unknown swizzle " + std::to_string(m.swizzle);
  if (m.l2Promotion > 3)
    return "unknown L2 promotion " + std::to_string(m.l2Promotion);
  if (m.oobFill > kTmaOobNan)
    return "unknown out-of-bounds fill " + std::to_string(m.oobFill);
  if (m.rank < 1 || m.rank > 5)
    return "rank " + std::to_string(m.rank) + " is not 1 to 5";
  if (m.interleave != kTmaInterleaveNone && m.rank < 3)
    return "an interleaved layout needs rank 3 or more";
  uint32_t align = m.interleave == kTmaInterleave32B ? 32 : 16;
  if (m.globalAddress % align)
    return "global address is not " + std::to_string(align) +
           "-byte aligned";
  if (m.oobFill == kTmaOobNan &&
      (m.dataType <= kTmaInt64 || m.dataType == kTmaFloat64))
    return "a NaN out-of-bounds fill needs a floating-point type";
  for (uint32_t i = 0; i < m.rank; ++i) {
    if (m.globalDim[i] == 0 || m.globalDim[i] > (uint64_t(1) << 32))
      return at("globalDim", i) + " is " + std::to_string(m.globalDim[i]) +
             ", not 1 to 2^32";
    if (m.boxDim[i] == 0 || m.boxDim[i] > 256)
      return at("boxDim", i) + " is " + std::to_string(m.boxDim[i]) +
             ", not 1 to 256";
    if (m.elementStrides[i] == 0 || m.elementStrides[i] > 8)
      return at("elementStrides", i) + " is " +
             std::to_string(m.elementStrides[i]) + ", not 1 to 8";
  }
  // Each dimension's stride covers the previous dimension (no overlap):
  // globalStrides[0] >= globalDim[0] * elementSize, and so on.
  uint64_t span = m.globalDim[0] * elem;
  for (uint32_t i = 0; i + 1 < m.rank; ++i) {
    uint64_t s = m.globalStrides[i];
    if (s % align || s >= (uint64_t(1) << 40))
      return at("globalStrides", i) + " is " + std::to_string(s) +
             ", not a multiple of " + std::to_string(align) + " under 2^40";
    if (s < span)
      return at("globalStrides", i) + " is " + std::to_string(s) +
             ", less than the " + std::to_string(span) +
             " bytes of the dimensions inside it";
    span = s * m.globalDim[i + 1];
  }
  uint64_t inner = uint64_t(m.boxDim[0]) * elem;
  if (m.interleave == kTmaInterleaveNone && inner % 16)
    return "the box's inner dimension is " + std::to_string(inner) +
           " bytes, not a multiple of 16";
  if (m.interleave == kTmaInterleave32B && m.swizzle != kTmaSwizzle32B)
    return "a 32-byte interleave needs the 32-byte swizzle";
  if (m.interleave == kTmaInterleaveNone && m.swizzle != kTmaSwizzleNone) {
    uint64_t spanB = uint64_t(16) << m.swizzle; // 32, 64, 128
    if (inner > spanB)
      return "the box's inner dimension is " + std::to_string(inner) +
             " bytes, over the " + std::to_string(spanB) +
             "-byte swizzle span";
  }
  return "";
}

template <typename T> void put(uint8_t *p, size_t off, T v) {
  std::memcpy(p + off, &v, sizeof v);
}
template <typename T> T get(const uint8_t *p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}

} // namespace

uint32_t tensorMapElementBytes(uint32_t t) {
  switch (t) {
  case kTmaUint8: return 1;
  case kTmaUint16: case kTmaFloat16: case kTmaBfloat16: return 2;
  case kTmaUint32: case kTmaInt32: case kTmaFloat32: case kTmaFloat32Ftz:
  case kTmaTfloat32: case kTmaTfloat32Ftz:
    return 4;
  case kTmaUint64: case kTmaInt64: case kTmaFloat64: return 8;
  default: return 0;
  }
}

std::string encodeTensorMap(void *out, const TmaDescriptor &m) {
  if (std::string why = check(m); !why.empty())
    return why;
  uint8_t b[kTensorMapBytes] = {};
  put<uint32_t>(b, 0, kMagic);
  uint8_t small[6] = {uint8_t(m.dataType),   uint8_t(m.rank),
                      uint8_t(m.interleave), uint8_t(m.swizzle),
                      uint8_t(m.l2Promotion), uint8_t(m.oobFill)};
  std::memcpy(b + 4, small, 6);
  put<uint64_t>(b, 16, m.globalAddress);
  for (uint32_t i = 0; i < m.rank; ++i) {
    b[10 + i] = uint8_t(m.elementStrides[i]);
    put<uint64_t>(b, 24 + 8 * i, m.globalDim[i]);
    put<uint16_t>(b, 104 + 2 * i, uint16_t(m.boxDim[i] - 1));
    if (i + 1 < m.rank)
      put<uint64_t>(b, 64 + 8 * i, m.globalStrides[i]);
  }
  std::memcpy(out, b, kTensorMapBytes);
  return "";
}

std::string encodeTensorMapTiled(void *out, uint32_t dataType, uint32_t rank,
                                 void *globalAddress,
                                 const uint64_t *globalDim,
                                 const uint64_t *globalStrides,
                                 const uint32_t *boxDim,
                                 const uint32_t *elementStrides,
                                 uint32_t interleave, uint32_t swizzle,
                                 uint32_t l2Promotion, uint32_t oobFill) {
  if (!out || reinterpret_cast<uintptr_t>(out) % 64)
    return "the tensor map is not 64-byte aligned";
  if (rank < 1 || rank > 5)
    return "rank " + std::to_string(rank) + " is not 1 to 5";
  if (!globalDim || !boxDim || !elementStrides || (rank > 1 && !globalStrides))
    return "a null dimension, stride or box array";
  TmaDescriptor m;
  m.dataType = dataType;
  m.rank = rank;
  m.globalAddress = reinterpret_cast<uintptr_t>(globalAddress);
  for (uint32_t i = 0; i < rank; ++i) {
    m.globalDim[i] = globalDim[i];
    m.boxDim[i] = boxDim[i];
    m.elementStrides[i] = elementStrides[i];
    if (i + 1 < rank)
      m.globalStrides[i] = globalStrides[i];
  }
  m.interleave = interleave;
  m.swizzle = swizzle;
  m.l2Promotion = l2Promotion;
  m.oobFill = oobFill;
  return encodeTensorMap(out, m);
}

std::string encodeMatrixTensorMap(void *out, bool bf16, uint64_t address,
                                  uint64_t rows, uint64_t cols,
                                  uint64_t batches, uint32_t boxRows,
                                  uint32_t boxCols) {
  TmaDescriptor m;
  m.dataType = bf16 ? kTmaBfloat16 : kTmaFloat16;
  m.rank = batches > 1 ? 3 : 2;
  m.globalAddress = address;
  m.globalDim[0] = cols;
  m.globalDim[1] = rows;
  m.globalDim[2] = batches;
  m.globalStrides[0] = cols * 2;
  m.globalStrides[1] = rows * cols * 2;
  m.boxDim[0] = boxCols;
  m.boxDim[1] = boxRows;
  m.boxDim[2] = 1;
  m.swizzle = kTmaSwizzle128B;
  m.l2Promotion = 3; // 256 bytes
  return encodeTensorMap(out, m);
}

std::string decodeTensorMap(const void *bytes, TmaDescriptor &m) {
  const uint8_t *b = static_cast<const uint8_t *>(bytes);
  if (get<uint32_t>(b, 0) != kMagic)
    return "not an encoded tensor map (a buffer pointer where the kernel "
           "takes a CUtensorMap?)";
  m = TmaDescriptor();
  m.dataType = b[4];
  m.rank = b[5];
  m.interleave = b[6];
  m.swizzle = b[7];
  m.l2Promotion = b[8];
  m.oobFill = b[9];
  m.globalAddress = get<uint64_t>(b, 16);
  for (uint32_t i = 0; i < 5 && i < m.rank; ++i) {
    m.elementStrides[i] = b[10 + i];
    m.globalDim[i] = get<uint64_t>(b, 24 + 8 * i);
    m.boxDim[i] = uint32_t(get<uint16_t>(b, 104 + 2 * i)) + 1;
    if (i < 4)
      m.globalStrides[i] = get<uint64_t>(b, 64 + 8 * i);
  }
  // What the encoder leaves zero: a map overwritten by the kernel (or not
  // written by it) shows here or in the rules.
  for (uint32_t i = 114; i < kTensorMapBytes; ++i)
    if (b[i])
      return "a corrupted tensor map (its unused bytes are not zero)";
  return check(m);
}

} // namespace tgrt::emu
