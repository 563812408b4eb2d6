//===- FakeCudaEmu.cpp - a libcuda that runs kernels on the emulator -*- C++ -*-===//
//
// A stand-in for libcuda.so.1 that tg-run loads through TG_CUDA_LIBRARY
// (CudaDriver.h), so `tg-run --device cuda` runs end to end without a GPU:
// device memory is host memory, cuModuleLoadData takes the PTX image out of
// a fat binary (decompressing it with zstd) and cuLaunchKernelEx runs the
// kernel on the PTX emulator (runtime/emulator). A kernel that faults
// leaves a sticky error (CUDA_ERROR_ILLEGAL_ADDRESS) that the next
// synchronizing call returns, as a real device's asynchronous error would.
//
// Streams and events are modelled strictly enough that a missing wait
// changes the results: work enqueued on a stream runs as late as CUDA
// allows, only when something waits for it (cuStreamSynchronize,
// cuEventSynchronize, a synchronous copy for the default stream,
// cuCtxSynchronize, or a cuStreamWaitEvent of a stream that runs). An
// asynchronous copy reads pinned host memory when it runs, not when it is
// enqueued, so a staging buffer rewritten before its upload ran uploads the
// new bytes; a kernel reads the device memory of the moment it runs, so a
// copy stream that does not wait for the compute stream overwrites a batch
// still to be read. Pageable memory is copied at the call, as the driver
// stages it. Stream capture records the work, and cuGraphLaunch enqueues the
// recording on the stream (run lazily like the rest). A capture forks as
// CUDA's does: a stream that waits for an event recorded in it records
// into the same graph as a branch, which must be joined back (a wait of
// the origin for an event recorded on the branch) before the capture
// ends; a launch runs each branch on a stream of the graph's own.
//
// As late as allowed shows a missing wait for what a stream's work writes
// (an optimizer reading gradients before their all_reduce ran). To show a
// missing wait for what it reads (an all_reduce of gradients not yet
// computed), TG_FAKE_CUDA_EARLY=1 runs every stream but the process's first
// (the runtime's compute stream) and every graph branch as early as its
// waits allow: at once, without running other streams for it.
//
// cuEventQuery runs the stream up to the event as far as it can without
// blocking: host work in flight (tgFakeCudaLaunchPolled, the fake
// libnccl's collectives waiting for their peers) makes it
// CUDA_ERROR_NOT_READY, while a synchronization waits for it.
//
// Environment, for the error paths of the tests:
//   TG_FAKE_CUDA_CC=90            the compute capability it reports (80)
//   TG_FAKE_CUDA_FREE_BYTES=N     its free memory (16 GiB)
//   TG_FAKE_CUDA_FAIL_KERNEL=K    kernels named K... fault at the Nth launch
//   TG_FAKE_CUDA_FAIL_AT=N        ... (1: the first)
//   TG_FAKE_CUDA_PTX=FILE         the PTX to run in place of the image's
//                                 (an artifact's gpu.sm_90a.ptx: fat
//                                 binaries hold sm_90a code as a cubin
//                                 only, which the emulator cannot run)
//   TG_FAKE_CUDA_LOG=FILE         appends one line per driver event: a
//                                 launch enqueued (launch K) or captured
//                                 (record K), a kernel run (run K), a
//                                 capture, a graph launch, a copy when it
//                                 runs (HtoD, DtoH: synchronous ones), a
//                                 host function when it completes (the
//                                 fake libnccl's collectives, FakeNccl.cpp),
//                                 a wait between a capture's branches
//                                 (record wait: branch 1 for branch 0 at
//                                 node 7 of 9: the event's place on its
//                                 branch, of the nodes it has now; "(all
//                                 so far)" when equal),
//                                 the host waiting (sync stream, sync
//                                 event, sync context), a tensor map
//                                 encoded (encode ...) or refused
//                                 (encode refused: why), and each tensor
//                                 map a kernel receives when it runs
//                                 (tensormap K #i ...)
//
// cuTensorMapEncodeTiled is the PTX emulator's (runtime/emulator/
// TensorMap.h): it checks the arguments by the rules the driver documents
// (64-byte aligned map, 16-byte aligned address, strides multiples of 16,
// boxes of 1..256, dimensions 1..2^32, the box's inner bytes within the
// swizzle span) and writes the 128 bytes the emulator's TMA loads decode.
// Beyond the real driver, the tensor must lie inside one device allocation
// (a TMA load past it would fault), and below compute capability 9.0 it
// refuses, as the driver does.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Fatbin.h"
#include "runtime/cuda/TensorMap.h"
#include "runtime/emulator/Emulator.h"
#include "runtime/emulator/TensorMap.h"

