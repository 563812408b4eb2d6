//===- EmulatedGemmTest.cpp - generated kernels compute C = A·B -*- C++ -*-===//
//
// Runs every candidate configuration of both paths, in every form, through
// the IR emulator (GemmEmulator.h) on ragged problems and compares with an
// fp64 reference. This checks the generated indexing, swizzles, fragment
// layouts, wgmma descriptors, TMA boxes, mbarrier phases and epilogues
// against the PTX ISA's definitions without a GPU. It is not a substitute
// for running on hardware (see docs/nvptx.md).
//
//===----------------------------------------------------------------------===//
#include "GemmEmulator.h"

#include "codegen/nvptx/Gemm.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

using namespace tg::nvptx;

namespace {

struct Result {
  std::string error;
  double relErr = 0;
  int64_t unwritten = 0;
};

/// `grid` = 0: one CTA per tile; else that many (persistent kernels only).
Result emulate(const GemmProblem &p, const TileConfig &c, unsigned grid = 0,
               unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto fill16 = [&](std::vector<uint8_t> &b, std::vector<float> &v, int64_t n, ElemType t) {
    b.resize(n * 2);
    v.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h = emu::toHalfBits(dist(rng), t);
      std::memcpy(&b[i * 2], &h, 2);
      v[i] = emu::fromHalfBits(h, t);
    }
  };
  emu::GemmBuffers buf;
  std::vector<float> a, b, bias(p.n), res(p.m * p.n);
  fill16(buf.a, a, p.m * p.k, p.in);
  fill16(buf.b, b, p.k * p.n, p.in);
  const Epilogue &e = p.epilogue;
  int ob = elemBytes(e.out);
  if (e.bias) {
    buf.bias.resize(p.n * 4);
    for (int64_t j = 0; j < p.n; ++j) {
      bias[j] = dist(rng);
      std::memcpy(&buf.bias[j * 4], &bias[j], 4);
    }
  }
  if (e.residual) {
    buf.residual.resize(p.m * p.n * ob);
    for (int64_t i = 0; i < p.m * p.n; ++i) {
      float v = dist(rng);
      if (e.out == ElemType::F32) {
        std::memcpy(&buf.residual[i * 4], &v, 4);
      } else {
        uint16_t h = emu::toHalfBits(v, e.out);
        std::memcpy(&buf.residual[i * 2], &h, 2);
        v = emu::fromHalfBits(h, e.out);
      }
      res[i] = v;
    }
  }
  buf.alpha = e.scale ? 0.75f : 1.0f;
  buf.c.assign(p.m * p.n * ob, 0xFF); // NaN poison
  if (!grid)
    grid = static_cast<unsigned>(((p.m + c.bm - 1) / c.bm) * ((p.n + c.bn - 1) / c.bn));
  Result r;
  r.error = emu::runGemm(p, c, grid, buf);
  if (!r.error.empty())
    return r;
  bool aK = p.form != Form::TN, bK = p.form == Form::NT;
  double errSq = 0, refSq = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < p.k; ++k)
        acc += double(aK ? a[i * p.k + k] : a[k * p.m + i]) *
               double(bK ? b[j * p.k + k] : b[k * p.n + j]);
      acc *= buf.alpha;
      if (e.bias)
        acc += bias[j];
      if (e.act == Activation::ReLU)
        acc = std::max(acc, 0.0);
      if (e.act == Activation::GELU)
        acc = 0.5 * acc * (1 + std::tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
      if (e.residual)
        acc += res[i * p.n + j];
      double v;
      if (e.out == ElemType::F32) {
        float x;
        std::memcpy(&x, &buf.c[(i * p.n + j) * 4], 4);
        v = x;
      } else {
        uint16_t h;
        std::memcpy(&h, &buf.c[(i * p.n + j) * 2], 2);
        v = emu::fromHalfBits(h, e.out);
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

GemmProblem ragged(Target t, Form f, const TileConfig &c) {
  GemmProblem p;
  p.target = t;
  p.form = f;
  // Two tiles each way, the second ragged; K ragged and long enough for the
  // operand ring to wrap around (and mbarrier phases to flip) twice.
  p.m = c.bm + 8;
  p.n = c.bn + 8;
  p.k = (2 * c.stages + 1) * c.bk + 8;
  return p;
}

} // namespace

TEST_CASE("emulated: every sm_80 config and form computes A·B", "[nvptx][emulate][sm80]") {
  for (const TileConfig &c : candidateConfigs(Target::SM80))
    for (Form f : {Form::NN, Form::NT, Form::TN}) {
      GemmProblem p = ragged(Target::SM80, f, c);
      INFO(kernelName(p, c) << " M=" << p.m << " N=" << p.n << " K=" << p.k);
      Result r = emulate(p, c);
      INFO(r.error);
      REQUIRE(r.error.empty());
      CHECK(r.unwritten == 0);
      CHECK(r.relErr < 1e-5);
    }
}

TEST_CASE("emulated: every sm_90a config and form computes A·B", "[nvptx][emulate][sm90a]") {
  for (const TileConfig &c : candidateConfigs(Target::SM90a))
    for (Form f : {Form::NN, Form::NT, Form::TN}) {
      GemmProblem p = ragged(Target::SM90a, f, c);
      INFO(kernelName(p, c) << " M=" << p.m << " N=" << p.n << " K=" << p.k);
      Result r = emulate(p, c);
      INFO(r.error);
      REQUIRE(r.error.empty());
      CHECK(r.unwritten == 0);
      CHECK(r.relErr < 1e-5);
    }
}

TEST_CASE("emulated: the persistent sm_90a kernel walks several tiles per CTA",
          "[nvptx][emulate][sm90a]") {
  for (const TileConfig &c : candidateConfigs(Target::SM90a)) {
    GemmProblem p = ragged(Target::SM90a, Form::NT, c);
    p.m = 3 * c.bm - 16; // 3×2 tiles over 4 CTAs: CTAs 0 and 1 take two
    INFO(kernelName(p, c) << " M=" << p.m << " N=" << p.n << " K=" << p.k);
    Result r = emulate(p, c, 4);
    INFO(r.error);
    REQUIRE(r.error.empty());
    CHECK(r.unwritten == 0);
    CHECK(r.relErr < 1e-5);
  }
}

TEST_CASE("emulated: fused epilogues", "[nvptx][emulate]") {
  Epilogue gelu;
  gelu.scale = gelu.bias = gelu.residual = true;
  gelu.act = Activation::GELU;
  gelu.out = ElemType::BF16;
  Epilogue relu;
  relu.bias = true;
  relu.act = Activation::ReLU;
  relu.out = ElemType::F16;
  for (Target t : {Target::SM80, Target::SM90a})
    for (const Epilogue &e : {gelu, relu}) {
      TileConfig c = candidateConfigs(t).back();
      GemmProblem p = ragged(t, Form::NT, c);
      p.in = ElemType::F16;
      p.epilogue = e;
      INFO(kernelName(p, c));
      Result r = emulate(p, c);
      INFO(r.error);
      REQUIRE(r.error.empty());
      CHECK(r.unwritten == 0);
      CHECK(r.relErr < 1e-2); // 16-bit output rounding
    }
}
