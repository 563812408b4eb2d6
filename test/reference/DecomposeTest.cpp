//===- DecomposeTest.cpp - tg-decompose preserves values --------*- C++ -*-===//
//
// The property the reference evaluator exists to check: a transformation
// leaves answers unchanged. Each composite op is evaluated as written and
// after tg-decompose, on random inputs in float64 mode, and the two must
// agree to a relative 1e-12.
//
//===----------------------------------------------------------------------===//

#include "EvalTestUtil.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace tgtest;

namespace {

/// Evaluates @f of `ir` on `args` before and after tg-decompose and compares.
void checkDecomposition(llvm::StringRef ir, llvm::ArrayRef<Tensor> args,
                        llvm::StringRef composite) {
  Harness h;
  h.parse(ir);
  auto before = h.eval(args, /*f64=*/true);
  INFO(h.diagnostics);
  REQUIRE(mlir::succeeded(before));

  mlir::PassManager pm(&h.ctx);
  pm.addPass(mlir::tg::createDecomposeCompositesPass());
  REQUIRE(mlir::succeeded(pm.run(*h.module)));
  // The rewrite happened: the composite is gone.
  bool remains = false;
  h.module->walk([&](mlir::Operation *op) {
    remains |= op->getName().getStringRef() == composite;
  });
  REQUIRE_FALSE(remains);

  auto after = h.eval(args, /*f64=*/true);
  INFO(h.diagnostics);
  REQUIRE(mlir::succeeded(after));
  REQUIRE(before->size() == after->size());
  for (auto [b, a] : llvm::zip(*before, *after)) {
    REQUIRE(b.shape == a.shape);
    for (size_t i = 0; i < b.data.size(); ++i) {
      INFO(composite.str() << " element " << i << ": " << b.data[i] << " vs "
                           << a.data[i]);
      CHECK(std::fabs(b.data[i] - a.data[i]) <=
            1e-12 *
                std::max({std::fabs(b.data[i]), std::fabs(a.data[i]), 1e-3}));
    }
  }
}

Tensor randomF64(llvm::ArrayRef<int64_t> shape, uint64_t stream,
                 double scale = 3) {
  return Tensor::random(shape, DType::F64, 2024, stream, -scale, scale);
}

} // namespace

TEST_CASE("tg-decompose preserves softmax and log_softmax",
          "[reference][decompose]") {
  for (const char *axis : {"1", "0", "-1"}) {
    INFO("axis " << axis);
    std::string body =
        std::string(" %x axis = ") + axis + " : tensor<3x5xf64>\n";
    checkDecomposition(
        "func.func @f(%x: tensor<3x5xf64>) -> tensor<3x5xf64> {\n"
        "  %r = tg.softmax" +
            body + "  return %r : tensor<3x5xf64>\n}",
        {randomF64({3, 5}, 1, 10)}, "tg.softmax");
    checkDecomposition(
        "func.func @f(%x: tensor<3x5xf64>) -> tensor<3x5xf64> {\n"
        "  %r = tg.log_softmax" +
            body + "  return %r : tensor<3x5xf64>\n}",
        {randomF64({3, 5}, 2, 10)}, "tg.log_softmax");
  }
}

TEST_CASE("tg-decompose preserves the activations", "[reference][decompose]") {
  Tensor x = randomF64({4, 6}, 3, 4);
  for (auto [op, attrs] : {std::pair{"gelu", ""},
                           {"gelu", " approximate = tanh"},
                           {"silu", ""},
                           {"sigmoid", ""}}) {
    INFO(op << attrs);
    checkDecomposition(
        std::string("func.func @f(%x: tensor<4x6xf64>) -> tensor<4x6xf64> {\n"
                    "  %r = tg.") +
            op + " %x" + attrs +
            " : tensor<4x6xf64>\n  return %r : tensor<4x6xf64>\n}",
        {x}, std::string("tg.") + op);
  }
}

TEST_CASE("tg-decompose preserves layer_norm and rms_norm",
          "[reference][decompose]") {
  Tensor x = randomF64({2, 3, 8}, 4), g = randomF64({8}, 5),
         b = randomF64({8}, 6);
  checkDecomposition(R"(
    func.func @f(%x: tensor<2x3x8xf64>, %g: tensor<8xf64>, %b: tensor<8xf64>) -> tensor<2x3x8xf64> {
      %r = tg.layer_norm %x scale(%g : tensor<8xf64>) bias(%b : tensor<8xf64>) : tensor<2x3x8xf64>
      return %r : tensor<2x3x8xf64>
    })",
                     {x, g, b}, "tg.layer_norm");
  checkDecomposition(R"(
    func.func @f(%x: tensor<2x3x8xf64>) -> tensor<2x3x8xf64> {
      %r = tg.layer_norm %x {eps = 1.0e-3 : f64} : tensor<2x3x8xf64>
      return %r : tensor<2x3x8xf64>
    })",
                     {x}, "tg.layer_norm");
  checkDecomposition(R"(
    func.func @f(%x: tensor<2x3x8xf64>, %g: tensor<8xf64>) -> tensor<2x3x8xf64> {
      %r = tg.rms_norm %x scale(%g : tensor<8xf64>) : tensor<2x3x8xf64>
      return %r : tensor<2x3x8xf64>
    })",
                     {x, g}, "tg.rms_norm");
  checkDecomposition(R"(
    func.func @f(%x: tensor<2x3x8xf64>) -> tensor<2x3x8xf64> {
      %r = tg.rms_norm %x : tensor<2x3x8xf64>
      return %r : tensor<2x3x8xf64>
    })",
                     {x}, "tg.rms_norm");
}

