//===- BuilderTest.cpp - the C++ graph-builder API ---------------*- C++ -*-===//
//
// The same MLP written in .tg and with tgc::Builder must print the same IR,
// and Builder mistakes must be reported, not crash.
//
//===----------------------------------------------------------------------===//

#include "frontend/Sema.h"
#include "tgc/Builder.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
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

std::string print(mlir::ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os);
  return s;
}

/// A fully connected layer exactly as examples/mlp.tg's `linear` def.
Tensor linear(Builder &b, Tensor x, int64_t nIn, int64_t nOut,
              const std::string &name) {
  Builder::Scope s(b, name);
  Tensor w = b.param("weight", {DType::F32, {nIn, nOut}}, {"glorot_uniform", {}});
  Tensor bias = b.param("bias", {DType::F32, {nOut}}, {"zeros", {}});
  return x.matmul(w) + bias;
}

/// examples/mlp.tg, written in C++.
std::unique_ptr<Builder> buildMlp() {
  auto b = std::make_unique<Builder>("mlp");
  int64_t batch = 64, pixels = 784, hidden = 256, classes = 10;
  b->setHyper("batch", ConfigValue::ofInt(batch));
  b->setHyper("pixels", ConfigValue::ofInt(pixels));
  b->setHyper("hidden", ConfigValue::ofInt(hidden));
  b->setHyper("classes", ConfigValue::ofInt(classes));

  Tensor images = b->input("images", {DType::F32, {batch, pixels}});
  Tensor labels = b->input("labels", {DType::I64, {batch}});
  Tensor h = b->relu(linear(*b, images, pixels, hidden, "fc1"));
  Tensor logits = linear(*b, h, hidden, classes, "fc2");
  Tensor loss = b->crossEntropy(logits, labels);
  b->minimize(loss, "loss");
  b->output("logits", logits);

  ConfigValue opt = ConfigValue::ofDict();
  opt.dict = {{"kind", ConfigValue::ofString("adamw")},
              {"lr", ConfigValue::ofFloat(1e-3)},
              {"beta1", ConfigValue::ofFloat(0.9)},
              {"beta2", ConfigValue::ofFloat(0.999)},
              {"eps", ConfigValue::ofFloat(1e-8)},
              {"weight_decay", ConfigValue::ofFloat(0.01)}};
  ConfigValue sched = ConfigValue::ofDict();
  sched.dict = {{"kind", ConfigValue::ofString("cosine")},
                {"steps", ConfigValue::ofInt(10000)},
                {"warmup", ConfigValue::ofInt(200)},
                {"min_lr", ConfigValue::ofFloat(0.0)}};
  b->setTrain({{"optimizer", opt},
               {"schedule", sched},
               {"batch", ConfigValue::ofInt(64)},
               {"precision", ConfigValue::ofString("fp32")},
               {"clip_grad_norm", ConfigValue::ofFloat(1.0)}});
  return b;
}

} // namespace

TEST_CASE("the MLP built in C++ prints the same IR as examples/mlp.tg") {
  std::string text = readExample("mlp.tg");
  REQUIRE(!text.empty());
  SourceFile file("mlp.tg", text);
  DiagEngine diag(file);
  std::unique_ptr<Builder> fromTg = parseAndElaborate(file, diag, {});
  REQUIRE(fromTg);
  auto a = fromTg->build();
  REQUIRE(a);

  std::unique_ptr<Builder> fromCpp = buildMlp();
  REQUIRE(fromCpp->ok());
  auto b = fromCpp->build();
  REQUIRE(b);

  std::string ta = print(*a), tb = print(*b);
  CHECK(ta == tb);
  CHECK(ta.find("tg.name = \"fc2.weight\"") != std::string::npos);
}

