//===- Gemm.h - tensor-core GEMM kernel generator ---------------*- C++ -*-===//
//
// Public entry points of codegen/nvptx: generate a GEMM kernel as MLIR
// (llvm/nvvm/scf dialects), lower it through LLVM's NVPTX back end to PTX,
// assemble it with ptxas and bundle cubins into a fat binary. The header has
// no MLIR or LLVM types, so tools can include it freely.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_GEMM_H
#define TG_CODEGEN_NVPTX_GEMM_H

#include "codegen/nvptx/GemmConfig.h"

#include <string>
#include <vector>

namespace tg::nvptx {

/// One kernel to generate: a problem and its tile configuration.
struct GemmKernelSpec {
  GemmProblem problem;
  TileConfig config;
};

/// The MLIR module of the kernel for `p` with tile config `c`, built with the
/// op builders and printed (SSA names from name locations). The kernel
/// function is `kernelName(p, c)`; it carries the config as the
/// `tg.tile_config` attribute. `checkProblem(p)` must have passed.
std::string generateGemmMLIR(const GemmProblem &p, const TileConfig &c);

/// One MLIR module holding the kernels of `kernels` (all for one target;
/// duplicate symbols are emitted once).
std::string generateGemmModuleMLIR(const std::vector<GemmKernelSpec> &kernels);

/// The GPU section of an artifact: every problem's kernel (heuristic
/// config), one PTX module per target, each assembled by ptxas, bundled with
/// the sm_80 PTX (JIT on newer GPUs) into one fat binary. `kernels` lists
/// what it holds, for the launcher. False and `error` on failure.
bool buildGemmFatbin(const std::vector<GemmProblem> &problems,
                     std::string &fatbin, std::vector<GemmKernelSpec> &kernels,
                     std::string &error);

/// Parses, verifies and lowers MLIR text (e.g. what generateGemmMLIR
/// printed) to LLVM IR, optimises it and emits PTX for `t` with the NVPTX
/// target machine. Returns false and sets `error` on failure. The generator
/// itself compiles the built module without printing it.
bool compileMLIRToPTX(const std::string &mlir, Target t, std::string &ptx,
                      std::string &error);

/// Builds the kernel and compiles it to PTX. Returns false and sets `error`
/// on failure.
bool generateGemmPTX(const GemmProblem &p, const TileConfig &c,
                     std::string &ptx, std::string &error);

/// The ptx target name ("sm_80", "sm_90a").
inline std::string archName(Target t) { return toString(t); }

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_GEMM_H
