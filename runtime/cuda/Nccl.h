//===- Nccl.h - NCCL, loaded at run time, for data-parallel GPU steps -*- C++ -*-===//
//
// The GPU half of data parallelism (docs/data-parallel.md): the collective
// steps of a GPU schedule (GpuSchedule.h) run as ncclAllReduce,
// ncclReduceScatter and ncclAllGather on the CUDA device's communication
// stream; ncclCommGetAsyncError and ncclCommAbort let its host waits give
// up on a rank that died or hangs. Like libcuda,
// NCCL is opened with dlopen (libnccl.so.2, or $TG_NCCL_LIBRARY), so the
// runtime builds and runs without it and needs no NCCL headers: the few
// types and functions used are declared here, with the values of nccl.h
// (test/nvptx/CudaRuntimeTest.cpp checks them against nccl.h where the
// CUDA toolkit has one).
//
// One communicator per process, on the device the process runs on (its
// local rank modulo the devices it sees); rank 0's ncclUniqueId reaches the
// others through the job's host communicator (tg-run's MPI).
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_CUDA_NCCL_H
#define TG_RUNTIME_CUDA_NCCL_H

#include "runtime/Comm.h"
#include "runtime/GpuSchedule.h"
#include "runtime/cuda/CudaDriver.h"

#include <functional>
#include <memory>
#include <string>

namespace tg::rt::nccl {

using ncclComm_t = struct ncclComm *;
using ncclResult_t = int;
/// NCCL_UNIQUE_ID_BYTES = 128.
struct ncclUniqueId {
  char internal[128];
};
enum : int { ncclSuccess = 0, ncclInProgress = 7 };
/// ncclRedOp_t.
enum : int { ncclSum = 0, ncclAvg = 4 };
/// ncclDataType_t.
enum : int { ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9 };

/// Function pointers resolved from the library.
struct NcclApi {
  ncclResult_t (*ncclGetVersion)(int *);
  const char *(*ncclGetErrorString)(ncclResult_t);
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t);
  ncclResult_t (*ncclCommAbort)(ncclComm_t);
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t, ncclResult_t *);
  ncclResult_t (*ncclGroupStart)();
  ncclResult_t (*ncclGroupEnd)();
  ncclResult_t (*ncclAllReduce)(const void *, void *, size_t, int, int,
                                ncclComm_t, cuda::CUstream);
  ncclResult_t (*ncclReduceScatter)(const void *, void *, size_t, int, int,
                                    ncclComm_t, cuda::CUstream);
  ncclResult_t (*ncclAllGather)(const void *, void *, size_t, int, ncclComm_t,
                                cuda::CUstream);
};

/// The library to load: $TG_NCCL_LIBRARY when set (the tests' fake, an NCCL
/// outside the loader's path), else libnccl.so.2.
std::string ncclLibrary();

/// This process's rank among the ranks of its node, from the launcher's
/// environment (Open MPI, Slurm, MPICH); 0 when none says.
int localRank();

/// The oldest NCCL taken: 2.10, whose ncclAvg averages the gradients. It
/// also makes graph capture legal (NCCL's calls may be captured into a
/// CUDA graph on the stream they are issued on since 2.9.6), so the CUDA
/// device captures a step's collectives with its kernels.
constexpr int kMinVersion = 21000;

/// One process's NCCL communicator, bound to the current device.
class NcclComm {
public:
  /// Loads the library (once per process) and joins the job of `world`:
  /// rank 0 creates the unique id, `world` broadcasts it, every rank calls
  /// ncclCommInitRank. The device's context must be current. nullptr and
  /// one line in `err` ("no NCCL (libnccl.so.2 not found): ...").
  static std::unique_ptr<NcclComm> join(tgrt::Communicator &world,
                                        std::string &err);
  ~NcclComm();
  NcclComm(const NcclComm &) = delete;
  NcclComm &operator=(const NcclComm &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// NCCL_VERSION_CODE of the library (22809 for 2.28.9).
  int version() const { return version_; }

  /// Enqueues collective `c` (not a shard) on `stream`: one call per tensor,
  /// in one group; `at` gives each buffer's device address. False with one
  /// line in `err` naming the call.
  bool enqueue(const tgrt::GpuCollective &c,
               const std::function<cuda::CUdeviceptr(const tgrt::GpuBuffer &)> &at,
               cuda::CUstream stream, std::string &err) const;

  /// "" while the communicator is healthy, else one line naming NCCL's
  /// asynchronous error (a peer lost, a network error): its kernels then
  /// never complete, so a host wait gives up on it.
  std::string asyncError() const;
  /// Ends the communicator at once (ncclCommAbort), so that its kernels
  /// stop waiting for peers that died or hang; nothing communicates after.
  void abort();

private:
  NcclComm() = default;
  /// "" on success, else "<call> failed: <NCCL's message> (code N)".
  std::string check(ncclResult_t r, const char *call) const;
  const NcclApi *api_ = nullptr;
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1, version_ = 0;
};

} // namespace tg::rt::nccl

#endif // TG_RUNTIME_CUDA_NCCL_H
