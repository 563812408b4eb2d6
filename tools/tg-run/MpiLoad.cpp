//===- MpiLoad.cpp - open tg-run's MPI plugin at run time -------*- C++ -*-===//
//
// See Mpi.h. libmpi is opened first, by name (TG_MPI_LIBRARY, default
// Debian's libmpi.so.40), with RTLD_GLOBAL: Open MPI's own components,
// which it opens with dlopen during MPI_Init, expect its symbols global.
// The plugin's dependency on that soname is then the library already
// loaded, and a missing one is our message, not the loader's.
//
//===----------------------------------------------------------------------===//
#include "tools/tg-run/Mpi.h"

#include <cstdlib>
#include <dlfcn.h>

namespace {

/// The plugin once opened: the functions below that a job calls after
/// startMpi use it; a plain run never opens it.
const tgrun::MpiPlugin *loaded = nullptr;

/// Opens the plugin, once (nullptr and the reason, remembered).
const tgrun::MpiPlugin *plugin(std::string &why) {
  static std::string problem;
  static bool tried = false;
  if (!tried) {
    tried = true;
    const char *env = std::getenv("TG_MPI_LIBRARY");
    std::string lib = env && *env ? env : "libmpi.so.40";
    void *p = nullptr;
    if (!dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL))
      problem = "this artifact needs MPI, but " + lib +
                " cannot be loaded (" + dlerror() +
                "): install openmpi-bin / libopenmpi3 (TG_MPI_LIBRARY names "
                "another library)";
    // Without a slash, dlopen searches tg-run's own run path ($ORIGIN/../lib,
    // beside libtgrt.so), where the build puts the plugin.
    else if (void *h = dlopen("libtg-run-mpi.so", RTLD_NOW | RTLD_LOCAL); !h)
      problem = std::string("this artifact needs MPI, but tg-run's MPI "
                            "plugin cannot be loaded (") +
                dlerror() + "); it belongs in the lib/ beside tg-run's bin/";
    else if (!(p = dlsym(h, "tgrun_mpi_plugin")))
      problem = "tg-run's MPI plugin libtg-run-mpi.so has no symbol "
                "'tgrun_mpi_plugin' (a stale build?)";
    else
      loaded = reinterpret_cast<const tgrun::MpiPlugin *(*)()>(p)();
  }
  why = problem;
  return loaded;
}

} // namespace

bool tgrun::launchedByMpi() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var))
      return true;
  return false;
}

int tgrun::launcherRank() {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                          "SLURM_PROCID"})
    if (const char *v = std::getenv(var); v && *v)
      return std::atoi(v);
  return 0;
}

std::string tgrun::mpiProblem() {
  std::string why;
  plugin(why);
  return why;
}

std::unique_ptr<tgrt::Communicator>
tgrun::startMpi(const volatile std::sig_atomic_t *stop, std::string &err) {
  const MpiPlugin *p = plugin(err);
  return p ? p->start(stop, err) : nullptr;
}

// tg-run sets the timeout for every run, a job or not: a plain run must
// not load MPI for it. The other two run only in a job (after startMpi).
void tgrun::setCommTimeout(double seconds) {
  if (loaded)
    loaded->setCommTimeout(seconds);
}

bool tgrun::sameOnAllRanks(uint64_t value) {
  return loaded->sameOnAllRanks(value);
}

void tgrun::finishMpi() { loaded->finish(); }
