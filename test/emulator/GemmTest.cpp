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

#include "codegen/nvptx/Gemm.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

using namespace tg::nvptx;

namespace {

struct Outcome {
  std::string error;
  double relErr = 0;
  int64_t unwritten = 0;
};

Outcome emulate(const GemmProblem &p, const TileConfig &c) {
  Outcome r;
  std::string ptx;
  if (!generateGemmPTX(p, c, ptx, r.error))
    return r;
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
  uint32_t alphaBits;
  std::memcpy(&alphaBits, &alpha, 4);
  LaunchGeometry g = launchGeometry(p, c, assumedSMs(p.target));
  if (!mod->launch(kernelName(p, c), {g.grid, 1, 1}, {g.block, 1, 1},
                   g.smemBytes,
                   {addr(a16.data()), addr(b16.data()), addr(cBytes.data()),
                    addr(bias.data()), addr(resBytes.data()), uint64_t(p.m),
                    uint64_t(p.n), uint64_t(p.k), alphaBits},
                   mem, r.error))
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

TEST_CASE("emulator: every sm_80 GEMM config, form and epilogue from its PTX",
          "[emulator][gemm]") {
  Epilogue plain;
  Epilogue gelu; // alpha, bias, GELU (tanh.approx), residual, bf16 out
  gelu.scale = gelu.bias = gelu.residual = true;
  gelu.act = Activation::GELU;
  gelu.out = ElemType::BF16;
  Epilogue relu; // bias, ReLU, f16 out
  relu.bias = true;
  relu.act = Activation::ReLU;
  relu.out = ElemType::F16;
  for (const TileConfig &c : candidateConfigs(Target::SM80))
    for (Form f : {Form::NN, Form::NT, Form::TN})
      for (const Epilogue &e : {plain, gelu, relu}) {
        GemmProblem p;
        p.target = Target::SM80;
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