#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

namespace emu = tgrt::emu;
namespace cu = tg::rt::cuda;

enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNoBinary = 209,
  kInvalidImage = 200,
  kNotFound = 500,
  kIllegalAddress = 700,
  kLaunchFailed = 719,
  kNotReady = 600,
  kCaptureInvalidated = 901,
  kCaptureUnmatched = 903,
  kCaptureUnjoined = 904,
  kCaptureIsolation = 905,
};

struct Module {
  std::unique_ptr<emu::PtxModule> ptx;
};
struct Function {
  Module *module;
  std::string name;
};
/// A piece of work of a stream: runs a kernel or copies memory. Returns a
/// CUresult (a fault sets gSticky instead), or kPending for work in flight
/// (a polled host function: the fake libnccl's collective waiting for its
/// peers), which stays at the head of its stream and is asked again.
using Work = std::function<int()>;
enum : int { kPending = -1 };
struct Stream;
/// An item of a stream's queue: work, or a wait until stream `on` has run
/// its first `until` items (cuStreamWaitEvent, a graph's fork and join).
struct Item {
  Work work;
  Stream *on = nullptr;
  uint64_t until = 0;
};
struct Capture;
/// A stream: the work enqueued and not yet run, in order. `enqueued` and
/// `done` count the work ever enqueued and run, so an event is a position.
/// An early stream runs its work as soon as its waits allow
/// (TG_FAKE_CUDA_EARLY) instead of when something waits for it.
struct Stream {
  Capture *capture = nullptr; ///< the capture it records into, if any
  size_t lane = 0;            ///< its branch of the captured graph
  bool early = false;
  int running = 0; ///< being run by runUntil (not to be re-entered early)
  std::deque<Item> queue;
  uint64_t enqueued = 0, done = 0;
};
/// A node of a captured graph: work, or (lane >= 0) a wait until branch
/// `lane` has run its first `until` nodes.
struct Node {
  Work work;
  long lane = -1;
  uint64_t until = 0;
};
/// A graph: branch 0 runs on the stream it is launched on, each other one
/// on a stream of its own (made at its first launch), forked and joined
/// by the waits between branches that the capture recorded.
struct Graph {
  std::vector<std::vector<Node>> lanes;
  std::vector<Stream *> branches;
};
/// A capture in progress: the graph so far and the streams recording into
/// it (the origin first, then those that waited for one of its events).
struct Capture {
  uint64_t id;
  Graph graph;
  std::vector<Stream *> streams;
};
/// A recorded event: the position in its stream's work it completes at
/// (none recorded yet: complete); or, recorded during capture `capture`,
/// the position in that graph's branch `lane`.
struct Event {
  Stream *stream = nullptr;
  uint64_t position = 0;
  uint64_t capture = 0;
  size_t lane = 0;
};

std::map<uint64_t, size_t> gDevice; // device allocations: start -> bytes
std::map<uintptr_t, size_t> gPinned; // cuMemHostAlloc'ed memory
size_t gAllocated = 0;
int gSticky = 0; // the first asynchronous error, returned by synchronizing calls
std::map<std::string, int> gLaunches;
Stream gDefaultStream;
std::set<Stream *> gStreams = {&gDefaultStream};
std::set<Event *> gEvents;
std::map<uint64_t, Capture *> gCaptures; // in progress, by id
uint64_t gCaptureIds = 0;
int gStreamsCreated = 0;

size_t envSize(const char *name, size_t fallback) {
  const char *v = std::getenv(name);
  return v && *v ? size_t(std::strtoull(v, nullptr, 10)) : fallback;
}

void log(const std::string &line) {
  if (const char *f = std::getenv("TG_FAKE_CUDA_LOG"))
    if (FILE *out = std::fopen(f, "a")) {
      std::fprintf(out, "%s\n", line.c_str());
      std::fclose(out);
    }
}

