//===- GemmPtxTest.cpp - generated GEMM kernels assemble cleanly -*- C++ -*-===//
//
// Every tile configuration the heuristic can choose, for every form and
// both input types, is generated, lowered to PTX and assembled by ptxas for
// its target: no errors, no spills, no local-memory stack, no wgmma
// serialization warnings, and the tensor-core instruction of the path is
// present. Without ptxas these tests SKIP with a warning, never pass quietly.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/Toolchain.h"

#include <catch2/catch.hpp>

using namespace tg::nvptx;

namespace {

GemmProblem problem(Target t, Form f, ElemType in, Epilogue e = {}) {
  GemmProblem p;
  p.m = 1000; // not a tile multiple: edges are exercised in the IR
  p.n = 776;
  p.k = 504;
  p.in = in;
  p.form = f;
  p.target = t;
  p.epilogue = e;
  return p;
}

/// Generates, compiles and assembles; checks what the issue asks for.
void checkAssembles(const GemmProblem &p, const TileConfig &c) {
  INFO("kernel " << kernelName(p, c));
  std::string ptx, err;
  bool generated = generateGemmPTX(p, c, ptx, err);
  INFO(err);
  REQUIRE(generated);
  if (p.target == Target::SM80)
    CHECK(ptx.find("mma.sync.aligned.m16n8k16") != std::string::npos);
  else
    CHECK(ptx.find("wgmma.mma_async") != std::string::npos);
  if (!haveCudaTool("ptxas")) {
    WARN("SKIPPED: no ptxas at " << cudaHome() << "/bin; PTX not assembled");
    SUCCEED("skipped: ptxas missing");
    return;
  }
  PtxasReport r = assemblePtx(ptx, toString(p.target));
  INFO(r.log);
  REQUIRE(r.ok);
  CHECK(r.spillStores == 0);
  CHECK(r.spillLoads == 0);
  CHECK(r.stackFrame == 0);
  CHECK(r.perfWarnings.empty());
  CHECK(r.registers > 0);
  if (p.target == Target::SM90a) {
    // setmaxnreg moves registers within the CTA's launch-time pool: what the
    // consumers gain must not exceed what the producer gives back, or
    // setmaxnreg.inc waits forever.
    auto imm = [&](const std::string &op) {
      size_t at = ptx.find(op);
      REQUIRE(at != std::string::npos);
      return std::stoi(ptx.substr(at + op.size()));
    };
    int dec = imm("setmaxnreg.dec.sync.aligned.u32"), inc = imm("setmaxnreg.inc.sync.aligned.u32");
    int consumers = c.threads(p.target) / 128 - 1;
    INFO("entry " << r.registers << ", producer " << dec << ", consumers " << inc);
    CHECK(inc >= r.registers);
    CHECK(dec <= r.registers);
    CHECK(consumers * (inc - r.registers) <= r.registers - dec);
    CHECK(r.registers * c.threads(p.target) <= 65536);
  }
}

} // namespace

TEST_CASE("heuristic returns one of the candidates", "[nvptx][config]") {
  for (Target t : {Target::SM80, Target::SM90a}) {
    auto cands = candidateConfigs(t);
    for (int64_t m : {64, 768, 4096, 8192})
      for (int64_t n : {64, 768, 3072, 8192}) {
        GemmProblem p = problem(t, Form::NN, ElemType::BF16);
        p.m = m;
        p.n = n;
        p.k = 1024;
        TileConfig c = chooseTileConfig(p);
        CHECK(std::find(cands.begin(), cands.end(), c) != cands.end());
      }
  }
  GemmProblem big = problem(Target::SM90a, Form::NN, ElemType::BF16);
  big.m = big.n = big.k = 8192;
  CHECK(chooseTileConfig(big).bn == 256);
}

TEST_CASE("problems the kernels cannot take are refused", "[nvptx][config]") {
  GemmProblem p = problem(Target::SM80, Form::NN, ElemType::BF16);
  CHECK_FALSE(checkProblem(p));
  p.k = 501;
  REQUIRE(checkProblem(p));
  CHECK(checkProblem(p)->find("K must be a multiple of 8") != std::string::npos);
  p.k = 0;
  CHECK(checkProblem(p));
  p = problem(Target::SM80, Form::TN, ElemType::BF16);
  p.m = 1001; // TN: A is [K,M], M is contiguous
  CHECK(checkProblem(p));
}

