//===- CudaDriver.cpp - the CUDA driver API, loaded at run time -*- C++ -*-===//
//
// See CudaDriver.h. Symbols are resolved by their versioned names first
// (cuMemAlloc_v2, ...), as the cuda.h macros would, then the plain name.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>

namespace tg::rt::cuda {

std::string formatCudaError(const char *call, CUresult code, const char *name,
                            const char *desc) {
  std::string s = std::string(call) + " failed: ";
  s += name ? name : "unknown CUDA error";
  s += " (code " + std::to_string(code) + ")";
  if (desc && *desc)
    s += std::string(": ") + desc;
  return s;
}

Status Driver::check(CUresult r, const char *call) const {
  if (r == 0)
    return Status::success();
  const char *name = nullptr, *desc = nullptr;
  if (fns.cuGetErrorName && fns.cuGetErrorName(r, &name) != 0)
    name = nullptr;
  if (fns.cuGetErrorString && fns.cuGetErrorString(r, &desc) != 0)
    desc = nullptr;
  return Status::error(formatCudaError(call, r, name, desc));
}

namespace {

template <typename F>
bool resolve(void *h, F &fn, std::initializer_list<const char *> names,
             std::string &missing) {
  for (const char *n : names)
    if (void *p = dlsym(h, n)) {
      fn = reinterpret_cast<F>(p);
      return true;
    }
  missing = *names.begin();
  return false;
}

} // namespace

std::string driverLibrary() {
  const char *env = std::getenv("TG_CUDA_LIBRARY");
  return env && *env ? env : "libcuda.so.1";
}

const Driver *Driver::load(Status &error, const std::string &libraryName) {
  // The default driver is loaded once per process and kept; other library
  // names (tests) are tried afresh every time. The default is what
  // $TG_CUDA_LIBRARY names now: a test that sets it after a first attempt
  // loads its library, not the first attempt's outcome.
  static std::mutex mu;
  static Driver *cached = nullptr;
  static Status cachedStatus;
  static std::string cachedName;
  bool isDefault = libraryName == driverLibrary();
  std::lock_guard<std::mutex> lock(mu);
  if (isDefault && cachedName == libraryName && (cached || !cachedStatus.ok)) {
    error = cachedStatus;
    return cached;
  }
  auto fail = [&](std::string m) -> const Driver * {
    error = Status::error(std::move(m));
    if (isDefault)
      cachedStatus = error, cachedName = libraryName;
    return nullptr;
  };
  void *h = dlopen(libraryName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return fail("no CUDA driver (" + libraryName + " not found): " +
                std::string(dlerror()));
  auto *d = new Driver();
  d->handle = h;
  DriverApi &f = d->fns;
  std::string missing;
  bool ok =
      resolve(h, f.cuInit, {"cuInit"}, missing) &&
      resolve(h, f.cuGetErrorName, {"cuGetErrorName"}, missing) &&
      resolve(h, f.cuGetErrorString, {"cuGetErrorString"}, missing) &&
      resolve(h, f.cuDeviceGetCount, {"cuDeviceGetCount"}, missing) &&
      resolve(h, f.cuDeviceGet, {"cuDeviceGet"}, missing) &&
      resolve(h, f.cuDeviceGetName, {"cuDeviceGetName"}, missing) &&
      resolve(h, f.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing) &&
      resolve(h, f.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing) &&
      resolve(h, f.cuDevicePrimaryCtxRelease,
              {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, missing) &&
      resolve(h, f.cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing) &&
      resolve(h, f.cuCtxSynchronize, {"cuCtxSynchronize"}, missing) &&
      resolve(h, f.cuModuleLoadData, {"cuModuleLoadData"}, missing) &&
      resolve(h, f.cuModuleUnload, {"cuModuleUnload"}, missing) &&
      resolve(h, f.cuModuleGetFunction, {"cuModuleGetFunction"}, missing) &&
      resolve(h, f.cuFuncSetAttribute, {"cuFuncSetAttribute"}, missing) &&
      resolve(h, f.cuLaunchKernelEx, {"cuLaunchKernelEx"}, missing) &&
      resolve(h, f.cuMemAlloc, {"cuMemAlloc_v2"}, missing) &&
      resolve(h, f.cuMemFree, {"cuMemFree_v2"}, missing) &&
      resolve(h, f.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, missing) &&
      resolve(h, f.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, missing) &&
      resolve(h, f.cuMemsetD8, {"cuMemsetD8_v2"}, missing) &&
      resolve(h, f.cuEventCreate, {"cuEventCreate"}, missing) &&
      resolve(h, f.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, missing) &&
      resolve(h, f.cuEventRecord, {"cuEventRecord"}, missing) &&
      resolve(h, f.cuEventSynchronize, {"cuEventSynchronize"}, missing) &&
      resolve(h, f.cuEventQuery, {"cuEventQuery"}, missing) &&
      resolve(h, f.cuEventElapsedTime,
              {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing) &&
      resolve(h, f.cuMemGetInfo, {"cuMemGetInfo_v2"}, missing) &&
      resolve(h, f.cuMemHostAlloc, {"cuMemHostAlloc"}, missing) &&
      resolve(h, f.cuMemFreeHost, {"cuMemFreeHost"}, missing) &&
      resolve(h, f.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, missing) &&
      resolve(h, f.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"}, missing) &&
      resolve(h, f.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, missing) &&
      resolve(h, f.cuStreamCreate, {"cuStreamCreate"}, missing) &&
      resolve(h, f.cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"}, missing) &&
      resolve(h, f.cuStreamSynchronize, {"cuStreamSynchronize"}, missing) &&
      resolve(h, f.cuStreamWaitEvent, {"cuStreamWaitEvent"}, missing) &&
      resolve(h, f.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, missing) &&
      resolve(h, f.cuStreamEndCapture, {"cuStreamEndCapture"}, missing) &&
      resolve(h, f.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"}, missing) &&
      resolve(h, f.cuGraphLaunch, {"cuGraphLaunch"}, missing) &&
      resolve(h, f.cuGraphExecDestroy, {"cuGraphExecDestroy"}, missing) &&
      resolve(h, f.cuGraphDestroy, {"cuGraphDestroy"}, missing);
  if (!ok) {
    dlclose(h);
    delete d;
    return fail("CUDA driver too old: " + libraryName + " has no " + missing);
  }
  // TMA exists from CUDA 12 drivers on; without it only sm_80 kernels run.
  resolve(h, f.cuTensorMapEncodeTiled, {"cuTensorMapEncodeTiled"}, missing);
  if (Status s = d->check(f.cuInit(0), "cuInit"); !s) {
    delete d; // keep the library mapped: drivers dislike dlclose after cuInit
    return fail(s.message);
  }
  error = Status::success();
  if (isDefault)
    cached = d, cachedStatus = error, cachedName = libraryName;
  return d;
}

Status Device::open(int ordinal, Device &out) {
  Status st;
  const Driver *d = Driver::load(st, driverLibrary());
  if (!d)
    return st;
  const DriverApi &f = d->api();
  int count = 0;
  if (!(st = d->check(f.cuDeviceGetCount(&count), "cuDeviceGetCount")))
    return st;
  if (ordinal < 0 || ordinal >= count)
    return Status::error("no CUDA device " + std::to_string(ordinal) + " (" +
                         std::to_string(count) + " present)");
  out.drv = d;
  if (!(st = d->check(f.cuDeviceGet(&out.dev, ordinal), "cuDeviceGet")))
    return st;
  char name[256] = {0};
  if (!(st = d->check(f.cuDeviceGetName(name, sizeof name - 1, out.dev),
                      "cuDeviceGetName")))
    return st;
  out.name = name;
  struct { int *v; int attr; } attrs[] = {
      {&out.ccMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&out.ccMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&out.smCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT}};
  for (auto &a : attrs)
    if (!(st = d->check(f.cuDeviceGetAttribute(a.v, a.attr, out.dev),
                        "cuDeviceGetAttribute")))
      return st;
  CUcontext ctx = nullptr;
  if (!(st = d->check(f.cuDevicePrimaryCtxRetain(&ctx, out.dev),
                      "cuDevicePrimaryCtxRetain")))
    return st;
  return d->check(f.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

Status Device::loadModule(const std::string &image, CUmodule &mod) const {
  // PTX must be NUL-terminated; cubins and fat binaries carry their size.
  return drv->check(drv->api().cuModuleLoadData(&mod, image.c_str()),
                    "cuModuleLoadData");
}

Status Device::getFunction(CUmodule mod, const std::string &name,
                           CUfunction &f) const {
  Status s = drv->check(drv->api().cuModuleGetFunction(&f, mod, name.c_str()),
                        "cuModuleGetFunction");
  if (!s)
    s.message += " (kernel '" + name + "')";
  return s;
}

Status Device::launch(CUfunction f, unsigned grid, unsigned block,
                      unsigned smem, void **args, unsigned cluster,
                      CUstream s) const {
  // Opting in to more than 48 KiB of dynamic shared memory is per function;
  // do it once, not in front of every (timed) launch.
  static thread_local std::map<CUfunction, unsigned> optedIn;
  if (smem > 48 * 1024 && optedIn[f] < smem) {
    if (Status st = drv->check(
            drv->api().cuFuncSetAttribute(
                f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
        !st)
      return st;
    optedIn[f] = smem;
  }
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim = {cluster, 1, 1};
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = block;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = smem;
  cfg.hStream = s;
  cfg.attrs = cluster > 1 ? &attr : nullptr;
  cfg.numAttrs = cluster > 1 ? 1 : 0;
  return drv->check(drv->api().cuLaunchKernelEx(&cfg, f, args, nullptr),
                    "cuLaunchKernelEx");
}

Status Device::alloc(size_t bytes, CUdeviceptr &p) const {
  return drv->check(drv->api().cuMemAlloc(&p, bytes), "cuMemAlloc");
}
Status Device::memInfo(size_t &freeBytes, size_t &totalBytes) const {
  return drv->check(drv->api().cuMemGetInfo(&freeBytes, &totalBytes),
                    "cuMemGetInfo");
}

Status Device::free(CUdeviceptr p) const {
  return drv->check(drv->api().cuMemFree(p), "cuMemFree");
}
Status Device::upload(CUdeviceptr dst, const void *src, size_t bytes) const {
  return drv->check(drv->api().cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}
Status Device::download(void *dst, CUdeviceptr src, size_t bytes) const {
  return drv->check(drv->api().cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}
Status Device::fill(CUdeviceptr dst, unsigned char byte, size_t bytes) const {
  return drv->check(drv->api().cuMemsetD8(dst, byte, bytes), "cuMemsetD8");
}
Status Device::synchronize() const {
  return drv->check(drv->api().cuCtxSynchronize(), "cuCtxSynchronize");
}

Status Device::encodeTensorMap(CUtensorMap &map, CUdeviceptr base,
                               const TensorMapArgs &a) const {
  if (!drv->api().cuTensorMapEncodeTiled)
    return Status::error("cuTensorMapEncodeTiled unavailable: the CUDA driver "
                         "predates TMA (needs CUDA 12+)");
  // The driver reads rank - 1 strides and rank of the others.
  return drv->check(drv->api().cuTensorMapEncodeTiled(
                        &map, a.dataType, a.rank, reinterpret_cast<void *>(base),
                        a.dims.data(), a.strides.data(), a.box.data(),
                        a.elementStrides.data(), a.interleave, a.swizzle,
                        a.l2Promotion, a.oobFill),
                    "cuTensorMapEncodeTiled");
}

Status Device::eventPair(CUevent &a, CUevent &b) const {
  if (Status s = drv->check(drv->api().cuEventCreate(&a, 0), "cuEventCreate"); !s)
    return s;
  return drv->check(drv->api().cuEventCreate(&b, 0), "cuEventCreate");
}

Status Device::elapsed(CUevent a, CUevent b, float &ms) const {
  if (Status s = drv->check(drv->api().cuEventSynchronize(b), "cuEventSynchronize"); !s)
    return s;
  return drv->check(drv->api().cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
}

} // namespace tg::rt::cuda
