//===- FakeNccl.cpp - a libnccl over MPI on the fake driver's memory -*- C++ -*-===//
//
// A stand-in for libnccl.so.2 that tg-run loads through TG_NCCL_LIBRARY
// beside the fake libcuda (FakeCudaEmu.cpp, TG_CUDA_LIBRARY), so that
// `mpirun -n 2 tg-run m.tgx --device cuda` runs a data-parallel GPU step
// without a GPU. The fake driver's device memory is host memory, so a
// collective is the MPI collective of the same name on the same pointers,
// over MPI_COMM_WORLD (tg-run initialised MPI). It is enqueued on the
// stream as host work the fake driver polls (tgFakeCudaLaunchPolled), so it
// runs in order with the kernels, when the stream's work runs, and also
// from a captured graph, as NCCL's kernels would; it starts the
// non-blocking MPI collective and stays in flight until MPI_Test says it
// completed, so a peer that died or hangs leaves it in flight, as NCCL's
// kernels spin, and the host's polled waits (cuEventQuery) see it.
// ncclCommAbort ends the communicator's collectives in flight;
// ncclCommGetAsyncError reports an error injected below.
//
// f32, bf16 and f16 are summed as NCCL sums them: in f32, each partial sum
// rounded back to the buffer's type (MPI has neither 16-bit float type: a
// user-defined MPI_Op on 16-bit words); ncclAvg then scales by 1 / ranks in
// f32 and rounds once more.
//
// ncclCommInitRank checks what the runtime must get right: the job's size
// and this process's rank, and the unique id, which must be rank 0's on
// every rank (the broadcast over MPI) and one that ncclGetUniqueId made.
//
// Environment:
//   TG_FAKE_NCCL_VERSION=N   the version it reports (22809: 2.28.9)
//   TG_FAKE_NCCL_LOG=FILE    appends one line per collective when it
//                            completes ("all_reduce 4 floats of rank 1 of 2";
//                            "4 bf16", "4 f16" for those types)
//   TG_FAKE_NCCL_FAIL=R:N:HOW  on rank R, the N-th collective to start
//                            (1: the first) does not: HOW = exit (the
//                            process dies at once, without a word, as a
//                            crash), hang (the process sleeps forever) or
//                            error (an asynchronous error, ncclRemoteError,
//                            and the collective never completes)
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Nccl.h"

#include <mpi.h>

#include <cstdint>
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
  kRemoteError = 6,
};

const char kMagic[] = "tgc fake nccl id";

struct Comm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0, size = 1;
  bool aborted = false; ///< ncclCommAbort: its collectives end at once
  int asyncError = kSuccess;
};

/// One enqueued collective; kept for the process's life, since a captured
/// graph runs it again at every launch. `request` is its MPI collective
/// while in flight.
struct Call {
  enum Kind { AllReduce, ReduceScatter, AllGather } kind;
  const void *send;
  void *recv;
  size_t count;
  int type; ///< ncclFloat32, ncclBfloat16 or ncclFloat16
  bool mean;
  Comm *comm;
  bool started = false;
  MPI_Request request = MPI_REQUEST_NULL;
};
std::deque<std::unique_ptr<Call>> gCalls;

/// bf16 <-> f32: the upper half of an f32, rounded to nearest even.
float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN stays a (quiet) NaN
    return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
float fromF16(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, sizeof v);
  return float(v);
}
uint16_t toF16(float f) {
  _Float16 v = _Float16(f);
  uint16_t h;
  std::memcpy(&h, &v, sizeof h);
  return h;
}

/// The element's f32 value and its rounding back, by NCCL type.
float load(int type, const void *p, size_t i) {
  if (type == nc::ncclFloat32)
    return static_cast<const float *>(p)[i];
  uint16_t h = static_cast<const uint16_t *>(p)[i];
  return type == nc::ncclBfloat16 ? fromBf16(h) : fromF16(h);
}
void store(int type, void *p, size_t i, float v) {
  if (type == nc::ncclFloat32)
    static_cast<float *>(p)[i] = v;
  else
    static_cast<uint16_t *>(p)[i] =
        type == nc::ncclBfloat16 ? toBf16(v) : toF16(v);
}

/// MPI_Op bodies for bf16 and f16 words: inout[i] = in[i] + inout[i],
/// added in f32 and rounded to the type.
void sumBf16(void *in, void *inout, int *len, MPI_Datatype *) {
  for (int i = 0; i < *len; ++i)
    store(nc::ncclBfloat16, inout, i,
          load(nc::ncclBfloat16, in, i) + load(nc::ncclBfloat16, inout, i));
}
void sumF16(void *in, void *inout, int *len, MPI_Datatype *) {
  for (int i = 0; i < *len; ++i)
    store(nc::ncclFloat16, inout, i,
          load(nc::ncclFloat16, in, i) + load(nc::ncclFloat16, inout, i));
}

