//===- Executor.cpp - runs the CPU entry points of an artifact ------------===//
//
// The shared object is loaded from an anonymous memfd through
// /proc/self/fd/N (the fd stays open while the library is loaded, and a
// path still known to the loader is never reused, since dlopen would hand
// back the old library); where memfd_create is unavailable, from a
// temporary file that is unlinked right after dlopen.
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"
#include "runtime/Signature.h"
#include "runtime/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <set>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tgrt {

namespace {
bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t w = ::write(fd, data.data(), data.size());
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    data.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

/// Checks that the ELF header, the program header table, every loaded
/// segment and the section header table of `so` lie inside it; else says why in `why`. The loader maps
/// segments by file offset without checking them against the file: a
/// truncated cpu.so whose section CRC still matches would be a SIGBUS inside
/// dlopen, not an error.
bool checkElfExtent(std::string_view so, std::string &why) {
  Elf64_Ehdr eh;
  if (so.size() < sizeof eh) {
    why = "not an ELF shared object (" + std::to_string(so.size()) + " bytes)";
    return false;
  }
  std::memcpy(&eh, so.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_phentsize != sizeof(Elf64_Phdr)) {
    why = "not a 64-bit ELF shared object";
    return false;
  }
  uint64_t size = so.size();
  std::string past = " ends past the " + std::to_string(size) + " bytes of cpu.so";
  if (eh.e_phoff > size ||
      uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr) > size - eh.e_phoff) {
    why = "truncated: the program header table" + past;
    return false;
  }
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, so.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD &&
        (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)) {
      why = "truncated: segment " + std::to_string(i) + past;
      return false;
    }
  }
  // The linker writes the section header table last, so a file cut
  // anywhere loses it even where every loaded segment survives (the code
  // would still run; the artifact is nonetheless not what tgc wrote).
  if (eh.e_shoff != 0 &&
      (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
       uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > size - eh.e_shoff)) {
    why = "truncated: the section header table" + past;
    return false;
  }
  return true;
}