Stream *streamOf(void *s) { return s ? static_cast<Stream *>(s) : &gDefaultStream; }

void progressEarly();

/// Runs `st`'s work up to position `until` (what an event or a
/// synchronization needs, nothing more), running the streams it waits for
/// as far as they need. Work after a fault does not run. `block`: wait for
/// work in flight (a synchronization); else return false at the first
/// (a query). True once `st` has reached `until`.
bool runUntil(Stream *st, uint64_t until, bool block = true) {
  ++st->running;
  bool reached = true;
  while (st->done < until && !st->queue.empty()) {
    Item &it = st->queue.front();
    if (it.on) {
      if (!runUntil(it.on, it.until, block)) {
        reached = false;
        break;
      }
    } else if (!gSticky && it.work() == kPending) {
      if (!block) {
        reached = false;
        break;
      }
      struct timespec pause {0, 100000}; // 0.1 ms
      nanosleep(&pause, nullptr);
      continue;
    }
    st->queue.pop_front();
    ++st->done;
    progressEarly();
  }
  --st->running;
  return reached && st->done >= until;
}
void runAll(Stream *st) { runUntil(st, st->enqueued); }
void runEverything() {
  for (Stream *st : gStreams)
    runAll(st);
}

/// Runs the early streams' work as far as their waits allow, without
/// running any other stream for them: what a GPU may do as soon as it can.
void progressEarly() {
  static bool busy = false;
  if (busy)
    return;
  busy = true;
  for (bool moved = true; moved;) {
    moved = false;
    for (Stream *st : gStreams) {
      if (!st->early || st->running)
        continue;
      ++st->running;
      while (!st->queue.empty()) {
        Item &it = st->queue.front();
        if (it.on ? it.on->done < it.until
                  : !gSticky && it.work() == kPending)
          break;
        st->queue.pop_front();
        ++st->done;
        moved = true;
      }
      --st->running;
    }
  }
  busy = false;
}

void enqueue(Stream *st, Item it) {
  st->queue.push_back(std::move(it));
  ++st->enqueued;
}

/// Enqueues `w` on stream `s` (it runs when something waits for it, or at
/// once on an early stream), or records it when the stream is capturing.
int submit(void *s, Work w) {
  Stream *st = streamOf(s);
  if (st->capture) {
    st->capture->graph.lanes[st->lane].push_back(Node{std::move(w)});
    return kSuccess;
  }
  if (gSticky)
    return gSticky;
  enqueue(st, Item{std::move(w)});
  progressEarly();
  return kSuccess;
}

/// A new stream, early when TG_FAKE_CUDA_EARLY is set and `first` is not
/// (the first stream a process makes is the runtime's compute stream).
Stream *newStream(bool first) {
  auto *st = new Stream();
  const char *early = std::getenv("TG_FAKE_CUDA_EARLY");
  st->early = !first && early && *early && *early != '0';
  gStreams.insert(st);
  return st;
}

/// Lets `st`'s enqueued work finish and forgets it (its events complete).
void destroyStream(Stream *st) {
  runAll(st);
  gStreams.erase(st);
  for (Event *e : gEvents)
    if (e->stream == st)
      e->stream = nullptr; // complete: everything it waited for ran
  delete st;
}

/// Whether [p, p + n) lies in pinned host memory.
bool isPinned(const void *p, size_t n) {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = gPinned.upper_bound(a);
  if (it == gPinned.begin())
    return false;
  --it;
  return a + n <= it->first + it->second;
}

/// The device allocation [p, p + n) lies in, if any: its start.
std::optional<uint64_t> allocationOf(uint64_t p, uint64_t n) {
  auto it = gDevice.upper_bound(p);
  if (it == gDevice.begin())
    return std::nullopt;
  --it;
  if (p + n > it->first + it->second)
    return std::nullopt;
  return it->first;
}

