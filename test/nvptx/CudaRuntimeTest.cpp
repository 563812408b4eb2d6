//===- CudaRuntimeTest.cpp - the CUDA launcher without a GPU ----*- C++ -*-===//
//
// What the runtime does when there is no driver, a driver that fails, and
// whether its declarations of the driver ABI match cuda.h (when the toolkit
// headers are present; otherwise that check SKIPs with a warning).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Fatbin.h"
#include "runtime/cuda/Nccl.h"

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <tuple>

#if __has_include(<cuda.h>)
#include <cuda.h>
#define TG_HAVE_CUDA_H 1
#endif
#if __has_include(<nccl.h>)
#include <nccl.h>
#define TG_HAVE_NCCL_H 1
#endif

namespace cu = tg::rt::cuda;

TEST_CASE("a missing driver library is a clear error", "[cuda][runtime]") {
  cu::Status st;
  const cu::Driver *d = cu::Driver::load(st, "libcuda-not-here.so.1");
  CHECK(d == nullptr);
  CHECK_FALSE(st.ok);
  CHECK(st.message.rfind("no CUDA driver (libcuda-not-here.so.1 not found)", 0) == 0);
}

TEST_CASE("the default driver loads, or says why not", "[cuda][runtime]") {
  cu::Status st;
  const cu::Driver *d = cu::Driver::load(st);
  if (d) {
    WARN("a CUDA driver is present here; the no-driver path is covered by the "
         "missing-library test");
    CHECK(st.ok);
    return;
  }
  INFO(st.message);
  CHECK((st.message.find("no CUDA driver (libcuda.so.1 not found)") == 0 ||
         st.message.find("cuInit failed: ") == 0));
  cu::Device dev;
  cu::Status open = cu::Device::open(0, dev);
  CHECK_FALSE(open.ok);
  CHECK(open.message == st.message); // cached: the same sentence every time
}

TEST_CASE("driver errors name the call, the error and the code", "[cuda][runtime]") {
  CHECK(cu::formatCudaError("cuModuleLoadData", 218, "CUDA_ERROR_INVALID_PTX",
                            "a PTX JIT compilation failed") ==
        "cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (code 218): a PTX JIT "
        "compilation failed");
  CHECK(cu::formatCudaError("cuLaunchKernelEx", 7, nullptr, nullptr) ==
        "cuLaunchKernelEx failed: unknown CUDA error (code 7)");
}

TEST_CASE("a failing driver call is reported through the loader", "[cuda][runtime]") {
  const char *fake = std::getenv("TG_FAKE_CUDA");
  std::string lib = fake ? fake : TG_FAKE_CUDA_PATH;
  cu::Status st;
  const cu::Driver *d = cu::Driver::load(st, lib);
  CHECK(d == nullptr);
  CHECK(st.message == "cuInit failed: CUDA_ERROR_NO_DEVICE (code 100): no "
                      "CUDA-capable device is detected");
}

