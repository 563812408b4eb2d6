//===- DialectTest.cpp - the tg dialect through its C++ API -----*- C++ -*-===//
//
// Builds model IR in C++, verifies it, round-trips it through text, and runs
// the decomposition pass, the way tgc and the builder API use the dialect.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGOps.h"
#include "codegen/registry/InitAll.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>

using namespace mlir;

namespace {
/// A context with every dialect TGC registers, collecting diagnostics.
struct Context {
  MLIRContext ctx;
  std::string diagnostics;
  Context() {
    DialectRegistry registry;
    tg::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    ctx.getDiagEngine().registerHandler([this](Diagnostic &d) {
      diagnostics += d.str() + "\n";
    });
  }
};

std::string print(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

/// Builds a one-layer classifier: logits = x @ w + b; loss = CE(logits, y).
OwningOpRef<ModuleOp> buildClassifier(MLIRContext &ctx) {
  OpBuilder b(&ctx);
  Location loc = FileLineColLoc::get(&ctx, "model.tg", 3, 7);
  auto f32 = b.getF32Type();
  auto xT = RankedTensorType::get({32, 784}, f32);
  auto yT = RankedTensorType::get({32}, b.getI64Type());
  auto wT = RankedTensorType::get({784, 10}, f32);
  auto bT = RankedTensorType::get({10}, f32);
  auto lossT = RankedTensorType::get({}, f32);

  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  module->getOperation()->setAttr(tg::attr::model, b.getStringAttr("linear"));
  b.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(b, loc, "forward",
                                 b.getFunctionType({xT, yT, wT, bT}, {lossT}));
  const char *names[] = {"x", "y", "fc.weight", "fc.bias"};
  for (unsigned i = 0; i < 4; ++i) {
    fn.setArgAttr(i, tg::attr::name, b.getStringAttr(names[i]));
    fn.setArgAttr(i, tg::attr::role,
                  tg::RoleAttr::get(&ctx, i < 2 ? tg::Role::input : tg::Role::param));
  }
  fn.setArgAttr(2, tg::attr::init,
                tg::InitializerAttr::get(&ctx, "glorot_uniform", ArrayRef<double>{}));
  fn.setArgAttr(3, tg::attr::init, tg::InitializerAttr::get(&ctx, "zeros", ArrayRef<double>{}));
  fn.setResultAttr(0, tg::attr::role, tg::RoleAttr::get(&ctx, tg::Role::loss));

  b.setInsertionPointToStart(fn.addEntryBlock());
  Value h = tg::MatmulOp::create(b, loc, fn.getArgument(0), fn.getArgument(2),
                                 false, false);
  Value logits = tg::AddOp::create(b, loc, h, fn.getArgument(3));
  Value loss =
      tg::CrossEntropyOp::create(b, loc, logits, fn.getArgument(1), -100);
  func::ReturnOp::create(b, loc, loss);
  return module;
}
} // namespace

TEST_CASE("a model built in C++ verifies and round-trips", "[dialect]") {
  Context c;
  auto module = buildClassifier(c.ctx);
  REQUIRE(succeeded(verify(*module)));
  std::string text = print(*module);
  CHECK_THAT(text, Catch::Contains("tg.cross_entropy") &&
                       Catch::Contains("#tg.init<glorot_uniform>") &&
                       Catch::Contains("tg.role = #tg.role<param>"));

  auto reparsed = parseSourceString<ModuleOp>(text, &c.ctx);
  REQUIRE(reparsed);
  CHECK(print(*reparsed) == text);
}

TEST_CASE("initializer attributes check their arguments", "[dialect]") {
  Context c;
  auto parse = [&](StringRef s) {
    c.diagnostics.clear();
    return parseAttribute(s, &c.ctx);
  };
  CHECK(parse("#tg.init<normal(0.0, 0.02)>"));
  CHECK(parse("#tg.init<uniform(-1.0, 1.0)>"));
  CHECK_FALSE(parse("#tg.init<normal(0.0)>"));
  CHECK_THAT(c.diagnostics, Catch::Contains("takes 2 argument(s), got 1"));
  CHECK_FALSE(parse("#tg.init<gaussian>"));
  CHECK_THAT(c.diagnostics, Catch::Contains("unknown initializer 'gaussian'"));
  CHECK_FALSE(parse("#tg.init<uniform(1.0, -1.0)>"));
  CHECK_THAT(c.diagnostics, Catch::Contains("lo < hi"));
}

TEST_CASE("bad argument roles are rejected", "[dialect]") {
  Context c;
  auto module = buildClassifier(c.ctx);
  auto fn = cast<func::FuncOp>(module->getBody()->front());
  fn.setArgAttr(0, tg::attr::role, StringAttr::get(&c.ctx, "weights"));
  CHECK(failed(verify(*module)));
  CHECK_THAT(c.diagnostics,
             Catch::Contains("argument #0: 'tg.role' must be #tg.role<R> with "
                             "R one of param, input, state, step"));
}

TEST_CASE("tg-decompose leaves only primitive ops", "[passes]") {
  Context c;
  auto module = buildClassifier(c.ctx);
  PassManager pm(&c.ctx);
  pm.addPass(tg::createDecomposeCompositesPass());
  REQUIRE(succeeded(pm.run(*module)));
  REQUIRE(succeeded(verify(*module)));
  std::string text = print(*module);
  CHECK_THAT(text, !Catch::Contains("tg.cross_entropy") &&
                       !Catch::Contains("tg.log_softmax") &&
                       Catch::Contains("tg.one_hot") &&
                       Catch::Contains("tg.select"));
}
