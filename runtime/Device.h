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
#include "runtime/Comm.h"
#include "runtime/Manifest.h"

#include <memory>
#include <string>
#include <vector>

namespace tgrt {

/// A device's own allocations as its plan sizes them (bytes).
struct DeviceMemory {
  int64_t arena = 0;     ///< the schedule's arena (the largest entry's)
  int64_t block = 0;     ///< parameters, optimizer state, step
  int64_t constants = 0; ///< the schedule's constants
  int64_t staging = 0;   ///< the staged inputs (both halves)
  int64_t total() const { return arena + block + constants + staging; }
};

/// The devices tg-run can run a model on. Auto: CUDA where a GPU, its
/// driver and code for it exist, else the CPU (docs/runtime.md).
enum class DeviceKind { Cpu, Emulator, Cuda, Auto };

/// "cpu", "emulator", "cuda", "auto".
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
  /// Starts `entry` like run() but may return while it still runs (the
  /// CUDA device: the host prepares the next batch meanwhile). Persistent
  /// results are the device's at once; non-persistent ones (the loss) reach
  /// their buffers, which must stay valid and untouched until then, only
  /// when finish() has waited for the call. Calls complete in the order
  /// they started; run() waits for every call started before it. The
  /// default runs the entry now.
  virtual bool start(const EntrySpec &entry, const std::vector<void *> &buffers,
                     std::string &err) {
    return run(entry, buffers, err);
  }
  /// Waits until at most the `keep` newest started calls are still running
  /// and lands the results of the others (one line in `err` naming the
  /// entry when one of them failed).
  virtual bool finish(size_t keep, std::string &err) {
    (void)keep, (void)err;
    return true;
  }
  /// Joins the data-parallel job of `comm` (several ranks), so that the
  /// schedule's collective steps run (the CUDA device: NCCL). False with
  /// one line in `err` where the device cannot.
  virtual bool bindCommunicator(Communicator &comm, std::string &err) {
    (void)comm;
    err = "data-parallel training runs on the CPU and on CUDA (NCCL); the " +
          describe() + " has no collectives";
    return false;
  }
  /// Whether the device's schedule has collective steps: then even a job
  /// of one rank (tgc --ranks 1 --keep-collectives under mpirun -n 1)
  /// binds its communicator, so that the collectives run through it.
  virtual bool communicates() const { return false; }
  /// Bytes of the device's arena (one allocation for every entry).
  virtual int64_t arenaBytes() const = 0;
  /// What runs, for the first line of tg-run ("emulator (PTX sm_80)").
  virtual std::string describe() const = 0;

  // Resident mode: the persistent block (parameters, optimizer state, step;
  // the Executor's layout) lives in the device's memory across calls, so a
  // train_step moves only its batch up and its loss down. The Executor keeps
  // a host mirror of the block; a buffer of run() that points into the
  // mirror names the device's copy at the same offset (read and written
  // there, the mirror untouched), so the Executor passes the mirror's slot
  // for every persistent argument and result. pullState/pushState move byte
  // ranges of the block between the device and the mirror.

  /// Binds the mirror (`bytes` long, zero-filled) and allocates the
  /// device's block, zeroed. True with nothing done for a device that is not
  /// resident (resident() false).
  virtual bool bindState(uint8_t *mirror, size_t bytes, std::string &err) {
    (void)mirror, (void)bytes, (void)err;
    return true;
  }
  virtual bool resident() const { return false; }
  /// Copies bytes [offset, offset + bytes) of the block, device -> mirror.
  virtual bool pullState(size_t offset, size_t bytes, std::string &err) {
    (void)offset, (void)bytes, (void)err;
    return true;
  }
  /// Copies bytes [offset, offset + bytes) of the block, mirror -> device.
  virtual bool pushState(size_t offset, size_t bytes, std::string &err) {
    (void)offset, (void)bytes, (void)err;
    return true;
  }
  /// Bytes the device allocated (arena, block, constants, staging), as
  /// measured (for CUDA: the drop of cuMemGetInfo's free memory); -1 when
  /// the device has no memory of its own.
  virtual int64_t deviceBytes() const { return -1; }
  /// What deviceBytes() should be by the plan, part by part.
  virtual DeviceMemory plannedMemory() const { return {}; }
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

/// Empty when CUDA device 0 opens (driver loaded, device present);
/// otherwise why not, in one line ("no CUDA driver (libcuda.so.1 not
/// found): ..."). What `auto` asks before compiling GPU code (the JIT).
std::string cudaUnavailable();

/// The CUDA backend for `artifact` (runtime/cuda/CudaDevice.cpp): loads
/// gpu.fatbin on device 0 and replays the schedule of the target that fits
/// the GPU. nullptr and `err` (one line: no driver, no device, no image for
/// the device's architecture, a driver error).
std::unique_ptr<Device> makeCudaDevice(const Artifact &artifact,
                                       const Manifest &m, std::string &err);

} // namespace tgrt

#endif // TG_RUNTIME_DEVICE_H
