//===- EmulatorDevice.cpp - GPU schedules on the PTX emulator -------------===//
//
// `tg-run --device emulator`: replays an artifact's sm_80 (or, without
// one, sm_90a) launch schedule
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
#include "runtime/cuda/TensorMap.h"
#include "runtime/emulator/Emulator.h"
#include "runtime/emulator/TensorMap.h"

#include <array>
#include <cstring>
#include <deque>

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
    maps_.clear(); // the previous call's, over buffers that may have moved
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
      for (size_t i = 0; i < s.params.size(); ++i) {
        params.push_back(reinterpret_cast<uint64_t>(at(s.params[i])));
        if (i < s.maps.size() && s.maps[i] &&
            !tensorMap(*s.maps[i], params.back(), mem, s.kernel, i, err))
          return false;
      }
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
  /// A TMA descriptor parameter (sm_90a): the schedule's map encoded over
  /// the buffer at `address` (argument buffers move from call to call, so
  /// every call encodes its own), registered as device memory; `address`
  /// becomes the map's.
  bool tensorMap(const tg::rt::cuda::TensorMapArgs &args, uint64_t &address,
                 emu::Memory &mem, const std::string &kernel, size_t param,
                 std::string &err) {
    std::string why = tg::rt::cuda::checkTensorMapAddress(address, args);
    if (!why.empty()) {
      err = "kernel " + kernel + ": tensor map of parameter #" +
            std::to_string(param) + ": " + why;
      return false;
    }
    maps_.emplace_back();
    std::array<uint32_t, 5> box{}, elementStrides{};
    for (unsigned d = 0; d < args.rank; ++d) {
      box[d] = args.box[d];
      elementStrides[d] = args.elementStrides[d];
    }
    why = emu::encodeTensorMapTiled(
        maps_.back().bytes, uint32_t(args.dataType), args.rank,
        reinterpret_cast<void *>(address), args.dims.data(),
        args.strides.data(), box.data(), elementStrides.data(),
        uint32_t(args.interleave), uint32_t(args.swizzle),
        uint32_t(args.l2Promotion), uint32_t(args.oobFill));
    if (!why.empty()) {
      err = "kernel " + kernel + ": tensor map of parameter #" +
            std::to_string(param) + ": " + why;
      return false;
    }
    mem.add(maps_.back().bytes, sizeof(Map));
    address = reinterpret_cast<uint64_t>(maps_.back().bytes);
    return true;
  }

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
  struct alignas(64) Map {
    uint8_t bytes[128];
  };
  std::deque<Map> maps_; // a deque: the maps stay where they were encoded
};

} // namespace

std::unique_ptr<Device> makeEmulatorDevice(const Artifact &artifact,
                                           const Manifest &m,
                                           std::string &err) {
  // sm_80 when the artifact has it (the quicker to emulate), else sm_90a.
  std::vector<std::string> targets = gpuTargets(m);
  std::string target;
  for (const char *t : {"sm_90a", "sm_80"})
    if (std::find(targets.begin(), targets.end(), t) != targets.end() &&
        artifact.has("gpu." + std::string(t) + ".ptx"))
      target = t;
  if (target.empty()) {
    err = "the emulator runs sm_80 or sm_90a GPU code, which this artifact "
          "does not have (its targets: " +
          artifactTargets(artifact, m) +
          "); compile it with tgc --target=sm_80 or --target=sm_90a";
    return nullptr;
  }
  std::string section = "gpu." + target + ".ptx";
  std::string_view ptx = artifact.section(section);
  std::string why;
  std::unique_ptr<emu::PtxModule> module = emu::PtxModule::parse(ptx, why);
  if (!module) {
    err = section + ": " + why;
    return nullptr;
  }
  std::vector<std::string> names = module->kernelNames();
  GpuSchedule schedule;
  if (!parseGpuSchedule(m, target,
                        std::set<std::string>(names.begin(), names.end()),
                        schedule, err))
    return nullptr;
  return std::make_unique<EmulatorDevice>(std::move(schedule),
                                          std::move(module));
}

} // namespace tgrt