/// "map of ..." for the log: the arguments and the address as an offset in
/// its allocation (addresses differ from run to run).
std::string mapText(const cu::TensorMapArgs &a, uint64_t address) {
  auto list = [](auto &v, unsigned n) {
    std::string s = "[";
    for (unsigned i = 0; i < n; ++i)
      s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::optional<uint64_t> base = allocationOf(address, 1);
  return std::string(cu::kTensorMapTypeNames[a.dataType]) + " dims " +
         list(a.dims, a.rank) + " strides " + list(a.strides, a.rank - 1) +
         " box " + list(a.box, a.rank) + " element_strides " +
         list(a.elementStrides, a.rank) + " interleave " +
         cu::kTensorMapInterleaveNames[a.interleave] + " swizzle " +
         cu::kTensorMapSwizzleNames[a.swizzle] + " l2 " +
         cu::kTensorMapL2Names[a.l2Promotion] + " fill " +
         cu::kTensorMapFillNames[a.oobFill] + " at +" +
         std::to_string(base ? address - *base : address);
}

/// The arguments a map was encoded with, as TensorMap.h holds them.
cu::TensorMapArgs argsOf(const emu::TmaDescriptor &d) {
  cu::TensorMapArgs a;
  a.dataType = int(d.dataType), a.rank = d.rank, a.interleave = int(d.interleave);
  a.swizzle = int(d.swizzle), a.l2Promotion = int(d.l2Promotion);
  a.oobFill = int(d.oobFill);
  for (unsigned i = 0; i < d.rank && i < 5; ++i) {
    a.dims[i] = d.globalDim[i], a.box[i] = d.boxDim[i];
    a.elementStrides[i] = d.elementStrides[i];
    if (i + 1 < d.rank)
      a.strides[i] = d.globalStrides[i];
  }
  return a;
}

/// Logs the tensor maps among a launch's parameters: a parameter that
/// points at 128 bytes of device memory holding an encoded map.
void logMaps(const std::string &kernel, const std::vector<uint64_t> &params) {
  for (size_t i = 0; i < params.size(); ++i) {
    emu::TmaDescriptor d;
    if (allocationOf(params[i], emu::kTensorMapBytes) &&
        emu::decodeTensorMap(reinterpret_cast<const void *>(params[i]), d).empty())
      log("tensormap " + kernel + " #" + std::to_string(i) + " " +
          mapText(argsOf(d), d.globalAddress));
  }
}

int launchNow(Function *fn, std::array<uint32_t, 3> grid,
              std::array<uint32_t, 3> block, unsigned smem,
              std::vector<uint64_t> params) {
  const char *failK = std::getenv("TG_FAKE_CUDA_FAIL_KERNEL");
  bool chosen = failK && fn->name.rfind(failK, 0) == 0;
  int n = ++gLaunches[chosen ? std::string(failK) : fn->name];
  log("run " + fn->name);
  if (chosen && n == int(envSize("TG_FAKE_CUDA_FAIL_AT", 1))) {
    gSticky = kIllegalAddress;
    return kSuccess; // asynchronous: the launch itself succeeds
  }
  logMaps(fn->name, params);
  emu::Memory mem;
  for (auto &[start, bytes] : gDevice)
    mem.add(reinterpret_cast<void *>(start), bytes);
  std::string err;
  if (!fn->module->ptx->launch(fn->name, grid, block, smem, params, mem, err)) {
    log("fault " + fn->name + ": " + err);
    gSticky = kIllegalAddress;
  }
  return kSuccess;
}

int copyNow(void *dst, const void *src, size_t n, const char *what) {
  log(what);
  std::memmove(dst, src, n);
  return kSuccess;
}

/// The PTX text of an image: a fat binary's PTX (decompressed), or PTX.
int ptxOf(const void *image, std::string &ptx) {
  const char *p = static_cast<const char *>(image);
  uint32_t magic = 0;
  std::memcpy(&magic, p, 4);
  if (magic != 0xBA55ED50u) {
    ptx = p; // PTX text, NUL-terminated
    return kSuccess;
  }
  uint64_t total = 0;
  uint16_t header = 0;
  std::memcpy(&header, p + 6, 2);
  std::memcpy(&total, p + 8, 8);
  std::vector<cu::FatbinImage> images;
  std::string err;
  if (!cu::parseFatbin(std::string_view(p, header + total), images, err))
    return kInvalidImage;
  for (const cu::FatbinImage &img : images) {
    if (!img.ptx)
      continue;
    if (!img.compressed) {
      ptx.assign(img.payload.data(), strnlen(img.payload.data(), img.payload.size()));
      return kSuccess;
    }
    unsigned long long size =
        ZSTD_getFrameContentSize(img.payload.data(), img.payload.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
      return kInvalidImage;
    ptx.resize(size);
    size_t got = ZSTD_decompress(ptx.data(), ptx.size(), img.payload.data(),
                                 img.payload.size());
    if (ZSTD_isError(got))
      return kInvalidImage;
    ptx.resize(strnlen(ptx.data(), got));
    return kSuccess;
  }
  return kNoBinary; // the emulator runs PTX only
}

} // namespace

extern "C" {

int cuInit(unsigned) { return kSuccess; }
int cuGetErrorName(int e, const char **s) {
  switch (e) {
  case kOutOfMemory: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case kNoBinary: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
  case kInvalidImage: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
  case kNotFound: *s = "CUDA_ERROR_NOT_FOUND"; break;
  case kIllegalAddress: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  case kLaunchFailed: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
  case kCaptureInvalidated: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
  case kNotReady: *s = "CUDA_ERROR_NOT_READY"; break;
  case kCaptureUnmatched: *s = "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"; break;
  case kCaptureUnjoined: *s = "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"; break;
  case kCaptureIsolation: *s = "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"; break;
  default: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  }
  return kSuccess;
}
int cuGetErrorString(int e, const char **s) {
  *s = e == kIllegalAddress ? "an illegal memory access was encountered"
       : e == kOutOfMemory  ? "out of memory"
                            : "fake driver error";
  return kSuccess;
}
int cuDeviceGetCount(int *n) { *n = 1; return kSuccess; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return kSuccess; }
int cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, size_t(len), "TGC fake GPU (PTX emulator)");
  return kSuccess;
}
int cuDeviceGetAttribute(int *v, int attr, int) {
  int cc = int(envSize("TG_FAKE_CUDA_CC", 80));
  *v = attr == 75 ? cc / 10 : attr == 76 ? cc % 10 : attr == 16 ? 4 : 0;
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  static int token;
  *ctx = &token;
  return kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
int cuCtxSetCurrent(void *) { return kSuccess; }
int cuCtxSynchronize() {
  log("sync context");
  runEverything();
  return gSticky;
}

int cuModuleLoadData(void **mod, const void *image) {
  std::string ptx, err;
  if (const char *file = std::getenv("TG_FAKE_CUDA_PTX"); file && *file) {
    FILE *in = std::fopen(file, "rb");
    if (!in)
      return kInvalidImage;
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;)
      ptx.append(buf, n);
    std::fclose(in);
  } else if (int r = ptxOf(image, ptx)) {
    return r;
  }
  auto m = std::make_unique<Module>();
  m->ptx = emu::PtxModule::parse(ptx, err);
  if (!m->ptx) {
    log("ptx: " + err);
    return kInvalidImage;
  }
  *mod = m.release();
  return kSuccess;
}
int cuModuleUnload(void *mod) {
  delete static_cast<Module *>(mod);
  return kSuccess;
}
int cuModuleGetFunction(void **fn, void *mod, const char *name) {
  auto *m = static_cast<Module *>(mod);
  if (m->ptx->numParams(name) < 0)
    return kNotFound;
  *fn = new Function{m, name}; // one per lookup; the runtime looks up once
  return kSuccess;
}
int cuFuncSetAttribute(void *, int, int) { return kSuccess; }

