//===- Device.h - where an executor's entry points run ----------*- C++ -*-===//
//
// The Executor (Executor.h) owns the interface of a model: persistent state,
// inputs, checkpoints. What runs an entry point is a Device: the CPU code of
// cpu.so (the default, inside the Executor), or a GPU backend replaying the
// artifact's launch schedule (GpuSchedule.h): the PTX emulator today, the
// CUDA driver (runtime/cuda) later, each behind this one call. Buffers are
// host memory in the manifest's order; a GPU backend with device memory
// copies them in and out around the call.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_DEVICE_H
#define TG_RUNTIME_DEVICE_H

#include "runtime/Artifact.h"
#include "runtime/Manifest.h"

#include <memory>
#include <string>
#include <vector>

namespace tgrt {

/// The devices tg-run can run a model on.
enum class DeviceKind { Cpu, Emulator };

/// "cpu", "emulator".
const char *deviceName(DeviceKind kind);

/// A backend that runs entry points.
class Device {
public:
  virtual ~Device() = default;
  /// Runs `entry`: `buffers` has one pointer per argument, then one per
  /// result (manifest order, dense, row-major); results are written in full.
  /// A result buffer may be the buffer of an argument of the same (role,
  /// name) (an "inplace" entry). False with one line in `err`.
  virtual bool run(const EntrySpec &entry, const std::vector<void *> &buffers,
                   std::string &err) = 0;
  /// Bytes of the device's arena (one allocation for every entry).
  virtual int64_t arenaBytes() const = 0;
  /// What runs, for the first line of tg-run ("emulator (PTX sm_80)").
  virtual std::string describe() const = 0;
};

/// The GPU targets `artifact` has code for, and "cpu" where it has cpu.so
/// ("cpu, sm_80"): what a refusal names.
std::string artifactTargets(const Artifact &artifact, const Manifest &m);

/// The PTX emulator backend for `artifact` (its sm_80 schedule and PTX).
/// nullptr and `err` when the artifact has no sm_80 GPU code or the
/// schedule or PTX do not check.
std::unique_ptr<Device> makeEmulatorDevice(const Artifact &artifact,
                                           const Manifest &m,
                                           std::string &err);

} // namespace tgrt

#endif // TG_RUNTIME_DEVICE_H
