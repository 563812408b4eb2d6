//===- GemmConfig.h - GEMM problems, tile configs, the heuristic -*- C++ -*-===//
//
// Plain data that describes one tensor-core GEMM kernel: the problem (shape,
// operand layout, element types, fused epilogue), the tile configuration the
// heuristic picks for it, and the launch geometry and argument ABI that follow.
// No MLIR or LLVM here, so the runtime side (tg-bench-gemm, tests) can use it.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_GEMMCONFIG_H
#define TG_CODEGEN_NVPTX_GEMMCONFIG_H

#include "tgc/DType.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace tg::nvptx {

/// GPU architectures with a GEMM code path.
enum class Target { SM80, SM90a };
/// Element types of operands and results: TGC's DType (include/tgc/DType.h),
/// of which the kernels take F32, BF16 and F16 (parseElemType accepts those).
using ElemType = tgc::DType;

/// Host 16-bit floats, the bits the kernels read and write (round to
/// nearest even; tgc/DType.h has the one definition).
inline uint16_t toHalfBits(float v, ElemType t) {
  return t == ElemType::BF16 ? tgc::floatToBf16(v) : tgc::floatToHalf(v);
}
inline float fromHalfBits(uint16_t v, ElemType t) {
  return t == ElemType::BF16 ? tgc::bf16ToFloat(v) : tgc::halfToFloat(v);
}
/// Which product: NN = A[M,K]·B[K,N]; NT = A[M,K]·B[N,K]ᵀ; TN = A[K,M]ᵀ·B[K,N].
/// All matrices are row-major; C is always [M,N].
enum class Form { NN, NT, TN };
enum class Activation { None, ReLU, GELU };

/// The fused epilogue: out = cast(act(alpha·acc + bias[n]) + residual[m,n]).
/// bias is f32[N]; residual has the output element type.
struct Epilogue {
  bool scale = false;
  bool bias = false;
  Activation act = Activation::None;
  bool residual = false;
  ElemType out = ElemType::F32;
};

/// One GEMM to generate a kernel for.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  ElemType in = ElemType::BF16;
  Form form = Form::NN;
  Target target = Target::SM80;
  Epilogue epilogue;
  /// Batched products (attention's [B,H,T,d]): `batch` independent GEMMs,
  /// C[b] = A[b]·B[b], each matrix dense after the previous. An operand
  /// without a batch stride (`batchA`/`batchB` false) is the same matrix
  /// for every b (broadcast). sm_80 runs the batch as grid.y; sm_90a folds
  /// it into the persistent tile walk (docs/nvptx.md, "Batched GEMMs").
  int64_t batch = 1;
  bool batchA = true, batchB = true;
};

/// Which generator computes a product (docs/nvptx.md, "Ragged shapes").
enum class GemmKernel {
  /// The target's own: mma.sync on sm_80, wgmma + TMA on sm_90a.
  TensorCore,
  /// The sm_80 mma.sync kernel on sm_90a: for an operand whose rows are not
  /// 16-byte aligned, which a TMA descriptor cannot describe.
  MmaSync,
  /// The CUDA-core GEMM (SimtGemm.cpp): products too small for a tile.
  Simt,
  /// sm_90a's wgmma + TMA kernel for a product with an operand whose rows
  /// are not 16-byte aligned: a SIMT launch first copies each such operand
  /// into the op's scratch with rows padded to a multiple of 8 elements,
  /// and the wgmma kernel reads that copy through its tensor map
  /// (docs/nvptx.md, "wgmma for odd row pitches"). configureGemm chooses it
  /// over MmaSync when stagingPays.
  WgmmaStaged,
};

/// A tile configuration. On sm_80: a CTA of warpsM×warpsN warps computes a
/// bm×bn tile, stepping K by bk through a `stages`-deep cp.async ring. On
/// sm_90a: bm/64 consumer warpgroups (each 64×bn, one wgmma m64nBNk16 chain)
/// plus one producer warpgroup issuing TMA into a `stages`-deep mbarrier ring;
/// the grid is persistent (one CTA per SM, tiles strided over CTAs).
struct TileConfig {
  int bm = 128, bn = 128, bk = 32, stages = 4;
  int warpsM = 2, warpsN = 2; // sm_80 only
  int groupM = 8;             // tile raster: M-groups of this many tiles
  GemmKernel kernel = GemmKernel::TensorCore;

  int consumerWarpgroups() const { return bm / 64; }
  /// Threads per CTA for `t`.
  int threads(Target t) const;
  /// Dynamic shared memory bytes for `t` (operand ring + barriers).
  int smemBytes(Target t) const;
  /// "128x128x32_s4_w2x2" (sm_80) or "128x256x64_s4_c2" (sm_90a).
  std::string str(Target t) const;
  bool operator==(const TileConfig &o) const {
    return bm == o.bm && bn == o.bn && bk == o.bk && stages == o.stages &&
           warpsM == o.warpsM && warpsN == o.warpsN && groupM == o.groupM &&
           kernel == o.kernel;
  }
};

