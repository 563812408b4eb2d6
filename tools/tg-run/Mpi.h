//===- Mpi.h - tg-run's MPI communicator ------------------------*- C++ -*-===//
//
// tg-run is a rank of a data-parallel job when a launcher started it
// (mpirun sets OMPI_COMM_WORLD_SIZE, Slurm's srun PMI_SIZE/PMIX_RANK); only
// then does it initialise MPI. A plain `tg-run` never calls MPI_Init: Open
// MPI's singleton start-up would spawn a daemon and probe the network for a
// job of one, which costs time and fails in sandboxes for nothing.
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

/// Initialises MPI and returns the world communicator (nullptr with `err`
/// on failure). A collective that does not complete within the timeout
/// (a rank died or hangs) prints one error line and exits 1; a signal in
/// `*stop` during a collective (the launcher tearing the job down after a
/// rank died) prints one line and exits 128 + the signal.
std::unique_ptr<tgrt::Communicator>
startMpi(const volatile std::sig_atomic_t *stop, std::string &err);

/// Seconds a collective may wait for the other ranks (default 300).
void setCommTimeout(double seconds);

/// The same value on every rank? (a start-up check: artifact hashes).
bool sameOnAllRanks(uint64_t value);

/// Ends MPI after a successful run (MPI_Finalize).
void finishMpi();

} // namespace tgrun

#endif // TG_RUN_MPI_H
