//===- ModelGradTest.cpp - whole-model gradients vs finite differences -*- C++ -*-===//
//
// The example models (MLP, LeNet CNN, a 2-layer GPT), compiled by the
// frontend at small sizes, differentiated by tg-autodiff and checked against
// central differences in float64 through the reference evaluator.
//
//===----------------------------------------------------------------------===//

#include "test/autodiff/GradCheck.h"
#include "frontend/Sema.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace tgtest;

namespace {

/// Compiles examples/<name>.tg with `defines` and returns its tg IR.
std::string compileExample(const std::string &name,
                           std::vector<std::pair<std::string, std::string>> defines) {
  const char *src = std::getenv("TGC_SOURCE_DIR");
  REQUIRE(src);
  std::string path = std::string(src) + "/examples/" + name + ".tg";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  REQUIRE(buffer);
  tgc::SourceFile file(path, (*buffer)->getBuffer().str());
  tgc::DiagEngine diag(file);
  Harness h;
  tgc::FrontendOptions opts;
  opts.defines = std::move(defines);
  opts.context = &h.ctx;
  auto builder = tgc::parseAndElaborate(file, diag, opts);
  std::string errors;
  llvm::raw_string_ostream es(errors);
  diag.print(es);
  INFO(errors);
  REQUIRE(builder);

  auto module = builder->build();
  REQUIRE(module);
  std::string ir;
  llvm::raw_string_ostream os(ir);
  module->print(os);
  return ir;
}

} // namespace

TEST_CASE("MLP gradients", "[autodiff][models]") {
  std::string ir = compileExample(
      "mlp", {{"batch", "3"}, {"pixels", "6"}, {"hidden", "5"}});
  GradCheckOptions opts;
  opts.intHi = 10;
  CHECK(checkGradients(ir, opts) > 50);
}

TEST_CASE("CNN gradients", "[autodiff][models]") {
  std::string ir = compileExample("cnn", {{"batch", "2"}, {"c1", "2"}, {"c2", "3"}});
  GradCheckOptions opts;
  opts.intHi = 10;
  opts.maxProbes = 12;
  CHECK(checkGradients(ir, opts) > 50);
}

TEST_CASE("2-layer GPT gradients", "[autodiff][models]") {
  std::string ir = compileExample("gpt", {{"vocab", "13"},
                                          {"ctx", "8"},
                                          {"d_model", "8"},
                                          {"layers", "2"},
                                          {"heads", "2"},
                                          {"batch", "2"},
                                          {"seq", "4"}});
  GradCheckOptions opts;
  opts.intHi = 13;
  opts.maxProbes = 8;
  CHECK(checkGradients(ir, opts) > 100);
}
