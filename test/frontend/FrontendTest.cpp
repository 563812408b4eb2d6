//===- FrontendTest.cpp - lexer, parser and checker of .tg files -*- C++ -*-===//
//
// Properties of the language frontend that lit cannot easily state: error
// recovery counts, -D overrides, the GPT-2 parameter total, and robustness
// on mangled input.
//
//===----------------------------------------------------------------------===//

#include "frontend/Lexer.h"
#include "frontend/Sema.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

using namespace tgc;

namespace {
std::string readExample(const std::string &name) {
  const char *src = std::getenv("TGC_SOURCE_DIR");
  std::string root = src ? src : TGC_TEST_SOURCE_DIR;
  std::ifstream in(root + "/examples/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Run {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagEngine> diag;
  std::unique_ptr<Builder> builder;
};

Run compile(const std::string &text, FrontendOptions opts = {}) {
  Run r;
  r.file = std::make_unique<SourceFile>("t.tg", text);
  r.diag = std::make_unique<DiagEngine>(*r.file);
  r.builder = parseAndElaborate(*r.file, *r.diag, opts);
  return r;
}
} // namespace

TEST_CASE("lexer decodes numbers, sizes and keywords") {
  SourceFile f("t.tg", "model 16GiB 1.5e3 0.25 x_1 # comment\n\"s\"");
  DiagEngine d(f);
  std::vector<Token> t = lex(f, d);
  REQUIRE(t.size() == 8);
  CHECK(t[0].kind == Tok::KwModel);
  CHECK(t[1].kind == Tok::Int);
  CHECK(t[1].intValue == (int64_t(16) << 30));
  CHECK(t[2].kind == Tok::Float);
  CHECK(t[2].floatValue == 1500.0);
  CHECK(t[4].kind == Tok::Ident);
  CHECK(t[5].kind == Tok::Newline);
  CHECK(t[6].kind == Tok::String);
  CHECK(t[6].text == "s");
  CHECK_FALSE(d.hasErrors());
}

TEST_CASE("the parser reports several independent syntax errors") {
  Run r = compile("model m(b = 2) {\n"
                  "  input x: f32[b, 4\n"
                  "  y = x +\n"
                  "  z = (x\n"
                  "  output x\n"
                  "}\n");
  CHECK_FALSE(r.builder);
  CHECK(r.diag->numErrors() == 3);
}

TEST_CASE("the checker reports several independent errors") {
  Run r = compile("model m(b = 2) {\n"
                  "  input x: f32[b, 4]\n"
                  "  a = relu(xx)\n"
                  "  c = softmax(x, axis = 5)\n"
                  "  d = x @ x\n"
                  "  output x\n"
                  "}\n");
  CHECK_FALSE(r.builder);
  REQUIRE(r.diag->numErrors() == 3);
  CHECK(r.diag->diagnostics()[0].loc.line == 3);
  // The dialect's message (dialects/TGShapes.cpp) names both operands.
  CHECK(r.diag->diagnostics()[2].message.find(
            "'tensor<2x4xf32>' has K = 4 but 'tensor<2x4xf32>' has K = 2") !=
        std::string::npos);
}

TEST_CASE("hyper-parameter overrides (-D) work and unknown keys are errors") {
  std::string src = readExample("gpt.tg");
  FrontendOptions opts;
  opts.defines = {{"layers", "2"}, {"d_model", "64"}, {"heads", "4"}, {"seq", "8"}};
  Run r = compile(src, opts);
  REQUIRE(r.builder);
  auto module = r.builder->build();
  REQUIRE(module);
  std::vector<ParamInfo> params = listParams(*module);
  CHECK(params.size() == 2 + 2 * 12 + 2);

  opts.defines = {{"layer", "2"}};
  Run bad = compile(src, opts);
  CHECK_FALSE(bad.builder);
  REQUIRE(bad.diag->numErrors() == 1);
  CHECK(bad.diag->diagnostics()[0].message.find("did you mean 'layers'?") !=
        std::string::npos);
}

TEST_CASE("GPT-2 small has 124,439,808 parameters and verifies") {
  Run r = compile(readExample("gpt.tg"));
  REQUIRE(r.builder);
  auto module = r.builder->build();
  REQUIRE(module);
  int64_t total = 0;
  for (const ParamInfo &p : listParams(*module))
    total += p.count;
  CHECK(total == 124439808);
}

TEST_CASE("mangled examples never crash the frontend") {
  // A cheap, deterministic cousin of the fuzzer: delete, duplicate and swap
  // bytes of the examples, and require diagnostics or a verified module.
  std::mt19937 rng(1234);
  mlir::MLIRContext ctx;
  for (const char *name : {"mlp.tg", "cnn.tg", "gpt.tg"}) {
    std::string base = readExample(name);
    REQUIRE(!base.empty());
    for (int i = 0; i < 150; ++i) {
      std::string s = base;
      int edits = 1 + rng() % 4;
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t at = rng() % s.size();
        switch (rng() % 3) {
        case 0: s.erase(at, 1 + rng() % 8); break;
        case 1: s.insert(at, 1, "()[]{}=,:+-*/@#\n0123xyz"[rng() % 23]); break;
        default: std::swap(s[at], s[rng() % s.size()]); break;
        }
      }
      FrontendOptions opts;
      opts.defines = {{"layers", "1"}};
      if (std::string(name) != "gpt.tg")
        opts.defines.clear();
      opts.context = &ctx;
      Run r = compile(s, opts);
      if (r.builder) {
        CHECK(r.builder->build());
      } else {
        CHECK(r.diag->hasErrors());
      }
    }
  }
}
