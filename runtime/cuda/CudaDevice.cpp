//===- CudaDevice.cpp - GPU schedules on the CUDA driver ------------------===//
//
// `tg-run --device cuda`: replays an artifact's launch schedule
// (GpuSchedule.h) on device 0 through the dlopen'ed driver API
// (CudaDriver.h). The device is resident (Device.h): one allocation for the
// arena, one for the persistent block (parameters, optimizer state, step, in
// the Executor's layout) that stays on the device across calls, one for the
// schedule's constants and one for the staged inputs. A call moves only its
// inputs up (through pinned, double-buffered host memory on a copy stream,
// which the compute stream waits for with an event) and its non-persistent
// results (the loss) down.
//
// The first call of an entry runs launch by launch and synchronizes after
// each kernel, so a failing kernel is named; the second call captures the
// entry's launches and copies as a CUDA graph per input buffer, which every
// later call replays with one cuGraphLaunch.
//
// A call may return before its step has run (start/finish, Device.h): the
// host stages the next batch while the GPU computes. Two halves of pinned
// and device staging alternate between calls; the events that keep them
// apart: a pinned half is rewritten once its last upload ran (inReady), a
// device half is overwritten once the compute stream is past the call that
// read it (ioFree), the compute stream starts a call once its upload ran
// (inReady again). Each call's loss comes down into its own pinned buffer
// behind its own event (a Pending), landed when finish() waits for it.
// A TMA descriptor parameter (sm_90a) gets the device address of its map,
// encoded once per buffer address into a slot after the constants.
// A data-parallel step's collectives (NCCL) run on a communication stream,
// forked from the compute stream where the schedule places them and joined
// before the first step that touches their buffers, also in the graphs;
// with NCCL the host's waits poll, so a dead or hung rank ends in one line.
// docs/runtime.md, "The CUDA device"; docs/data-parallel.md.
//
//===----------------------------------------------------------------------===//
#include "runtime/Device.h"
#include "runtime/GpuSchedule.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Fatbin.h"
#include "runtime/cuda/Nccl.h"

#include <chrono>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <tuple>