int cuLaunchKernelEx(const cu::CUlaunchConfig *cfg, void *f, void **args,
                     void **) {
  auto *fn = static_cast<Function *>(f);
  int n = fn->module->ptx->numParams(fn->name);
  std::vector<uint64_t> params;
  for (int i = 0; i < n; ++i) {
    uint64_t v = 0;
    std::memcpy(&v, args[i], sizeof v);
    params.push_back(v);
  }
  std::array<uint32_t, 3> grid{cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ},
      block{cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ};
  unsigned smem = cfg->sharedMemBytes;
  log((streamOf(cfg->hStream)->capture ? "record " : "launch ") + fn->name);
  return submit(cfg->hStream, [=] { return launchNow(fn, grid, block, smem, params); });
}
int cuTensorMapEncodeTiled(cu::CUtensorMap *map, int dataType, unsigned rank,
                           void *address, const uint64_t *dims,
                           const uint64_t *strides, const unsigned *box,
                           const unsigned *elementStrides, int interleave,
                           int swizzle, int l2Promotion, int oobFill) {
  auto refuse = [](const std::string &why) {
    log("encode refused: " + why);
    return kInvalidValue;
  };
  if (!map || !address || !dims || !box || !elementStrides ||
      (rank > 1 && !strides))
    return refuse("a null pointer");
  // "Tensor map objects are only supported on devices of compute
  // capability 9.0 or higher."
  if (envSize("TG_FAKE_CUDA_CC", 80) < 90)
    return refuse("tensor maps need compute capability 9.0");
  if (std::string why = emu::encodeTensorMapTiled(
          map, uint32_t(dataType), rank, address, dims, strides, box,
          elementStrides, uint32_t(interleave), uint32_t(swizzle),
          uint32_t(l2Promotion), uint32_t(oobFill));
      !why.empty())
    return refuse(why);
  emu::TmaDescriptor d;
  emu::decodeTensorMap(map, d);
  cu::TensorMapArgs a = argsOf(d);
  auto base = reinterpret_cast<uint64_t>(address);
  unsigned __int128 span = cu::tensorMapSpan(a);
  if (span > (uint64_t(1) << 40) || !allocationOf(base, uint64_t(span))) {
    std::memset(map, 0, sizeof *map);
    return refuse("the tensor (" + cu::describeTensorMap(a) +
                  ") does not lie inside one device allocation");
  }
  log("encode " + mapText(a, base));
  return kSuccess;
}

