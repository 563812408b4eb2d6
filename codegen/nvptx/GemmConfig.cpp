//===- GemmConfig.cpp - tile configurations and the heuristic ---*- C++ -*-===//
//
// The heuristic is deliberately simple and documented in docs/nvptx.md: a
// wave-quantisation cost model with a prior per tile size. Autotuning on a
// GPU can replace it later; the candidates are listed here so tests can
// assemble (and emulate) every one of them.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmConfig.h"
#include "codegen/nvptx/GemmSm80Smem.h"

#include <algorithm>

namespace tg::nvptx {

int TileConfig::threads(Target t) const {
  if (t == Target::SM80)
    return 32 * warpsM * warpsN;
  return 128 * (1 + consumerWarpgroups());
}

int TileConfig::smemBytes(Target t) const {
  int ring = stages * (bm + bn) * bk * 2; // 16-bit operands
  if (t == Target::SM80)
    return ring;
  // 1024-byte aligned ring (128B swizzle atoms), then 2·stages mbarriers.
  return ring + 2 * stages * 8;
}

std::string TileConfig::str(Target t) const {
  std::string s = std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                  std::to_string(bk) + "_s" + std::to_string(stages);
  if (t == Target::SM80)
    return s + "_w" + std::to_string(warpsM) + "x" + std::to_string(warpsN);
  return s + "_c" + std::to_string(consumerWarpgroups());
}

std::vector<TileConfig> candidateConfigs(Target t) {
  if (t == Target::SM80)
    return {
        // bm, bn, bk, stages, warpsM, warpsN
        {128, 256, 32, 3, 2, 4, 8}, // warp tile 64x64, 8 warps
        {128, 128, 32, 4, 2, 2, 8}, // warp tile 64x64, 4 warps
        {64, 128, 32, 4, 2, 2, 8},  // warp tile 32x64
        {64, 64, 32, 4, 2, 2, 8},   // warp tile 32x32
    };
  return {
      {128, 256, 64, 4, 1, 1, 8}, // 2 consumer WGs, wgmma m64n256k16
      {128, 192, 64, 5, 1, 1, 8}, // 2 consumer WGs, wgmma m64n192k16
      {128, 128, 64, 6, 1, 1, 8}, // 2 consumer WGs, wgmma m64n128k16
      {64, 128, 64, 8, 1, 1, 8},  // 1 consumer WG for small problems
  };
}

int assumedSMs(Target t) { return t == Target::SM80 ? 108 : 132; }

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// A prior (not a measurement) of each tile's throughput relative to the
/// largest tile of its target: smaller tiles re-read more operand bytes per
/// FLOP and keep fewer MMAs in flight. To be replaced by the sweep that
/// scripts/device-check.sh records.
static double priorEfficiency(Target t, const TileConfig &c) {
  int area = c.bm * c.bn;
  if (t == Target::SM90a)
    return area >= 128 * 256 ? 1.0 : area >= 128 * 192 ? 0.97 : area >= 128 * 128 ? 0.93 : 0.7;
  return area >= 128 * 256 ? 1.0 : area >= 128 * 128 ? 0.95 : area >= 64 * 128 ? 0.85 : 0.7;
}

TileConfig chooseTileConfig(const GemmProblem &p) {
  // Wave quantisation: every SM works through ceil(tiles / SMs) rounds of
  // one tile each, so the estimated time is rounds × tile area / prior
  // efficiency. The cheapest wins; ties go to the larger tile (listed first).
  std::vector<TileConfig> cands = candidateConfigs(p.target);
  int sms = assumedSMs(p.target);
  TileConfig best = cands.front();
  double bestCost = -1;
  for (const TileConfig &c : cands) {
    int64_t tiles = ceilDiv(p.m, c.bm) * ceilDiv(p.n, c.bn) * p.batch;
    double cost = double(ceilDiv(tiles, sms)) * c.bm * c.bn / priorEfficiency(p.target, c);
    if (bestCost < 0 || cost < bestCost * (1 - 1e-9)) {
      best = c;
      bestCost = cost;
    }
  }
  return best;
}

std::optional<std::string> checkShape(const GemmProblem &p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return std::string("M, N and K must be positive");
  if (p.m > (1ll << 31) - 1 || p.n > (1ll << 31) - 1 || p.k > (1ll << 31) - 1)
    return std::string("M, N and K must fit in 31 bits");
  if (p.in != ElemType::BF16 && p.in != ElemType::F16)
    return std::string("input element type must be bf16 or f16");
  if (p.batch < 1 || p.m * p.n * p.batch > (1ll << 31) - 1)
    return std::string("the batch must be positive and batch x M x N fit in 31 bits");
  return std::nullopt;
}

bool operandKMajor(const GemmProblem &p, bool a) {
  return a ? p.form != Form::TN : p.form == Form::NT;
}

/// The contiguous dimension of operand A (`a`) or B: its row pitch.
static int64_t operandPitch(const GemmProblem &p, bool a) {
  return operandKMajor(p, a) ? p.k : a ? p.m : p.n;
}

bool rowsAligned(const GemmProblem &p, bool a) {
  return operandPitch(p, a) % 8 == 0;
}

bool rowsOdd(const GemmProblem &p, bool a) {
  return operandPitch(p, a) % 2 != 0;
}

int sm80OperandSmemBytes(const GemmProblem &p, const TileConfig &c, bool a) {
  int mn = a ? c.bm : c.bn;
  int rows = operandKMajor(p, a) ? mn : c.bk;
  int cols = operandKMajor(p, a) ? c.bk : mn;
  int tile = rows * cols * 2; // 16-bit elements
  if (!rowsOdd(p, a))
    return c.stages * tile;
  // The tile ldmatrix reads, then the ring of windows: a row's window
  // starts at the 16-byte boundary below the row's first element, so it
  // is one 16-byte chunk wider than the row.
  return tile + c.stages * rows * (cols / 8 + 1) * 16;
}

TileConfig simtTileConfig() {
  TileConfig c{64, 64, 16, 1, 1, 1, 1};
  c.kernel = GemmKernel::Simt;
  return c;
}

TileConfig configureGemm(const GemmProblem &p) {
  if (std::min({p.m, p.n, p.k}) < 8)
    return simtTileConfig();
  if (p.target == Target::SM90a && !(rowsAligned(p, true) && rowsAligned(p, false))) {
    if (stagingCost(p).pays) {
      TileConfig c = chooseTileConfig(p);
      c.kernel = GemmKernel::WgmmaStaged;
      return c;
    }
    GemmProblem q = p;
    q.target = Target::SM80;
    TileConfig c = chooseTileConfig(q);
    c.kernel = GemmKernel::MmaSync;
    return c;
  }
  return chooseTileConfig(p);
}

StagingCost stagingCost(const GemmProblem &p) {
  // Rates of the H200 run of 2026-11-30 (bench/results/gemm-h200-2026-11-30.md),
  // the medians over the five timed shapes: wgmma 613.8 TFLOP/s, the
  // mma.sync kernel 287.3. The copy streams at 75% of the 4.8 TB/s peak
  // (an assumption until device-check.sh's bandwidth step measures it) and
  // each launch costs 5 us (launch plus the tail of a short kernel).
  constexpr double kWgmmaFlops = 613.8e12, kMmaSyncFlops = 287.3e12;
  constexpr double kCopyBytesPerSecond = 0.75 * 4.8e12, kLaunchSeconds = 5e-6;
  StagingCost c;
  double flops = 2.0 * double(p.m) * double(p.n) * double(p.k) * double(p.batch);
  c.wgmmaSeconds = flops / kWgmmaFlops;
  c.mmaSyncSeconds = flops / kMmaSyncFlops;
  int copies = 0;
  bool indexable = true;
  for (bool a : {true, false}) {
    if (rowsAligned(p, a))
      continue;
    TmaTensor t = tmaTensor(p, a);
    uint64_t elements = t.batches * t.rows * t.cols;
    uint64_t padded = t.batches * t.rows * stagedPitch(t.cols);
    c.copyBytes += 2 * (elements + padded);
    c.scratchBytes += (2 * padded + 255) / 256 * 256;
    indexable = indexable && padded < (uint64_t(1) << 31);
    ++copies;
  }
  c.copySeconds = double(c.copyBytes) / kCopyBytesPerSecond + copies * kLaunchSeconds;
  c.pays = copies > 0 && indexable &&
           c.wgmmaSeconds + c.copySeconds < c.mmaSyncSeconds;
  return c;
}

std::optional<std::string> checkProblem(const GemmProblem &p) {
  if (std::optional<std::string> bad = checkShape(p))
    return bad;
  // 16-byte async copies (cp.async, TMA) need every row to start 16-byte
  // aligned: the contiguous dimension of each operand is a multiple of 8.
  auto need8 = [](int64_t v, const char *what) -> std::optional<std::string> {
    if (v % 8)
      return std::string(what) + " must be a multiple of 8 (16-byte rows); "
                                 "pad the operand";
    return std::nullopt;
  };
  bool aKMajor = p.form != Form::TN, bKMajor = p.form == Form::NT;
  if (auto e = need8(aKMajor ? p.k : p.m, aKMajor ? "K" : "M"))
    return e;
  if (auto e = need8(bKMajor ? p.k : p.n, bKMajor ? "K" : "N"))
    return e;
  if (auto e = need8(p.n, "N"))
    return e;
  return std::nullopt;
}

int sm80ResidentCtas(const GemmProblem &p, const TileConfig &c) {
  const int smemPerSm = 164 * 1024, reservedPerCta = 1024, threadsPerSm = 2048;
  int smem = sm80OperandSmemBytes(p, c, true) + sm80OperandSmemBytes(p, c, false);
  int bySmem = smemPerSm / (smem + reservedPerCta);
  int byThreads = threadsPerSm / c.threads(Target::SM80);
  // Nor more than the registers allow: a thread holds its warp tile's f32
  // accumulators plus about 64 for fragments and addresses (a 64x64 warp
  // tile needs ~190, so 128x256 stays at one CTA, 255 registers).
  int acc = (c.bm / c.warpsM) * (c.bn / c.warpsN) / 32;
  int byRegs = 65536 / (c.threads(Target::SM80) * (acc + 64));
  return std::max(1, std::min({bySmem, byThreads, byRegs}));
}

LaunchGeometry launchGeometry(const GemmProblem &p, const TileConfig &c,
                              int sms) {
  LaunchGeometry g;
  int64_t tiles = ceilDiv(p.m, c.bm) * ceilDiv(p.n, c.bn);
  // sm_90a walks every batch's tiles with one persistent grid; sm_80 takes
  // the batch as grid.y (the caller's), so its grid.x is one batch's tiles.
  if (p.target == Target::SM90a)
    tiles *= p.batch;
  g.block = c.threads(p.target);
  g.smemBytes = p.target == Target::SM80
                    ? sm80OperandSmemBytes(p, c, true) + sm80OperandSmemBytes(p, c, false)
                    : c.smemBytes(p.target);
  if (p.target == Target::SM90a)
    g.grid = static_cast<unsigned>(std::min<int64_t>(tiles, std::max(1, sms)));
  else {
    g.grid = static_cast<unsigned>(tiles);
    g.gridY = static_cast<unsigned>(p.batch);
  }
  return g;
}

TmaTensor tmaTensor(const GemmProblem &p, bool a) {
  bool kMajor = a ? p.form != Form::TN : p.form == Form::NT;
  uint64_t mn = static_cast<uint64_t>(a ? p.m : p.n), k = static_cast<uint64_t>(p.k);
  TmaTensor t{kMajor ? mn : k, kMajor ? k : mn, 1};
  if (p.batch > 1 && (a ? p.batchA : p.batchB))
    t.batches = static_cast<uint64_t>(p.batch);
  return t;
}

TmaBox tmaBox(const GemmProblem &p, const TileConfig &c, bool a) {
  bool kMajor = a ? p.form != Form::TN : p.form == Form::NT;
  int rows = a ? c.bm : c.bn;
  // 128-byte swizzle: the inner box is 128 bytes (64 16-bit elements).
  if (kMajor)
    return {64, static_cast<uint32_t>(rows)};
  return {64, static_cast<uint32_t>(c.bk)};
}

std::string toString(Target t) { return t == Target::SM80 ? "sm_80" : "sm_90a"; }
std::string toString(ElemType t) { return tgc::dtypeName(t); }
std::string toString(Form f) {
  switch (f) {
  case Form::NN: return "nn";
  case Form::NT: return "nt";
  case Form::TN: return "tn";
  }
  return "?";
}
std::string toString(Activation a) {
  switch (a) {
  case Activation::None: return "none";
  case Activation::ReLU: return "relu";
  case Activation::GELU: return "gelu";
  }
  return "?";
}
std::string toString(GemmKernel k) {
  switch (k) {
  case GemmKernel::TensorCore: return "tensor_core";
  case GemmKernel::MmaSync: return "mma_sync";
  case GemmKernel::Simt: return "simt";
  case GemmKernel::WgmmaStaged: return "wgmma_staged";
  }
  return "?";
}
std::optional<GemmKernel> parseGemmKernel(const std::string &s) {
  for (GemmKernel k : {GemmKernel::TensorCore, GemmKernel::MmaSync,
                       GemmKernel::Simt, GemmKernel::WgmmaStaged})
    if (s == toString(k))
      return k;
  return std::nullopt;
}
std::optional<Target> parseTarget(const std::string &s) {
  if (s == "sm_80") return Target::SM80;
  if (s == "sm_90a") return Target::SM90a;
  return std::nullopt;
}
std::optional<ElemType> parseElemType(const std::string &s) {
  std::optional<ElemType> t = tgc::parseDType(s);
  if (t != ElemType::F32 && t != ElemType::BF16 && t != ElemType::F16)
    return std::nullopt;
  return t;
}
std::optional<Form> parseForm(const std::string &s) {
  if (s == "nn") return Form::NN;
  if (s == "nt") return Form::NT;
  if (s == "tn") return Form::TN;
  return std::nullopt;
}
std::optional<Activation> parseActivation(const std::string &s) {
  if (s == "none") return Activation::None;
  if (s == "relu") return Activation::ReLU;
  if (s == "gelu") return Activation::GELU;
  return std::nullopt;
}
int elemBytes(ElemType t) { return static_cast<int>(tgc::dtypeSize(t)); }

std::string kernelName(const GemmProblem &p, const TileConfig &c) {
  const Epilogue &e = p.epilogue;
  std::string epi = std::string(e.scale ? "s" : "") + (e.bias ? "b" : "") +
                    (e.act != Activation::None ? toString(e.act) : "") +
                    (e.residual ? "r" : "");
  std::string t = p.target == Target::SM80 ? "sm80" : "sm90a";
  std::string batch;
  if (p.batch > 1)
    batch = "_b" + std::to_string(p.batch) + (p.batchA ? "a" : "") +
            (p.batchB ? "b" : "");
  return "tg_gemm_" + t + "_" + toString(p.in) + "_" + toString(p.form) + "_" +
         toString(e.out) + (epi.empty() ? "" : "_" + epi) + batch + "_" +
         c.str(p.target);
}

} // namespace tg::nvptx
