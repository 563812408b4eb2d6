//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// TGC's runtime talks to the GPU through the CUDA driver API only, and loads
// it with dlopen("libcuda.so.1") on first use, so the runtime builds and its
// device-free paths run on machines with no GPU, no driver and no toolkit.
// The few driver types used are declared here with their ABI (checked against
// cuda.h by the tests where the toolkit is present). Every failing call turns
// into a sentence: "cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (code 218)".
// No MLIR or LLVM header is included here, by design.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_CUDA_CUDADRIVER_H
#define TG_RUNTIME_CUDA_CUDADRIVER_H

#include "runtime/cuda/TensorMap.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tg::rt::cuda {

// Driver ABI types (cuda.h names without the prefix).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;

/// CUtensorMap: 128 opaque bytes, 128-byte aligned (as in CUDA 12.x/13 cuda.h).
struct alignas(128) CUtensorMap {
  uint64_t opaque[16];
};

/// CUlaunchAttribute / CUlaunchConfig, as laid out in cuda.h.
struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char raw[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
  } value;
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};

// The enum values used (cuda.h).
enum : int {
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_STREAM_NON_BLOCKING = 1,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_EVENT_DISABLE_TIMING = 2,
  CU_ERROR_OUT_OF_MEMORY = 2,
  CU_ERROR_NOT_READY = 600,
};

/// Function pointers resolved from libcuda.so.1 (versioned names where the
/// driver has them, e.g. cuMemAlloc_v2).
struct DriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **,
                               void **);
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *, int, unsigned, void *,
                                     const uint64_t *, const uint64_t *,
                                     const unsigned *, const unsigned *, int,
                                     int, int, int);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  // The resident device (CudaDevice.cpp): free memory, streams, pinned
  // staging, asynchronous copies and graphs.
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                          unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
};

/// Outcome of a runtime call: ok, or a message for the user.
struct Status {
  bool ok = true;
  std::string message;
  static Status success() { return {}; }
  static Status error(std::string m) { return {false, std::move(m)}; }
  explicit operator bool() const { return ok; }
};

/// "cuX failed: CUDA_ERROR_Y (code N): description". `name`/`desc` may be
/// null (then the code alone is reported).
std::string formatCudaError(const char *call, CUresult code, const char *name,
                            const char *desc);

/// The driver library Device::open loads: $TG_CUDA_LIBRARY when set (the
/// tests' fake driver, a driver outside the loader's path), else
/// libcuda.so.1.
std::string driverLibrary();

/// The driver, loaded once per process. `libraryName` defaults to
/// libcuda.so.1 (tests pass a missing name to exercise the failure path).
class Driver {
public:
  /// Loads and initialises the driver (cuInit). On failure returns nullptr
  /// and sets `error` ("no CUDA driver (libcuda.so.1 not found)" etc.).
  static const Driver *load(Status &error,
                            const std::string &libraryName = "libcuda.so.1");
  const DriverApi &api() const { return fns; }
  /// Turns a CUresult into a Status naming the call.
  Status check(CUresult r, const char *call) const;

private:
  DriverApi fns{};
  void *handle = nullptr;
};

/// One device with its primary context current on the calling thread.
class Device {
public:
  static Status open(int ordinal, Device &out);
  const Driver &driver() const { return *drv; }
  std::string name;
  int ccMajor = 0, ccMinor = 0, smCount = 0;

  /// Loads a cubin, fat binary or PTX image.
  Status loadModule(const std::string &image, CUmodule &mod) const;
  Status getFunction(CUmodule mod, const std::string &name, CUfunction &f) const;
  /// Launches with cuLaunchKernelEx; `cluster` > 1 sets a 1-D cluster.
  Status launch(CUfunction f, unsigned grid, unsigned block, unsigned smem,
                void **args, unsigned cluster = 1, CUstream s = nullptr) const;
  Status alloc(size_t bytes, CUdeviceptr &p) const;
  /// Free and total bytes of the device's memory (cuMemGetInfo).
  Status memInfo(size_t &freeBytes, size_t &totalBytes) const;
  Status free(CUdeviceptr p) const;
  Status upload(CUdeviceptr dst, const void *src, size_t bytes) const;
  Status download(void *dst, CUdeviceptr src, size_t bytes) const;
  Status fill(CUdeviceptr dst, unsigned char byte, size_t bytes) const;
  Status synchronize() const;
  /// A TMA descriptor over the tensor at `base` (cuTensorMapEncodeTiled
  /// with `args`, TensorMap.h).
  Status encodeTensorMap(CUtensorMap &map, CUdeviceptr base,
                         const TensorMapArgs &args) const;
  /// One 16-bit row-major rows×cols matrix at `base` loaded in boxes of
  /// boxRows×boxCols with the 128-byte swizzle (tiledMatrixMap).
  Status encodeTensorMap2D(CUtensorMap &map, CUdeviceptr base, bool bf16,
                           uint64_t rows, uint64_t cols, unsigned boxRows,
                           unsigned boxCols) const {
    return encodeTensorMap(map, base,
                           tiledMatrixMap(bf16, rows, cols, boxRows, boxCols));
  }
  /// Times `fn` (which launches work) `iters` times with CUDA events, runs
  /// enqueued back to back; returns per-run milliseconds.
  template <typename Fn>
  Status time(int iters, std::vector<float> &ms, Fn &&fn) const;

private:
  Status eventPair(CUevent &a, CUevent &b) const;
  Status elapsed(CUevent a, CUevent b, float &ms) const;
  const Driver *drv = nullptr;
  CUdevice dev = 0;
};

template <typename Fn>
Status Device::time(int iters, std::vector<float> &ms, Fn &&fn) const {
  // All runs are enqueued back to back, each between its own pair of events,
  // and read after one synchronisation: the GPU never idles between runs,
  // so host launch latency does not leak into the timings.
  std::vector<CUevent> ev(2 * static_cast<size_t>(iters), nullptr);
  Status st;
  for (size_t i = 0; i < ev.size() && st; i += 2)
    st = eventPair(ev[i], ev[i + 1]);
  for (int i = 0; i < iters && st; ++i) {
    if (!(st = drv->check(drv->api().cuEventRecord(ev[2 * i], nullptr), "cuEventRecord")))
      break;
    if (!(st = fn()))
      break;
    st = drv->check(drv->api().cuEventRecord(ev[2 * i + 1], nullptr), "cuEventRecord");
  }
  for (int i = 0; i < iters && st; ++i) {
    float t = 0;
    if ((st = elapsed(ev[2 * i], ev[2 * i + 1], t)))
      ms.push_back(t);
  }
  for (CUevent e : ev)
    if (e)
      drv->api().cuEventDestroy(e);
  return st;
}

} // namespace tg::rt::cuda

#endif // TG_RUNTIME_CUDA_CUDADRIVER_H