int cuMemGetInfo_v2(size_t *freeBytes, size_t *total) {
  size_t all = envSize("TG_FAKE_CUDA_FREE_BYTES", size_t(16) << 30);
  *total = all;
  *freeBytes = all > gAllocated ? all - gAllocated : 0;
  return kSuccess;
}
int cuMemAlloc_v2(uint64_t *p, size_t bytes) {
  size_t freeBytes, total;
  cuMemGetInfo_v2(&freeBytes, &total);
  if (bytes > freeBytes)
    return kOutOfMemory;
  // The driver's allocations are 256-byte aligned (tensor maps and
  // vector loads rely on it).
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void *m = std::aligned_alloc(256, rounded);
  if (!m)
    return kOutOfMemory;
  std::memset(m, 0, rounded);
  *p = reinterpret_cast<uint64_t>(m);
  gDevice[*p] = bytes;
  gAllocated += bytes;
  log("alloc " + std::to_string(bytes));
  return kSuccess;
}
int cuMemFree_v2(uint64_t p) {
  auto it = gDevice.find(p);
  if (it == gDevice.end())
    return kInvalidValue;
  runEverything(); // cuMemFree waits for the work that may still use it
  gAllocated -= it->second;
  gDevice.erase(it);
  std::free(reinterpret_cast<void *>(p));
  return kSuccess;
}
int cuMemHostAlloc(void **p, size_t bytes, unsigned) {
  *p = std::calloc(1, bytes ? bytes : 1);
  if (!*p)
    return kOutOfMemory;
  gPinned[reinterpret_cast<uintptr_t>(*p)] = bytes ? bytes : 1;
  return kSuccess;
}
int cuMemFreeHost(void *p) {
  runEverything();
  gPinned.erase(reinterpret_cast<uintptr_t>(p));
  std::free(p);
  return kSuccess;
}
// The synchronous calls run on the legacy default stream: they wait for its
// work, not for the runtime's non-blocking streams.
int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) {
  runAll(&gDefaultStream);
  return gSticky ? gSticky : copyNow(reinterpret_cast<void *>(dst), src, n, "HtoD");
}
int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) {
  runAll(&gDefaultStream);
  return gSticky ? gSticky : copyNow(dst, reinterpret_cast<void *>(src), n, "DtoH");
}
int cuMemsetD8_v2(uint64_t dst, unsigned char v, size_t n) {
  runAll(&gDefaultStream);
  std::memset(reinterpret_cast<void *>(dst), v, n);
  return gSticky;
}
int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *s) {
  if (!isPinned(src, n)) {
    // Pageable memory is staged by the driver at the call.
    auto bytes = std::make_shared<std::string>(static_cast<const char *>(src), n);
    return submit(s, [=] {
      return copyNow(reinterpret_cast<void *>(dst), bytes->data(), n, "HtoDAsync");
    });
  }
  return submit(s, [=] { return copyNow(reinterpret_cast<void *>(dst), src, n, "HtoDAsync"); });
}
int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *s) {
  int r = submit(s, [=] { return copyNow(dst, reinterpret_cast<void *>(src), n, "DtoHAsync"); });
  // Into pageable memory the copy is synchronous.
  if (r == kSuccess && !isPinned(dst, n) && !streamOf(s)->capture)
    runAll(streamOf(s));
  return r;
}
int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void *s) {
  return submit(s, [=] {
    return copyNow(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src), n,
                   "DtoDAsync");
  });
}

