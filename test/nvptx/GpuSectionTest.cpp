//===- GpuSectionTest.cpp - GEMM kernels in a .tgx artifact -----*- C++ -*-===//
//
// The fat binary from buildGemmFatbin is the artifact's optional
// "gpu.fatbin" section (docs/artifact.md): written with the runtime's
// ArtifactWriter and read back, byte for byte, with its validating reader.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/Toolchain.h"
#include "runtime/Artifact.h"

#include <catch2/catch.hpp>

using namespace tg::nvptx;

TEST_CASE("GEMM kernels travel as the artifact's gpu.fatbin section", "[nvptx][fatbin][artifact]") {
  if (!haveCudaTool("ptxas") || !haveCudaTool("fatbinary")) {
    WARN("SKIPPED: ptxas/fatbinary not found under " << cudaHome() << "/bin");
    SUCCEED("skipped: no CUDA toolkit");
    return;
  }
  std::vector<GemmProblem> problems(2);
  problems[0].m = problems[0].n = problems[0].k = 1024;
  problems[1] = problems[0];
  problems[1].target = Target::SM90a;
  problems[1].form = Form::NT;
  std::string fatbin, err;
  std::vector<GemmKernelSpec> kernels;
  bool built = buildGemmFatbin(problems, fatbin, kernels, err);
  INFO(err);
  REQUIRE(built);

  tgrt::ArtifactWriter w;
  REQUIRE(w.addSection("gpu.fatbin", fatbin, err));
  std::unique_ptr<tgrt::Artifact> a = tgrt::Artifact::fromBytes(w.bytes(), "gemm.tgx", err);
  INFO(err);
  REQUIRE(a);
  REQUIRE(a->has("gpu.fatbin"));
  CHECK(a->section("gpu.fatbin") == fatbin);
}
