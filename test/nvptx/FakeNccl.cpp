//===- FakeNccl.cpp - a libnccl over MPI on the fake driver's memory -*- C++ -*-===//
//
// A stand-in for libnccl.so.2 that tg-run loads through TG_NCCL_LIBRARY
// beside the fake libcuda (FakeCudaEmu.cpp, TG_CUDA_LIBRARY), so that
// `mpirun -n 2 tg-run m.tgx --device cuda` runs a data-parallel GPU step
// without a GPU. The fake driver's device memory is host memory, so a
// collective is the MPI collective of the same name on the same pointers,
// over MPI_COMM_WORLD (tg-run initialised MPI). It is enqueued on the
// stream with the driver's cuLaunchHostFunc, so it runs in order with the
// kernels, when the stream's work runs, and also from a captured graph, as
// NCCL's kernels would.
//
// ncclCommInitRank checks what the runtime must get right: the job's size
// and this process's rank, and the unique id, which must be rank 0's on
// every rank (the broadcast over MPI) and one that ncclGetUniqueId made.
//
// Environment:
//   TG_FAKE_NCCL_VERSION=N   the version it reports (22809: 2.28.9)
//   TG_FAKE_NCCL_LOG=FILE    appends one line per collective when it runs
//                            ("all_reduce 4 floats of rank 1 of 2")
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Nccl.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <memory>
#include <string>
#include <unistd.h>

namespace {

namespace nc = tg::rt::nccl;

enum : int {
  kSuccess = 0,
  kSystemError = 2,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
};

const char kMagic[] = "tgc fake nccl id";

struct Comm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0, size = 1;
};

/// One enqueued collective; kept for the process's life, since a captured
/// graph runs it again at every launch.
struct Call {
  enum Kind { AllReduce, ReduceScatter, AllGather } kind;
  const float *send;
  float *recv;
  size_t count;
  bool mean;
  Comm *comm;
};
std::deque<std::unique_ptr<Call>> gCalls;

using HostFn = int (*)(void *, void (*)(void *), void *);
HostFn gLaunchHostFunc = nullptr;

[[noreturn]] void die(const std::string &msg) {
  std::fprintf(stderr, "fake libnccl: error: %s\n", msg.c_str());
  std::fflush(stderr);
  _exit(1);
}

void log(const Call &c) {
  const char *f = std::getenv("TG_FAKE_NCCL_LOG");
  FILE *out = f ? std::fopen(f, "a") : nullptr;
  if (!out)
    return;
  static const char *names[] = {"all_reduce", "reduce_scatter", "all_gather"};
  std::fprintf(out, "%s %zu floats of rank %d of %d\n", names[c.kind], c.count,
               c.comm->rank, c.comm->size);
  std::fclose(out);
}

/// Runs on the stream (cuLaunchHostFunc).
void run(void *p) {
  const Call &c = *static_cast<Call *>(p);
  log(c);
  int n = int(c.count), ok = MPI_SUCCESS;
  size_t received = c.count;
  switch (c.kind) {
  case Call::AllReduce:
    ok = MPI_Allreduce(c.send == c.recv ? MPI_IN_PLACE : c.send, c.recv, n,
                       MPI_FLOAT, MPI_SUM, c.comm->mpi);
    break;
  case Call::ReduceScatter:
    ok = MPI_Reduce_scatter_block(c.send, c.recv, n, MPI_FLOAT, MPI_SUM,
                                  c.comm->mpi);
    break;
  case Call::AllGather:
    ok = MPI_Allgather(c.send, n, MPI_FLOAT, c.recv, n, MPI_FLOAT, c.comm->mpi);
    break;
  }
  if (ok != MPI_SUCCESS)
    die("an MPI collective failed");
  // ncclAvg: the sum scaled by 1 / ranks, as the CPU backend averages.
  if (c.mean)
    for (size_t i = 0; i < received; ++i)
      c.recv[i] *= 1.0f / float(c.comm->size);
}