TEST_CASE("ptxas -v logs are parsed", "[nvptx][ptxas]") {
  PtxasReport r;
  parsePtxasLog("ptxas info    : Function properties for k\n"
                "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
                "ptxas info    : Used 168 registers, used 1 barriers\n"
                "ptxas warning : (C7515) Potential Performance Loss: wgmma.mma_async "
                "instructions are serialized due to ...\n",
                r);
  CHECK(r.registers == 168);
  CHECK(r.spillStores == 4);
  CHECK(r.spillLoads == 4);
  CHECK(r.stackFrame == 8);
  CHECK(r.perfWarnings.size() == 1);
}

TEST_CASE("sm_80: every candidate config assembles, all forms", "[nvptx][sm80][ptxas]") {
  Epilogue fused;
  fused.scale = fused.bias = fused.residual = true;
  fused.act = Activation::GELU;
  fused.out = ElemType::BF16;
  for (const TileConfig &c : candidateConfigs(Target::SM80))
    for (Form f : {Form::NN, Form::NT, Form::TN}) {
      SECTION(c.str(Target::SM80) + "_" + toString(f)) {
        checkAssembles(problem(Target::SM80, f, ElemType::BF16), c);
        checkAssembles(problem(Target::SM80, f, ElemType::F16, fused), c);
      }
    }
}

TEST_CASE("sm_90a: every candidate config assembles, all forms", "[nvptx][sm90a][ptxas]") {
  Epilogue fused;
  fused.scale = fused.bias = fused.residual = true;
  fused.act = Activation::GELU; // the heaviest epilogue
  fused.out = ElemType::BF16;
  for (const TileConfig &c : candidateConfigs(Target::SM90a))
    for (Form f : {Form::NN, Form::NT, Form::TN}) {
      SECTION(c.str(Target::SM90a) + "_" + toString(f)) {
        checkAssembles(problem(Target::SM90a, f, ElemType::BF16), c);
        checkAssembles(problem(Target::SM90a, f, ElemType::F16, fused), c);
      }
    }
}

TEST_CASE("the tile config is an attribute of the kernel IR", "[nvptx][config]") {
  GemmProblem p = problem(Target::SM90a, Form::NT, ElemType::BF16);
  TileConfig c = candidateConfigs(Target::SM90a).front();
  std::string ir = generateGemmMLIR(p, c);
  // The printer sorts a dictionary's keys.
  CHECK(ir.find("tg.tile_config = {bk = 64 : i32, bm = 128 : i32, bn = 256 : i32, "
                "consumer_warpgroups = 2 : i32, group_m = 8 : i32, persistent, "
                "stages = 4 : i32, target = \"sm_90a\"}") != std::string::npos);
  CHECK(ir.find("@" + kernelName(p, c) + "(") != std::string::npos);
}

TEST_CASE("the printed kernel IR compiles to the same PTX as the built module",
          "[nvptx][builder]") {
  // --emit-mlir prints the module the op builders made; compiling that text
  // must give exactly the kernel the generator compiles directly, so the
  // printout is a faithful view (name locations, hoisted constants, sorted
  // attributes and all).
  Epilogue fused;
  fused.scale = true;
  fused.bias = true;
  fused.act = Activation::GELU;
  fused.residual = true;
  fused.out = ElemType::BF16;
  for (Target t : {Target::SM80, Target::SM90a}) {
    GemmProblem p = problem(t, Form::TN, ElemType::F16, fused);
    TileConfig c = candidateConfigs(t).back();
    INFO("kernel " << kernelName(p, c));
    std::string direct, viaText, err;
    REQUIRE(generateGemmPTX(p, c, direct, err));
    REQUIRE(compileMLIRToPTX(generateGemmMLIR(p, c), t, viaText, err));
    CHECK(direct == viaText);
  }
}

TEST_CASE("kernel IR that does not parse is an error, not a crash",
          "[nvptx][builder]") {
  std::string ptx, err;
  CHECK_FALSE(compileMLIRToPTX("module { llvm.func @k( }", Target::SM80, ptx, err));
  CHECK(err.find("kernel IR does not parse/verify") != std::string::npos);
  INFO(err);
  CHECK(err.find("\"gemm.mlir\":1:23") != std::string::npos);
}
