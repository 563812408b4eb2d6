//===- GemmTest.cpp - the PTX emulator on the sm_80 tensor-core GEMMs -----===//
//
// Generates the PTX of every sm_80 GEMM configuration, in every form, with
// plain and fused epilogues (the generator of codegen/nvptx, linked by this
// test only), runs it on the PTX emulator on ragged problems (two tiles each
// way, the second partial, K long enough for the cp.async ring to wrap) and
// compares with a float64 reference. This covers mma.sync m16n8k16,
// ldmatrix(.trans), cp.async with src-size zero fill, vector shared
// accesses and the epilogue math as the NVPTX backend prints them.
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Emulator.h"
#include "runtime/emulator/TensorMap.h"

#include "codegen/nvptx/Gemm.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

using namespace tg::nvptx;

namespace {

struct Outcome {
  std::string error;
  double relErr = 0;
  int64_t unwritten = 0;
  uint64_t instructions = 0; // executed by the launch
  double seconds = 0;        // the launch's wall time
};

/// The encoded tensor map of operand A (`a`) or B of an sm_90a GEMM over
/// `data`, with the arguments the runtime gives cuTensorMapEncodeTiled
/// (Device::encodeTensorMap): 16-bit, 128B swizzle, zero fill.
void encodeMap(uint8_t *out, const GemmProblem &p, const TileConfig &c,
               bool a, const void *data) {
  TmaTensor t = tmaTensor(p, a);
  TmaBox box = tmaBox(p, c, a);
  std::string why = tgrt::emu::encodeMatrixTensorMap(
      out, p.in == ElemType::BF16, reinterpret_cast<uint64_t>(data), t.rows,
      t.cols, t.batches, box.outer, box.inner);
  INFO(why);
  REQUIRE(why.empty());
}

/// Edits PTX text: the kernels the tests break on purpose.
using PtxEdit = std::string (*)(std::string);

Outcome emulate(const GemmProblem &p, const TileConfig &c,
                PtxEdit edit = nullptr) {
  Outcome r;
  std::string ptx;
  if (!generateGemmPTX(p, c, ptx, r.error))
    return r;
  if (edit)
    ptx = edit(ptx);
  auto mod = tgrt::emu::PtxModule::parse(ptx, r.error);
  if (!mod)
    return r;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  const Epilogue &e = p.epilogue;
  auto fill16 = [&](std::vector<uint16_t> &bits, std::vector<float> &v,
                    int64_t n, ElemType t) {
    bits.resize(n);
    v.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      bits[i] = toHalfBits(dist(rng), t);
      v[i] = fromHalfBits(bits[i], t);
    }
  };
  std::vector<uint16_t> a16, b16, res16;
  std::vector<float> a, b, bias(std::max<int64_t>(p.n, 64)), res;
  fill16(a16, a, p.m * p.k, p.in);
  fill16(b16, b, p.k * p.n, p.in);
  for (float &x : bias)
    x = dist(rng);
  const int ob = elemBytes(e.out);
  std::vector<uint8_t> resBytes(std::max<int64_t>(p.m * p.n * ob, 256)),
      cBytes(p.m * p.n * ob, 0xFF); // NaN poison
  res.resize(p.m * p.n);
  for (int64_t i = 0; i < p.m * p.n; ++i) {
    float v = dist(rng);
    if (e.out == ElemType::F32) {
      std::memcpy(&resBytes[i * 4], &v, 4);
    } else {
      uint16_t h = toHalfBits(v, e.out);
      std::memcpy(&resBytes[i * 2], &h, 2);
      v = fromHalfBits(h, e.out);
    }
    res[i] = v;
  }
  float alpha = e.scale ? 0.75f : 1.0f;
  tgrt::emu::Memory mem;
  mem.add(a16.data(), a16.size() * 2);
  mem.add(b16.data(), b16.size() * 2);
  mem.add(bias.data(), bias.size() * 4);
  mem.add(resBytes.data(), resBytes.size());
  mem.add(cBytes.data(), cBytes.size());
  auto addr = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
  // sm_90a kernels take device pointers to the operands' tensor maps.
  alignas(64) uint8_t maps[2][tgrt::emu::kTensorMapBytes];
  uint64_t opA = addr(a16.data()), opB = addr(b16.data());
  if (p.target == Target::SM90a) {
    encodeMap(maps[0], p, c, true, a16.data());
    encodeMap(maps[1], p, c, false, b16.data());
    mem.add(maps, sizeof maps);
    opA = addr(maps[0]);
    opB = addr(maps[1]);
  }
  uint32_t alphaBits;
  std::memcpy(&alphaBits, &alpha, 4);
  LaunchGeometry g = launchGeometry(p, c, assumedSMs(p.target));
  auto t0 = std::chrono::steady_clock::now();
  bool launched = mod->launch(kernelName(p, c), {g.grid, 1, 1}, {g.block, 1, 1},
                   g.smemBytes,
                   {opA, opB, addr(cBytes.data()),
                    addr(bias.data()), addr(resBytes.data()), uint64_t(p.m),
                    uint64_t(p.n), uint64_t(p.k), alphaBits},
                   mem, r.error);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            t0)
                  .count();
  r.instructions = mod->lastInstructionCount();
  if (!launched)
    return r;
  bool aK = p.form != Form::TN, bK = p.form == Form::NT;
  double errSq = 0, refSq = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < p.k; ++k)
        acc += double(aK ? a[i * p.k + k] : a[k * p.m + i]) *
               double(bK ? b[j * p.k + k] : b[k * p.n + j]);
      acc *= alpha;
      if (e.bias)
        acc += bias[j];
      if (e.act == Activation::ReLU)
        acc = std::max(acc, 0.0);
      if (e.act == Activation::GELU)
        acc = 0.5 * acc *
              (1 + std::tanh(0.7978845608028654 *
                             (acc + 0.044715 * acc * acc * acc)));
      if (e.residual)
        acc += res[i * p.n + j];
      double v;
      if (e.out == ElemType::F32) {
        float x;
        std::memcpy(&x, &cBytes[(i * p.n + j) * 4], 4);
        v = x;
      } else {
        uint16_t h;
        std::memcpy(&h, &cBytes[(i * p.n + j) * 2], 2);
        v = fromHalfBits(h, e.out);
      }
      if (std::isnan(v))
        ++r.unwritten;
      else
        errSq += (v - acc) * (v - acc);
      refSq += acc * acc;
    }
  r.relErr = std::sqrt(errSq / refSq);
  return r;
}

} // namespace