namespace tgrt {

namespace cu = tg::rt::cuda;

namespace {

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

/// A persistent result's way from where the schedule leaves it to its slot.
struct Move {
  tg::rt::cuda::CUdeviceptr src, dst;
  size_t bytes;
};

/// "17.2 GiB", "3.0 MiB", "512 bytes".
std::string sizeText(double bytes) {
  char buf[64];
  if (bytes >= double(1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1ull << 30));
  else if (bytes >= double(1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024);
  else
    std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  return buf;
}

/// The kernels a target's schedule launches, read from the manifest (the
/// cubins' symbols are the driver's to resolve; cuModuleGetFunction then
/// names a missing one).
std::set<std::string> scheduleKernels(const Manifest &m,
                                      const std::string &target) {
  std::set<std::string> names;
  const Json *gpu = jsonGet(m.raw, "gpu");
  const Json *all = gpu ? jsonGet(*gpu, "schedules") : nullptr;
  const Json *s = all ? jsonGet(*all, target) : nullptr;
  const Json *entries = s ? jsonGet(*s, "entries") : nullptr;
  if (!entries || !entries->is_object())
    return names;
  // A "repeat" step (an unrolled accumulation loop) holds steps of its own.
  std::function<void(const Json *)> collect = [&](const Json *steps) {
    if (!steps || !steps->is_array())
      return;
    for (const Json &st : *steps) {
      if (!st.is_object())
        continue;
      const Json *k = jsonGet(st, "kernel");
      if (k && k->is_string())
        names.insert(k->get<std::string>());
      collect(jsonGet(st, "steps"));
    }
  };
  for (const auto &[name, e] : entries->items())
    collect(e.is_object() ? jsonGet(e, "steps") : nullptr);
  return names;
}

/// sm_90a -> 90.
unsigned archNumber(const std::string &target) {
  unsigned n = 0;
  for (char c : target)
    if (c >= '0' && c <= '9')
      n = n * 10 + unsigned(c - '0');
  return n;
}

class CudaDevice final : public Device {
public:
  ~CudaDevice() override {
    if (!dev_)
      return;
    const cu::DriverApi &f = api();
    // Teardown errors are not reported: the process is ending or the
    // context is already lost; the results were checked when they came.
    // Work still in flight finishes before its memory goes.
    for (cu::CUstream s : {stream_, copyStream_, commStream_})
      if (s)
        f.cuStreamSynchronize(s);
    nccl_.reset();
    for (cu::CUevent e : commDone_)
      if (e)
        f.cuEventDestroy(e);
    for (cu::CUevent e : {forked_, synced_})
      if (e)
        f.cuEventDestroy(e);
    for (auto &[key, g] : graphs_)
      f.cuGraphExecDestroy(g.exec);
    for (cu::CUevent e : {inReady_[0], inReady_[1], ioFree_[0], ioFree_[1]})
      if (e)
        f.cuEventDestroy(e);
    for (void *p : pinnedIn_)
      if (p)
        f.cuMemFreeHost(p);
    for (std::deque<Readback> *q : {&pending_, &spare_})
      for (Readback &r : *q) {
        if (r.done)
          f.cuEventDestroy(r.done);
        if (r.pinned)
          f.cuMemFreeHost(r.pinned);
      }
    for (cu::CUdeviceptr p : {arena_, block_, consts_, io_})
      if (p)
        f.cuMemFree(p);
    if (stream_)
      f.cuStreamDestroy(stream_);
    if (copyStream_)
      f.cuStreamDestroy(copyStream_);
    if (commStream_)
      f.cuStreamDestroy(commStream_);
    if (module_)
      f.cuModuleUnload(module_);
  }

  /// Loads `fatbin` for the schedule of `target` (already checked to fit).
  bool load(const std::string &fatbin, GpuSchedule schedule, std::string &err) {
    schedule_ = std::move(schedule);
    const cu::DriverApi &f = api();
    if (!check(dev_->loadModule(fatbin, module_), "", err))
      return false;
    std::map<std::string, uint32_t> shared;
    for (const GpuEntry &e : schedule_.entries)
      for (const GpuStep &s : e.steps)
        if (s.isLaunch())
          shared[s.kernel] = std::max(shared[s.kernel], s.sharedBytes);
    for (const auto &[name, bytes] : shared) {
      cu::CUfunction fn = nullptr;
      if (!check(dev_->getFunction(module_, name, fn), "", err))
        return false;
      // More than 48 KiB of dynamic shared memory is opted into once.
      if (bytes > 48 * 1024 &&
          !check(driver().check(
                     f.cuFuncSetAttribute(
                         fn, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         int(bytes)),
                     "cuFuncSetAttribute"),
                 "kernel '" + name + "': ", err))
        return false;
      functions_[name] = fn;
    }
    return check(driver().check(f.cuStreamCreate(&stream_, cu::CU_STREAM_NON_BLOCKING),
                                "cuStreamCreate"), "", err) &&
           check(driver().check(f.cuStreamCreate(&copyStream_,
                                                 cu::CU_STREAM_NON_BLOCKING),
                                "cuStreamCreate"), "", err);
  }

  cu::Device *dev_ = nullptr;
  std::unique_ptr<cu::Device> owned_;
  std::string deviceText_;

  bool bindState(uint8_t *mirror, size_t bytes, std::string &err) override {
    mirror_ = mirror;
    blockBytes_ = bytes;
    const cu::DriverApi &f = api();
    // The io block: every entry's inputs (non-persistent arguments), each
    // 256-byte aligned, twice (double buffering); the pinned outputs.
    size_t io = 0, out = 0;
    for (const GpuEntry &e : schedule_.entries) {
      const EntrySpec &spec = *manifest_->entry(e.name);
      size_t in = 0, res = 0;
      for (const TensorSpec &s : spec.args)
        if (!isPersistentRole(s.role))
          in += align256(s.byteSize());
      for (const TensorSpec &s : spec.results)
        if (!isPersistentRole(s.role))
          res += align256(s.byteSize());
      io = std::max(io, in);
      out = std::max(out, res);
    }
    ioBytes_ = io;
    outBytes_ = out;
    size_t consts = 0;
    for (const std::string &c : schedule_.constants) {
      constOffset_.push_back(consts);
      consts += align256(c.size());
    }
    // The tensor maps live after the constants, 128 bytes each: one per
    // buffer and map, two for a staged input (one per staging half).
    mapsOffset_ = consts;
    consts += sizeof(cu::CUtensorMap) * countMapSlots();
    size_t arena = size_t(schedule_.maxArenaBytes());
    // Refuse before the first allocation when the plan cannot fit: a CUDA
    // out-of-memory error halfway through would say much less.
    size_t freeBefore = 0, total = 0;
    if (!check(dev_->memInfo(freeBefore, total), "", err))
      return false;
    double need = double(arena) + double(bytes) + double(consts) + 2.0 * double(io);
    if (need > double(freeBefore)) {
      // The budget bounds the plan (arena and block); the constants and
      // the staging come on top. Rounded down to a whole unit tgc reads.
      double room = double(freeBefore) - (double(consts) + 2.0 * double(io));
      const char *units[] = {"GiB", "MiB", "KiB"};
      std::string budget;
      for (int u = 0; u < 3 && budget.empty(); ++u) {
        double unit = double(1ull << (30 - 10 * u));
        if (room >= unit)
          budget = std::to_string(int64_t(room / unit)) + units[u];
      }
      err = "needs " + sizeText(need) + ", the device has " +
            sizeText(double(freeBefore)) + " free; " +
            (budget.empty() ? "free memory on the device first"
                            : "compile with --memory-budget " + budget);
      return false;
    }
    auto alloc = [&](size_t n, cu::CUdeviceptr &p) {
      return n == 0 || check(dev_->alloc(n, p), "", err);
    };
    constBytes_ = consts;
    planned_ = {int64_t(arena), int64_t(bytes), int64_t(consts), int64_t(2 * io)};
    if (!alloc(arena, arena_) || !alloc(bytes, block_) ||
        !alloc(consts, consts_) || !alloc(2 * io, io_))
      return false;
    if (bytes && !check(dev_->fill(block_, 0, bytes), "", err))
      return false;
    for (size_t i = 0; i < schedule_.constants.size(); ++i) {
      const std::string &c = schedule_.constants[i];
      if (!check(dev_->upload(consts_ + constOffset_[i], c.data(), c.size()), "",
                 err))
        return false;
    }
    for (int p = 0; p < 2; ++p) {
      if ((io && !check(driver().check(f.cuMemHostAlloc(&pinnedIn_[p], io, 0),
                                       "cuMemHostAlloc"), "", err)) ||
          !newEvent(inReady_[p], err) || !newEvent(ioFree_[p], err))
        return false;
    }
    size_t freeAfter = 0;
    if (!check(dev_->memInfo(freeAfter, total), "", err))
      return false;
    measured_ = freeBefore > freeAfter ? int64_t(freeBefore - freeAfter) : 0;
    return true;
  }
  bool resident() const override { return true; }
  // The synchronous copies run on the legacy default stream, which does not
  // wait for the non-blocking compute stream: the steps in flight finish
  // first.
  bool pullState(size_t offset, size_t bytes, std::string &err) override {
    return !bytes ||
           (quiesce(err) &&
            check(dev_->download(mirror_ + offset, block_ + offset, bytes), "", err));
  }
  bool pushState(size_t offset, size_t bytes, std::string &err) override {
    return !bytes ||
           (quiesce(err) &&
            check(dev_->upload(block_ + offset, mirror_ + offset, bytes), "", err));
  }
  int64_t deviceBytes() const override { return measured_; }
  DeviceMemory plannedMemory() const override { return planned_; }
  int64_t arenaBytes() const override { return schedule_.maxArenaBytes(); }
  std::string describe() const override { return deviceText_; }

  bool run(const EntrySpec &entry, const std::vector<void *> &buffers,
           std::string &err) override {
    return start(entry, buffers, err) && finish(0, err);
  }

  bool start(const EntrySpec &entry, const std::vector<void *> &buffers,
             std::string &err) override {
    const GpuEntry *e = schedule_.entry(entry.name);
    if (!e || buffers.size() != entry.args.size() + entry.results.size()) {
      err = "the GPU schedule has no entry '" + entry.name + "'";
      return false;
    }
    const cu::DriverApi &f = api();
    const std::string who = entry.name + ": ";
    int parity = int(calls_ & 1);
    // Where each argument lives on the device: its slot of the block, or
    // its place in this call's half of the io block.
    std::vector<cu::CUdeviceptr> argPtr(entry.args.size());
    size_t in = 0;
    uint8_t *pinned = static_cast<uint8_t *>(pinnedIn_[parity]);
    // The pinned half is rewritten only once its last upload has finished
    // (which waited for the compute stream two calls ago: with NCCL, for
    // the other ranks).
    if (!waitFor(inReady_[parity], who, err))
      return false;
    for (size_t i = 0; i < entry.args.size(); ++i) {
      const TensorSpec &s = entry.args[i];
      if (isPersistentRole(s.role)) {
        if (!inBlock(buffers[i], s.byteSize())) {
          err = who + "argument '" + s.name + "' is not in the persistent block";
          return false;
        }
        argPtr[i] = block_ + cu::CUdeviceptr(static_cast<uint8_t *>(buffers[i]) - mirror_);
        continue;
      }
      argPtr[i] = io_ + cu::CUdeviceptr(parity * ioBytes_ + in);
      std::memcpy(pinned + in, buffers[i], s.byteSize());
      in += align256(s.byteSize());
    }
    // The device half is overwritten once the compute stream is past the
    // call that read it (two calls ago).
    if (in && (!check(driver().check(f.cuStreamWaitEvent(copyStream_,
                                                         ioFree_[parity], 0),
                                     "cuStreamWaitEvent"), who, err) ||
               !check(driver().check(f.cuMemcpyHtoDAsync(io_ + parity * ioBytes_,
                                                         pinned, in, copyStream_),
                                     "cuMemcpyHtoDAsync"), who, err) ||
               !check(driver().check(f.cuEventRecord(inReady_[parity], copyStream_),
                                     "cuEventRecord"), who, err) ||
               !check(driver().check(f.cuStreamWaitEvent(stream_, inReady_[parity], 0),
                                     "cuStreamWaitEvent"), who, err)))
      return false;
    ++calls_;
    // The persistent results go from where the schedule leaves them to
    // their slot of the block (nothing to do for an in-place update).
    std::vector<Move> moves;
    for (size_t i = 0; i < entry.results.size(); ++i) {
      const TensorSpec &s = entry.results[i];
      if (!isPersistentRole(s.role))
        continue;
      void *host = buffers[entry.args.size() + i];
      if (!inBlock(host, s.byteSize())) {
        err = who + "result '" + s.name + "' is not in the persistent block";
        return false;
      }
      cu::CUdeviceptr dst = block_ + cu::CUdeviceptr(static_cast<uint8_t *>(host) - mirror_);
      cu::CUdeviceptr src = at(e->results[i], argPtr);
      if (src != dst)
        moves.push_back({src, dst, s.byteSize()});
    }
    int &seen = seen_[entry.name];
    // An asynchronous error after a graph launch cannot name its kernel:
    // the first, checked call ran the same kernels one by one.
    std::string stage =
        seen ? who + "the step's CUDA graph (" + std::to_string(e->steps.size()) +
                   " steps, checked one by one on the first call): "
             : who;
    if (seen++ == 0) {
      // Launch by launch, checked: a failing kernel is named.
      if (!encodeMaps(*e, argPtr, who, err) ||
          !enqueue(*e, argPtr, moves, /*checked=*/true, who, err))
        return false;
    } else {
      std::string key = entry.name + "#" + std::to_string(parity);
      Graph &g = graphs_[key];
      if (g.exec && g.args != argPtr) {
        f.cuGraphExecDestroy(g.exec);
        g.exec = nullptr;
      }
      // The maps are encoded before the capture: the graph's launches
      // read them where they are, and no upload may run inside it.
      if (!g.exec && (!encodeMaps(*e, argPtr, who, err) ||
                      !capture(*e, argPtr, moves, g, who, err)))
        return false;
      if (!check(driver().check(f.cuGraphLaunch(g.exec, stream_), "cuGraphLaunch"),
                 stage, err))
        return false;
    }
    // Non-persistent results (the loss) come down into this call's own
    // pinned buffer, landed by finish().
    Readback r;
    if (!takeReadback(r, err))
      return false;
    r.stage = stage;
    size_t out = 0;
    for (size_t i = 0; i < entry.results.size(); ++i) {
      const TensorSpec &s = entry.results[i];
      if (isPersistentRole(s.role) || !s.byteSize())
        continue;
      if (!check(driver().check(
                     f.cuMemcpyDtoHAsync(static_cast<uint8_t *>(r.pinned) + out,
                                         at(e->results[i], argPtr), s.byteSize(),
                                         stream_),
                     "cuMemcpyDtoHAsync"),
                 stage, err)) {
        spare_.push_back(r);
        return false;
      }
      r.lands.push_back({buffers[entry.args.size() + i], out, s.byteSize()});
      out += align256(s.byteSize());
    }
    bool recorded =
        check(driver().check(f.cuEventRecord(r.done, stream_), "cuEventRecord"),
              stage, err) &&
        check(driver().check(f.cuEventRecord(ioFree_[parity], stream_),
                             "cuEventRecord"),
              stage, err);
    (recorded ? pending_ : spare_).push_back(std::move(r));
    return recorded;
  }

  bool finish(size_t keep, std::string &err) override {
    while (pending_.size() > keep) {
      Readback &r = pending_.front();
      if (!waitFor(r.done, r.stage, err))
        return false;
      for (const Readback::Land &l : r.lands)
        std::memcpy(l.host, static_cast<uint8_t *>(r.pinned) + l.offset, l.bytes);
      r.lands.clear();
      spare_.push_back(std::move(r));
      pending_.pop_front();
    }
    return true;
  }

  const Manifest *manifest_ = nullptr;

private:
  struct Graph {
    cu::CUgraphExec exec = nullptr;
    std::vector<cu::CUdeviceptr> args; ///< the argument places it was captured with
  };
  /// A started call's non-persistent results on their way down: a pinned
  /// buffer, the event after its copies, and where each result lands.
  struct Readback {
    struct Land {
      void *host;
      size_t offset, bytes;
    };
    void *pinned = nullptr;
    cu::CUevent done = nullptr;
    std::vector<Land> lands;
    std::string stage; ///< who failed, for an error found when waiting
  };

  bool newEvent(cu::CUevent &e, std::string &err) {
    return check(driver().check(api().cuEventCreate(&e, cu::CU_EVENT_DISABLE_TIMING),
                                "cuEventCreate"), "", err);
  }

  /// A free readback: a landed one, else a new one (as many as calls are
  /// ever in flight at once, so a steady state allocates nothing).
  bool takeReadback(Readback &r, std::string &err) {
    if (!spare_.empty()) {
      r = std::move(spare_.back());
      spare_.pop_back();
      return true;
    }
    r = Readback();
    if (!newEvent(r.done, err))
      return false;
    if (outBytes_ &&
        !check(driver().check(api().cuMemHostAlloc(&r.pinned, outBytes_, 0),
                              "cuMemHostAlloc"), "", err)) {
      api().cuEventDestroy(r.done);
      return false;
    }
    return true;
  }

  /// Waits for everything enqueued on the compute stream (before a
  /// synchronous copy of state; after each step of a checked call). It
  /// joins the communication stream at the end of every step.
  bool quiesce(std::string &err, const std::string &who = "") {
    if (!nccl_)
      return check(driver().check(api().cuStreamSynchronize(stream_),
                                  "cuStreamSynchronize"), who, err);
    return check(driver().check(api().cuEventRecord(synced_, stream_),
                                "cuEventRecord"), who, err) &&
           waitFor(synced_, who, err);
  }

  /// Waits on the host until `e` has completed. With NCCL the wait polls:
  /// a collective whose peer died or hangs never completes (NCCL's kernels
  /// spin), so NCCL's asynchronous error and the job's communicator
  /// (Communicator::waitProblem: the launcher's teardown signal, tg-run's
  /// --comm-timeout) are asked between polls, and giving up aborts the
  /// communicator, whose kernels then end, with one line in `err`.
  bool waitFor(cu::CUevent e, const std::string &who, std::string &err) {
    const cu::DriverApi &f = api();
    if (!nccl_)
      return check(driver().check(f.cuEventSynchronize(e), "cuEventSynchronize"),
                   who, err);
    auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      cu::CUresult r = f.cuEventQuery(e);
      if (r != cu::CU_ERROR_NOT_READY)
        return check(driver().check(r, "cuEventQuery"), who, err);
      double waited = 0;
      if (spins > 100) {
        // 0.1 ms between polls, as tg-run's MPI waits: the CPU goes to the
        // ranks still computing on an oversubscribed machine.
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        waited = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      }
      std::string why = nccl_->asyncError();
      if (why.empty())
        why = world_->waitProblem(waited, "the step's collectives");
      if (!why.empty()) {
        nccl_->abort();
        err = who + why;
        return false;
      }
    }
  }

  const cu::Driver &driver() const { return dev_->driver(); }
  const cu::DriverApi &api() const { return dev_->driver().api(); }

  /// Turns a failed Status into `prefix` + its message.
  static bool check(const cu::Status &s, const std::string &prefix,
                    std::string &err) {
    if (s)
      return true;
    err = prefix + s.message;
    return false;
  }

  bool inBlock(const void *p, size_t bytes) const {
    auto *b = static_cast<const uint8_t *>(p);
    return mirror_ && b >= mirror_ && size_t(b - mirror_) + bytes <= blockBytes_;
  }

  cu::CUdeviceptr at(const GpuBuffer &b,
                     const std::vector<cu::CUdeviceptr> &argPtr) const {
    switch (b.kind) {
    case GpuBuffer::Kind::Arena:
      return arena_ + cu::CUdeviceptr(b.offset);
    case GpuBuffer::Kind::Const:
      return consts_ + constOffset_[size_t(b.index)] + cu::CUdeviceptr(b.offset);
    case GpuBuffer::Kind::Arg:
      break;
    }
    return argPtr[size_t(b.index)] + cu::CUdeviceptr(b.offset);
  }

  /// The tensor-map slots the schedule needs: one per distinct buffer and
  /// map of a launch parameter, two where the buffer is a staged input.
  size_t countMapSlots() const {
    // An argument is the entry's own; the arena and the constants are
    // every entry's.
    std::set<std::tuple<const GpuEntry *, int, int64_t, int64_t,
                        cu::TensorMapArgs>>
        seen;
    size_t slots = 0;
    for (const GpuEntry &e : schedule_.entries) {
      const EntrySpec &spec = *manifest_->entry(e.name);
      for (const GpuStep &s : e.steps)
        for (size_t i = 0; i < s.maps.size(); ++i) {
          const GpuBuffer &b = s.params[i];
          bool arg = b.kind == GpuBuffer::Kind::Arg;
          if (!s.maps[i] || !seen.insert({arg ? &e : nullptr, int(b.kind),
                                          b.kind == GpuBuffer::Kind::Arena ? 0 : b.index,
                                          b.offset, *s.maps[i]})
                                 .second)
            continue;
          bool staged = arg && !isPersistentRole(spec.args[size_t(b.index)].role);
          slots += staged ? 2 : 1;
        }
    }
    return slots;
  }

  /// Encodes (cuTensorMapEncodeTiled) and uploads each tensor map of `e`'s
  /// launches that is not on the device yet for its buffer's address with
  /// `argPtr`, so that every launch finds its map (maps_) at a fixed device
  /// address. A map is encoded once per buffer: later calls with the same
  /// places reuse it.
  bool encodeMaps(const GpuEntry &e, const std::vector<cu::CUdeviceptr> &argPtr,
                  const std::string &who, std::string &err) {
    for (size_t n = 0; n < e.steps.size(); ++n) {
      const GpuStep &s = e.steps[n];
      for (size_t i = 0; i < s.maps.size(); ++i) {
        if (!s.maps[i])
          continue;
        cu::CUdeviceptr base = at(s.params[i], argPtr);
        auto key = std::make_pair(base, *s.maps[i]);
        if (maps_.count(key))
          continue;
        const GpuBuffer &b = s.params[i];
        static const char *kinds[] = {"argument", "arena", "constant"};
        std::string what =
            who + "kernel '" + s.kernel + "' (step " + std::to_string(n + 1) +
            " of " + std::to_string(e.steps.size()) + "): tensor map of parameter #" +
            std::to_string(i) + " (" + cu::describeTensorMap(*s.maps[i]) + " over " +
            kinds[int(b.kind)] +
            (b.kind == GpuBuffer::Kind::Arena ? "" : " " + std::to_string(b.index)) +
            " bytes " + std::to_string(b.offset) + ".." +
            std::to_string(b.offset + b.bytes) + "): ";
        size_t slot = maps_.size();
        if (slot >= (constBytes_ - mapsOffset_) / sizeof(cu::CUtensorMap)) {
          err = what + "more tensor maps than the schedule's buffers have "
                       "(an argument moved between calls)";
          return false;
        }
        cu::CUtensorMap map{};
        cu::CUdeviceptr dst = consts_ + mapsOffset_ + slot * sizeof map;
        if (!check(dev_->encodeTensorMap(map, base, *s.maps[i]), what, err) ||
            !check(dev_->upload(dst, &map, sizeof map), what, err))
          return false;
        maps_[key] = dst;
      }
    }
    return true;
  }

  /// Enqueues the entry's steps and result moves on the compute stream.
  /// `checked`: synchronize after each launch and name a failing kernel.
  bool enqueue(const GpuEntry &e, const std::vector<cu::CUdeviceptr> &argPtr,
               const std::vector<Move> &moves,
               bool checked, const std::string &who, std::string &err) {
    const cu::DriverApi &f = api();
    std::vector<cu::CUdeviceptr> values;
    std::vector<void *> params;
    // The collectives running on the communication stream, oldest first.
    std::vector<InFlight> inFlight;
    size_t started = 0;
    for (size_t n = 0; n < e.steps.size(); ++n) {
      const GpuStep &s = e.steps[n];
      // A step that reads or writes a buffer of a collective in flight
      // (its averaged gradients; its source, which the memory plan may
      // reuse once the collective has read it) waits for it and, the
      // communication stream running in order, for those before it.
      size_t need = 0;
      for (size_t i = 0; i < inFlight.size(); ++i)
        if (touches(s, *inFlight[i].c))
          need = i + 1;
      if (need && !joinComm(inFlight, need, who, err))
        return false;
      std::string what = who +
                         (s.copy             ? std::string("copy")
                          : s.isCollective() ? collectiveName(s.collective.op)
                                             : "kernel '" + s.kernel + "'") +
                         " (step " + std::to_string(n + 1) + " of " +
                         std::to_string(e.steps.size()) + "): ";
      if (s.isCollective() && s.collective.op != GpuCollective::Op::Shard) {
        if (!startCollective(s.collective, argPtr, started++, what, err))
          return false;
        inFlight.push_back({&s.collective, commDone_[started - 1]});
      } else if (s.isCollective()) {
        if (!runShard(s.collective, argPtr, what, err))
          return false;
      } else if (s.copy) {
        if (!check(driver().check(f.cuMemcpyDtoDAsync(at(s.dst, argPtr),
                                                      at(s.src, argPtr),
                                                      size_t(s.src.bytes), stream_),
                                  "cuMemcpyDtoDAsync"), what, err))
          return false;
      } else {
        values.clear();
        for (size_t i = 0; i < s.params.size(); ++i)
          values.push_back(s.maps[i] ? maps_.at({at(s.params[i], argPtr), *s.maps[i]})
                                     : at(s.params[i], argPtr));
        params.clear();
        for (cu::CUdeviceptr &v : values)
          params.push_back(&v);
        cu::CUlaunchConfig cfg{};
        cfg.gridDimX = s.grid[0], cfg.gridDimY = s.grid[1], cfg.gridDimZ = s.grid[2];
        cfg.blockDimX = s.block[0], cfg.blockDimY = s.block[1],
        cfg.blockDimZ = s.block[2];
        cfg.sharedMemBytes = s.sharedBytes;
        cfg.hStream = stream_;
        if (!check(driver().check(f.cuLaunchKernelEx(&cfg, functions_.at(s.kernel),
                                                     params.data(), nullptr),
                                  "cuLaunchKernelEx"), what, err))
          return false;
      }
      if (checked && !quiesce(err, what))
        return false;
    }
    // Every collective completes within the step (a graph must join its
    // branches; the readback reads the averaged loss).
    if (!inFlight.empty() && !joinComm(inFlight, inFlight.size(), who, err))
      return false;
    for (const Move &mv : moves)
      if (!check(driver().check(f.cuMemcpyDtoDAsync(mv.dst, mv.src, mv.bytes, stream_),
                                "cuMemcpyDtoDAsync"), who, err))
        return false;
    return true;
  }

  /// A collective of the step that has started on the communication
  /// stream and the event it completes at.
  struct InFlight {
    const GpuCollective *c;
    cu::CUevent done;
  };

  /// Whether step `s` reads or writes a buffer that collective `c` does.
  static bool touches(const GpuStep &s, const GpuCollective &c) {
    auto hits = [&](const GpuBuffer &b) {
      for (const std::vector<GpuBuffer> *list : {&c.srcs, &c.dsts})
        for (const GpuBuffer &x : *list)
          if (overlaps(b, x))
            return true;
      return false;
    };
    if (s.copy)
      return hits(s.src) || hits(s.dst);
    const std::vector<GpuBuffer> *lists[] = {&s.params, &s.collective.srcs,
                                             &s.collective.dsts};
    for (const std::vector<GpuBuffer> *list : lists)
      for (const GpuBuffer &b : *list)
        if (hits(b))
          return true;
    return false;
  }

  /// Makes the compute stream wait for the oldest `count` collectives in
  /// flight (the last of them: the communication stream runs in order)
  /// and forgets them.
  bool joinComm(std::vector<InFlight> &inFlight, size_t count,
                const std::string &who, std::string &err) {
    cu::CUevent done = inFlight[count - 1].done;
    inFlight.erase(inFlight.begin(), inFlight.begin() + std::ptrdiff_t(count));
    return check(driver().check(api().cuStreamWaitEvent(stream_, done, 0),
                                "cuStreamWaitEvent"), who, err);
  }

  /// Starts collective step `c` (NCCL's calls), the `index`th of its entry,
  /// on the communication stream, once the compute stream has completed
  /// what came before it (its bucket's gradients), so that it overlaps the
  /// kernels after it; records commDone_[index] after it. Legal inside a
  /// capture: the event wait forks the communication stream into the graph
  /// and the joins (joinComm) bring it back.
  bool startCollective(const GpuCollective &c,
                       const std::vector<cu::CUdeviceptr> &argPtr, size_t index,
                       const std::string &what, std::string &err) {
    if (!nccl_)
      return noCommunicator(what, err);
    const cu::DriverApi &f = api();
    if (!check(driver().check(f.cuEventRecord(forked_, stream_), "cuEventRecord"),
               what, err) ||
        !check(driver().check(f.cuStreamWaitEvent(commStream_, forked_, 0),
                              "cuStreamWaitEvent"), what, err))
      return false;
    std::string why;
    if (!nccl_->enqueue(
            c, [&](const GpuBuffer &b) { return at(b, argPtr); }, commStream_,
            why)) {
      err = what + why;
      return false;
    }
    return check(driver().check(f.cuEventRecord(commDone_[index], commStream_),
                                "cuEventRecord"), what, err);
  }

  bool noCommunicator(const std::string &what, std::string &err) const {
    err = what + "no communicator: the model was compiled for " +
          std::to_string(manifest_->ranks) + " ranks (run it with mpirun -n " +
          std::to_string(manifest_->ranks) + ")";
    return false;
  }

  /// Enqueues shard step `c` on the compute stream: this rank's part of
  /// each source, a copy at rank x its bytes (no communication).
  bool runShard(const GpuCollective &c, const std::vector<cu::CUdeviceptr> &argPtr,
                const std::string &what, std::string &err) {
    if (!nccl_)
      return noCommunicator(what, err);
    for (size_t i = 0; i < c.counts.size(); ++i) {
      size_t bytes = size_t(c.dsts[i].bytes);
      cu::CUdeviceptr src =
          at(c.srcs[i], argPtr) + cu::CUdeviceptr(nccl_->rank()) * bytes;
      if (!check(driver().check(api().cuMemcpyDtoDAsync(at(c.dsts[i], argPtr),
                                                        src, bytes, stream_),
                                "cuMemcpyDtoDAsync"),
                 what, err))
        return false;
    }
    return true;
  }

  /// Captures the entry's launches as a graph and instantiates it.
  bool capture(const GpuEntry &e, const std::vector<cu::CUdeviceptr> &argPtr,
               const std::vector<Move> &moves,
               Graph &g, const std::string &who, std::string &err) {
    const cu::DriverApi &f = api();
    std::string where = who + "capturing the step's CUDA graph: ";
    if (!check(driver().check(f.cuStreamBeginCapture(
                                  stream_, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                              "cuStreamBeginCapture"), where, err))
      return false;
    std::string why;
    bool ok = enqueue(e, argPtr, moves, /*checked=*/false, who, why);
    cu::CUgraph graph = nullptr;
    cu::Status ended = driver().check(f.cuStreamEndCapture(stream_, &graph),
                                      "cuStreamEndCapture");
    if (!ok || !ended) {
      err = ok ? where + ended.message : why;
      if (graph)
        f.cuGraphDestroy(graph);
      return false;
    }
    cu::Status inst = driver().check(
        f.cuGraphInstantiateWithFlags(&g.exec, graph, 0), "cuGraphInstantiate");
    f.cuGraphDestroy(graph);
    g.args = argPtr;
    return check(inst, where, err);
  }

  cu::CUmodule module_ = nullptr;
  std::map<std::string, cu::CUfunction> functions_;
  GpuSchedule schedule_;
  cu::CUstream stream_ = nullptr, copyStream_ = nullptr;
  cu::CUdeviceptr arena_ = 0, block_ = 0, consts_ = 0, io_ = 0;
  std::vector<size_t> constOffset_;
  /// The encoded tensor maps by buffer address and map: where each is on
  /// the device (a slot after the constants, from mapsOffset_ on).
  std::map<std::pair<cu::CUdeviceptr, cu::TensorMapArgs>, cu::CUdeviceptr> maps_;
  size_t mapsOffset_ = 0, constBytes_ = 0;
  size_t ioBytes_ = 0, outBytes_ = 0, blockBytes_ = 0;
  uint8_t *mirror_ = nullptr;
  void *pinnedIn_[2] = {nullptr, nullptr};
  /// Per staging half: its upload ran; the compute stream is past its call.
  cu::CUevent inReady_[2] = {nullptr, nullptr}, ioFree_[2] = {nullptr, nullptr};
  std::deque<Readback> pending_, spare_; ///< started calls, oldest first; free ones
  uint64_t calls_ = 0;
  std::map<std::string, int> seen_;
  std::map<std::string, Graph> graphs_;
  int64_t measured_ = 0;
  DeviceMemory planned_;
  /// The job's NCCL communicator (data parallelism; null: one process)
  /// and the job's host communicator, asked when a wait lasts.
  std::unique_ptr<tg::rt::nccl::NcclComm> nccl_;
  Communicator *world_ = nullptr;
  /// The collectives' stream, which overlaps the compute stream; forked_
  /// starts a collective after the compute stream's work before it,
  /// commDone_[i] completes an entry's i-th collective; synced_ marks the
  /// end of the compute stream's work for a polled wait.
  cu::CUstream commStream_ = nullptr;
  cu::CUevent forked_ = nullptr, synced_ = nullptr;
  std::vector<cu::CUevent> commDone_;

public:
  bool communicates() const override { return schedule_.hasCollectives(); }

  bool bindCommunicator(Communicator &comm, std::string &err) override {
    // One done event per collective of the busiest entry, made here: none
    // is created while a graph is captured.
    size_t most = 0;
    for (const GpuEntry &e : schedule_.entries) {
      size_t n = 0;
      for (const GpuStep &s : e.steps)
        n += s.isCollective() && s.collective.op != GpuCollective::Op::Shard;
      most = std::max(most, n);
    }
    commDone_.assign(most, nullptr);
    for (cu::CUevent &e : commDone_)
      if (!newEvent(e, err))
        return false;
    if (!newEvent(forked_, err) || !newEvent(synced_, err) ||
        !check(driver().check(api().cuStreamCreate(&commStream_,
                                                   cu::CU_STREAM_NON_BLOCKING),
                              "cuStreamCreate"), "", err))
      return false;
    world_ = &comm;
    nccl_ = tg::rt::nccl::NcclComm::join(comm, err);
    if (nccl_)
      deviceText_ += "; NCCL rank " + std::to_string(comm.rank()) + " of " +
                     std::to_string(comm.size());
    return nccl_ != nullptr;
  }
};

/// The device of this process: device 0 alone, or, for the ranks of a
/// data-parallel job, the local rank modulo the devices the process sees
/// (one GPU per rank on a node; CUDA_VISIBLE_DEVICES narrows the choice).
int deviceOrdinal() {
  int local = tg::rt::nccl::localRank(), count = 0;
  cu::Status st;
  const cu::Driver *d = local ? cu::Driver::load(st, cu::driverLibrary()) : nullptr;
  if (!d || d->api().cuDeviceGetCount(&count) != 0 || count < 1)
    return 0;
  return local % count;
}

} // namespace

std::string cudaUnavailable() {
  cu::Device dev;
  cu::Status st = cu::Device::open(0, dev);
  return st ? std::string() : st.message;
}

std::unique_ptr<Device> makeCudaDevice(const Artifact &artifact,
                                       const Manifest &m, std::string &err) {
  if (!artifact.has("gpu.fatbin")) {
    err = "the artifact has no GPU code (its targets: " +
          artifactTargets(artifact, m) + "); compile it with tgc --target=sm_80";
    return nullptr;
  }
  // The section is copied: the driver wants the image 8-byte aligned.
  std::string fatbin(artifact.section("gpu.fatbin"));
  std::vector<cu::FatbinImage> images;
  std::string why;
  if (!cu::parseFatbin(fatbin, images, why)) {
    err = "gpu.fatbin: " + why;
    return nullptr;
  }
  auto dev = std::make_unique<cu::Device>();
  if (cu::Status st = cu::Device::open(deviceOrdinal(), *dev); !st) {
    err = st.message;
    return nullptr;
  }
  int major = dev->ccMajor, minor = dev->ccMinor;
  std::string arch = "sm_" + std::to_string(major * 10 + minor);
  // The schedule of the image the driver loads: a fitting cubin before
  // PTX (the driver prefers it), the newest first.
  std::string target;
  unsigned best = 0;
  bool cubin = false;
  for (const std::string &t : gpuTargets(m)) {
    unsigned a = archNumber(t);
    for (const cu::FatbinImage &img : images) {
      if (img.arch != a || !cu::imageFits(img, major, minor))
        continue;
      bool better = (!img.ptx && !cubin) || ((!img.ptx) == cubin && a > best);
      if (target.empty() || better)
        target = t, best = a, cubin = !img.ptx;
    }
  }
  if (target.empty()) {
    // tgc compiles for sm_80 (any newer GPU runs its PTX) and sm_90a.
    err = "the artifact has no code for " + dev->name + " (" + arch +
          "): its fat binary holds " + cu::describeImages(images) +
          (major < 8 ? "; tgc's GPU code needs sm_80 or newer"
                     : "; compile it with tgc --target=" +
                           std::string(major == 9 && minor == 0 ? "sm_90a" : "sm_80"));
    return nullptr;
  }
  GpuSchedule schedule;
  if (!parseGpuSchedule(m, target, scheduleKernels(m, target), schedule, err))
    return nullptr;
  auto device = std::make_unique<CudaDevice>();
  device->owned_ = std::move(dev);
  device->dev_ = device->owned_.get();
  device->manifest_ = &m;
  device->deviceText_ = "cuda (" + device->dev_->name + ", " + arch + "; " +
                        (cubin ? "cubin " : "PTX ") + target + ")";
  if (!device->load(fatbin, std::move(schedule), err))
    return nullptr;
  return device;
}

} // namespace tgrt