// Not a driver function: the fake libnccl's collectives, host work that
// is in flight until its peers answer. `poll` starts or advances it and
// returns 1 once it completed, 0 while it waits; the stream stays at it
// (a synchronization polls on, a query says CUDA_ERROR_NOT_READY).
int tgFakeCudaLaunchPolled(void *s, int (*poll)(void *), void *user) {
  return submit(s, [=] {
    if (!poll(user))
      return int(kPending);
    log("host function");
    return int(kSuccess);
  });
}

int cuStreamCreate(void **s, unsigned) {
  *s = newStream(gStreamsCreated++ == 0);
  return kSuccess;
}
int cuStreamDestroy_v2(void *s) {
  // The driver lets enqueued work finish.
  destroyStream(static_cast<Stream *>(s));
  return kSuccess;
}
int cuStreamSynchronize(void *s) {
  log("sync stream");
  runAll(streamOf(s));
  return gSticky;
}
int cuStreamWaitEvent(void *s, void *e, unsigned) {
  auto *ev = static_cast<Event *>(e);
  Stream *st = streamOf(s);
  if (ev->capture) {
    // An event of a capture: the waiting stream joins the capture (a fork,
    // as CUDA does) or, capturing already, depends on that branch.
    auto it = gCaptures.find(ev->capture);
    if (it == gCaptures.end() || (st->capture && st->capture != it->second))
      return kCaptureIsolation;
    Capture *cap = it->second;
    if (!st->capture) {
      st->capture = cap;
      st->lane = cap->graph.lanes.size();
      cap->graph.lanes.emplace_back();
      cap->streams.push_back(st);
    }
    // Where the event was recorded on its branch, and whether that is all
    // the branch has recorded so far (else of how many nodes).
    size_t now = cap->graph.lanes[ev->lane].size();
    log("record wait: branch " + std::to_string(st->lane) + " for branch " +
        std::to_string(ev->lane) + " at node " + std::to_string(ev->position) +
        (ev->position == now ? " (all so far)" : " of " + std::to_string(now)));
    cap->graph.lanes[st->lane].push_back(Node{nullptr, long(ev->lane), ev->position});
    return kSuccess;
  }
  if (!ev->stream)
    return kSuccess; // an event never recorded is complete
  if (st->capture)
    return kCaptureIsolation; // an event from outside the capture
  log("wait event");
  if (gSticky)
    return gSticky;
  enqueue(st, Item{nullptr, ev->stream, ev->position});
  progressEarly();
  return kSuccess;
}
int cuStreamBeginCapture_v2(void *s, int) {
  Stream *st = streamOf(s);
  if (st->capture)
    return kInvalidValue;
  auto *cap = new Capture();
  cap->id = ++gCaptureIds;
  cap->graph.lanes.resize(1);
  cap->streams.push_back(st);
  gCaptures[cap->id] = cap;
  st->capture = cap;
  st->lane = 0;
  log("begin capture");
  return kSuccess;
}
int cuStreamEndCapture(void *s, void **graph) {
  Stream *st = streamOf(s);
  if (!st->capture)
    return kInvalidValue;
  if (st->lane != 0)
    return kCaptureUnmatched; // not the stream that began it
  Capture *cap = st->capture;
  // Every forked branch must be joined: its last node waited for by
  // another branch (else CUDA_ERROR_STREAM_CAPTURE_UNJOINED).
  std::vector<Node> *lanes = cap->graph.lanes.data();
  size_t n = cap->graph.lanes.size(), nodes = 0;
  std::vector<uint64_t> joined(n, 0);
  for (size_t l = 0; l < n; ++l) {
    nodes += lanes[l].size();
    for (const Node &node : lanes[l])
      if (node.lane >= 0 && size_t(node.lane) != l)
        joined[size_t(node.lane)] = std::max(joined[size_t(node.lane)], node.until);
  }
  bool unjoined = false;
  for (size_t l = 1; l < n; ++l)
    unjoined |= joined[l] < lanes[l].size();
  for (Stream *member : cap->streams)
    member->capture = nullptr, member->lane = 0;
  gCaptures.erase(cap->id);
  *graph = nullptr;
  if (unjoined) {
    log("end capture: unjoined");
    delete cap;
    return kCaptureUnjoined;
  }
  log("end capture: " + std::to_string(nodes) + " nodes" +
      (n > 1 ? " in " + std::to_string(n) + " branches" : ""));
  *graph = new Graph(std::move(cap->graph));
  delete cap;
  return kSuccess;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long) {
  *exec = new Graph{static_cast<Graph *>(graph)->lanes, {}};
  return kSuccess;
}
int cuGraphLaunch(void *exec, void *s) {
  if (streamOf(s)->capture)
    return kInvalidValue;
  if (gSticky)
    return gSticky;
  log("graph launch");
  auto *g = static_cast<Graph *>(exec);
  // Branch 0 on `s`, the others on the graph's own streams; a wait for a
  // branch is for its position from where it stands now.
  while (g->branches.size() + 1 < g->lanes.size())
    g->branches.push_back(newStream(false));
  std::vector<Stream *> on{streamOf(s)};
  on.insert(on.end(), g->branches.begin(), g->branches.end());
  std::vector<uint64_t> base;
  for (Stream *st : on)
    base.push_back(st->enqueued);
  for (size_t l = 0; l < g->lanes.size(); ++l)
    for (const Node &node : g->lanes[l])
      enqueue(on[l], node.lane < 0 ? Item{node.work}
                                   : Item{nullptr, on[size_t(node.lane)],
                                          base[size_t(node.lane)] + node.until});
  progressEarly();
  return kSuccess;
}
int cuGraphExecDestroy(void *exec) {
  auto *g = static_cast<Graph *>(exec);
  for (Stream *st : g->branches)
    destroyStream(st);
  delete g;
  return kSuccess;
}
int cuGraphDestroy(void *graph) {
  delete static_cast<Graph *>(graph);
  return kSuccess;
}

