//===- FakeCudaEmu.cpp - a libcuda that runs kernels on the emulator -*- C++ -*-===//
//
// A stand-in for libcuda.so.1 that tg-run loads through TG_CUDA_LIBRARY
// (CudaDriver.h), so `tg-run --device cuda` runs end to end without a GPU:
// device memory is host memory, cuModuleLoadData takes the PTX image out of
// a fat binary (decompressing it with zstd) and cuLaunchKernelEx runs the
// kernel on the PTX emulator (runtime/emulator). Streams run their work
// when it is enqueued; stream capture records launches and copies, and
// cuGraphLaunch replays the recording. A kernel that faults leaves a sticky
// error (CUDA_ERROR_ILLEGAL_ADDRESS) that the next synchronizing call
// returns, as a real device's asynchronous error would.
//
// Environment, for the error paths of the tests:
//   TG_FAKE_CUDA_CC=90            the compute capability it reports (80)
//   TG_FAKE_CUDA_FREE_BYTES=N     its free memory (16 GiB)
//   TG_FAKE_CUDA_FAIL_KERNEL=K    kernels named K... fault at the Nth launch
//   TG_FAKE_CUDA_FAIL_AT=N        ... (1: the first)
//   TG_FAKE_CUDA_LOG=FILE         appends one line per driver event: a
//                                 launch enqueued (launch K) or captured
//                                 (record K), a kernel run (run K), a
//                                 capture, a graph launch, a copy
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Fatbin.h"
#include "runtime/emulator/Emulator.h"

#include <zstd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace emu = tgrt::emu;
namespace cu = tg::rt::cuda;

enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNoBinary = 209,
  kInvalidImage = 200,
  kNotFound = 500,
  kIllegalAddress = 700,
  kLaunchFailed = 719,
  kCaptureInvalidated = 901,
};

struct Module {
  std::unique_ptr<emu::PtxModule> ptx;
};
struct Function {
  Module *module;
  std::string name;
};
/// A recorded piece of work: runs on the emulator or copies memory.
using Work = std::function<int()>;
struct Stream {
  bool capturing = false;
  std::vector<Work> recorded;
};
struct Graph {
  std::vector<Work> work;
};

std::map<uint64_t, size_t> gDevice; // device allocations: start -> bytes
size_t gAllocated = 0;
int gSticky = 0; // the first asynchronous error, returned by synchronizing calls
std::map<std::string, int> gLaunches;
Stream gDefaultStream;

size_t envSize(const char *name, size_t fallback) {
  const char *v = std::getenv(name);
  return v && *v ? size_t(std::strtoull(v, nullptr, 10)) : fallback;
}

void log(const std::string &line) {
  if (const char *f = std::getenv("TG_FAKE_CUDA_LOG"))
    if (FILE *out = std::fopen(f, "a")) {
      std::fprintf(out, "%s\n", line.c_str());
      std::fclose(out);
    }
}

Stream *streamOf(void *s) { return s ? static_cast<Stream *>(s) : &gDefaultStream; }

/// Runs `w` now, or records it when the stream is capturing.
int submit(void *s, Work w) {
  Stream *st = streamOf(s);
  if (st->capturing) {
    st->recorded.push_back(std::move(w));
    return kSuccess;
  }
  if (gSticky)
    return gSticky;
  int r = w();
  return r;
}

int launchNow(Function *fn, std::array<uint32_t, 3> grid,
              std::array<uint32_t, 3> block, unsigned smem,
              std::vector<uint64_t> params) {
  const char *failK = std::getenv("TG_FAKE_CUDA_FAIL_KERNEL");
  bool chosen = failK && fn->name.rfind(failK, 0) == 0;
  int n = ++gLaunches[chosen ? std::string(failK) : fn->name];
  log("run " + fn->name);
  if (chosen && n == int(envSize("TG_FAKE_CUDA_FAIL_AT", 1))) {
    gSticky = kIllegalAddress;
    return kSuccess; // asynchronous: the launch itself succeeds
  }
  emu::Memory mem;
  for (auto &[start, bytes] : gDevice)
    mem.add(reinterpret_cast<void *>(start), bytes);
  std::string err;
  if (!fn->module->ptx->launch(fn->name, grid, block, smem, params, mem, err)) {
    log("fault " + fn->name + ": " + err);
    gSticky = kIllegalAddress;
  }
  return kSuccess;
}

int copyNow(void *dst, const void *src, size_t n, const char *what) {
  log(what);
  std::memmove(dst, src, n);
  return kSuccess;
}

