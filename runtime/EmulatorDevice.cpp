//===- EmulatorDevice.cpp - GPU schedules on the PTX emulator -------------===//
//
// `tg-run --device emulator`: replays an artifact's sm_80 launch schedule
// (GpuSchedule.h) kernel by kernel on the CPU emulator of PTX
// (runtime/emulator). Device memory is host memory: the arena and the
// constants are host allocations, a kernel's pointer parameters are host
// addresses, and every buffer a launch may touch is registered with the
// emulator's Memory, which checks each global access against them.
//
//===----------------------------------------------------------------------===//
#include "runtime/Device.h"
#include "runtime/GpuSchedule.h"
#include "runtime/Tensor.h"
#include "runtime/emulator/Emulator.h"

#include <cstring>

namespace tgrt {

namespace {

class EmulatorDevice final : public Device {
public:
  EmulatorDevice(GpuSchedule schedule, std::unique_ptr<emu::PtxModule> ptx)
      : schedule_(std::move(schedule)), ptx_(std::move(ptx)) {
    arena_.resize(size_t(schedule_.maxArenaBytes()));
    for (const std::string &c : schedule_.constants)
      constants_.emplace_back(c.begin(), c.end());
  }

  bool run(const EntrySpec &entry, const std::vector<void *> &buffers,
           std::string &err) override {
    const GpuEntry *e = schedule_.entry(entry.name);
    if (!e || buffers.size() != entry.args.size() + entry.results.size()) {
      err = "the GPU schedule has no entry '" + entry.name + "'";
      return false;
    }
    // Every buffer of the call, for the emulator's bounds checks. A result
    // that shares an argument's buffer registers the same range again.
    emu::Memory mem;
    for (size_t i = 0; i < entry.args.size(); ++i)
      if (entry.args[i].byteSize() && !inMirror(buffers[i]))
        mem.add(buffers[i], entry.args[i].byteSize());
    if (!state_.empty())
      mem.add(state_.data(), state_.size());
    if (!arena_.empty())
      mem.add(arena_.data(), arena_.size());
    for (Bytes &c : constants_)
      mem.add(c.data(), c.size());
    auto at = [&](const GpuBuffer &b) -> uint8_t * {
      uint8_t *base = b.kind == GpuBuffer::Kind::Arena ? arena_.data()
                      : b.kind == GpuBuffer::Kind::Arg
                          ? device(buffers[size_t(b.index)])
                          : constants_[size_t(b.index)].data();
      return base + b.offset;
    };
    for (const GpuStep &s : e->steps) {
      if (s.isCollective()) {
        err = entry.name + ": the emulator runs one process, not the " +
              std::string(collectiveName(s.collective.op)) +
              " of a data-parallel step (run it with --device cuda or cpu)";
        return false;
      }
      if (s.copy) {
        std::memmove(at(s.dst), at(s.src), size_t(s.src.bytes));
        continue;
      }
      std::vector<uint64_t> params;
      for (const GpuBuffer &p : s.params)
        params.push_back(reinterpret_cast<uint64_t>(at(p)));
      std::string why;
      if (!ptx_->launch(s.kernel, s.grid, s.block, s.sharedBytes, params, mem,
                        why)) {
        err = entry.name + ": " + why;
        return false;
      }
    }
    // Results are read out before any is written: a result may live in an
    // argument whose buffer another result's is (an in-place entry).
    std::vector<Bytes> staged(e->results.size());
    for (size_t i = 0; i < e->results.size(); ++i) {
      const uint8_t *src = at(e->results[i]);
      staged[i].assign(src, src + e->results[i].bytes);
    }
    for (size_t i = 0; i < e->results.size(); ++i)
      if (!staged[i].empty())
        std::memcpy(device(buffers[entry.args.size() + i]), staged[i].data(),
                    staged[i].size());
    return true;
  }

  int64_t arenaBytes() const override { return int64_t(arena_.size()); }

  // Resident like the CUDA device (Device.h), so the emulator runs the
  // Executor's resident path too: the block is a host allocation of its own.
  bool bindState(uint8_t *mirror, size_t bytes, std::string &) override {
    mirror_ = mirror;
    state_.assign(bytes, 0);
    return true;
  }
  bool resident() const override { return true; }
  bool pullState(size_t offset, size_t bytes, std::string &) override {
    std::memcpy(mirror_ + offset, state_.data() + offset, bytes);
    return true;
  }
  bool pushState(size_t offset, size_t bytes, std::string &) override {
    std::memcpy(state_.data() + offset, mirror_ + offset, bytes);
    return true;
  }

  std::string describe() const override {
    return "emulator (PTX " + schedule_.target + ")";
  }

private:
  bool inMirror(const void *p) const {
    auto *b = static_cast<const uint8_t *>(p);
    return mirror_ && b >= mirror_ && b < mirror_ + state_.size();
  }
  /// Where a buffer of run() lives: the block for a slot of the mirror.
  uint8_t *device(void *p) const {
    return inMirror(p) ? const_cast<uint8_t *>(state_.data()) +
                             (static_cast<uint8_t *>(p) - mirror_)
                       : static_cast<uint8_t *>(p);
  }

  GpuSchedule schedule_;
  uint8_t *mirror_ = nullptr;
  Bytes state_;
  std::unique_ptr<emu::PtxModule> ptx_;
  Bytes arena_;
  std::vector<Bytes> constants_;
};

} // namespace

std::unique_ptr<Device> makeEmulatorDevice(const Artifact &artifact,
                                           const Manifest &m,
                                           std::string &err) {
  std::vector<std::string> targets = gpuTargets(m);
  bool sm80 = std::find(targets.begin(), targets.end(), "sm_80") != targets.end();
  if (!sm80 || !artifact.has("gpu.sm_80.ptx")) {
    err = "the emulator runs sm_80 GPU code, which this artifact does not "
          "have (its targets: " +
          artifactTargets(artifact, m) +
          "); compile it with tgc --target=sm_80";
    return nullptr;
  }
  std::string_view ptx = artifact.section("gpu.sm_80.ptx");
  std::string why;
  std::unique_ptr<emu::PtxModule> module = emu::PtxModule::parse(ptx, why);
  if (!module) {
    err = "gpu.sm_80.ptx: " + why;
    return nullptr;
  }
  std::vector<std::string> names = module->kernelNames();
  GpuSchedule schedule;
  if (!parseGpuSchedule(m, "sm_80",
                        std::set<std::string>(names.begin(), names.end()),
                        schedule, err))
    return nullptr;
  return std::make_unique<EmulatorDevice>(std::move(schedule),
                                          std::move(module));
}

} // namespace tgrt
