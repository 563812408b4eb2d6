//===- Device.cpp - where an executor's entry points run ------------------===//
//
// See Device.h. The emulator backend itself is EmulatorDevice.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/Device.h"
#include "runtime/GpuSchedule.h"

namespace tgrt {

const char *deviceName(DeviceKind kind) {
  switch (kind) {
  case DeviceKind::Cpu:
    return "cpu";
  case DeviceKind::Emulator:
    return "emulator";
  case DeviceKind::Cuda:
    return "cuda";
  case DeviceKind::Auto:
    break;
  }
  return "auto";
}

std::string artifactTargets(const Artifact &artifact, const Manifest &m) {
  std::string out = artifact.has("cpu.so") ? "cpu" : "";
  for (const std::string &t : gpuTargets(m))
    out += (out.empty() ? "" : ", ") + t;
  return out.empty() ? "none" : out;
}

} // namespace tgrt