/// The PTX text of an image: a fat binary's PTX (decompressed), or PTX.
int ptxOf(const void *image, std::string &ptx) {
  const char *p = static_cast<const char *>(image);
  uint32_t magic = 0;
  std::memcpy(&magic, p, 4);
  if (magic != 0xBA55ED50u) {
    ptx = p; // PTX text, NUL-terminated
    return kSuccess;
  }
  uint64_t total = 0;
  uint16_t header = 0;
  std::memcpy(&header, p + 6, 2);
  std::memcpy(&total, p + 8, 8);
  std::vector<cu::FatbinImage> images;
  std::string err;
  if (!cu::parseFatbin(std::string_view(p, header + total), images, err))
    return kInvalidImage;
  for (const cu::FatbinImage &img : images) {
    if (!img.ptx)
      continue;
    if (!img.compressed) {
      ptx.assign(img.payload.data(), strnlen(img.payload.data(), img.payload.size()));
      return kSuccess;
    }
    unsigned long long size =
        ZSTD_getFrameContentSize(img.payload.data(), img.payload.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
      return kInvalidImage;
    ptx.resize(size);
    size_t got = ZSTD_decompress(ptx.data(), ptx.size(), img.payload.data(),
                                 img.payload.size());
    if (ZSTD_isError(got))
      return kInvalidImage;
    ptx.resize(strnlen(ptx.data(), got));
    return kSuccess;
  }
  return kNoBinary; // the emulator runs PTX only
}

} // namespace

extern "C" {

int cuInit(unsigned) { return kSuccess; }
int cuGetErrorName(int e, const char **s) {
  switch (e) {
  case kOutOfMemory: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case kNoBinary: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
  case kInvalidImage: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
  case kNotFound: *s = "CUDA_ERROR_NOT_FOUND"; break;
  case kIllegalAddress: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  case kLaunchFailed: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
  case kCaptureInvalidated: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
  default: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  }
  return kSuccess;
}
int cuGetErrorString(int e, const char **s) {
  *s = e == kIllegalAddress ? "an illegal memory access was encountered"
       : e == kOutOfMemory  ? "out of memory"
                            : "fake driver error";
  return kSuccess;
}
int cuDeviceGetCount(int *n) { *n = 1; return kSuccess; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return kSuccess; }
int cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, size_t(len), "TGC fake GPU (PTX emulator)");
  return kSuccess;
}
int cuDeviceGetAttribute(int *v, int attr, int) {
  int cc = int(envSize("TG_FAKE_CUDA_CC", 80));
  *v = attr == 75 ? cc / 10 : attr == 76 ? cc % 10 : attr == 16 ? 4 : 0;
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  static int token;
  *ctx = &token;
  return kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
int cuCtxSetCurrent(void *) { return kSuccess; }
int cuCtxSynchronize() { return gSticky; }

int cuModuleLoadData(void **mod, const void *image) {
  std::string ptx, err;
  if (int r = ptxOf(image, ptx))
    return r;
  auto m = std::make_unique<Module>();
  m->ptx = emu::PtxModule::parse(ptx, err);
  if (!m->ptx) {
    log("ptx: " + err);
    return kInvalidImage;
  }
  *mod = m.release();
  return kSuccess;
}
int cuModuleUnload(void *mod) {
  delete static_cast<Module *>(mod);
  return kSuccess;
}
int cuModuleGetFunction(void **fn, void *mod, const char *name) {
  auto *m = static_cast<Module *>(mod);
  if (m->ptx->numParams(name) < 0)
    return kNotFound;
  *fn = new Function{m, name}; // one per lookup; the runtime looks up once
  return kSuccess;
}
int cuFuncSetAttribute(void *, int, int) { return kSuccess; }

int cuLaunchKernelEx(const cu::CUlaunchConfig *cfg, void *f, void **args,
                     void **) {
  auto *fn = static_cast<Function *>(f);
  int n = fn->module->ptx->numParams(fn->name);
  std::vector<uint64_t> params;
  for (int i = 0; i < n; ++i) {
    uint64_t v = 0;
    std::memcpy(&v, args[i], sizeof v);
    params.push_back(v);
  }
  std::array<uint32_t, 3> grid{cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ},
      block{cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ};
  unsigned smem = cfg->sharedMemBytes;
  log((streamOf(cfg->hStream)->capturing ? "record " : "launch ") + fn->name);
  return submit(cfg->hStream, [=] { return launchNow(fn, grid, block, smem, params); });
}
int cuTensorMapEncodeTiled() { return kInvalidValue; }

int cuMemGetInfo_v2(size_t *freeBytes, size_t *total) {
  size_t all = envSize("TG_FAKE_CUDA_FREE_BYTES", size_t(16) << 30);
  *total = all;
  *freeBytes = all > gAllocated ? all - gAllocated : 0;
  return kSuccess;
}
int cuMemAlloc_v2(uint64_t *p, size_t bytes) {
  size_t freeBytes, total;
  cuMemGetInfo_v2(&freeBytes, &total);
  if (bytes > freeBytes)
    return kOutOfMemory;
  void *m = std::calloc(1, bytes ? bytes : 1);
  if (!m)
    return kOutOfMemory;
  *p = reinterpret_cast<uint64_t>(m);
  gDevice[*p] = bytes;
  gAllocated += bytes;
  log("alloc " + std::to_string(bytes));
  return kSuccess;
}
int cuMemFree_v2(uint64_t p) {
  auto it = gDevice.find(p);
  if (it == gDevice.end())
    return kInvalidValue;
  gAllocated -= it->second;
  gDevice.erase(it);
  std::free(reinterpret_cast<void *>(p));
  return kSuccess;
}
int cuMemHostAlloc(void **p, size_t bytes, unsigned) {
  *p = std::calloc(1, bytes ? bytes : 1);
  return *p ? kSuccess : kOutOfMemory;
}
int cuMemFreeHost(void *p) {
  std::free(p);
  return kSuccess;
}
int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) {
  return gSticky ? gSticky : copyNow(reinterpret_cast<void *>(dst), src, n, "HtoD");
}
int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) {
  return gSticky ? gSticky : copyNow(dst, reinterpret_cast<void *>(src), n, "DtoH");
}
int cuMemsetD8_v2(uint64_t dst, unsigned char v, size_t n) {
  std::memset(reinterpret_cast<void *>(dst), v, n);
  return gSticky;
}
int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *s) {
  return submit(s, [=] { return copyNow(reinterpret_cast<void *>(dst), src, n, "HtoDAsync"); });
}
int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *s) {
  return submit(s, [=] { return copyNow(dst, reinterpret_cast<void *>(src), n, "DtoHAsync"); });
}
int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void *s) {
  return submit(s, [=] {
    return copyNow(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src), n,
                   "DtoDAsync");
  });
}