TEST_CASE("tg-decompose preserves the losses", "[reference][decompose]") {
  const char *ce = R"(
    func.func @f(%x: tensor<2x4x7xf64>, %y: tensor<2x4xi64>) -> tensor<f64> {
      %r = tg.cross_entropy %x, %y : tensor<2x4x7xf64>, tensor<2x4xi64> -> tensor<f64>
      return %r : tensor<f64>
    })";
  Tensor x = randomF64({2, 4, 7}, 7, 5);
  Tensor labels = Tensor::random({2, 4}, DType::I64, 2024, 8, 0, 7);
  labels.data[1] = labels.data[6] = -100; // ignored positions
  checkDecomposition(ce, {x, labels}, "tg.cross_entropy");
  checkDecomposition(ce, {x, Tensor::filled({2, 4}, DType::I64, -100)},
                     "tg.cross_entropy");
  checkDecomposition(
      R"(
    func.func @f(%x: tensor<3x4xf64>, %y: tensor<3xi32>) -> tensor<f64> {
      %r = tg.cross_entropy %x, %y {ignore_index = 2 : i64} : tensor<3x4xf64>, tensor<3xi32> -> tensor<f64>
      return %r : tensor<f64>
    })",
      {randomF64({3, 4}, 9), Tensor::fromValues({3}, DType::I32, {2, 0, 3})},
      "tg.cross_entropy");
  checkDecomposition(R"(
    func.func @f(%a: tensor<5x3xf64>, %b: tensor<5x3xf64>) -> tensor<f64> {
      %r = tg.mse_loss %a, %b : tensor<5x3xf64>, tensor<5x3xf64> -> tensor<f64>
      return %r : tensor<f64>
    })",
                     {randomF64({5, 3}, 10), randomF64({5, 3}, 11)},
                     "tg.mse_loss");
}

TEST_CASE("tg-decompose preserves attention and its gradient",
          "[reference][decompose][attention]") {
  // The direct row-by-row evaluation of tg.attention / tg.attention_grad
  // (codegen/reference/Attention.cpp) against their decompositions.
  struct Case {
    int64_t tq, tk, d, dv;
    bool causal;
  } cases[] = {{1, 1, 4, 4, true}, {5, 5, 4, 3, true}, {3, 6, 2, 4, false},
               {6, 4, 3, 3, true}};
  for (const Case &c : cases) {
    INFO(c.tq << "x" << c.tk << (c.causal ? " causal" : ""));
    auto t = [](std::initializer_list<int64_t> s) {
      std::string r = "tensor<";
      for (int64_t d : s)
        r += std::to_string(d) + "x";
      return r + "f64>";
    };
    std::string q = t({2, 2, c.tq, c.d}), k = t({2, 2, c.tk, c.d}),
                v = t({2, 2, c.tk, c.dv}), o = t({2, 2, c.tq, c.dv}),
                lse = t({2, 2, c.tq});
    std::string attrs = std::string("{") + (c.causal ? "causal, " : "") +
                        "scale = 0.6 : f64}";
    std::string ir =
        "func.func @f(%q: " + q + ", %k: " + k + ", %v: " + v + ", %do: " + o +
        ", %dl: " + lse + ") -> (" + o + ", " + lse + ", " + q + ", " + k +
        ", " + v + ") {\n  %o, %lse = tg.attention %q, %k, %v " + attrs +
        " : " + q + ", " + k + ", " + v + " -> " + o + ", " + lse +
        "\n  %dq, %dk, %dv = tg.attention_grad %do, %dl, %q, %k, %v, %o, "
        "%lse " +
        attrs + " : " + o + ", " + lse + ", " + q + ", " + k + ", " + v +
        ", " + o + ", " + lse + " -> " + q + ", " + k + ", " + v +
        "\n  return %o, %lse, %dq, %dk, %dv : " + o + ", " + lse + ", " + q +
        ", " + k + ", " + v + "\n}";
    checkDecomposition(ir,
                       {randomF64({2, 2, c.tq, c.d}, 20),
                        randomF64({2, 2, c.tk, c.d}, 21),
                        randomF64({2, 2, c.tk, c.dv}, 22),
                        randomF64({2, 2, c.tq, c.dv}, 23),
                        randomF64({2, 2, c.tq}, 24)},
                       "tg.attention_grad");
  }
}
