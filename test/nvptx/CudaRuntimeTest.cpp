//===- CudaRuntimeTest.cpp - the CUDA launcher without a GPU ----*- C++ -*-===//
//
// What the runtime does when there is no driver, a driver that fails, and
// whether its declarations of the driver ABI match cuda.h (when the toolkit
// headers are present; otherwise that check SKIPs with a warning).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDriver.h"

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdlib>

#if __has_include(<cuda.h>)
#include <cuda.h>
#define TG_HAVE_CUDA_H 1
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
