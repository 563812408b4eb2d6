//===- GpuSchedule.h - the launch schedule of a GPU artifact ----*- C++ -*-===//
//
// `tgc --target=sm_80,...` writes, in the manifest's "gpu" member, one
// schedule per GPU target and entry point: the arena bytes, the steps (a
// kernel launch with grid, block, dynamic shared bytes and one buffer per
// pointer parameter; or a copy between buffers), and where each result
// lives (docs/artifact.md, "GPU schedule"). A buffer is a byte range of an
// argument, of the entry's arena, or of one of the schedule's constants.
// The runtime decides nothing: it checks here that every range lies inside
// its buffer and every kernel exists, so a device backend (the emulator,
// CUDA) can replay the steps without further checks.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_GPUSCHEDULE_H
#define TG_RUNTIME_GPUSCHEDULE_H

#include "runtime/Manifest.h"
#include "runtime/cuda/TensorMap.h"

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tgrt {

/// A byte range of one buffer of an entry call.
struct GpuBuffer {
  enum class Kind { Arg, Arena, Const };
  Kind kind = Kind::Arena;
  int64_t index = 0;  ///< the argument or constant (0 for the arena)
  int64_t offset = 0; ///< bytes from the buffer's start
  int64_t bytes = 0;  ///< length of the range
};

/// A collective of a data-parallel step (docs/artifact.md, "Collectives"):
/// per tensor of a bucket, `counts[i]` elements of `dtype` per rank, read
/// from `srcs[i]` and written to `dsts[i]`. A reduce_scatter reads and a
/// shard reads (at rank x dst bytes) ranks x count elements; an all_gather
/// writes ranks x count.
struct GpuCollective {
  enum class Op { None, AllReduce, ReduceScatter, AllGather, Shard };
  Op op = Op::None;
  bool mean = false; ///< the reduction: mean, else sum
  int64_t comm = 0;  ///< the communicator's id (0: the world)
  DType dtype = DType::F32;
  std::vector<int64_t> counts;
  std::vector<GpuBuffer> srcs, dsts;
};

/// "all_reduce", "reduce_scatter", "all_gather", "shard".
const char *collectiveName(GpuCollective::Op op);

/// Whether two ranges share a byte (the same argument, constant or the
/// arena, intersecting offsets).
bool overlaps(const GpuBuffer &a, const GpuBuffer &b);

/// One step: a launch, a copy or a collective.
struct GpuStep {
  bool copy = false;
  std::string kernel;
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<GpuBuffer> params;
  /// Per parameter: for a TMA descriptor parameter (sm_90a), the map to
  /// encode over the parameter's buffer, whose device address the kernel
  /// then receives in place of the buffer's (docs/artifact.md, "Tensor
  /// maps"); nullopt for a plain pointer.
  std::vector<std::optional<tg::rt::cuda::TensorMapArgs>> maps;
  GpuBuffer src, dst; ///< a copy of src.bytes bytes
  GpuCollective collective; ///< op != None: a collective
  bool isCollective() const { return collective.op != GpuCollective::Op::None; }
  bool isLaunch() const { return !copy && !isCollective(); }
};

/// The schedule of one entry point.
struct GpuEntry {
  std::string name;
  int64_t arenaBytes = 0;
  std::vector<GpuStep> steps;
  std::vector<GpuBuffer> results; ///< one per manifest result
};

/// The schedule of one target: its entries and its constants (bytes).
struct GpuSchedule {
  std::string target;
  std::vector<std::string> constants;
  std::vector<GpuEntry> entries;
  const GpuEntry *entry(std::string_view name) const;
  /// Whether any entry communicates (a data-parallel step).
  bool hasCollectives() const;
  /// The largest arena of its entries (one allocation serves them all).
  int64_t maxArenaBytes() const;
};

/// The GPU targets the manifest has schedules for ("sm_80", ...), in order.
std::vector<std::string> gpuTargets(const Manifest &m);

/// The `.entry` names of a PTX module's text.
std::set<std::string> ptxKernelNames(std::string_view ptx);

/// Parses and checks the schedule of `target` in `m`'s "gpu" member against
/// the manifest's entries (argument and result sizes) and `kernels` (the
/// names the code defines). False with one line in `err`, naming the field
/// ("manifest: gpu.schedules.sm_80.entries.train_step.steps[3].params[1]:
/// bytes 64..320 lie outside the arena of 256 bytes").
bool parseGpuSchedule(const Manifest &m, const std::string &target,
                      const std::set<std::string> &kernels, GpuSchedule &out,
                      std::string &err);

} // namespace tgrt

#endif // TG_RUNTIME_GPUSCHEDULE_H