namespace {

/// Runs every configuration of `target` x form x epilogue from its PTX on
/// ragged problems (two tiles each way, the second partial; K long enough
/// for the ring to wrap, with a partial last step).
void everyConfig(Target target) {
  Epilogue plain;
  Epilogue gelu; // alpha, bias, GELU (tanh.approx), residual, bf16 out
  gelu.scale = gelu.bias = gelu.residual = true;
  gelu.act = Activation::GELU;
  gelu.out = ElemType::BF16;
  Epilogue relu; // bias, ReLU, f16 out
  relu.bias = true;
  relu.act = Activation::ReLU;
  relu.out = ElemType::F16;
  for (const TileConfig &c : candidateConfigs(target))
    for (Form f : {Form::NN, Form::NT, Form::TN})
      for (const Epilogue &e : {plain, gelu, relu}) {
        GemmProblem p;
        p.target = target;
        p.form = f;
        p.in = e.out == ElemType::F16 ? ElemType::F16 : ElemType::BF16;
        p.epilogue = e;
        p.m = c.bm + 8;
        p.n = c.bn + 8;
        p.k = (2 * c.stages + 1) * c.bk + 8;
        INFO(kernelName(p, c) << " M=" << p.m << " N=" << p.n
                              << " K=" << p.k);
        Outcome r = emulate(p, c);
        INFO(r.error);
        REQUIRE(r.error.empty());
        CHECK(r.unwritten == 0);
        CHECK(r.relErr < (e.out == ElemType::F32 ? 1e-6 : 1e-2));
      }
}

} // namespace

TEST_CASE("emulator: every sm_80 GEMM config, form and epilogue from its PTX",
          "[emulator][gemm]") {
  everyConfig(Target::SM80);
}

TEST_CASE("emulator: every sm_90a GEMM config, form and epilogue from its PTX",
          "[emulator][gemm][sm90]") {
  everyConfig(Target::SM90a);
}