int enqueue(Call::Kind kind, const void *send, void *recv, size_t count,
            int type, int op, void *comm, void *stream) {
  if (type != nc::ncclFloat32 || (op != nc::ncclSum && op != nc::ncclAvg) ||
      !comm || count > size_t(1) << 30)
    return kInvalidArgument;
  gCalls.push_back(std::make_unique<Call>(
      Call{kind, static_cast<const float *>(send), static_cast<float *>(recv),
           count, op == nc::ncclAvg, static_cast<Comm *>(comm)}));
  return gLaunchHostFunc(stream, run, gCalls.back().get()) == 0 ? kSuccess
                                                               : kSystemError;
}

} // namespace

extern "C" {

int ncclGetVersion(int *v) {
  const char *env = std::getenv("TG_FAKE_NCCL_VERSION");
  *v = env && *env ? std::atoi(env) : 22809;
  return kSuccess;
}

const char *ncclGetErrorString(int r) {
  switch (r) {
  case kSuccess:
    return "no error";
  case kSystemError:
    return "unhandled system error (the fake libnccl needs MPI and the fake "
           "libcuda)";
  case kInvalidArgument:
    return "invalid argument";
  case kInvalidUsage:
    return "invalid usage (the ranks disagree on the unique id)";
  default:
    return "unknown result";
  }
}

int ncclGetUniqueId(nc::ncclUniqueId *id) {
  std::memset(id, 0, sizeof *id);
  std::snprintf(id->internal, sizeof id->internal, "%s %d", kMagic,
                int(getpid()));
  return kSuccess;
}

int ncclCommInitRank(void **out, int nranks, nc::ncclUniqueId id, int rank) {
  int inited = 0, size = 0, me = 0;
  MPI_Initialized(&inited);
  if (!inited)
    return kSystemError;
  // The fake libcuda, which the runtime opened already, runs the calls.
  if (!gLaunchHostFunc) {
    const char *lib = std::getenv("TG_CUDA_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    gLaunchHostFunc = h ? reinterpret_cast<HostFn>(dlsym(h, "cuLaunchHostFunc"))
                        : nullptr;
    if (!gLaunchHostFunc)
      return kSystemError;
  }
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (nranks != size || rank != me)
    return kInvalidArgument;
  // Every rank must hold the id rank 0 made: compare bytes as unsigned
  // chars through one min and one max reduction.
  unsigned char lo[sizeof id.internal], hi[sizeof id.internal];
  MPI_Allreduce(id.internal, lo, int(sizeof lo), MPI_UNSIGNED_CHAR, MPI_MIN,
                MPI_COMM_WORLD);
  MPI_Allreduce(id.internal, hi, int(sizeof hi), MPI_UNSIGNED_CHAR, MPI_MAX,
                MPI_COMM_WORLD);
  if (std::memcmp(lo, hi, sizeof lo) != 0)
    return kInvalidUsage;
  if (std::strncmp(id.internal, kMagic, sizeof kMagic - 1) != 0)
    return kInvalidArgument;
  auto *c = new Comm();
  c->rank = me;
  c->size = size;
  MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi);
  *out = c;
  return kSuccess;
}

int ncclCommDestroy(void *comm) {
  auto *c = static_cast<Comm *>(comm);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (c && !finalized)
    MPI_Comm_free(&c->mpi);
  delete c;
  return kSuccess;
}

int ncclGroupStart() { return kSuccess; }
int ncclGroupEnd() { return kSuccess; }

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
                  void *comm, void *stream) {
  return enqueue(Call::AllReduce, send, recv, count, type, op, comm, stream);
}
int ncclReduceScatter(const void *send, void *recv, size_t count, int type,
                      int op, void *comm, void *stream) {
  return enqueue(Call::ReduceScatter, send, recv, count, type, op, comm,
                 stream);
}
int ncclAllGather(const void *send, void *recv, size_t count, int type,
                  void *comm, void *stream) {
  return enqueue(Call::AllGather, send, recv, count, type, nc::ncclSum, comm,
                 stream);
}

} // extern "C"
