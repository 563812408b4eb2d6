//===- TensorMap.h - the CUtensorMap encoding of the fake driver -*- C++ -*-===//
//
// A real CUtensorMap is 128 opaque bytes whose layout NVIDIA does not
// document. Where kernels run on the PTX emulator (the fake libcuda of
// test/nvptx/FakeCudaEmu.cpp, the emulator's own tests) the bytes are ours:
// encodeTensorMapTiled() checks cuTensorMapEncodeTiled's arguments the way
// the driver documents them (runtime/cuda/TensorMap.h's checkTensorMap,
// their one definition) and writes the encoding below; the emulator's
// cp.async.bulk.tensor decodes it again with decodeTensorMap(). A kernel
// handed anything else (a raw buffer pointer in place of a map, a map the
// kernel overwrote) fails its launch naming the address, instead of
// loading garbage.
//
// Encoding (little endian, 128 bytes):
//   0  "TGTM"              4 u8 data type, rank, interleave, swizzle,
//   8  u8 L2 promotion, out-of-bounds fill, elementStrides[5], 0
//   16 u64 global address  24 u64 globalDim[5]
//   64 u64 globalStrides[4] (bytes, dimensions 1..4)
//   104 u16 boxDim[5] - 1 (so 256 fits)      114 zeros up to 128
// Enum values are cuda.h's (CU_TENSOR_MAP_DATA_TYPE_*, _INTERLEAVE_*,
// _SWIZZLE_*, _L2_PROMOTION_*, _FLOAT_OOB_FILL_*).
//
// Plain C++17; no CUDA, LLVM or MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_EMULATOR_TENSORMAP_H
#define TG_RUNTIME_EMULATOR_TENSORMAP_H

#include <cstdint>
#include <string>

namespace tgrt::emu {

/// Bytes of an encoded map (sizeof(CUtensorMap)); it must be 64-byte aligned.
constexpr uint32_t kTensorMapBytes = 128;

/// cuda.h's enum values.
enum : uint32_t {
  kTmaUint8 = 0, kTmaUint16, kTmaUint32, kTmaInt32, kTmaUint64, kTmaInt64,
  kTmaFloat16, kTmaFloat32, kTmaFloat64, kTmaBfloat16, kTmaFloat32Ftz,
  kTmaTfloat32, kTmaTfloat32Ftz
};
enum : uint32_t { kTmaInterleaveNone = 0, kTmaInterleave16B, kTmaInterleave32B };
enum : uint32_t {
  kTmaSwizzleNone = 0, kTmaSwizzle32B, kTmaSwizzle64B, kTmaSwizzle128B
};
enum : uint32_t { kTmaOobZero = 0, kTmaOobNan = 1 };

/// What a tiled tensor map describes: cuTensorMapEncodeTiled's arguments.
/// globalStrides[i] is the byte stride of dimension i + 1 (rank - 1 used).
struct TmaDescriptor {
  uint32_t dataType = kTmaBfloat16, rank = 2;
  uint64_t globalAddress = 0;
  uint64_t globalDim[5] = {};
  uint64_t globalStrides[4] = {};
  uint32_t boxDim[5] = {};
  uint32_t elementStrides[5] = {1, 1, 1, 1, 1};
  uint32_t interleave = kTmaInterleaveNone, swizzle = kTmaSwizzleNone,
           l2Promotion = 0, oobFill = kTmaOobZero;
};

/// Bytes of one element of CU_TENSOR_MAP_DATA_TYPE_* `dataType` (0: not one).
uint32_t tensorMapElementBytes(uint32_t dataType);

/// Checks `m` against cuTensorMapEncodeTiled's documented rules and, when
/// it passes, writes its 128-byte encoding to `out`. Returns "" or the
/// first rule broken ("boxDim[0] is 300, over 256").
std::string encodeTensorMap(void *out, const TmaDescriptor &m);

/// cuTensorMapEncodeTiled's signature over encodeTensorMap (what a fake
/// driver forwards to): also checks that `out` is 64-byte aligned.
std::string encodeTensorMapTiled(void *out, uint32_t dataType, uint32_t rank,
                                 void *globalAddress,
                                 const uint64_t *globalDim,
                                 const uint64_t *globalStrides,
                                 const uint32_t *boxDim,
                                 const uint32_t *elementStrides,
                                 uint32_t interleave, uint32_t swizzle,
                                 uint32_t l2Promotion, uint32_t oobFill);

/// The map TGC's sm_90a kernels take over `batches` dense row-major
/// rows x cols matrices of 16-bit elements at `address` (the arguments
/// Device::encodeTensorMap gives the driver, tg::rt::cuda::tiledMatrixMap:
/// 2-D, or 3-D with the batch outermost; boxRows x boxCols boxes; 128B
/// swizzle; zero fill), encoded through encodeTensorMapTiled (so `out`
/// must be 64-byte aligned).
std::string encodeMatrixTensorMap(void *out, bool bf16, uint64_t address,
                                  uint64_t rows, uint64_t cols,
                                  uint64_t batches, uint32_t boxRows,
                                  uint32_t boxCols);

/// Decodes 128 bytes written by encodeTensorMap into `m`: "" or why they
/// are not such an encoding.
std::string decodeTensorMap(const void *bytes, TmaDescriptor &m);

} // namespace tgrt::emu

#endif // TG_RUNTIME_EMULATOR_TENSORMAP_H