TEST_CASE("Builder reports shape errors and poisons later calls") {
  Builder b("bad");
  Tensor x = b.input("x", {DType::F32, {4, 8}});
  Tensor w = b.param("w", {DType::F32, {16, 4}}, {"normal", {0.0, 0.02}});
  Tensor y = b.matmul(x, w);
  CHECK_FALSE(y);
  REQUIRE(b.errors().size() == 1);
  // The message is the dialect's (dialects/TGShapes.cpp), not the Builder's.
  CHECK(b.errors()[0] ==
        "'tg.matmul' op contraction dimensions differ: 'tensor<4x8xf32>' has "
        "K = 8 but 'tensor<16x4xf32>' has K = 16");
  // Using the invalid result adds no second error.
  Tensor z = b.relu(y);
  CHECK_FALSE(z);
  CHECK(b.lastError().empty());
  CHECK(b.errors().size() == 1);
  CHECK_FALSE(b.build());
}

TEST_CASE("Builder infers shapes of every op family") {
  Builder b("shapes");
  Tensor x = b.input("x", {DType::F32, {2, 3, 8, 8}});
  Tensor w = b.param("w", {DType::F32, {4, 3, 3, 3}});
  Tensor c = b.conv2d(x, w, {1, 1}, {1, 1});
  REQUIRE(c);
  CHECK(c.shape() == Shape{2, 4, 8, 8});
  Tensor p = b.maxPool2d(c, {2, 2}, {2, 2});
  CHECK(p.shape() == Shape{2, 4, 4, 4});
  Tensor r = b.reshape(p, {2, -1});
  CHECK(r.shape() == Shape{2, 64});
  Tensor s = b.sum(r, {-1}, true);
  CHECK(s.shape() == Shape{2, 1});
  Tensor t = b.transpose(p, {0, 2, 3, 1});
  CHECK(t.shape() == Shape{2, 4, 4, 4});
  Tensor q = b.matmul(t, t, false, true);
  CHECK(q.shape() == Shape{2, 4, 4, 4});
  Tensor sl = b.slice(r, {0, 10}, {2, 40}, {1, 3});
  CHECK(sl.shape() == Shape{2, 10});
  Tensor cat = b.concat({sl, sl}, -1);
  CHECK(cat.shape() == Shape{2, 20});
  b.output("y", cat);
  CHECK(b.ok());
  CHECK(b.build());
}

TEST_CASE("parameter scopes compose like call sites") {
  Builder b("scopes");
  Builder::Scope h(b, "h.0");
  {
    Builder::Scope attn(b, "attn");
    CHECK(b.scopePrefix() == "h.0.attn");
    Tensor w = b.param("weight", {DType::F32, {2, 2}});
    REQUIRE(w);
  }
  CHECK(b.scopePrefix() == "h.0");
  auto m = b.build();
  REQUIRE(m);
  std::vector<ParamInfo> params = listParams(*m);
  REQUIRE(params.size() == 1);
  CHECK(params[0].name == "h.0.attn.weight");
}

TEST_CASE("Builder keeps the verifier's message for ops without inference") {
  Builder b("types");
  Tensor n = b.input("n", {DType::I32, {4}});
  CHECK_FALSE(b.exp(n));
  REQUIRE(b.errors().size() == 1);
  CHECK(b.errors()[0].rfind("'tg.exp' op operand #0 must be", 0) == 0);
  // A result the language does not allow (a zero-size dimension) is refused
  // although the dialect accepts it.
  Tensor x = b.input("x", {DType::F32, {4, 8}});
  CHECK_FALSE(b.slice(x, {0, 3}, {4, 3}, {1, 1}));
  CHECK(b.lastError() == "result of tg.slice would have a dimension of size 0");
  CHECK(b.reshape(x, {-1, 4}).shape() == Shape{8, 4});
}

TEST_CASE("Builder builds into a caller's context, and again after build()") {
  mlir::MLIRContext ctx;
  Builder b(ctx, "m");
  CHECK(&b.context() == &ctx);
  Tensor x = b.input("x", {DType::F32, {2, 3}});
  b.output("y", b.relu(x));
  auto first = b.build();
  REQUIRE(first);
  CHECK(first->getContext() == &ctx);
  // build() returned a copy: the model can grow and be built again.
  b.output("z", b.cos(x));
  auto second = b.build();
  REQUIRE(second);
  CHECK(print(*first).find("tg.cos") == std::string::npos);
  CHECK(print(*second).find("tg.cos") != std::string::npos);
}