int cuEventCreate(void **e, unsigned) {
  auto *ev = new Event();
  gEvents.insert(ev);
  *e = ev;
  return kSuccess;
}
int cuEventDestroy_v2(void *e) {
  gEvents.erase(static_cast<Event *>(e));
  delete static_cast<Event *>(e);
  return kSuccess;
}
int cuEventRecord(void *e, void *s) {
  Stream *st = streamOf(s);
  auto *ev = static_cast<Event *>(e);
  if (st->capture) {
    // A position in the graph: a wait for it forks or joins a branch.
    ev->stream = nullptr;
    ev->capture = st->capture->id;
    ev->lane = st->lane;
    ev->position = st->capture->graph.lanes[st->lane].size();
    return kSuccess;
  }
  ev->capture = 0;
  ev->stream = st;
  ev->position = st->enqueued;
  return kSuccess;
}
int cuEventQuery(void *e) {
  auto *ev = static_cast<Event *>(e);
  if (ev->capture)
    return kInvalidValue;
  bool done = !ev->stream || runUntil(ev->stream, ev->position, /*block=*/false);
  return gSticky ? gSticky : done ? kSuccess : kNotReady;
}
int cuEventSynchronize(void *e) {
  auto *ev = static_cast<Event *>(e);
  log("sync event");
  if (ev->stream)
    runUntil(ev->stream, ev->position);
  return gSticky;
}
int cuEventElapsedTime_v2(float *ms, void *, void *) {
  *ms = 0;
  return kSuccess;
}

} // extern "C"
