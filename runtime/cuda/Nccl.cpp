//===- Nccl.cpp - NCCL, loaded at run time ----------------------*- C++ -*-===//
//
// See Nccl.h. The library is opened once per process and kept; a missing
// library or symbol is one line naming it.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Nccl.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace tg::rt::nccl {

std::string ncclLibrary() {
  const char *env = std::getenv("TG_NCCL_LIBRARY");
  return env && *env ? env : "libnccl.so.2";
}

int localRank() {
  for (const char *var :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
        "PMI_LOCAL_RANK"})
    if (const char *v = std::getenv(var); v && *v)
      return std::atoi(v) > 0 ? std::atoi(v) : 0;
  return 0;
}

namespace {

template <typename F>
bool resolve(void *h, F &fn, const char *name, std::string &missing) {
  if (void *p = dlsym(h, name)) {
    fn = reinterpret_cast<F>(p);
    return true;
  }
  missing = name;
  return false;
}

/// The library's functions, loaded once (nullptr and `err` on failure,
/// remembered: every later call fails alike).
const NcclApi *loadApi(std::string &err) {
  static std::mutex mu;
  static NcclApi api;
  static bool tried = false;
  static std::string why;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    std::string lib = ncclLibrary();
    void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string missing;
    if (!h) {
      why = "no NCCL (" + lib + " not found): " + std::string(dlerror()) +
            "; data-parallel GPU steps need it (TG_NCCL_LIBRARY names "
            "another)";
    } else if (!(resolve(h, api.ncclGetVersion, "ncclGetVersion", missing) &&
                 resolve(h, api.ncclGetErrorString, "ncclGetErrorString",
                         missing) &&
                 resolve(h, api.ncclGetUniqueId, "ncclGetUniqueId", missing) &&
                 resolve(h, api.ncclCommInitRank, "ncclCommInitRank",
                         missing) &&
                 resolve(h, api.ncclCommDestroy, "ncclCommDestroy", missing) &&
                 resolve(h, api.ncclCommAbort, "ncclCommAbort", missing) &&
                 resolve(h, api.ncclCommGetAsyncError, "ncclCommGetAsyncError",
                         missing) &&
                 resolve(h, api.ncclGroupStart, "ncclGroupStart", missing) &&
                 resolve(h, api.ncclGroupEnd, "ncclGroupEnd", missing) &&
                 resolve(h, api.ncclAllReduce, "ncclAllReduce", missing) &&
                 resolve(h, api.ncclReduceScatter, "ncclReduceScatter",
                         missing) &&
                 resolve(h, api.ncclAllGather, "ncclAllGather", missing))) {
      why = lib + " has no symbol '" + missing + "'";
    }
  }
  if (!why.empty()) {
    err = why;
    return nullptr;
  }
  return &api;
}

int ncclType(tgc::DType t) {
  return t == tgc::DType::BF16 ? ncclBfloat16 : t == tgc::DType::F16 ? ncclFloat16
                                                           : ncclFloat32;
}

} // namespace

std::string NcclComm::check(ncclResult_t r, const char *call) const {
  if (r == ncclSuccess)
    return "";
  const char *msg = api_->ncclGetErrorString(r);
  return std::string(call) + " failed: " + (msg ? msg : "unknown NCCL error") +
         " (code " + std::to_string(r) + ")";
}

std::unique_ptr<NcclComm> NcclComm::join(tgrt::Communicator &world,
                                         std::string &err) {
  const NcclApi *api = loadApi(err);
  if (!api)
    return nullptr;
  std::unique_ptr<NcclComm> c(new NcclComm());
  c->api_ = api;
  c->rank_ = world.rank();
  c->size_ = world.size();
  if ((err = c->check(api->ncclGetVersion(&c->version_), "ncclGetVersion"))
          .size())
    return nullptr;
  if (c->version_ < kMinVersion) {
    err = "NCCL " + std::to_string(c->version_ / 10000) + "." +
          std::to_string(c->version_ / 100 % 100) + "." +
          std::to_string(c->version_ % 100) + " (" + ncclLibrary() +
          ") is older than 2.10, whose ncclAvg averages the gradients";
    return nullptr;
  }
  // Every rank takes part in the broadcast, also when rank 0 failed to make
  // an id (then it sends zeros and exits with its own error; the others
  // fail in ncclCommInitRank or are ended by the launcher).
  ncclUniqueId id{};
  std::string made;
  if (c->rank_ == 0)
    made = c->check(api->ncclGetUniqueId(&id), "ncclGetUniqueId");
  world.broadcast(&id, sizeof id, 0);
  if (!made.empty()) {
    err = made;
    return nullptr;
  }
  if ((err = c->check(api->ncclCommInitRank(&c->comm_, c->size_, id, c->rank_),
                      "ncclCommInitRank"))
          .size()) {
    c->comm_ = nullptr;
    return nullptr;
  }
  return c;
}

NcclComm::~NcclComm() {
  if (comm_)
    api_->ncclCommDestroy(comm_);
}

std::string NcclComm::asyncError() const {
  ncclResult_t state = ncclSuccess;
  if (!comm_)
    return "";
  std::string why =
      check(api_->ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError");
  // ncclInProgress is a non-blocking communicator's work in progress, not an
  // error.
  if (why.empty() && state != ncclSuccess && state != ncclInProgress)
    why = "NCCL reports an asynchronous error: " + check(state, "a collective");
  return why;
}

void NcclComm::abort() {
  if (comm_)
    api_->ncclCommAbort(comm_);
  comm_ = nullptr;
}

bool NcclComm::enqueue(
    const tgrt::GpuCollective &c,
    const std::function<cuda::CUdeviceptr(const tgrt::GpuBuffer &)> &at,
    cuda::CUstream stream, std::string &err) const {
  using Op = tgrt::GpuCollective::Op;
  int type = ncclType(c.dtype), red = c.mean ? ncclAvg : ncclSum;
  if ((err = check(api_->ncclGroupStart(), "ncclGroupStart")).size())
    return false;
  for (size_t i = 0; i < c.counts.size() && err.empty(); ++i) {
    const void *src = reinterpret_cast<const void *>(at(c.srcs[i]));
    void *dst = reinterpret_cast<void *>(at(c.dsts[i]));
    size_t n = size_t(c.counts[i]);
    if (c.op == Op::AllReduce)
      err = check(api_->ncclAllReduce(src, dst, n, type, red, comm_, stream),
                  "ncclAllReduce");
    else if (c.op == Op::ReduceScatter)
      err = check(api_->ncclReduceScatter(src, dst, n, type, red, comm_, stream),
                  "ncclReduceScatter");
    else
      err = check(api_->ncclAllGather(src, dst, n, type, comm_, stream),
                  "ncclAllGather");
  }
  // The group is closed also after a failed call, so NCCL's state is sane.
  std::string ended = check(api_->ncclGroupEnd(), "ncclGroupEnd");
  if (err.empty())
    err = ended;
  return err.empty();
}

} // namespace tg::rt::nccl