TEST_CASE("driver ABI declarations match cuda.h", "[cuda][runtime][abi]") {
#ifdef TG_HAVE_CUDA_H
  STATIC_REQUIRE(sizeof(cu::CUlaunchAttribute) == sizeof(CUlaunchAttribute));
  STATIC_REQUIRE(offsetof(cu::CUlaunchAttribute, value) ==
                 offsetof(CUlaunchAttribute, value));
  STATIC_REQUIRE(sizeof(cu::CUlaunchConfig) == sizeof(CUlaunchConfig));
  STATIC_REQUIRE(offsetof(cu::CUlaunchConfig, attrs) == offsetof(CUlaunchConfig, attrs));
  STATIC_REQUIRE(offsetof(cu::CUlaunchConfig, numAttrs) ==
                 offsetof(CUlaunchConfig, numAttrs));
  STATIC_REQUIRE(sizeof(cu::CUtensorMap) == sizeof(CUtensorMap));
  STATIC_REQUIRE(alignof(cu::CUtensorMap) == alignof(CUtensorMap));
  STATIC_REQUIRE(cu::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 == ::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  STATIC_REQUIRE(cu::CU_TENSOR_MAP_DATA_TYPE_FLOAT16 == ::CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  STATIC_REQUIRE(cu::CU_TENSOR_MAP_SWIZZLE_128B == ::CU_TENSOR_MAP_SWIZZLE_128B);
  STATIC_REQUIRE(cu::CU_TENSOR_MAP_L2_PROMOTION_L2_256B == ::CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  // The manifest's names of tensor-map enums are indexed by cuda.h's values.
  STATIC_REQUIRE(cu::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ ==
                 ::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ);
  STATIC_REQUIRE(::CU_TENSOR_MAP_DATA_TYPE_FLOAT32 == 7 &&
                 ::CU_TENSOR_MAP_DATA_TYPE_UINT8 == 0);
  STATIC_REQUIRE(cu::CU_TENSOR_MAP_INTERLEAVE_32B == ::CU_TENSOR_MAP_INTERLEAVE_32B);
  STATIC_REQUIRE(::CU_TENSOR_MAP_SWIZZLE_32B == 1 && ::CU_TENSOR_MAP_SWIZZLE_64B == 2);
  STATIC_REQUIRE(::CU_TENSOR_MAP_L2_PROMOTION_L2_64B == 1 &&
                 ::CU_TENSOR_MAP_L2_PROMOTION_L2_128B == 2);
  STATIC_REQUIRE(cu::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA ==
                 ::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
  STATIC_REQUIRE(cu::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION == ::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  STATIC_REQUIRE(cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ==
                 ::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  STATIC_REQUIRE(cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ==
                 ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  STATIC_REQUIRE(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
                 ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  STATIC_REQUIRE(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
                 ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  SUCCEED("layouts match cuda.h");
#else
  WARN("SKIPPED: cuda.h not found; driver ABI declarations not cross-checked");
  SUCCEED("skipped: no cuda.h");
#endif
}

TEST_CASE("NCCL declarations match nccl.h", "[cuda][runtime][abi][nccl]") {
#ifdef TG_HAVE_NCCL_H
  namespace nc = tg::rt::nccl;
  STATIC_REQUIRE(sizeof(nc::ncclUniqueId) == sizeof(::ncclUniqueId));
  STATIC_REQUIRE(sizeof(nc::ncclUniqueId) == NCCL_UNIQUE_ID_BYTES);
  STATIC_REQUIRE(sizeof(int) == sizeof(::ncclDataType_t));
  STATIC_REQUIRE(sizeof(int) == sizeof(::ncclResult_t));
  STATIC_REQUIRE(nc::ncclSuccess == ::ncclSuccess);
  STATIC_REQUIRE(nc::ncclInProgress == ::ncclInProgress);
  STATIC_REQUIRE(nc::ncclSum == ::ncclSum);
  STATIC_REQUIRE(nc::ncclAvg == ::ncclAvg);
  STATIC_REQUIRE(nc::ncclFloat32 == ::ncclFloat32);
  STATIC_REQUIRE(nc::ncclFloat16 == ::ncclFloat16);
  STATIC_REQUIRE(nc::ncclBfloat16 == ::ncclBfloat16);
  SUCCEED("declarations match nccl.h");
#else
  WARN("SKIPPED: nccl.h not found; NCCL declarations not cross-checked");
  SUCCEED("skipped: no nccl.h");
#endif
}

namespace {

/// A fat binary with the given images (kind 1 PTX / 2 ELF, arch, payload),
/// laid out as fatbinary writes it.
std::string makeFatbin(const std::vector<std::tuple<int, unsigned, std::string>> &imgs) {
  std::string body;
  for (const auto &[kind, arch, payload] : imgs) {
    std::string h(64, '\0');
    uint16_t k = uint16_t(kind), ver = 0x0101;
    uint32_t size = 64;
    uint64_t bytes = payload.size();
    std::memcpy(&h[0], &k, 2);
    std::memcpy(&h[2], &ver, 2);
    std::memcpy(&h[4], &size, 4);
    std::memcpy(&h[8], &bytes, 8);
    std::memcpy(&h[28], &arch, 4);
    body += h + payload;
  }
  std::string out(16, '\0');
  uint32_t magic = 0xBA55ED50u;
  uint16_t ver = 1, hs = 16;
  uint64_t total = body.size();
  std::memcpy(&out[0], &magic, 4);
  std::memcpy(&out[4], &ver, 2);
  std::memcpy(&out[6], &hs, 2);
  std::memcpy(&out[8], &total, 8);
  return out + body;
}

} // namespace

TEST_CASE("fat binary images are read from their headers", "[cuda][fatbin]") {
  std::string fb = makeFatbin({{2, 80, "ELF80..."}, {2, 90, "ELF90"}, {1, 80, ".version 8.0"}});
  std::vector<cu::FatbinImage> images;
  std::string err;
  REQUIRE(cu::parseFatbin(fb, images, err));
  REQUIRE(images.size() == 3);
  CHECK_FALSE(images[0].ptx);
  CHECK(images[1].arch == 90);
  CHECK(images[2].ptx);
  CHECK(images[2].payload == ".version 8.0");
  CHECK_FALSE(images[2].compressed);
  CHECK(cu::describeImages(images) == "sm_80 cubin, sm_90 cubin, sm_80 PTX");
  // A cubin runs on its major with a minor at least its own; PTX on any
  // newer architecture (JIT).
  CHECK(cu::imageFits(images[0], 8, 6));
  CHECK_FALSE(cu::imageFits(images[0], 9, 0));
  CHECK(cu::imageFits(images[1], 9, 0));
  CHECK(cu::imageFits(images[2], 10, 0));
  CHECK_FALSE(cu::imageFits(images[2], 7, 5));
}

TEST_CASE("a corrupt fat binary is one line of error", "[cuda][fatbin]") {
  std::vector<cu::FatbinImage> images;
  std::string err;
  CHECK_FALSE(cu::parseFatbin("not a fat binary at all", images, err));
  CHECK(err == "not a CUDA fat binary (no 0xBA55ED50 header)");
  std::string fb = makeFatbin({{2, 80, std::string(100, 'x')}});
  CHECK_FALSE(cu::parseFatbin(fb.substr(0, fb.size() - 10), images, err));
  CHECK(err.rfind("truncated fat binary: its header announces", 0) == 0);
  std::string bad = fb;
  bad[16] = 7; // the image's kind
  CHECK_FALSE(cu::parseFatbin(bad, images, err));
  CHECK(err == "fat binary image 0: unknown kind 7 (expected 1, PTX, or 2, a cubin)");
  bad = fb;
  bad[16 + 8] = char(0xff); // the payload size past the end
  CHECK_FALSE(cu::parseFatbin(bad, images, err));
  CHECK(err == "fat binary image 0: its sizes exceed the fat binary");
}
