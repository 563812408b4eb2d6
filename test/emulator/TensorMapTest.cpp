//===- TensorMapTest.cpp - the fake driver's CUtensorMap encoding ---------===//
//
// encodeTensorMapTiled refuses what cuTensorMapEncodeTiled documents as
// invalid, one case per rule, and decodeTensorMap gives back exactly what
// was encoded, refusing bytes that are not an encoding (a raw pointer's
// target, a corrupted map).
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/TensorMap.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace tgrt::emu;

namespace {

struct Args {
  uint32_t dataType = kTmaBfloat16, rank = 2;
  uint64_t dims[5] = {200, 136, 1, 1, 1};
  uint64_t strides[4] = {400, 400 * 136, 0, 0};
  uint32_t box[5] = {64, 64, 1, 1, 1};
  uint32_t elemStrides[5] = {1, 1, 1, 1, 1};
  uint32_t interleave = kTmaInterleaveNone, swizzle = kTmaSwizzle128B,
           l2 = 3, oob = kTmaOobZero;
  uint64_t address = 0x10000;
};

std::string encode(void *out, const Args &a) {
  return encodeTensorMapTiled(out, a.dataType, a.rank,
                              reinterpret_cast<void *>(a.address), a.dims,
                              a.strides, a.box, a.elemStrides, a.interleave,
                              a.swizzle, a.l2, a.oob);
}

} // namespace

TEST_CASE("tensor map: encode and decode round trip", "[emulator][tma]") {
  alignas(64) uint8_t map[kTensorMapBytes];
  Args a;
  a.rank = 3;
  a.dims[2] = 4;
  REQUIRE(encode(map, a) == "");
  TmaDescriptor m;
  REQUIRE(decodeTensorMap(map, m) == "");
  CHECK(m.dataType == kTmaBfloat16);
  CHECK(m.rank == 3);
  CHECK(m.globalAddress == 0x10000);
  CHECK(m.globalDim[0] == 200);
  CHECK(m.globalDim[1] == 136);
  CHECK(m.globalDim[2] == 4);
  CHECK(m.globalStrides[0] == 400);
  CHECK(m.globalStrides[1] == 400 * 136);
  CHECK(m.boxDim[0] == 64);
  CHECK(m.boxDim[1] == 64);
  CHECK(m.swizzle == kTmaSwizzle128B);
  CHECK(m.l2Promotion == 3);
  CHECK(m.oobFill == kTmaOobZero);
}

TEST_CASE("tensor map: the driver's rules", "[emulator][tma]") {
  alignas(64) uint8_t map[kTensorMapBytes + 64];
  auto refused = [&](Args a, const char *why) {
    std::string e = encode(map, a);
    INFO(e);
    CHECK(e.find(why) != std::string::npos);
  };
  Args a;
  { Args b = a; b.dataType = 13; refused(b, "unknown tensor data type 13"); }
  { Args b = a; b.rank = 0; refused(b, "rank 0"); }
  { Args b = a; b.rank = 6; refused(b, "rank 6"); }
  { Args b = a; b.address = 0x10008; refused(b, "not 16-byte aligned"); }
  { Args b = a; b.dims[1] = 0; refused(b, "globalDim[1] is 0"); }
  { Args b = a; b.strides[0] = 408; refused(b, "globalStrides[0] is 408"); }
  { Args b = a; b.strides[0] = 384; refused(b, "less than the 400 bytes"); }
  { Args b = a; b.box[1] = 257; refused(b, "boxDim[1] is 257"); }
  { Args b = a; b.box[0] = 4; refused(b, "not a multiple of 16"); }
  { Args b = a; b.box[0] = 128; refused(b, "over the 128-byte swizzle span"); }
  { Args b = a; b.swizzle = kTmaSwizzle64B; refused(b, "over the 64-byte"); }
  { Args b = a; b.elemStrides[0] = 9; refused(b, "elementStrides[0] is 9"); }
  { Args b = a; b.interleave = kTmaInterleave16B; refused(b, "rank 3 or more"); }
  { Args b = a; b.oob = kTmaOobNan; b.dataType = kTmaInt32; b.box[0] = 32;
    refused(b, "NaN out-of-bounds fill"); }
  { Args b = a; b.swizzle = 4; refused(b, "unknown swizzle 4"); }
  CHECK(encodeTensorMapTiled(map + 32, a.dataType, a.rank,
                             reinterpret_cast<void *>(a.address), a.dims,
                             a.strides, a.box, a.elemStrides, a.interleave,
                             a.swizzle, a.l2, a.oob)
            .find("64-byte aligned") != std::string::npos);
}

TEST_CASE("tensor map: bytes that are not an encoding are refused",
          "[emulator][tma]") {
  alignas(64) uint8_t map[kTensorMapBytes] = {};
  TmaDescriptor m;
  CHECK(decodeTensorMap(map, m).find("not an encoded tensor map") !=
        std::string::npos);
  REQUIRE(encode(map, Args()) == "");
  map[125] = 1; // an unused byte
  CHECK(decodeTensorMap(map, m).find("corrupted") != std::string::npos);
  map[125] = 0;
  map[105] = 1; // box 64 -> 320 columns
  CHECK(decodeTensorMap(map, m).find("boxDim[0] is 320") != std::string::npos);
}
