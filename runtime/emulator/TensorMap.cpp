//===- TensorMap.cpp - the CUtensorMap encoding of the fake driver --------===//
//
// The rules checked are those the CUDA driver API documents for
// cuTensorMapEncodeTiled (alignment of the address and strides, ranges of
// dimensions, boxes and element strides, the swizzle span of the box's
// inner dimension), so a map the real driver refuses is refused here too.
// They, and the arguments of TGC's matrix maps, are defined once in
// runtime/cuda/TensorMap.h (plain C++, header-only), which the schedule's
// parser and the CUDA device use as well.
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/TensorMap.h"
#include "runtime/cuda/TensorMap.h"

#include <cstring>

namespace tgrt::emu {
namespace {

constexpr uint32_t kMagic = 0x4D544754; // "TGTM"

namespace cu = ::tg::rt::cuda;

/// `m` as cuTensorMapEncodeTiled's arguments (the entries past its rank
/// zero, as the driver's rules want them).
cu::TensorMapArgs argsOf(const TmaDescriptor &m) {
  cu::TensorMapArgs a;
  a.dataType = int(m.dataType);
  a.rank = m.rank;
  for (uint32_t i = 0; i < m.rank && i < 5; ++i) {
    a.dims[i] = m.globalDim[i];
    a.box[i] = m.boxDim[i];
    a.elementStrides[i] = m.elementStrides[i];
    if (i + 1 < m.rank)
      a.strides[i] = m.globalStrides[i];
  }
  a.interleave = int(m.interleave);
  a.swizzle = int(m.swizzle);
  a.l2Promotion = int(m.l2Promotion);
  a.oobFill = int(m.oobFill);
  return a;
}

/// The rules of cuTensorMapEncodeTiled (runtime/cuda/TensorMap.h holds the
/// one definition); "" or the first one broken.
std::string check(const TmaDescriptor &m) {
  // Enum values past uint8_t would wrap in the encoding; the rules name
  // them before that.
  cu::TensorMapArgs a = argsOf(m);
  if (std::string why = cu::checkTensorMap(a, cu::TensorMapNames::Driver);
      !why.empty())
    return why;
  return cu::checkTensorMapAddress(m.globalAddress, a);
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
  return t > uint32_t(cu::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ)
             ? 0
             : cu::tensorMapElementBytes(int(t));
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
  // The arguments the CUDA device gives the driver (one definition).
  cu::TensorMapArgs a =
      cu::tiledMatrixMap(bf16, rows, cols, boxRows, boxCols, batches);
  return encodeTensorMapTiled(
      out, uint32_t(a.dataType), a.rank,
      reinterpret_cast<void *>(static_cast<uintptr_t>(address)), a.dims.data(),
      a.strides.data(), a.box.data(), a.elementStrides.data(),
      uint32_t(a.interleave), uint32_t(a.swizzle), uint32_t(a.l2Promotion),
      uint32_t(a.oobFill));
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
