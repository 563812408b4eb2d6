//===- Mpi.h - tg-run's MPI communicator ------------------------*- C++ -*-===//
//
// tg-run is a rank of a data-parallel job when a launcher started it
// (mpirun sets OMPI_COMM_WORLD_SIZE, Slurm's srun PMI_SIZE/PMIX_RANK); only
// then does it initialise MPI. A plain `tg-run` never calls MPI_Init: Open
// MPI's singleton start-up would spawn a daemon and probe the network for a
// job of one, which costs time and fails in sandboxes for nothing.
//
// tg-run links no MPI: the communicator lives in a plugin,
// libtg-run-mpi.so (Mpi.cpp, linked with libmpi), which MpiLoad.cpp opens
// with dlopen when a job needs it, after opening libmpi itself
// (TG_MPI_LIBRARY names another), so that a machine without Open MPI runs
// single-process jobs and a data-parallel one fails with one line.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUN_MPI_H
#define TG_RUN_MPI_H

#include "runtime/Comm.h"

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>

namespace tgrun {

/// Whether a launcher (mpirun, srun) started this process.
bool launchedByMpi();

/// This process's rank as the launcher's environment says, before MPI is
/// initialised (0 when none says): who reports a failure to start MPI.
int launcherRank();

/// "" when MPI can be loaded; else the one line saying that it cannot
/// (the library missing, the plugin missing or broken) and how to get it.
std::string mpiProblem();

/// Initialises MPI and returns the world communicator (nullptr with `err`
/// on failure, including MPI that cannot be loaded). A collective that does
/// not complete within the timeout (a rank died or hangs) prints one error
/// line and exits 1; a signal in `*stop` during a collective (the launcher
/// tearing the job down after a rank died) prints one line and exits 128 +
/// the signal.
std::unique_ptr<tgrt::Communicator>
startMpi(const volatile std::sig_atomic_t *stop, std::string &err);

/// Seconds a collective may wait for the other ranks (default 300).
void setCommTimeout(double seconds);

/// The same value on every rank? (a start-up check: artifact hashes).
bool sameOnAllRanks(uint64_t value);

/// Ends MPI after a successful run (MPI_Finalize).
void finishMpi();

/// What libtg-run-mpi.so provides, through its one exported function
/// `tgrun_mpi_plugin` (C linkage, so dlsym finds it by that name). Built in
/// the same tree as tg-run, so C++ types may cross.
struct MpiPlugin {
  std::unique_ptr<tgrt::Communicator> (*start)(
      const volatile std::sig_atomic_t *stop, std::string &err);
  void (*setCommTimeout)(double seconds);
  bool (*sameOnAllRanks)(uint64_t value);
  void (*finish)();
};

} // namespace tgrun

extern "C" const tgrun::MpiPlugin *tgrun_mpi_plugin();

#endif // TG_RUN_MPI_H