/// Every configuration the heuristic can return for `t`.
std::vector<TileConfig> candidateConfigs(Target t);
/// The heuristic: the configuration to use for `p` (see docs/nvptx.md).
TileConfig chooseTileConfig(const GemmProblem &p);
/// Why `p` cannot be generated as a standalone kernel (runtime M, N, K, the
/// fixed epilogue: tg-bench-gemm, buildGemmFatbin), or nullopt if it can.
/// On top of checkShape, every operand's rows must be 16-byte aligned.
std::optional<std::string> checkProblem(const GemmProblem &p);
/// Why no kernel computes `p` at all (sizes, element types, the batch), or
/// nullopt: the pipeline's kernels (static shapes, per-element epilogue)
/// take any M, N and K (docs/nvptx.md, "Ragged shapes").
std::optional<std::string> checkShape(const GemmProblem &p);
/// True when the contiguous dimension of operand A (`a`) or B is a multiple
/// of 8, so each row starts 16-byte aligned: cp.async and TMA copy it in
/// 16-byte pieces.
bool rowsAligned(const GemmProblem &p, bool a);

/// The generator and tile configuration for a pipeline GEMM on p.target:
/// the CUDA-core kernel when M, N or K is under 8 (a tensor-core tile of
/// 16x8x16 would be mostly zero padding), on sm_90a when an operand's rows
/// are not 16-byte aligned (TMA needs 16-byte strides) the wgmma kernel
/// over realigned copies if stagingCost says the copies pay, else the
/// mma.sync kernel; otherwise the target's tensor-core kernel; the tile by
/// chooseTileConfig for the target whose code runs.
TileConfig configureGemm(const GemmProblem &p);

/// The cost rule of configureGemm for an sm_90a product with an operand
/// whose rows are not 16-byte aligned (docs/nvptx.md, "wgmma for odd row
/// pitches"): the time wgmma saves over the mma.sync kernel (the rates the
/// H200 measured on aligned shapes, 2026-11-30) against the realigning
/// copies' traffic (each unaligned operand read once and written padded,
/// at a fraction of the H200's bandwidth) plus one launch per copy.
struct StagingCost {
  double wgmmaSeconds = 0, mmaSyncSeconds = 0, copySeconds = 0;
  /// Bytes the copies move (reads plus padded writes) and the scratch
  /// they need (the padded copies, each 256-byte aligned).
  uint64_t copyBytes = 0, scratchBytes = 0;
  /// True when wgmmaSeconds + copySeconds < mmaSyncSeconds and the padded
  /// copies are indexable with 32 bits.
  bool pays = false;
};
StagingCost stagingCost(const GemmProblem &p);

/// The row pitch, in elements, of an operand's realigned copy: its
/// contiguous dimension rounded up to a multiple of 8 (16-byte rows).
inline uint64_t stagedPitch(uint64_t cols) { return (cols + 7) / 8 * 8; }
/// The SIMT kernel's one tile (SimtGemm.cpp).
TileConfig simtTileConfig();
/// The target whose generator builds `c`'s kernel for `t` (sm_80 for the
/// mma.sync kernel on sm_90a).
inline Target codeTarget(Target t, const TileConfig &c) {
  return c.kernel == GemmKernel::MmaSync ? Target::SM80 : t;
}
std::string toString(GemmKernel k);
std::optional<GemmKernel> parseGemmKernel(const std::string &s);

/// Number of SMs the heuristic assumes (A100: 108, H100/H200: 132).
int assumedSMs(Target t);

/// Launch geometry of a generated kernel.
struct LaunchGeometry {
  unsigned grid = 1;    // grid.x; tiles are rastered in the kernel
  unsigned gridY = 1;   // grid.y: the batch on sm_80
  unsigned block = 128;
  unsigned smemBytes = 0;
};
/// `sms` = number of SMs on the device (persistent grid size on sm_90a).
LaunchGeometry launchGeometry(const GemmProblem &p, const TileConfig &c,
                              int sms);

/// Kernel arguments, in order (all passed by value, 8-byte aligned pointers):
///   sm_80 : ptr A, ptr B, ptr C, ptr bias, ptr residual, i32 M, N, K, f32 alpha
///   sm_90a: ptr tmapA, ptr tmapB, ptr C, ptr bias, ptr residual, i32 M, N, K,
///           f32 alpha  (tmapX: device pointer to a 128-byte CUtensorMap)
/// TMA boxes on sm_90a, {inner, outer} in elements (see tmaBox()).
struct TmaBox {
  uint32_t inner = 64, outer = 64;
};
/// The box each TMA load of operand A (`a` = true) or B uses.
TmaBox tmaBox(const GemmProblem &p, const TileConfig &c, bool a);
/// The tensor the TMA descriptor of operand A (`a` = true) or B describes,
/// in elements: one row-major rows x cols matrix as stored, or for a
/// batched operand `batches` of them one after the other (a 3-D descriptor,
/// so that no box crosses from one matrix into the next).
struct TmaTensor {
  uint64_t rows = 0, cols = 0, batches = 1;
};
TmaTensor tmaTensor(const GemmProblem &p, bool a);

std::string toString(Target t);
std::string toString(ElemType t);
std::string toString(Form f);
std::string toString(Activation a);
std::optional<Target> parseTarget(const std::string &s);
std::optional<ElemType> parseElemType(const std::string &s);
std::optional<Form> parseForm(const std::string &s);
std::optional<Activation> parseActivation(const std::string &s);
int elemBytes(ElemType t);
/// A stable symbol name that encodes problem class and config.
std::string kernelName(const GemmProblem &p, const TileConfig &c);

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_GEMMCONFIG_H
