//===- FatbinTest.cpp - PTX → cubins → one fat binary -----------*- C++ -*-===//
//
// Both GEMM paths are assembled and bundled, with the sm_80 PTX, into one
// fat binary; cuobjdump (when present) must list every image. SKIPs with a
// warning when ptxas or fatbinary is missing.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/Toolchain.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

using namespace tg::nvptx;

TEST_CASE("sm_80 and sm_90a kernels bundle into one fat binary", "[nvptx][fatbin]") {
  if (!haveCudaTool("ptxas") || !haveCudaTool("fatbinary")) {
    WARN("SKIPPED: ptxas/fatbinary not found under " << cudaHome() << "/bin");
    SUCCEED("skipped: no CUDA toolkit");
    return;
  }
  std::vector<std::pair<std::string, std::string>> archPtx;
  for (Target t : {Target::SM80, Target::SM90a}) {
    GemmProblem p;
    p.m = p.n = p.k = 1024;
    p.target = t;
    std::string ptx, err;
    bool ok = generateGemmPTX(p, chooseTileConfig(p), ptx, err);
    INFO(err);
    REQUIRE(ok);
    archPtx.push_back({toString(t), ptx});
  }
  std::string fatbin, err;
  bool ok = buildFatbinFromPtx(archPtx, fatbin, err);
  INFO(err);
  REQUIRE(ok);
  // Fat binary header magic 0xBA55ED50, little endian.
  REQUIRE(fatbin.size() > 16);
  CHECK(static_cast<unsigned char>(fatbin[0]) == 0x50);
  CHECK(static_cast<unsigned char>(fatbin[1]) == 0xED);
  CHECK(static_cast<unsigned char>(fatbin[2]) == 0x55);
  CHECK(static_cast<unsigned char>(fatbin[3]) == 0xBA);

  // ELF images are stored uncompressed: both cubins are in there.
  size_t elfs = 0;
  for (size_t at = fatbin.find("\x7f" "ELF"); at != std::string::npos;
       at = fatbin.find("\x7f" "ELF", at + 1))
    ++elfs;
  CHECK(elfs >= 2);

  if (!haveCudaTool("cuobjdump")) {
    WARN("cuobjdump not found: fat binary contents not listed");
    return;
  }
  std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                     "/tg-fatbin-test.fatbin";
  std::ofstream(path, std::ios::binary) << fatbin;
  std::string out;
  FILE *pipe = popen(("'" + cudaHome() + "/bin/cuobjdump' --list-elf --list-ptx '" +
                      path + "' 2>&1").c_str(), "r");
  char buf[512];
  while (pipe && fgets(buf, sizeof buf, pipe))
    out += buf;
  if (pipe)
    pclose(pipe);
  std::remove(path.c_str());
  INFO(out);
  CHECK(out.find("sm_80") != std::string::npos);
  CHECK(out.find("sm_90a") != std::string::npos);
  CHECK(out.find(".ptx") != std::string::npos);
}

TEST_CASE("a GPU section: several kernels per target in one fat binary", "[nvptx][fatbin]") {
  if (!haveCudaTool("ptxas") || !haveCudaTool("fatbinary")) {
    WARN("SKIPPED: ptxas/fatbinary not found under " << cudaHome() << "/bin");
    SUCCEED("skipped: no CUDA toolkit");
    return;
  }
  std::vector<GemmProblem> problems;
  for (Target t : {Target::SM80, Target::SM90a})
    for (Form f : {Form::NN, Form::TN}) {
      GemmProblem p;
      p.m = 8192;
      p.n = 768;
      p.k = 3072;
      p.form = f;
      p.target = t;
      problems.push_back(p);
    }
  problems.push_back(problems.front()); // duplicates share one kernel
  std::string fatbin, err;
  std::vector<GemmKernelSpec> kernels;
  bool ok = buildGemmFatbin(problems, fatbin, kernels, err);
  INFO(err);
  REQUIRE(ok);
  CHECK(kernels.size() == problems.size());
  for (const GemmKernelSpec &k : kernels) // symbol names sit in the ELF images
    CHECK(fatbin.find(kernelName(k.problem, k.config)) != std::string::npos);
  std::vector<GemmProblem> bad = {problems.front()};
  bad.front().k = 3;
  CHECK_FALSE(buildGemmFatbin(bad, fatbin, kernels, err));
  CHECK(err.find("K must be a multiple of 8") != std::string::npos);
}