namespace {

/// The problem of the broken-kernel tests: one 64x128 tile, K over two
/// rounds of the ring.
GemmProblem smallSm90(TileConfig &c) {
  c = candidateConfigs(Target::SM90a).back(); // 64x128x64_s8_c1
  GemmProblem p;
  p.target = Target::SM90a;
  p.form = Form::NT;
  p.m = 64;
  p.n = 128;
  p.k = 2 * c.stages * c.bk + 8;
  return p;
}

/// The consumers' wait on the `full` mbarrier (the second try_wait in the
/// text; the producer's on `empty` comes first) for the other parity: they
/// would read slots the TMA has not filled.
std::string wrongPhase(std::string ptx) {
  const std::string wait = "mbarrier.try_wait.parity.shared.b64 P1, [";
  size_t at = ptx.find(wait);
  at = ptx.find(wait, at + 1);
  REQUIRE(at != std::string::npos);
  size_t reg = ptx.find("], ", at) + 3, end = ptx.find(',', reg);
  std::string parity = ptx.substr(reg, end - reg); // %rN
  size_t asmStart = ptx.rfind("// begin inline asm", at);
  return ptx.substr(0, asmStart) + "xor.b32 " + parity + ", " + parity +
         ", 1;\n" + ptx.substr(asmStart);
}

/// The producer arrives on `full` without announcing the TMA bytes: the
/// phase completes before the loads land.
std::string missingExpectTx(std::string ptx) {
  size_t at = ptx.find("mbarrier.arrive.expect_tx.shared.b64");
  REQUIRE(at != std::string::npos);
  size_t comma = ptx.find("], ", at), end = ptx.find(';', at);
  return ptx.substr(0, at) + "mbarrier.arrive.shared.b64" +
         ptx.substr(at + 36, comma + 1 - (at + 36)) + ptx.substr(end);
}

} // namespace

TEST_CASE("emulator: broken sm_90a kernels fail", "[emulator][gemm][sm90]") {
  TileConfig c;
  GemmProblem p = smallSm90(c);
  SECTION("the kernel as generated runs") {
    Outcome r = emulate(p, c);
    INFO(r.error);
    CHECK(r.error.empty());
    CHECK(r.relErr < 1e-6);
  }
  SECTION("a wait for the wrong mbarrier phase deadlocks") {
    // The producer has filled the ring before the consumers run, so the
    // phase they wait for instead needs a slot they never release.
    Outcome r = emulate(p, c, wrongPhase);
    INFO(r.error);
    CHECK(r.error.find("deadlock: mbarrier wait") != std::string::npos);
  }
  SECTION("releasing a slot a wgmma group may still read is a race") {
    // Two groups left in flight where the kernel releases the slot of the
    // one before the last.
    Outcome r = emulate(p, c, [](std::string ptx) {
      const std::string one = "wgmma.wait_group.sync.aligned \t1;";
      size_t n = 0;
      for (size_t at; (at = ptx.find(one)) != std::string::npos; ++n)
        ptx[at + one.size() - 2] = '2';
      REQUIRE(n > 0);
      return ptx;
    });
    INFO(r.error);
    CHECK(r.error.find("shared-memory race") != std::string::npos);
  }
  SECTION("an arrive without expect_tx is a race") {
    Outcome r = emulate(p, c, missingExpectTx);
    INFO(r.error);
    CHECK(r.error.find("shared-memory race") != std::string::npos);
  }
}

TEST_CASE("emulator: GEMM instructions a second, sm_80 and sm_90a",
          "[emulator][gemm][sm90]") {
  // The largest tile of each target on the 264x264x296 problem of
  // docs/emulator.md (a wgmma or mma.sync counts as one instruction; a
  // loose floor so a loaded machine does not fail it; the rate is printed).
  for (Target target : {Target::SM80, Target::SM90a}) {
    TileConfig c = candidateConfigs(target).front();
    GemmProblem p;
    p.target = target;
    p.form = Form::NT;
    p.m = p.n = 264;
    p.k = 296;
    Outcome r = emulate(p, c);
    INFO(r.error);
    REQUIRE(r.error.empty());
    CHECK(r.relErr < 1e-6);
    double rate = double(r.instructions) / r.seconds;
    WARN(kernelName(p, c) << ": " << r.instructions << " instructions in "
                          << r.seconds << " s = " << rate / 1e6 << " M/s");
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
    continue;
#endif
#endif
    CHECK(rate > 1e6);
  }
}
