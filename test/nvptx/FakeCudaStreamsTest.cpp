//===- FakeCudaStreamsTest.cpp - the fake driver's streams and events -----===//
//
// The fake driver of the lit tests (FakeCudaEmu.cpp) runs stream work as
// late as CUDA allows, so that a wait the runtime leaves out changes what
// it computes: here the three hazards of CudaDevice's staging, each once
// without the wait (the race shows) and once with it. A separate file from
// CudaRuntimeTest.cpp, which includes cuda.h and its _v2 macros.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDriver.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace cu = tg::rt::cuda;

#ifdef TG_FAKE_CUDA_EMU_PATH
TEST_CASE("the fake driver runs stream work late, so a missing wait shows",
          "[cuda][fake]") {
  cu::Status st;
  const cu::Driver *d = cu::Driver::load(st, TG_FAKE_CUDA_EMU_PATH);
  INFO(st.message);
  REQUIRE(d);
  const cu::DriverApi &f = d->api();
  auto ok = [](cu::CUresult r) { return r == 0; };
  cu::CUstream copy = nullptr, compute = nullptr;
  REQUIRE(ok(f.cuStreamCreate(&copy, cu::CU_STREAM_NON_BLOCKING)));
  REQUIRE(ok(f.cuStreamCreate(&compute, cu::CU_STREAM_NON_BLOCKING)));
  cu::CUdeviceptr a = 0, b = 0;
  REQUIRE(ok(f.cuMemAlloc(&a, 4)));
  REQUIRE(ok(f.cuMemAlloc(&b, 4)));
  void *pinnedRaw = nullptr;
  REQUIRE(ok(f.cuMemHostAlloc(&pinnedRaw, 4, 0)));
  auto *pinned = static_cast<int32_t *>(pinnedRaw);
  cu::CUevent ev = nullptr;
  REQUIRE(ok(f.cuEventCreate(&ev, cu::CU_EVENT_DISABLE_TIMING)));
  auto read = [&](cu::CUdeviceptr p) {
    int32_t v = 0;
    REQUIRE(ok(f.cuMemcpyDtoH(&v, p, 4)));
    return v;
  };
  auto put = [&](cu::CUdeviceptr p, int32_t v) {
    REQUIRE(ok(f.cuMemcpyHtoD(p, &v, 4)));
  };

  SECTION("a pinned buffer rewritten before its upload ran uploads the new bytes") {
    *pinned = 1;
    REQUIRE(ok(f.cuMemcpyHtoDAsync(a, pinned, 4, copy)));
    *pinned = 2; // no wait: the upload has not run yet
    REQUIRE(ok(f.cuStreamSynchronize(copy)));
    CHECK(read(a) == 2);
    *pinned = 1;
    REQUIRE(ok(f.cuMemcpyHtoDAsync(a, pinned, 4, copy)));
    REQUIRE(ok(f.cuEventRecord(ev, copy)));
    REQUIRE(ok(f.cuEventSynchronize(ev))); // the wait CudaDevice does
    *pinned = 2;
    CHECK(read(a) == 1);
  }
  SECTION("a copy stream that does not wait overwrites what a kernel still reads") {
    put(a, 1);
    REQUIRE(ok(f.cuMemcpyDtoDAsync(b, a, 4, compute))); // reads a, later
    *pinned = 3;
    REQUIRE(ok(f.cuMemcpyHtoDAsync(a, pinned, 4, copy)));
    REQUIRE(ok(f.cuStreamSynchronize(copy)));
    REQUIRE(ok(f.cuStreamSynchronize(compute)));
    CHECK(read(b) == 3); // the race shows
    put(a, 1);
    REQUIRE(ok(f.cuMemcpyDtoDAsync(b, a, 4, compute)));
    REQUIRE(ok(f.cuEventRecord(ev, compute)));
    REQUIRE(ok(f.cuStreamWaitEvent(copy, ev, 0))); // CudaDevice's ioFree wait
    REQUIRE(ok(f.cuMemcpyHtoDAsync(a, pinned, 4, copy)));
    REQUIRE(ok(f.cuStreamSynchronize(copy)));
    REQUIRE(ok(f.cuStreamSynchronize(compute)));
    CHECK(read(b) == 1);
  }
  SECTION("a synchronous copy does not wait for a non-blocking stream") {
    put(a, 5);
    put(b, 0);
    REQUIRE(ok(f.cuMemcpyDtoDAsync(b, a, 4, compute)));
    CHECK(read(b) == 0);
    REQUIRE(ok(f.cuStreamSynchronize(compute)));
    CHECK(read(b) == 5);
  }
  f.cuEventDestroy(ev);
  f.cuMemFreeHost(pinnedRaw);
  f.cuMemFree(a);
  f.cuMemFree(b);
  f.cuStreamDestroy(copy);
  f.cuStreamDestroy(compute);
}
#endif
