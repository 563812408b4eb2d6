//===- FakeCuda.cpp - a stand-in libcuda for device-free tests --*- C++ -*-===//
//
// Exports the driver entry points the runtime resolves. cuInit fails with
// CUDA_ERROR_NO_DEVICE (100), so tests can check that a driver error reaches
// the user as a sentence naming the call, the error and its code.
//
//===----------------------------------------------------------------------===//
#include <cstring>

extern "C" {
int cuInit(unsigned) { return 100; }
int cuGetErrorName(int e, const char **s) {
  *s = e == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuGetErrorString(int e, const char **s) {
  *s = e == 100 ? "no CUDA-capable device is detected" : "unknown error";
  return 0;
}
#define TG_FAKE(name) int name() { return 999; }
TG_FAKE(cuDeviceGetCount) TG_FAKE(cuDeviceGet) TG_FAKE(cuDeviceGetName)
TG_FAKE(cuDeviceGetAttribute) TG_FAKE(cuDevicePrimaryCtxRetain)
TG_FAKE(cuDevicePrimaryCtxRelease_v2) TG_FAKE(cuCtxSetCurrent)
TG_FAKE(cuCtxSynchronize) TG_FAKE(cuModuleLoadData) TG_FAKE(cuModuleUnload)
TG_FAKE(cuModuleGetFunction) TG_FAKE(cuFuncSetAttribute) TG_FAKE(cuLaunchKernelEx)
TG_FAKE(cuMemAlloc_v2) TG_FAKE(cuMemFree_v2) TG_FAKE(cuMemcpyHtoD_v2)
TG_FAKE(cuMemcpyDtoH_v2) TG_FAKE(cuMemsetD8_v2) TG_FAKE(cuEventCreate)
TG_FAKE(cuEventDestroy_v2) TG_FAKE(cuEventRecord) TG_FAKE(cuEventSynchronize)
TG_FAKE(cuEventQuery) TG_FAKE(cuEventElapsedTime_v2) TG_FAKE(cuTensorMapEncodeTiled)
TG_FAKE(cuMemGetInfo_v2) TG_FAKE(cuMemHostAlloc) TG_FAKE(cuMemFreeHost)
TG_FAKE(cuMemcpyHtoDAsync_v2) TG_FAKE(cuMemcpyDtoHAsync_v2)
TG_FAKE(cuMemcpyDtoDAsync_v2) TG_FAKE(cuStreamCreate) TG_FAKE(cuStreamDestroy_v2)
TG_FAKE(cuStreamSynchronize) TG_FAKE(cuStreamWaitEvent)
TG_FAKE(cuStreamBeginCapture_v2) TG_FAKE(cuStreamEndCapture)
TG_FAKE(cuGraphInstantiateWithFlags) TG_FAKE(cuGraphLaunch)
TG_FAKE(cuGraphExecDestroy) TG_FAKE(cuGraphDestroy)
}