int cuStreamCreate(void **s, unsigned) {
  *s = new Stream();
  return kSuccess;
}
int cuStreamDestroy_v2(void *s) {
  delete static_cast<Stream *>(s);
  return kSuccess;
}
int cuStreamSynchronize(void *) { return gSticky; }
int cuStreamWaitEvent(void *, void *, unsigned) { return kSuccess; }
int cuStreamBeginCapture_v2(void *s, int) {
  Stream *st = streamOf(s);
  if (st->capturing)
    return kInvalidValue;
  st->capturing = true;
  st->recorded.clear();
  log("begin capture");
  return kSuccess;
}
int cuStreamEndCapture(void *s, void **graph) {
  Stream *st = streamOf(s);
  if (!st->capturing)
    return kInvalidValue;
  st->capturing = false;
  *graph = new Graph{std::move(st->recorded)};
  log("end capture: " + std::to_string(static_cast<Graph *>(*graph)->work.size()) +
      " nodes");
  return kSuccess;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long) {
  *exec = new Graph(*static_cast<Graph *>(graph));
  return kSuccess;
}
int cuGraphLaunch(void *exec, void *s) {
  if (streamOf(s)->capturing)
    return kInvalidValue;
  log("graph launch");
  for (Work &w : static_cast<Graph *>(exec)->work) {
    if (gSticky)
      return kSuccess; // the error surfaces at the next synchronization
    w();
  }
  return kSuccess;
}
int cuGraphExecDestroy(void *exec) {
  delete static_cast<Graph *>(exec);
  return kSuccess;
}
int cuGraphDestroy(void *graph) {
  delete static_cast<Graph *>(graph);
  return kSuccess;
}

int cuEventCreate(void **e, unsigned) {
  static int token;
  *e = &token;
  return kSuccess;
}
int cuEventDestroy_v2(void *) { return kSuccess; }
int cuEventRecord(void *, void *) { return kSuccess; }
int cuEventSynchronize(void *) { return gSticky; }
int cuEventElapsedTime_v2(float *ms, void *, void *) {
  *ms = 0;
  return kSuccess;
}

} // extern "C"
