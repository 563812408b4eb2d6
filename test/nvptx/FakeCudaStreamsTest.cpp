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
#include <cstdlib>
#include <dlfcn.h>

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

// CudaDevice's communication stream (docs/data-parallel.md, "Overlap"): a
// step's collective is a branch of the captured graph, forked from the
// compute stream after its bucket's gradients and joined before the
// optimizer. Here the gradient is a = 7, the collective copies a to b and
// the optimizer b to c. A fork too early (before a = 7) shows when the
// branch runs early (TG_FAKE_CUDA_EARLY), a join too late (after the
// optimizer) when it runs late, the default.
TEST_CASE("a captured fork is a branch of the graph, joined before its use",
          "[cuda][fake]") {
  cu::Status st;
  const cu::Driver *d = cu::Driver::load(st, TG_FAKE_CUDA_EMU_PATH);
  INFO(st.message);
  REQUIRE(d);
  const cu::DriverApi &f = d->api();
  auto ok = [](cu::CUresult r) { return r == 0; };
  cu::CUstream compute = nullptr, comm = nullptr;
  REQUIRE(ok(f.cuStreamCreate(&compute, cu::CU_STREAM_NON_BLOCKING)));
  REQUIRE(ok(f.cuStreamCreate(&comm, cu::CU_STREAM_NON_BLOCKING)));
  cu::CUdeviceptr a = 0, b = 0, c = 0;
  for (cu::CUdeviceptr *p : {&a, &b, &c})
    REQUIRE(ok(f.cuMemAlloc(p, 4)));
  cu::CUevent forked = nullptr, done = nullptr;
  REQUIRE(ok(f.cuEventCreate(&forked, cu::CU_EVENT_DISABLE_TIMING)));
  REQUIRE(ok(f.cuEventCreate(&done, cu::CU_EVENT_DISABLE_TIMING)));
  int32_t seven = 7, zero = 0;
  auto read = [&](cu::CUdeviceptr p) {
    int32_t v = 0;
    REQUIRE(ok(f.cuMemcpyDtoH(&v, p, 4)));
    return v;
  };
  auto fork = [&] {
    REQUIRE(ok(f.cuEventRecord(forked, compute)));
    REQUIRE(ok(f.cuStreamWaitEvent(comm, forked, 0)));
  };
  // Captures the step, launches it once (with early branches or not) and
  // returns {b, c}.
  auto step = [&](bool forkLate, bool joinEarly, bool early) {
    REQUIRE(ok(f.cuStreamBeginCapture(compute,
                                      cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)));
    if (!forkLate)
      fork();
    REQUIRE(ok(f.cuMemcpyHtoDAsync(a, &seven, 4, compute))); // pageable: staged now
    if (forkLate)
      fork();
    REQUIRE(ok(f.cuMemcpyDtoDAsync(b, a, 4, comm)));
    REQUIRE(ok(f.cuEventRecord(done, comm)));
    if (joinEarly)
      REQUIRE(ok(f.cuStreamWaitEvent(compute, done, 0)));
    REQUIRE(ok(f.cuMemcpyDtoDAsync(c, b, 4, compute)));
    if (!joinEarly)
      REQUIRE(ok(f.cuStreamWaitEvent(compute, done, 0)));
    cu::CUgraph g = nullptr;
    cu::CUgraphExec exec = nullptr;
    REQUIRE(ok(f.cuStreamEndCapture(compute, &g)));
    REQUIRE(ok(f.cuGraphInstantiateWithFlags(&exec, g, 0)));
    f.cuGraphDestroy(g);
    for (cu::CUdeviceptr p : {a, b, c})
      REQUIRE(ok(f.cuMemcpyHtoD(p, &zero, 4)));
    // The graph's branch streams are made at its first launch.
    if (early)
      setenv("TG_FAKE_CUDA_EARLY", "1", 1);
    REQUIRE(ok(f.cuGraphLaunch(exec, compute)));
    unsetenv("TG_FAKE_CUDA_EARLY");
    REQUIRE(ok(f.cuStreamSynchronize(compute)));
    std::pair<int32_t, int32_t> out{read(b), read(c)};
    f.cuGraphExecDestroy(exec);
    return out;
  };
  using P = std::pair<int32_t, int32_t>;
  SECTION("with the waits in place, either way") {
    CHECK(step(true, true, false) == P{7, 7});
    CHECK(step(true, true, true) == P{7, 7});
  }
  SECTION("a join after the optimizer shows when the branch runs late") {
    CHECK(step(true, false, false) == P{7, 0});
  }
  SECTION("a fork before the gradients shows when the branch runs early") {
    CHECK(step(false, true, true) == P{0, 0});
    CHECK(step(false, true, false) == P{7, 7}); // late hides it
  }
  SECTION("a capture whose branch is not joined fails, as CUDA's") {
    REQUIRE(ok(f.cuStreamBeginCapture(compute,
                                      cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)));
    fork();
    REQUIRE(ok(f.cuMemcpyDtoDAsync(b, a, 4, comm)));
    cu::CUgraph g = nullptr;
    CHECK(f.cuStreamEndCapture(compute, &g) == 904); // ..._UNJOINED
    CHECK(g == nullptr);
    // Both streams left the capture: work runs again.
    REQUIRE(ok(f.cuMemcpyHtoD(a, &seven, 4)));
    REQUIRE(ok(f.cuMemcpyDtoDAsync(b, a, 4, comm)));
    REQUIRE(ok(f.cuStreamSynchronize(comm)));
    CHECK(read(b) == 7);
  }
  SECTION("host work in flight keeps an event not ready until it completes") {
    void *h = dlopen(TG_FAKE_CUDA_EMU_PATH, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(h);
    using Polled = int (*)(void *, int (*)(void *), void *);
    auto launch = reinterpret_cast<Polled>(dlsym(h, "tgFakeCudaLaunchPolled"));
    REQUIRE(launch);
    int polls = 0;
    auto third = [](void *p) { return ++*static_cast<int *>(p) >= 3 ? 1 : 0; };
    REQUIRE(ok(launch(comm, third, &polls)));
    REQUIRE(ok(f.cuEventRecord(done, comm)));
    CHECK(f.cuEventQuery(done) == cu::CU_ERROR_NOT_READY);
    CHECK(f.cuEventQuery(done) == cu::CU_ERROR_NOT_READY);
    CHECK(ok(f.cuEventQuery(done)));
    CHECK(polls == 3);
    REQUIRE(ok(launch(comm, third, &(polls = 0))));
    REQUIRE(ok(f.cuEventRecord(done, comm)));
    CHECK(ok(f.cuEventSynchronize(done))); // a synchronization polls on
    CHECK(polls == 3);
    dlclose(h);
  }
  for (cu::CUevent e : {forked, done})
    f.cuEventDestroy(e);
  for (cu::CUdeviceptr p : {a, b, c})
    f.cuMemFree(p);
  f.cuStreamDestroy(comm);
  f.cuStreamDestroy(compute);
}
#endif
