//===- Comm.h - the communicator of a data-parallel job ---------*- C++ -*-===//
//
// A data-parallel artifact (tgc --ranks N) sums its gradient buckets over
// the ranks of the job through the artifact's tgx_all_reduce_f32 (with
// --zero 1, tgx_reduce_scatter_f32 and tgx_all_gather_f32), which call the
// communicator the runtime installed (Executor::setCommunicator).
// libtgrt defines only this interface and links no communication library;
// tg-run implements it with MPI (tools/tg-run/Mpi.cpp), so a program that
// embeds libtgrt may bring its own. docs/data-parallel.md.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_COMM_H
#define TG_RUNTIME_COMM_H

#include <cstdint>
#include <string>

namespace tgrt {

/// The ranks of one job, as the compiled code sees them.
class Communicator {
public:
  virtual ~Communicator() = default;
  /// This process's rank, 0 to size() - 1.
  virtual int rank() const = 0;
  /// The number of ranks.
  virtual int size() const = 0;
  /// Replaces data[0..n) by its elementwise sum over every rank. Called
  /// from inside compiled code, so it cannot return an error: a failure
  /// (a rank that died, a timeout) ends the process with one error line.
  virtual void allReduceSum(float *data, int64_t n) = 0;
  /// ZeRO stage 1: `data` holds one row of `block` floats per rank; row r
  /// summed over every rank replaces data[0..block) on rank r. The default
  /// sums every row (allReduceSum) and keeps its own: right, at size()
  /// times the traffic of a real reduce-scatter.
  virtual void reduceScatterSum(float *data, int64_t block);
  /// ZeRO stage 1: fills every row of data[size()][block] from the rank
  /// that owns it (this rank's row is data[rank() * block ...]). The
  /// default zeroes the other rows and sums (allReduceSum).
  virtual void allGather(float *data, int64_t block);
  /// Replaces data[0..bytes) on every rank by rank `root`'s (the GPU
  /// backend's NCCL unique id). The default sums each byte as a float, the
  /// other ranks contributing zeros (allReduceSum; exact).
  virtual void broadcast(void *data, int64_t bytes, int root);
  /// Asked again and again while a wait for the other ranks (`what`, e.g.
  /// "all_reduce") has lasted `waitedSeconds`: "" to keep waiting, else the
  /// one line to give up with, e.g. when the launcher is tearing the job
  /// down or a timeout passed. A device that waits for its own collectives
  /// (the CUDA device's NCCL) asks it, so every wait of the job ends alike.
  /// The default waits forever.
  virtual std::string waitProblem(double waitedSeconds, const char *what);
};

} // namespace tgrt

#endif // TG_RUNTIME_COMM_H
