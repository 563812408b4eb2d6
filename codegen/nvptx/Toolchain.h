//===- Toolchain.h - ptxas and fatbinary, driven from C++ -------*- C++ -*-===//
//
// Assembles PTX into cubins with the CUDA toolkit's ptxas (reporting
// registers, spills and performance warnings from `ptxas -v`) and bundles
// cubins plus PTX into one fat binary with `fatbinary`. The toolkit is found
// at $TG_CUDA_HOME, then $CUDA_HOME, then the configured default.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_TOOLCHAIN_H
#define TG_CODEGEN_NVPTX_TOOLCHAIN_H

#include <string>
#include <vector>

namespace tg::nvptx {

/// The CUDA toolkit root in use.
std::string cudaHome();
/// True if `<cudaHome>/bin/<tool>` is executable.
bool haveCudaTool(const std::string &tool);

/// What `ptxas -v` said about one compilation.
struct PtxasReport {
  bool ok = false;            ///< ptxas exited 0
  std::string log;            ///< full stdout+stderr
  std::string cubin;          ///< the ELF image when ok
  int registers = -1;         ///< max over entry functions
  int spillStores = 0, spillLoads = 0, stackFrame = 0; ///< sums over functions
  std::vector<std::string> perfWarnings; ///< e.g. wgmma serialization (C7510..C7520)
};

/// Runs `ptxas -arch=<arch> -v` on `ptx` ("sm_80", "sm_90a").
PtxasReport assemblePtx(const std::string &ptx, const std::string &arch);

/// Parses the `ptxas -v` log into `r` (exposed for tests).
void parsePtxasLog(const std::string &log, PtxasReport &r);

/// One image of a fat binary.
struct FatbinImage {
  std::string arch;  ///< "sm_80", "sm_90a"
  std::string data;  ///< cubin bytes, or PTX text
  bool isPtx = false;
};

/// Bundles `images` into one fat binary. Returns false and sets `error`.
bool buildFatbin(const std::vector<FatbinImage> &images, std::string &fatbin,
                 std::string &error);

/// Assembles each (arch, PTX) pair with ptxas and bundles the cubins plus the
/// PTX of the lowest architecture (for JIT on newer GPUs) into one fat binary.
bool buildFatbinFromPtx(
    const std::vector<std::pair<std::string, std::string>> &archPtx,
    std::string &fatbin, std::string &error);

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_TOOLCHAIN_H
