//===- Mpi.cpp - tg-run's MPI communicator, a plugin ------------*- C++ -*-===//
//
// Built as libtg-run-mpi.so, the one part of tg-run that links libmpi;
// tg-run opens it with dlopen only for a data-parallel job (MpiLoad.cpp), so
// tg-run itself starts on a machine without Open MPI. Gradient buckets are summed with MPI_Iallreduce (ZeRO's with
// MPI_Ireduce_scatter_block and MPI_Iallgather), polled with
// MPI_Test and a short sleep, so that a rank that died (its peers would
// block in MPI_Allreduce forever if the launcher did not notice) turns into
// one error line after the timeout, and so that waiting ranks leave the
// CPU to the ranks still computing on an oversubscribed machine.
//
//===----------------------------------------------------------------------===//
#include "tools/tg-run/Mpi.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <unistd.h>

namespace {

double gTimeout = 300;

class MpiCommunicator final : public tgrt::Communicator {
public:
  explicit MpiCommunicator(const volatile std::sig_atomic_t *stop)
      : stop_(stop) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allReduceSum(float *data, int64_t n) override {
    // MPI counts are int: a bucket larger than that goes in pieces.
    const int64_t chunk = int64_t(1) << 30;
    for (int64_t done = 0; done < n; done += chunk) {
      int count = static_cast<int>(std::min(chunk, n - done));
      MPI_Request request;
      if (MPI_Iallreduce(MPI_IN_PLACE, data + done, count, MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD, &request) != MPI_SUCCESS)
        fail("MPI_Iallreduce failed");
      wait(request, "all_reduce");
    }
  }

  void reduceScatterSum(float *data, int64_t block) override {
    MPI_Request request;
    if (MPI_Ireduce_scatter_block(MPI_IN_PLACE, data, mpiCount(block),
                                  MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                                  &request) != MPI_SUCCESS)
      fail("MPI_Ireduce_scatter_block failed");
    wait(request, "reduce_scatter");
  }

  void allGather(float *data, int64_t block) override {
    MPI_Request request;
    if (MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data,
                       mpiCount(block), MPI_FLOAT, MPI_COMM_WORLD,
                       &request) != MPI_SUCCESS)
      fail("MPI_Iallgather failed");
    wait(request, "all_gather");
  }

  void broadcast(void *data, int64_t bytes, int root) override {
    MPI_Request request;
    if (MPI_Ibcast(data, mpiCount(bytes), MPI_BYTE, root, MPI_COMM_WORLD,
                   &request) != MPI_SUCCESS)
      fail("MPI_Ibcast failed");
    wait(request, "broadcast");
  }

private:
  /// A rank's block as an MPI count (an int). A ZeRO bucket is one block
  /// per rank of about bucket-bytes / ranks, far below 2^31 floats.
  int mpiCount(int64_t block) {
    if (block > int64_t(1) << 30)
      fail("a ZeRO bucket's block of each rank exceeds 2^30 floats; "
           "compile with a smaller tgc --bucket-size");
    return static_cast<int>(block);
  }

  std::string waitProblem(double waited, const char *what) override {
    char msg[160] = "";
    if (stop_ && *stop_)
      // The launcher ends the job this way when another rank died.
      std::snprintf(msg, sizeof msg,
                    "stopped by signal %d while waiting for the other ranks "
                    "(did one die?)",
                    int(*stop_));
    else if (waited > gTimeout)
      std::snprintf(msg, sizeof msg,
                    "no answer from the other ranks for %.0f s in %s (a rank "
                    "died or hangs)",
                    gTimeout, what);
    return msg;
  }

  void wait(MPI_Request &request, const char *what) {
    auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      int done = 0;
      if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        fail("MPI_Test failed");
      if (done)
        return;
      double waited = 0;
      if (spins > 100) {
        struct timespec pause {0, 100000}; // 0.1 ms
        nanosleep(&pause, nullptr);
        waited = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      }
      if (std::string why = waitProblem(waited, what); !why.empty())
        fail(why.c_str(), stop_ && *stop_ ? 128 + *stop_ : 1);
    }
  }
  [[noreturn]] void fail(const char *msg, int status = 1) {
    std::fflush(stdout);
    std::fprintf(stderr, "tg-run: error: rank %d of %d: %s\n", rank_, size_,
                 msg);
    std::fflush(stderr);
    // Not MPI_Abort: it may wait for the dead rank's daemon. The launcher
    // ends the job when a rank exits without MPI_Finalize.
    _exit(status);
  }
  const volatile std::sig_atomic_t *stop_;
  int rank_ = 0, size_ = 1;
};

void setCommTimeout(double seconds) { gTimeout = seconds; }

std::unique_ptr<tgrt::Communicator>
startMpi(const volatile std::sig_atomic_t *stop, std::string &err) {
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
    err = "MPI_Init failed";
    return nullptr;
  }
  // Errors are returned (and reported as our one line), not fatal inside
  // MPI with its own multi-line message.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(stop);
}

bool sameOnAllRanks(uint64_t value) {
  uint64_t range[2] = {value, ~value}, out[2];
  // One reduction gives both the minimum and (as ~min(~v)) the maximum.
  MPI_Allreduce(range, out, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  return out[0] == ~out[1];
}

void finishMpi() { MPI_Finalize(); }

} // namespace

extern "C" const tgrun::MpiPlugin *tgrun_mpi_plugin() {
  static const tgrun::MpiPlugin plugin = {startMpi, setCommTimeout,
                                          sameOnAllRanks, finishMpi};
  return &plugin;
}