/// The MPI datatype and sum of an NCCL type.
void mpiTypeAndSum(int type, MPI_Datatype &dt, MPI_Op &sum) {
  static MPI_Op bf16 = MPI_OP_NULL, f16 = MPI_OP_NULL;
  if (type == nc::ncclFloat32) {
    dt = MPI_FLOAT;
    sum = MPI_SUM;
    return;
  }
  MPI_Op &op = type == nc::ncclBfloat16 ? bf16 : f16;
  if (op == MPI_OP_NULL)
    MPI_Op_create(type == nc::ncclBfloat16 ? sumBf16 : sumF16,
                  /*commute=*/1, &op);
  dt = MPI_UINT16_T;
  sum = op;
}

using PolledFn = int (*)(void *, int (*)(void *), void *);
PolledFn gLaunchPolled = nullptr;

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
  const char *type = c.type == nc::ncclFloat32    ? "floats"
                     : c.type == nc::ncclBfloat16 ? "bf16"
                                                  : "f16";
  std::fprintf(out, "%s %zu %s of rank %d of %d\n", names[c.kind], c.count,
               type, c.comm->rank, c.comm->size);
  std::fclose(out);
}

/// The failure TG_FAKE_NCCL_FAIL injects into this process's `started`-th
/// collective: "exit", "hang", "error" or "".
std::string injected(int rank, long started) {
  const char *spec = std::getenv("TG_FAKE_NCCL_FAIL");
  int r = -1;
  long n = 0;
  char how[16] = "";
  if (!spec || std::sscanf(spec, "%d:%ld:%15s", &r, &n, how) != 3 ||
      r != rank || n != started)
    return "";
  return how;
}

/// Starts the MPI collective of `c`; false (with the communicator's
/// asynchronous error set) when the injected failure says so.
bool start(Call &c) {
  static long started = 0;
  std::string fail = injected(c.comm->rank, ++started);
  if (fail == "exit")
    _exit(1);
  if (fail == "hang")
    for (;;)
      pause();
  if (fail == "error") {
    c.comm->asyncError = kRemoteError;
    return false;
  }
  int n = int(c.count), ok = MPI_SUCCESS;
  MPI_Datatype dt;
  MPI_Op sum;
  mpiTypeAndSum(c.type, dt, sum);
  switch (c.kind) {
  case Call::AllReduce:
    ok = MPI_Iallreduce(c.send == c.recv ? MPI_IN_PLACE : c.send, c.recv, n,
                        dt, sum, c.comm->mpi, &c.request);
    break;
  case Call::ReduceScatter:
    ok = MPI_Ireduce_scatter_block(c.send, c.recv, n, dt, sum, c.comm->mpi,
                                   &c.request);
    break;
  case Call::AllGather:
    ok = MPI_Iallgather(c.send, n, dt, c.recv, n, dt, c.comm->mpi,
                        &c.request);
    break;
  }
  if (ok != MPI_SUCCESS)
    die("an MPI collective failed");
  return true;
}

/// Polled on the stream (tgFakeCudaLaunchPolled): 1 once the collective
/// completed (or its communicator was aborted), 0 while it is in flight.
int poll(void *p) {
  Call &c = *static_cast<Call *>(p);
  if (c.comm->aborted)
    return 1;
  if (c.comm->asyncError != kSuccess)
    return 0; // NCCL's kernels wait for a peer that is gone
  if (!c.started) {
    if (!start(c))
      return 0;
    c.started = true;
  }
  int done = 0;
  if (MPI_Test(&c.request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
    c.comm->asyncError = kRemoteError;
    return 0;
  }
  if (!done)
    return 0;
  c.started = false; // a graph's next launch runs it again
  log(c);
  // ncclAvg: the sum scaled by 1 / ranks, as the CPU backend averages.
  if (c.mean)
    for (size_t i = 0; i < c.count; ++i)
      store(c.type, c.recv, i,
            load(c.type, c.recv, i) * (1.0f / float(c.comm->size)));
  return 1;
}

int enqueue(Call::Kind kind, const void *send, void *recv, size_t count,
            int type, int op, void *comm, void *stream) {
  if ((type != nc::ncclFloat32 && type != nc::ncclBfloat16 &&
       type != nc::ncclFloat16) ||
      (op != nc::ncclSum && op != nc::ncclAvg) || !comm ||
      count > size_t(1) << 30)
    return kInvalidArgument;
  gCalls.push_back(std::make_unique<Call>(Call{kind, send, recv, count, type,
                                               op == nc::ncclAvg,
                                               static_cast<Comm *>(comm)}));
  return gLaunchPolled(stream, poll, gCalls.back().get()) == 0 ? kSuccess
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
  case kRemoteError:
    return "remote process exited or there was a network error";
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
  if (!gLaunchPolled) {
    const char *lib = std::getenv("TG_CUDA_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    gLaunchPolled = h ? reinterpret_cast<PolledFn>(
                            dlsym(h, "tgFakeCudaLaunchPolled"))
                      : nullptr;
    if (!gLaunchPolled)
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

// The communicator is not freed: its collectives may still be polled
// until the process ends, and they end at once.
int ncclCommAbort(void *comm) {
  static_cast<Comm *>(comm)->aborted = true;
  return kSuccess;
}

int ncclCommGetAsyncError(void *comm, int *state) {
  *state = static_cast<Comm *>(comm)->asyncError;
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
