//===- GemmCommon.h - IR pieces shared by the sm_80 and sm_90a paths -*- C++ -*-===//
//
// The tile raster (grouped along M for L2 reuse), the kernel signature, and
// the fused epilogue that turns a pair of f32 accumulators into stored
// output. Both code paths hold accumulators in the same m16n8 fragment layout
// (mma.sync's C fragment and wgmma's D fragment agree), so they share it.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_GEMMCOMMON_H
#define TG_CODEGEN_NVPTX_GEMMCOMMON_H

#include "codegen/nvptx/GemmConfig.h"
#include "codegen/nvptx/MlirWriter.h"

#include <string>

namespace tg::nvptx::detail {

/// The MLIR type name of `t` ("bf16", "f16", "f32").
std::string mlirType(ElemType t);

/// Names of the kernel's arguments, fixed by the ABI in GemmConfig.h.
struct KernelArgs {
  std::string a = "%A", b = "%B", c = "%C", bias = "%bias", res = "%res";
  std::string m = "%M", n = "%N", k = "%K", alpha = "%alpha";
};

/// Opens the kernel function (signature and attributes). `aArgTy` is the
/// type of the first two arguments.
std::string functionHeader(const GemmProblem &p, const TileConfig &c,
                           const std::string &aArgTy);
/// Closes what functionHeader opened.
std::string functionFooter();
/// The type alias of a wgmma m64nN f32 accumulator (`!tg_accN`, N/2 f32s),
/// and its definition.
std::string accAliasName(int n);
std::string accAliasDef(int n);

/// Maps a linear tile id to (tileM, tileN), grouped by c.groupM along M.
void emitTileRaster(MlirWriter &w, const TileConfig &c, const KernelArgs &a,
                    const std::string &tile, std::string &tileM,
                    std::string &tileN);

/// Emits the epilogue for two adjacent outputs (row, col) and (row, col+1):
/// scale, bias, activation, residual, cast, predicated store.
void emitEpiloguePair(MlirWriter &w, const GemmProblem &p, const KernelArgs &a,
                      const std::string &row, const std::string &col,
                      const std::string &v0, const std::string &v1);

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_GEMMCOMMON_H
