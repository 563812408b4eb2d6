//===- TensorMap.h - TMA descriptors as the driver encodes them -*- C++ -*-===//
//
// An sm_90a kernel that loads with TMA (cp.async.bulk.tensor) reads a
// CUtensorMap: 128 opaque bytes that cuTensorMapEncodeTiled writes from a
// data type, a rank, global dimensions and strides, a box, element strides
// and four choices (interleave, swizzle, L2 promotion, out-of-bounds fill).
// The kernel's code depends on every one of them (a 128-byte swizzle is
// baked into its shared-memory addressing), so tgc writes them all into the
// launch schedule (docs/artifact.md, "Tensor maps") and the runtime passes
// exactly those to the driver. This header is that argument list, the
// rules the driver documents for it, and their names in the manifest. It
// is header-only and plain C++ (no driver, no MLIR): the schedule's writer
// (codegen), its parser (runtime), the CUDA device and the fake driver of
// the tests share one definition. The 128 bytes themselves are opaque to
// TGC; where kernels run on the PTX emulator, runtime/emulator/TensorMap.h
// defines TGC's own encoding of them.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_CUDA_TENSORMAP_H
#define TG_RUNTIME_CUDA_TENSORMAP_H

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace tg::rt::cuda {

// cuda.h's values for the enums of cuTensorMapEncodeTiled.
enum : int {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ = 12,
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
  CU_TENSOR_MAP_INTERLEAVE_32B = 2,
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_128B = 3,
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1,
};

/// The arguments of cuTensorMapEncodeTiled besides the tensor map and the
/// global address, in the driver's conventions: dimensions innermost
/// first, in elements; strides in bytes, of dimensions 1..rank-1 (the
/// innermost is dense); enums as cuda.h numbers them.
struct TensorMapArgs {
  int dataType = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  unsigned rank = 0;
  std::array<uint64_t, 5> dims{};
  std::array<uint64_t, 4> strides{};
  std::array<unsigned, 5> box{};
  std::array<unsigned, 5> elementStrides{};
  int interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  int swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  int l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  int oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  bool operator==(const TensorMapArgs &o) const {
    return dataType == o.dataType && rank == o.rank && dims == o.dims &&
           strides == o.strides && box == o.box &&
           elementStrides == o.elementStrides && interleave == o.interleave &&
           swizzle == o.swizzle && l2Promotion == o.l2Promotion &&
           oobFill == o.oobFill;
  }
  bool operator!=(const TensorMapArgs &o) const { return !(*this == o); }
  bool operator<(const TensorMapArgs &o) const {
    return std::tie(dataType, rank, dims, strides, box, elementStrides,
                    interleave, swizzle, l2Promotion, oobFill) <
           std::tie(o.dataType, o.rank, o.dims, o.strides, o.box,
                    o.elementStrides, o.interleave, o.swizzle, o.l2Promotion,
                    o.oobFill);
  }
};

/// The map TGC's sm_90a kernels load through (GEMM operands, attention's
/// Q/K/V): `batches` dense row-major rows x cols matrices of 16-bit
/// elements one after the other at the address (2-D for one matrix, else
/// 3-D with the batch outermost, so that no box reaches into the next
/// matrix), boxRows x boxCols (x 1) boxes, with `swizzle`, `l2Promotion`
/// and `oobFill` as the kernel was generated for (the generators' code
/// assumes the 128-byte swizzle and zeros out of bounds). `pitch` is the
/// row stride in elements when the rows are not dense (0: `cols`): an
/// sm_90a GEMM operand whose rows are not 16-byte aligned is read through a
/// realigned copy whose rows are padded to a multiple of 8 elements
/// (docs/nvptx.md, "wgmma for odd row pitches"); the elements between
/// `cols` and the pitch lie outside the map and read as the fill.
inline TensorMapArgs tiledMatrixMap(bool bf16, uint64_t rows, uint64_t cols,
                                    unsigned boxRows, unsigned boxCols,
                                    uint64_t batches = 1,
                                    int swizzle = CU_TENSOR_MAP_SWIZZLE_128B,
                                    int l2Promotion =
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    int oobFill =
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                                    uint64_t pitch = 0) {
  if (pitch == 0)
    pitch = cols;
  TensorMapArgs a;
  a.dataType = bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  a.rank = batches > 1 ? 3 : 2;
  a.dims = {cols, rows, batches > 1 ? batches : 0, 0, 0};
  a.strides = {pitch * 2, batches > 1 ? rows * pitch * 2 : 0, 0, 0};
  a.box = {boxCols, boxRows, batches > 1 ? 1u : 0u, 0, 0};
  a.elementStrides = {1, 1, batches > 1 ? 1u : 0u, 0, 0};
  a.swizzle = swizzle;
  a.l2Promotion = l2Promotion;
  a.oobFill = oobFill;
  return a;
}

/// The manifest's names of the data types (index = cuda.h's value).
inline constexpr const char *kTensorMapTypeNames[] = {
    "u8",  "u16", "u32", "i32",     "u64",  "i64",     "f16",
    "f32", "f64", "bf16", "f32_ftz", "tf32", "tf32_ftz"};
/// Bytes per element of each data type (same index).
inline constexpr unsigned kTensorMapTypeBytes[] = {1, 2, 4, 4, 8, 8, 2,
                                                   4, 8, 2, 4, 4, 4};
/// The manifest's names of interleave, swizzle, L2 promotion and fill.
inline constexpr const char *kTensorMapInterleaveNames[] = {"none", "16B", "32B"};
inline constexpr const char *kTensorMapSwizzleNames[] = {"none", "32B", "64B",
                                                         "128B"};
inline constexpr const char *kTensorMapL2Names[] = {"none", "64B", "128B", "256B"};
inline constexpr const char *kTensorMapFillNames[] = {"zero", "nan"};

/// Bytes per element of `dataType`; 0 for a value cuda.h does not have.
inline unsigned tensorMapElementBytes(int dataType) {
  return dataType >= 0 && dataType <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ
             ? kTensorMapTypeBytes[dataType]
             : 0;
}

/// Bytes from the global address to one past the tensor's last element.
inline unsigned __int128 tensorMapSpan(const TensorMapArgs &a) {
  if (a.rank == 0)
    return 0;
  unsigned __int128 span =
      (unsigned __int128)a.dims[0] * tensorMapElementBytes(a.dataType);
  for (unsigned i = 1; i < a.rank && i < 5; ++i)
    if (a.dims[i])
      span += (unsigned __int128)(a.dims[i] - 1) * a.strides[i - 1];
  return span;
}

/// How checkTensorMap names the arguments in its messages: the manifest's
/// words ("stride 0", "box dimension 1") or cuTensorMapEncodeTiled's
/// parameters ("globalStrides[0]", "boxDim[1]"), which the fake driver of
/// the emulator reports.
enum class TensorMapNames { Manifest, Driver };

/// Why the driver refuses `a`, by the rules cuTensorMapEncodeTiled documents
/// (CUDA 12 driver API), or "" when it takes it: the one definition of
/// those rules (the schedule's parser, the CUDA device and the emulator's
/// encoder, runtime/emulator/TensorMap.cpp, all ask it). The global address
/// is checked apart (checkTensorMapAddress): the schedule knows only
/// offsets.
inline std::string checkTensorMap(const TensorMapArgs &a,
                                  TensorMapNames names =
                                      TensorMapNames::Manifest) {
  auto n = [](uint64_t v) { return std::to_string(v); };
  bool driver = names == TensorMapNames::Driver;
  auto name = [&](const char *manifest, const char *param, unsigned i) {
    return driver ? std::string(param) + "[" + n(i) + "]"
                  : std::string(manifest) + " " + n(i);
  };
  unsigned elem = tensorMapElementBytes(a.dataType);
  if (!elem)
    return "unknown tensor data type " + std::to_string(a.dataType) +
           " (cuda.h's are 0 to 12)";
  if (a.interleave < 0 || a.interleave > 2)
    return "unknown interleave " + std::to_string(a.interleave);
  if (a.swizzle < 0 || a.swizzle > 3)
    return "unknown swizzle " + std::to_string(a.swizzle);
  if (a.l2Promotion < 0 || a.l2Promotion > 3)
    return "unknown L2 promotion " + std::to_string(a.l2Promotion);
  if (a.oobFill < 0 || a.oobFill > 1)
    return "unknown out-of-bounds fill " + std::to_string(a.oobFill);
  if (a.rank < 1 || a.rank > 5)
    return "rank " + n(a.rank) + " is not 1 to 5";
  if (a.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && a.rank < 3)
    return "an interleaved map needs rank 3 or more";
  if (a.oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA &&
      a.dataType < CU_TENSOR_MAP_DATA_TYPE_FLOAT16)
    return "NaN fill on an integer type (a NaN out-of-bounds fill needs a "
           "floating-point type)";
  uint64_t align = a.interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  for (unsigned i = 0; i < a.rank; ++i) {
    if (a.dims[i] < 1 || a.dims[i] > (uint64_t(1) << 32))
      return name("dimension", "globalDim", i) + " is " + n(a.dims[i]) +
             ", not 1 to 2^32";
    if (a.box[i] < 1 || a.box[i] > 256)
      return name("box dimension", "boxDim", i) + " is " + n(a.box[i]) +
             ", not 1 to 256";
    if (a.elementStrides[i] < 1 || a.elementStrides[i] > 8)
      return name("element stride", "elementStrides", i) + " is " +
             n(a.elementStrides[i]) + ", not 1 to 8";
  }
  for (unsigned i = 0; i + 1 < a.rank; ++i) {
    uint64_t s = a.strides[i];
    if (s % align || s >= (uint64_t(1) << 40))
      return name("stride", "globalStrides", i) + " is " + n(s) +
             " bytes, not a multiple of " + n(align) + " under 2^40";
    // The documented form: each stride covers the dimension below it.
    unsigned __int128 below =
        i == 0 ? (unsigned __int128)a.dims[0] * elem
               : (unsigned __int128)a.strides[i - 1] * a.dims[i];
    if ((unsigned __int128)s < below)
      return name("stride", "globalStrides", i) + " (" + n(s) +
             " bytes) is shorter than the dimensions below it, less than the " +
             n(uint64_t(below)) + " bytes they span";
  }
  for (unsigned i = a.rank; i < 5; ++i)
    if (a.dims[i] || a.box[i] || a.elementStrides[i] ||
        (i >= 1 && a.strides[i - 1]))
      return "values past rank " + n(a.rank);
  uint64_t inner = uint64_t(a.box[0]) * elem;
  if (a.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
    if (inner % 16)
      return "the box's inner dimension is " + n(inner) +
             " bytes, not a multiple of 16";
    if (a.swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
        inner > (uint64_t(16) << a.swizzle))
      return "the box's inner dimension is " + n(inner) + " bytes, " +
             (driver ? "over the " + n(uint64_t(16) << a.swizzle) + "-byte"
                     : std::string("more than the ") +
                           kTensorMapSwizzleNames[a.swizzle]) +
             " swizzle span";
  }
  if (a.interleave == CU_TENSOR_MAP_INTERLEAVE_32B &&
      a.swizzle != 1 /* 32B */)
    return "a 32-byte interleave needs the 32-byte swizzle";
  return "";
}

/// Why the driver refuses `address` as the global address of `a` (16-byte
/// alignment, 32 with a 32-byte interleave), or "".
inline std::string checkTensorMapAddress(uint64_t address,
                                         const TensorMapArgs &a) {
  uint64_t align = a.interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (address % align)
    return "address 0x" + [&] {
      char b[24];
      std::snprintf(b, sizeof b, "%llx", (unsigned long long)address);
      return std::string(b);
    }() + " is not " + std::to_string(align) + "-byte aligned";
  return "";
}

/// "bf16 64x32x4 in 64x64x1 boxes, 128B swizzle" (innermost first).
inline std::string describeTensorMap(const TensorMapArgs &a) {
  auto list = [&](auto &v) {
    std::string s;
    for (unsigned i = 0; i < a.rank && i < 5; ++i)
      s += (i ? "x" : "") + std::to_string(v[i]);
    return s;
  };
  unsigned t = unsigned(a.dataType);
  std::string s = t < 13 ? kTensorMapTypeNames[t] : "type " + std::to_string(t);
  s += " " + list(a.dims) + " in " + list(a.box) + " boxes";
  if (a.swizzle > 0 && a.swizzle < 4)
    s += std::string(", ") + kTensorMapSwizzleNames[a.swizzle] + " swizzle";
  return s;
}

} // namespace tg::rt::cuda

#endif // TG_RUNTIME_CUDA_TENSORMAP_H