/// dlopens `so`; returns the handle and the fd to keep open.
void *loadSharedObject(std::string_view so, int &keepFd, std::string &err) {
  keepFd = -1;
  std::string why;
  if (!checkElfExtent(so, why)) {
    err = "cannot load cpu.so: " + why;
    return nullptr;
  }
  int fd = memfd_create("tgx-cpu.so", MFD_CLOEXEC);
  if (fd >= 0) {
    if (!writeAll(fd, so)) {
      err = std::string("cannot write cpu.so to a memfd: ") + std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    // The loader finds objects by name first: if an earlier library loaded
    // as /proc/self/fd/N is still resident (dlclose need not unload, e.g.
    // under -z nodelete), use another descriptor number for this one.
    std::vector<int> spare;
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    while (void *old = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      dlclose(old);
      int again = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
      spare.push_back(fd);
      if (again < 0 || spare.size() > 1000) {
        for (int s : spare)
          ::close(s);
        err = "cannot find a free descriptor to load cpu.so";
        return nullptr;
      }
      fd = again;
      path = "/proc/self/fd/" + std::to_string(fd);
    }
    for (int s : spare)
      ::close(s);
    if (void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      keepFd = fd;
      return h;
    }
    const char *e = dlerror();
    // /proc may be missing in a sandbox; fall back to a temporary file.
    if (::access("/proc/self/fd", F_OK) == 0) {
      err = std::string("cannot load cpu.so: ") + (e ? e : "dlopen failed");
      ::close(fd);
      return nullptr;
    }
    ::close(fd);
  }
  const char *dir = std::getenv("TMPDIR");
  std::string tmp = std::string(dir && *dir ? dir : "/tmp") + "/tgx-cpu-XXXXXX.so";
  fd = mkstemps(tmp.data(), 3);
  if (fd < 0) {
    err = std::string("cannot create a temporary file for cpu.so: ") +
          std::strerror(errno);
    return nullptr;
  }
  bool ok = writeAll(fd, so);
  ::close(fd);
  void *h = ok ? dlopen(tmp.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  const char *e = ok ? dlerror() : nullptr;
  ::unlink(tmp.c_str());
  if (!h)
    err = std::string("cannot load cpu.so: ") +
          (ok ? (e ? e : "dlopen failed") : std::strerror(errno));
  return h;
}
} // namespace


/// Reads the signature table the compiled code exports (runtime/Signature.h)
/// and checks the manifest against it.
static bool checkCodeSignature(void *handle, const Manifest &manifest,
                               std::string &err) {
  dlerror();
  const char *table =
      static_cast<const char *>(dlsym(handle, kSignatureSymbol));
  if (!table) {
    err = std::string("cpu.so has no '") + kSignatureSymbol +
          "' table (compiled by an older tgc?); recompile the model";
    return false;
  }
  size_t length = strnlen(table, kSignatureMaxBytes);
  if (length == kSignatureMaxBytes) {
    err = "cpu.so's signature table is not terminated";
    return false;
  }
  std::vector<SignatureEntry> code;
  return parseSignature(std::string_view(table, length), code, err) &&
         checkSignature(manifest, code, err);
}

std::unique_ptr<Executor> Executor::load(const Artifact &artifact,
                                         std::string &err, DeviceKind device) {
  auto ex = std::unique_ptr<Executor>(new Executor());
  ex->label_ = artifact.path();
  auto fail = [&](const std::string &msg) {
    err = ex->label_ + ": " + msg;
    return nullptr;
  };
  if (!artifact.has("manifest"))
    return fail("no 'manifest' section");
  if (!Manifest::parse(artifact.section("manifest"), ex->manifest_, err))
    return fail(err);
  if (!ex->readIndexRanges(err))
    return fail(err);
  // Persistent tensors: every param/state/step argument or result of any
  // entry; all mentions must agree on dtype and shape.
  for (const EntrySpec &e : ex->manifest_.entries)
    for (const auto *list : {&e.args, &e.results})
      for (const TensorSpec &s : *list) {
        if (!isPersistentRole(s.role))
          continue;
        auto it = ex->slots_.find(s.name);
        if (it == ex->slots_.end()) {
          Slot slot{s.dtype, s.shape, 0, s.byteSize(), std::nullopt};
          if (s.sharded) {
            // One of `ranks` flat shards (ceil(n / ranks) elements).
            uint64_t n = 1;
            for (int64_t d : s.fullShape)
              n *= uint64_t(d);
            uint64_t r = uint64_t(ex->manifest_.ranks);
            if (s.shape.size() != 1 || uint64_t(s.shape[0]) != (n + r - 1) / r)
              return fail("manifest: " + e.name + ": '" + s.name + "' " +
                          shapeString(s.shape) + " is not one of " +
                          std::to_string(r) + " shards of " +
                          shapeString(s.fullShape));
            slot.fullShape = s.fullShape;
          }
          ex->slots_[s.name] = slot;
          ex->roles_[s.name] = s.role;
        } else if (it->second.dtype != s.dtype || it->second.shape != s.shape ||
                   ex->roles_[s.name] != s.role) {
          return fail("manifest: " + e.name + ": " + s.role + " '" + s.name +
                      "' is " + dtypeName(s.dtype) + shapeString(s.shape) +
                      " here but " + dtypeName(it->second.dtype) +
                      shapeString(it->second.shape) + " elsewhere");
        }
      }
  // One block, laid out as the plan's persistent region: train_step's
  // arguments in order (inputs included), each 256-byte aligned; then any
  // persistent tensor train_step does not take.
  {
    size_t top = 0;
    auto place = [&](Slot &slot) {
      slot.offset = top;
      top += (std::max<size_t>(slot.bytes, 1) + 255) / 256 * 256;
    };
    std::set<std::string> placed;
    if (const EntrySpec *step = ex->manifest_.entry("train_step"))
      for (const TensorSpec &s : step->args) {
        if (!isPersistentRole(s.role)) {
          Slot &in = ex->inputSlots_[s.name];
          in = Slot{s.dtype, s.shape, 0, s.byteSize()};
          place(in);
        } else if (placed.insert(s.name).second) {
          place(ex->slots_.at(s.name));
        }
      }
    for (auto &[name, slot] : ex->slots_)
      if (placed.insert(name).second)
        place(slot);
    long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && pageSize > 0 && double(top) > double(pages) * pageSize)
      return fail("the parameters and optimizer state need " +
                  std::to_string(top) + " bytes, more than this machine's " +
                  std::to_string(int64_t(double(pages) * pageSize)) +
                  " bytes of memory");
    try {
      ex->persistent_.resize(top);
    } catch (const std::bad_alloc &) {
      return fail("cannot allocate " + std::to_string(top) +
                  " bytes for the parameters and optimizer state");
    }
  }
  if (ex->manifest_.entries.empty())
    return ex;
  if (device == DeviceKind::Cuda || device == DeviceKind::Auto) {
    ex->device_ = makeCudaDevice(artifact, ex->manifest_, err);
    if (!ex->device_ && device == DeviceKind::Cuda)
      return fail(err);
    // Auto falls back to the CPU and says why on tg-run's first line.
    if (!ex->device_)
      ex->fallback_ = err;
  } else if (device == DeviceKind::Emulator) {
    ex->device_ = makeEmulatorDevice(artifact, ex->manifest_, err);
    if (!ex->device_)
      return fail(err);
  }
  // Before any launch: the device's memory for the block (a CUDA device
  // refuses here when the plan does not fit its free memory; auto then
  // runs on the CPU and says why).
  if (ex->device_ && !ex->device_->bindState(ex->persistent_.data(),
                                             ex->persistent_.size(), err)) {
    if (device != DeviceKind::Auto)
      return fail(err);
    ex->device_.reset();
    ex->fallback_ = err;
  }
  if (ex->device_)
    return ex;
  if (!artifact.has("cpu.so"))
    return fail("no 'cpu.so' section (this artifact has no CPU code)");
  ex->handle_ = loadSharedObject(artifact.section("cpu.so"), ex->fd_, err);
  if (!ex->handle_)
    return fail(err);
  for (const EntrySpec &e : ex->manifest_.entries) {
    std::string sym = "tgx_" + e.name;
    dlerror();
    void *p = dlsym(ex->handle_, sym.c_str());
    if (!p)
      return fail("cpu.so has no symbol '" + sym + "' for the entry '" +
                  e.name + "'");
    ex->fns_.emplace_back(e.name, reinterpret_cast<EntryFn>(p));
  }
  if (!checkCodeSignature(ex->handle_, ex->manifest_, err))
    return fail(err);
  // One arena for every planned entry (they never run at once). A size
  // beyond this machine's memory is a clear error, not an OOM kill while
  // the block is zeroed.
  // forward_grad (the cross-check entry of --save-grads) is left out: its
  // plan may need more than the step's, and a training run must take what
  // the step's plan says; a call of it grows the arena then (callEntry).
  int64_t arena = 0;
  for (const EntrySpec &e : ex->manifest_.entries)
    if (e.name != "forward_grad")
      arena = std::max(arena, e.arenaBytes);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  double physical = pages > 0 && pageSize > 0 ? double(pages) * pageSize : 0;
  double wanted = double(arena) + double(ex->persistent_.size());
  if (physical > 0 && wanted > physical)
    return fail("the model needs " + std::to_string(int64_t(wanted)) +
                " bytes (arena " + std::to_string(arena) +
                ", parameters and state " +
                std::to_string(ex->persistent_.size()) +
                "), more than this machine's " +
                std::to_string(int64_t(physical)) + " bytes of memory");
  try {
    ex->arena_.resize(static_cast<size_t>(arena));
  } catch (const std::bad_alloc &) {
    return fail("cannot allocate the " + std::to_string(arena) +
                "-byte arena the plan asks for");
  }
  ex->setAllReduce_ =
      reinterpret_cast<void (*)(void (*)(void *, float *, int64_t), void *)>(
          dlsym(ex->handle_, "tgx_set_all_reduce"));
  ex->setSharded_ = reinterpret_cast<decltype(ex->setSharded_)>(
      dlsym(ex->handle_, "tgx_set_sharded"));
  ex->heapStats_ = reinterpret_cast<void (*)(int64_t *)>(
      dlsym(ex->handle_, "tgx_heap_stats"));
  ex->heapReset_ =
      reinterpret_cast<void (*)()>(dlsym(ex->handle_, "tgx_heap_reset"));
  if (dlsym(ex->handle_, "tgx_parallel_loops")) {
    ex->setThreads_ = reinterpret_cast<int (*)(int)>(
        dlsym(ex->handle_, "tgx_set_threads"));
    // cpu.so brought in the OpenMP runtime (its DT_NEEDED libomp.so.5);
    // keep it loaded when cpu.so is closed: unloading it while its idle
    // threads still wait for work is not something it supports.
    dlopen("libomp.so.5", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  // One thread unless asked (tg-run --threads): libomp's idle threads spin
  // for 200 ms after each parallel region, and on a machine shared with
  // other busy processes (ctest -j, a build) that made a 2-thread LeNet
  // step 45x slower than 1 thread (docs/cpu-backend.md "Threads").
  ex->setThreads(1);
  return ex;
}

int Executor::availableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}

int Executor::setThreads(int n) {
  if (device_ || !setThreads_)
    return threads_ = 1;
  return threads_ = setThreads_(n > 0 ? n : availableCores());
}

Executor::~Executor() {
  if (handle_)
    dlclose(handle_);
  if (fd_ >= 0)
    ::close(fd_);
}

bool Executor::readIndexRanges(std::string &err) {
  const Json *entries = jsonGet(manifest_.raw, "entries");
  for (const EntrySpec &e : manifest_.entries) {
    const Json *entry = entries ? jsonGet(*entries, e.name) : nullptr;
    const Json *args = entry ? jsonGet(*entry, "args") : nullptr;
    for (size_t i = 0; i < e.args.size(); ++i) {
      const TensorSpec &s = e.args[i];
      const Json *arg = args && args->is_array() && i < args->size()
                            ? &(*args)[i]
                            : nullptr;
      if (!arg || !arg->is_object())
        continue;
      std::string at = "manifest: entries." + e.name + ".args[" +
                       std::to_string(i) + "].";
      const Json *boundJ = jsonGet(*arg, "index_bound"),
                 *ignoreJ = jsonGet(*arg, "ignore_index");
      std::optional<int64_t> bound = boundJ ? jsonInt(*boundJ) : std::nullopt;
      std::optional<int64_t> ignore = ignoreJ ? jsonInt(*ignoreJ) : std::nullopt;
      if (boundJ && (!bound || *bound < 1 || isFloat(s.dtype))) {
        err = at + "index_bound: expected a positive integer on an integer input";
        return false;
      }
      if (ignoreJ && (!ignore || !boundJ)) {
        err = at + "ignore_index: expected an integer beside index_bound";
        return false;
      }
      if (!bound)
        continue;
      // One range per input name across entries: the tightest bound, and
      // an ignore_index where any entry records one.
      IndexRange r{*bound, ignore.has_value(), ignore.value_or(0)};
      auto [it, fresh] = ranges_.emplace(s.name, r);
      if (!fresh) {
        it->second.bound = std::min(it->second.bound, r.bound);
        if (r.hasIgnore && !it->second.hasIgnore)
          it->second.hasIgnore = true, it->second.ignore = r.ignore;
      }
    }
  }
  // Derived where the compiler recorded nothing: class labels beside logits.
  const TensorSpec *l = logits();
  if (!l || l->shape.empty())
    return true;
  std::vector<int64_t> rows(l->shape.begin(), l->shape.end() - 1);
  for (const EntrySpec &e : manifest_.entries)
    for (const TensorSpec &s : e.args)
      if (!isPersistentRole(s.role) && !isFloat(s.dtype) && s.shape == rows)
        ranges_.emplace(s.name, IndexRange{l->shape.back(), true, -100});
  return true;
}

IndexRange Executor::indexRange(const std::string &name) const {
  auto it = ranges_.find(name);
  return it == ranges_.end() ? IndexRange{} : it->second;
}

const TensorSpec *Executor::logits() const {
  const EntrySpec *eval = manifest_.entry("eval");
  if (!eval)
    return nullptr;
  const TensorSpec *found = nullptr;
  for (const TensorSpec &s : eval->results)
    if (s.name == "logits")
      return &s;
  for (const TensorSpec &s : eval->results)
    if (isFloat(s.dtype) && s.shape.size() == 2) {
      if (found)
        return nullptr;
      found = &s;
    }
  return found;
}

/// The artifact's collectives call these with the installed communicator.
static void allReduceThrough(void *comm, float *data, int64_t n) {
  static_cast<Communicator *>(comm)->allReduceSum(data, n);
}
static void reduceScatterThrough(void *comm, float *data, int64_t block) {
  static_cast<Communicator *>(comm)->reduceScatterSum(data, block);
}
static void allGatherThrough(void *comm, float *data, int64_t block) {
  static_cast<Communicator *>(comm)->allGather(data, block);
}

bool Executor::setCommunicator(Communicator *comm, std::string &err) {
  int ranks = comm ? comm->size() : 1;
  if (ranks != manifest_.ranks) {
    err = label_ + ": the model was compiled for " +
          std::to_string(manifest_.ranks) +
          (manifest_.ranks == 1 ? " process" : " ranks (tgc --ranks)") +
          " but the job has " + std::to_string(ranks) +
          (ranks == 1 ? " (start it with mpirun -n " +
                            std::to_string(manifest_.ranks) + ")"
                      : "; compile it with tgc --ranks " +
                            std::to_string(ranks));
    return false;
  }
  if (device_ && (manifest_.ranks > 1 || (comm && device_->communicates()))) {
    // The device runs the collectives itself (CUDA: NCCL), also those of
    // one rank that keeps them (tgc --keep-collectives: NCCL's cost).
    if (!device_->bindCommunicator(*comm, err)) {
      err = label_ + ": " + err;
      return false;
    }
    comm_ = comm;
    return true;
  }
  if (manifest_.ranks > 1 && !setAllReduce_) {
    err = label_ + ": cpu.so has no symbol 'tgx_set_all_reduce' for the "
                   "collectives of its " +
          std::to_string(manifest_.ranks) + " ranks";
    return false;
  }
  if (manifest_.zero && !setSharded_) {
    err = label_ + ": cpu.so has no symbol 'tgx_set_sharded' for the "
                   "collectives of its sharded optimizer state (ZeRO)";
    return false;
  }
  comm_ = comm;
  if (setAllReduce_)
    setAllReduce_(comm ? allReduceThrough : nullptr, comm);
  if (setSharded_)
    setSharded_(comm ? reduceScatterThrough : nullptr,
                comm ? allGatherThrough : nullptr, comm,
                comm ? comm->rank() : 0);
  return true;
}

bool Executor::call(std::string_view name, const TensorMap &inputs,
                    TensorMap &outputs, std::string &err) {
  return callEntry(name, inputs, outputs, /*deferred=*/false, err);
}

bool Executor::callEntry(std::string_view name, const TensorMap &inputs,
                         TensorMap &outputs, bool deferred, std::string &err) {
  if (manifest_.ranks > 1 && !comm_ && name == "train_step") {
    err = label_ + ": train_step averages gradients over " +
          std::to_string(manifest_.ranks) +
          " ranks (tgc --ranks); run it with mpirun -n " +
          std::to_string(manifest_.ranks) + " tg-run";
    return false;
  }
  const EntrySpec *e = manifest_.entry(name);
  EntryFn fn = nullptr;
  for (auto &f : fns_)
    if (f.first == name)
      fn = f.second;
  if (!e || (!fn && !device_)) {
    err = label_ + ": the model has no entry point '" + std::string(name) + "'";
    return false;
  }
  std::vector<void *> buffers;
  buffers.reserve(e->args.size() + e->results.size());
  for (const TensorSpec &s : e->args) {
    if (isPersistentRole(s.role)) {
      buffers.push_back(data(slots_.at(s.name)));
      continue;
    }
    auto it = inputs.find(s.name);
    if (it == inputs.end()) {
      err = e->name + ": missing input '" + s.name + "' (" + dtypeName(s.dtype) +
            shapeString(s.shape) + ")";
      return false;
    }
    const Tensor &t = it->second;
    if (t.dtype != s.dtype || t.shape != s.shape ||
        t.bytes.size() != s.byteSize()) {
      err = e->name + ": input '" + s.name + "' is " + dtypeName(t.dtype) +
            shapeString(t.shape) + " but the model expects " +
            dtypeName(s.dtype) + shapeString(s.shape);
      return false;
    }
    // An index out of range would not fail in the compiled code: it
    // gathers garbage or counts as a loss of 0.
    if (!checkIndices(t, indexRange(s.name), e->name + ": input '" + s.name + "'",
                      s.name, err))
      return false;
    // train_step's inputs are staged in their planned place; elsewhere the
    // ABI passes the caller's buffer (the code does not write inputs).
    // A resident device stages its inputs itself, outside the block.
    auto staged = inputSlots_.find(s.name);
    if (e->name == "train_step" && staged != inputSlots_.end() && !resident()) {
      std::memcpy(data(staged->second), t.bytes.data(), t.bytes.size());
      buffers.push_back(data(staged->second));
      continue;
    }
    buffers.push_back(const_cast<Tensor &>(t).data());
  }
  // The CPU code takes its arena after the arguments; a device has its own.
  bool cpuArena = e->arenaBytes > 0 && !device_;
  if (cpuArena && static_cast<size_t>(e->arenaBytes) > arena_.size())
    arena_.resize(static_cast<size_t>(e->arenaBytes));
  if (cpuArena)
    buffers.push_back(arena_.data());
  for (const auto &in : inputs) {
    bool known = false;
    for (const TensorSpec &s : e->args)
      known |= !isPersistentRole(s.role) && s.name == in.first;
    if (!known) {
      err = e->name + ": unknown input '" + in.first + "'";
      return false;
    }
  }
  // Result buffers are reused between calls: after a swap, the scratch of a
  // persistent result holds the previous state, which the next call
  // overwrites, so a steady-state train_step allocates nothing.
  std::vector<Tensor> &results = scratch_[e->name];
  results.resize(e->results.size());
  // A deferred call's non-persistent results get buffers of their own that
  // live until its loss is taken (the device may write them later).
  std::vector<Tensor> later;
  if (deferred) {
    if (!spareResults_.empty()) {
      later = std::move(spareResults_.back());
      spareResults_.pop_back();
    }
    later.resize(e->results.size());
  }
  for (size_t i = 0; i < e->results.size(); ++i) {
    const TensorSpec &s = e->results[i];
    Tensor &t = deferred && !isPersistentRole(s.role) ? later[i] : results[i];
    if (t.bytes.size() != s.byteSize() || t.dtype != s.dtype)
      t = Tensor::zeros(s.dtype, s.shape);
    // A resident device writes every persistent result into its block.
    bool alias = resident() && isPersistentRole(s.role);
    if (e->inplace && isPersistentRole(s.role))
      for (const TensorSpec &a : e->args)
        alias |= a.role == s.role && a.name == s.name;
    buffers.push_back(alias ? data(slots_.at(s.name)) : t.data());
  }
  if (device_) {
    if (!(deferred ? device_->start(*e, buffers, err)
                   : device_->run(*e, buffers, err))) {
      err = label_ + ": " + err;
      return false;
    }
    for (const TensorSpec &s : e->results)
      hostStale_ |= resident() && isPersistentRole(s.role);
  } else {
    fn(buffers.data());
  }
  outputs.clear();
  if (deferred)
    inFlight_.push_back(std::move(later));
  for (size_t i = 0; i < e->results.size(); ++i) {
    const TensorSpec &s = e->results[i];
    if (!isPersistentRole(s.role)) {
      if (!deferred)
        outputs[s.name] = std::move(results[i]);
      continue;
    }
    size_t slot = e->args.size() + (cpuArena ? 1 : 0) + i;
    if (buffers[slot] == results[i].data())
      std::memcpy(data(slots_.at(s.name)), results[i].data(),
                  results[i].bytes.size());
  }
  return true;
}

bool Executor::init(int64_t seed, std::string &err) {
  const EntrySpec *e = manifest_.entry("init");
  if (!e) {
    err = label_ + ": the model has no entry point 'init'";
    return false;
  }
  TensorMap in, out;
  for (const TensorSpec &s : e->args)
    if (!isPersistentRole(s.role)) {
      Tensor t = Tensor::zeros(s.dtype, s.shape);
      if (t.numel() != 1 || isFloat(s.dtype)) {
        err = "init: argument '" + s.name + "' is " + dtypeName(s.dtype) +
              shapeString(s.shape) + ", expected an integer seed scalar";
        return false;
      }
      t.set(0, static_cast<double>(seed));
      if (s.dtype == DType::I64)
        std::memcpy(t.data(), &seed, 8);
      in[s.name] = std::move(t);
    }
  return call("init", in, out, err);
}

bool Executor::trainStep(const TensorMap &inputs, double &loss,
                         std::string &err) {
  if (!startStep(inputs, err))
    return false;
  while (!inFlight_.empty())
    if (!takeLoss(loss, err))
      return false;
  return true;
}

/// The index of train_step's result with role "loss", or -1.
static int lossIndex(const Manifest &m) {
  const EntrySpec *e = m.entry("train_step");
  for (size_t i = 0; e && i < e->results.size(); ++i)
    if (e->results[i].role == "loss")
      return int(i);
  return -1;
}

bool Executor::startStep(const TensorMap &inputs, std::string &err) {
  if (manifest_.entry("train_step") && lossIndex(manifest_) < 0) {
    err = label_ + ": train_step has no result with role 'loss'";
    return false;
  }
  TensorMap none;
  return callEntry("train_step", inputs, none, /*deferred=*/true, err);
}

bool Executor::takeLoss(double &loss, std::string &err) {
  if (inFlight_.empty()) {
    err = label_ + ": no train_step was started whose loss is still to take";
    return false;
  }
  // The device completes calls in order: waiting for the oldest leaves
  // the newer ones running.
  if (device_ && !device_->finish(inFlight_.size() - 1, err)) {
    err = label_ + ": " + err;
    return false;
  }
  loss = inFlight_.front()[size_t(lossIndex(manifest_))].at(0);
  spareResults_.push_back(std::move(inFlight_.front()));
  inFlight_.pop_front();
  return true;
}

bool Executor::hasStepCounter() const {
  auto it = slots_.find("step");
  return it != slots_.end() && it->second.bytes == dtypeSize(it->second.dtype);
}

bool Executor::eval(const TensorMap &inputs, TensorMap &outputs,
                    std::string &err) {
  return call("eval", inputs, outputs, err);
}

bool Executor::setState(const std::string &name, const Tensor &value,
                        std::string &err) {
  auto it = slots_.find(name);
  if (it == slots_.end()) {
    err = "the model has no parameter or state named '" + name + "'";
    return false;
  }
  const Slot &slot = it->second;
  if (slot.dtype != value.dtype || slot.shape != value.shape ||
      slot.bytes != value.bytes.size()) {
    err = "'" + name + "' is " + dtypeName(value.dtype) +
          shapeString(value.shape) + " but the model has " +
          dtypeName(slot.dtype) + shapeString(slot.shape);
    return false;
  }
  std::memcpy(data(slot), value.bytes.data(), slot.bytes);
  if (resident() && !device_->pushState(slot.offset, slot.bytes, err)) {
    err = label_ + ": " + err;
    return false;
  }
  return true;
}

bool Executor::syncState(std::string &err) const {
  if (!hostStale_)
    return true;
  if (!device_->pullState(0, persistent_.size(), err)) {
    err = label_ + ": " + err;
    return false;
  }
  hostStale_ = false;
  return true;
}

const TensorMap &Executor::state() const {
  snapshot_.clear();
  std::string err;
  if (!syncState(err))
    return snapshot_; // callers that must know why call syncState first
  for (const auto &[name, slot] : slots_) {
    Tensor t;
    t.dtype = slot.dtype;
    t.shape = slot.shape;
    t.bytes.assign(data(slot), data(slot) + slot.bytes);
    snapshot_.emplace(name, std::move(t));
  }
  return snapshot_;
}

const void *Executor::stateData(const std::string &name) const {
  auto it = slots_.find(name);
  std::string err;
  if (it == slots_.end() || !syncState(err))
    return nullptr;
  return data(it->second);
}

std::string Executor::roleOf(const std::string &name) const {
  auto it = roles_.find(name);
  return it == roles_.end() ? std::string() : it->second;
}

Executor::MemoryUse Executor::memoryUse() const {
  MemoryUse use;
  use.arenaBytes = device_ ? device_->arenaBytes()
                           : static_cast<int64_t>(arena_.size());
  use.persistentBytes = static_cast<int64_t>(persistent_.size());
  use.deviceBytes = device_ ? device_->deviceBytes() : -1;
  if (device_)
    use.devicePlan = device_->plannedMemory();
  if (heapStats_) {
    int64_t stats[3] = {0, 0, 0};
    heapStats_(stats);
    use.heapPeakBytes = stats[1];
    use.heapAllocations = stats[2];
    use.heapCounted = true;
  }
  return use;
}

void Executor::resetHeapPeak() {
  if (heapReset_)
    heapReset_();
}

int64_t Executor::step() const {
  auto it = slots_.find("step");
  if (it == slots_.end() || it->second.bytes != dtypeSize(it->second.dtype))
    return 0;
  // Resident: only the counter comes down, not the block.
  std::string err;
  if (hostStale_ &&
      !device_->pullState(it->second.offset, it->second.bytes, err))
    return 0;
  Tensor t;
  t.dtype = it->second.dtype;
  t.bytes.assign(data(it->second), data(it->second) + it->second.bytes);
  return static_cast<int64_t>(t.at(0));
}

std::vector<TensorSpec> Executor::inputsOf(std::string_view entry) const {
  std::vector<TensorSpec> out;
  if (const EntrySpec *e = manifest_.entry(entry))
    for (const TensorSpec &s : e->args)
      if (!isPersistentRole(s.role))
        out.push_back(s);
  return out;
}

Tensor Executor::gatherShard(const Slot &s) const {
  int ranks = comm_ ? comm_->size() : 1, rank = comm_ ? comm_->rank() : 0;
  int64_t block = s.shape[0];
  std::vector<float> rows(size_t(block) * size_t(ranks));
  std::memcpy(rows.data() + size_t(rank) * size_t(block), data(s), s.bytes);
  if (comm_)
    comm_->allGather(rows.data(), block);
  Tensor whole;
  whole.dtype = s.dtype;
  whole.shape = *s.fullShape;
  size_t n = 1;
  for (int64_t d : whole.shape)
    n *= size_t(d);
  whole.bytes.resize(n * sizeof(float));
  std::memcpy(whole.bytes.data(), rows.data(), whole.bytes.size());
  return whole;
}

Tensor Executor::shardOf(const Slot &s, const Tensor &whole) const {
  int rank = comm_ ? comm_->rank() : 0;
  size_t first = size_t(rank) * s.bytes;
  Tensor part;
  part.dtype = s.dtype;
  part.shape = s.shape;
  // Past the whole tensor's end the shard is padding: zeros.
  part.bytes.assign(s.bytes, 0);
  if (first < whole.bytes.size())
    std::memcpy(part.bytes.data(), whole.bytes.data() + first,
                std::min(s.bytes, whole.bytes.size() - first));
  return part;
}

bool Executor::saveCheckpoint(const std::string &path,
                              std::string &err) const {
  std::map<std::string, std::string> meta{{"format", "tgc-checkpoint-1"}};
  if (!manifest_.model.empty())
    meta["model"] = manifest_.model;
  // A device that fails here leaves the previous checkpoint as it was.
  if (!syncState(err))
    return false;
  TensorMap tensors = state();
  // Sharded state is gathered whole (every rank takes part), so that the
  // file is the single-process one and resumes with any rank count.
  for (const auto &[name, slot] : slots_)
    if (slot.fullShape)
      tensors[name] = gatherShard(slot);
  if (comm_ && comm_->rank() != 0)
    return true;
  return writeSafetensors(path, tensors, err, meta);
}

bool Executor::loadCheckpoint(const std::string &path, bool paramsOnly,
                              std::string &err) {
  TensorMap file;
  if (!readSafetensors(path, file, err))
    return false;
  for (const auto &[name, t] : file)
    if (!slots_.count(name)) {
      err = path + ": tensor '" + name +
            "' is not a parameter or state of the model";
      return false;
    }
  for (const auto &[name, role] : roles_) {
    auto it = file.find(name);
    if (it == file.end()) {
      if (role == "param") {
        err = path + ": parameter '" + name + "' is missing";
        return false;
      }
      continue;
    }
    if (paramsOnly && role != "param")
      continue;
    Tensor value = it->second;
    // Accept a step counter saved as another integer type (e.g. I32).
    const Slot &slot = slots_.at(name);
    if (slot.fullShape) {
      // Saved whole (by any rank count): this rank keeps its shard.
      if (value.dtype != slot.dtype || value.shape != *slot.fullShape) {
        err = path + ": '" + name + "' is " + dtypeName(value.dtype) +
              shapeString(value.shape) + " but the model has " +
              dtypeName(slot.dtype) + shapeString(*slot.fullShape);
        return false;
      }
      value = shardOf(slot, value);
    }
    if (role == "step" && value.dtype != slot.dtype &&
        !isFloat(value.dtype) && value.numel() == 1)
      convertTensor(it->second, slot.dtype, slot.shape, value, err);
    if (!setState(name, value, err)) {
      err = path + ": " + err;
      return false;
    }
  }
  return true;
}

} // namespace tgrt
