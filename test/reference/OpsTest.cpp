//===- OpsTest.cpp - every tg op on hand-computed cases ---------*- C++ -*-===//
//
// Small cases whose answers are worked out by hand (or are textbook values),
// covering broadcasting, size-1 dimensions, ignore_index, causal masking,
// grouped and dilated convolution and padded pooling; then rounding to
// element types, the structural ops (func.call, scf.for) and the errors.
//
//===----------------------------------------------------------------------===//

#include "EvalTestUtil.h"
#include "tgc/Philox.h"

#include <limits>

using namespace tgtest;
using mlir::tg::ref::roundTo;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
} // namespace

TEST_CASE("binary ops broadcast like NumPy", "[reference][elementwise]") {
  Harness h;
  Tensor a = t({2, 1}, {1, 2}), b = t({3}, {10, 20, 30});
  auto binary = [&](const char *op) {
    std::string ir =
        std::string("func.func @f(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> "
                    "tensor<2x3xf32> {\n"
                    "  %r = tg.") +
        op +
        " %a, %b : tensor<2x1xf32>, tensor<3xf32> -> tensor<2x3xf32>\n"
        "  return %r : tensor<2x3xf32>\n}";
    return h.run(ir, {a, b});
  };
  checkTensor(binary("add"), {2, 3}, {11, 21, 31, 12, 22, 32});
  checkTensor(binary("sub"), {2, 3}, {-9, -19, -29, -8, -18, -28});
  checkTensor(binary("mul"), {2, 3}, {10, 20, 30, 20, 40, 60});
  checkTensor(binary("div"), {2, 3}, {0.1, 0.05, 1.0 / 30, 0.2, 0.1, 2.0 / 30});
  checkTensor(binary("maximum"), {2, 3}, {10, 20, 30, 10, 20, 30});
  checkTensor(binary("minimum"), {2, 3}, {1, 1, 1, 2, 2, 2});

  Tensor p = h.run(R"(
    func.func @f(%a: tensor<3xf32>, %b: tensor<f32>) -> tensor<3xf32> {
      %r = tg.pow %a, %b : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
      return %r : tensor<3xf32>
    })",
                   {t({3}, {2, 9, 0}), t({}, {0.5})});
  checkTensor(p, {3}, {std::sqrt(2.0), 3, 0});

  // maximum/minimum propagate NaN; rank-0 and size-1 operands broadcast.
  Tensor m = h.run(R"(
    func.func @f(%a: tensor<1x3xf32>, %b: tensor<f32>) -> tensor<1x3xf32> {
      %r = tg.maximum %a, %b : tensor<1x3xf32>, tensor<f32> -> tensor<1x3xf32>
      return %r : tensor<1x3xf32>
    })",
                   {t({1, 3}, {-1, kNaN, 4}), t({}, {0})});
  checkTensor(m, {1, 3}, {0, kNaN, 4});

  // Integer division truncates toward zero.
  Tensor q = h.run(
      R"(
    func.func @f(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
      %r = tg.div %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
      return %r : tensor<4xi32>
    })",
      {t({4}, {7, -7, 7, -7}, DType::I32), t({4}, {2, 2, -2, -2}, DType::I32)});
  checkTensor(q, {4}, {3, -3, -3, 3});
}

TEST_CASE("cmp and select", "[reference][elementwise]") {
  Harness h;
  Tensor r = h.run(R"(
    func.func @f(%a: tensor<2x2xf32>, %b: tensor<2xf32>) -> tensor<2x2xf32> {
      %m = tg.cmp lt %a, %b : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xi1>
      %z = tg.constant dense<-1.0> : tensor<f32>
      %r = tg.select %m, %a, %z : tensor<2x2xi1>, tensor<2x2xf32>, tensor<f32> -> tensor<2x2xf32>
      return %r : tensor<2x2xf32>
    })",
                   {t({2, 2}, {1, 5, 3, 2}), t({2}, {2, 4})});
  checkTensor(r, {2, 2}, {1, -1, -1, 2});

  const char *preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  double want[][3] = {{0, 1, 0}, {1, 0, 1}, {1, 0, 0},
                      {1, 1, 0}, {0, 0, 1}, {0, 1, 1}};
  for (int i = 0; i < 6; ++i) {
    std::string ir = std::string("func.func @f(%a: tensor<3xi64>, %b: "
                                 "tensor<3xi64>) -> tensor<3xi1> {\n"
                                 "  %r = tg.cmp ") +
                     preds[i] +
                     " %a, %b : tensor<3xi64>, tensor<3xi64> -> tensor<3xi1>\n"
                     "  return %r : tensor<3xi1>\n}";
    INFO(preds[i]);
    checkTensor(h.run(ir, {t({3}, {1, 2, 3}, DType::I64),
                           t({3}, {2, 2, 2}, DType::I64)}),
                {3}, want[i]);
  }
}

TEST_CASE("unary ops", "[reference][elementwise]") {
  Harness h;
  Tensor x = t({4}, {-1, 0, 0.5, 2}, DType::F64);
  auto unary = [&](const std::string &op, const std::string &attrs = "") {
    std::string ir = "func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {\n"
                     "  %r = tg." +
                     op + " %x" + attrs +
                     " : tensor<4xf64>\n"
                     "  return %r : tensor<4xf64>\n}";
    return h.run(ir, {x});
  };
  double e = std::exp(1.0);
  checkTensor(unary("neg"), {4}, {1, 0, -0.5, -2});
  checkTensor(unary("abs"), {4}, {1, 0, 0.5, 2});
  checkTensor(unary("exp"), {4}, {1 / e, 1, std::sqrt(e), e * e}, 1e-12);
  checkTensor(unary("log"), {4}, {kNaN, -kInf, -std::log(2.0), std::log(2.0)},
              1e-12);
  checkTensor(unary("sqrt"), {4}, {kNaN, 0, std::sqrt(0.5), std::sqrt(2.0)},
              1e-12);
  checkTensor(unary("rsqrt"), {4}, {kNaN, kInf, std::sqrt(2.0), std::sqrt(0.5)},
              1e-12);
  checkTensor(unary("tanh"), {4},
              {-0.7615941559557649, 0, 0.46211715726000974, 0.9640275800758169},
              1e-12);
  checkTensor(unary("erf"), {4},
              {-0.8427007929497149, 0, 0.5204998778130465, 0.9953222650189527},
              1e-12);
  checkTensor(unary("sigmoid"), {4},
              {0.2689414213699951, 0.5, 0.6224593312018546, 0.8807970779778823},
              1e-12);
  checkTensor(unary("relu"), {4}, {0, 0, 0.5, 2});
  checkTensor(unary("silu"), {4},
              {-0.2689414213699951, 0, 0.3112296656009273, 1.7615941559557646},
              1e-12);
  checkTensor(
      unary("gelu"), {4},
      {-0.15865525393145707, 0, 0.34573123063700656, 1.9544997361036416},
      1e-12);
  checkTensor(unary("gelu", " approximate = tanh"), {4},
              {-0.15880800939172324, 0, 0.34571400982514394, 1.954597694087775},
              1e-12);
}

TEST_CASE("cast rounds floats to nearest even and truncates to integers",
          "[reference][elementwise][rounding]") {
  Harness h;
  Tensor i = h.run(R"(
    func.func @f(%x: tensor<4xf32>) -> tensor<4xi32> {
      %r = tg.cast %x : tensor<4xf32> to tensor<4xi32>
      return %r : tensor<4xi32>
    })",
                   {t({4}, {-1.75, 1.75, 2.5, -0.5})});
  checkTensor(i, {4}, {-1, 1, 2, 0});

  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to
  // even (1); 1 + 3 * 2^-8 ties up to 1 + 2^-6.
  Tensor b = h.run(R"(
    func.func @f(%x: tensor<3xf64>) -> tensor<3xbf16> {
      %r = tg.cast %x : tensor<3xf64> to tensor<3xbf16>
      return %r : tensor<3xbf16>
    })",
                   {t({3}, {1 + 0x1p-8, 1 + 3 * 0x1p-8, 1e39}, DType::F64)});
  checkTensor(b, {3}, {1, 1 + 0x1p-6, kInf}, 0);

  // Float64 mode keeps the value; integers still truncate.
  Tensor f = h.run(R"(
    func.func @f(%x: tensor<f64>) -> tensor<bf16> {
      %r = tg.cast %x : tensor<f64> to tensor<bf16>
      return %r : tensor<bf16>
    })",
                   {t({}, {1 + 0x1p-8}, DType::F64)}, /*f64=*/true);
  checkTensor(f, {}, {1 + 0x1p-8}, 0);

  Tensor bits = h.run(R"(
    func.func @f(%x: tensor<3xi64>) -> tensor<3xi1> {
      %r = tg.cast %x : tensor<3xi64> to tensor<3xi1>
      return %r : tensor<3xi1>
    })",
                      {t({3}, {0, 3, -1}, DType::I64)});
  checkTensor(bits, {3}, {0, 1, 1});
}

TEST_CASE("roundTo matches hardware float and the bf16/f16 formats",
          "[reference][rounding]") {
  Tensor r = Tensor::random({4096}, DType::F64, 11, 0, -1e3, 1e3);
  for (double v : r.data) {
    CHECK(roundTo(DType::F32, v) == static_cast<double>(static_cast<float>(v)));
    CHECK(roundTo(DType::F32, v * 1e-40) ==
          static_cast<double>(static_cast<float>(v * 1e-40))); // subnormals
  }
  CHECK(roundTo(DType::BF16, 0x1.fep127) == 0x1.fep127);  // max finite
  CHECK(roundTo(DType::BF16, 0x1.ffp127) == kInf);        // ties to even: kInf
  CHECK(roundTo(DType::BF16, 0x1.fe8p127) == 0x1.fep127); // below the tie
  CHECK(roundTo(DType::BF16, 0x1p-133) == 0x1p-133);      // min subnormal
  CHECK(roundTo(DType::BF16, 0x1p-134) == 0);             // tie to even 0
  CHECK(roundTo(DType::BF16, -0.1) == -0.10009765625);
  CHECK(roundTo(DType::F16, 65504) == 65504);
  CHECK(roundTo(DType::F16, 65519.99) == 65504);
  CHECK(roundTo(DType::F16, 65520) == kInf);
  CHECK(roundTo(DType::F16, 0x1p-24) == 0x1p-24);   // min subnormal
  CHECK(roundTo(DType::F16, 0x1.8p-24) == 0x1p-23); // tie to even
  CHECK(roundTo(DType::F16, 0.1) == 0.0999755859375);
  CHECK(std::isnan(roundTo(DType::F16, kNaN)));
  CHECK(roundTo(DType::I32, 0x1p31) == -0x1p31); // wraps
  CHECK(roundTo(DType::I32, -2.9) == -2);
  CHECK(roundTo(DType::I64, 2.9) == 2);
  CHECK(roundTo(DType::I1, -3) == 1);
}

TEST_CASE("results are rounded per op in bf16 mode, not in f64 mode",
          "[reference][rounding]") {
  Harness h;
  const char *ir = R"(
    func.func @f(%x: tensor<2xbf16>, %y: tensor<2xbf16>) -> tensor<2xbf16> {
      %s = tg.add %x, %y : tensor<2xbf16>, tensor<2xbf16> -> tensor<2xbf16>
      %r = tg.sub %s, %x : tensor<2xbf16>, tensor<2xbf16> -> tensor<2xbf16>
      return %r : tensor<2xbf16>
    })";
  Tensor x = t({2}, {1, 256}, DType::BF16),
         y = t({2}, {0x1p-8, 1}, DType::BF16);
  // bf16: 1 + 2^-8 rounds to 1 and 256 + 1 to 256, so both differences are 0.
  checkTensor(h.run(ir, {x, y}), {2}, {0, 0}, 0);
  checkTensor(h.run(ir, {x, y}, /*f64=*/true), {2}, {0x1p-8, 1}, 0);
  // Arguments are rounded to their element type on entry.
  Tensor unrounded = t({2}, {1 + 0x1p-9, 256}, DType::BF16);
  unrounded.data[0] = 1 + 0x1p-9;
  Tensor z = t({2}, {0, 0}, DType::BF16);
  checkTensor(h.run(ir, {z, unrounded}), {2}, {1, 256}, 0);
}

TEST_CASE("constants", "[reference][elementwise]") {
  Harness h;
  Tensor r = h.run(R"(
    func.func @f() -> tensor<2x2xf32> {
      %a = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
      %b = arith.constant dense<0.5> : tensor<2x2xf32>
      %r = tg.mul %a, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
      return %r : tensor<2x2xf32>
    })",
                   {});
  checkTensor(r, {2, 2}, {0.5, 1, 1.5, 2});
  Tensor i = h.run(R"(
    func.func @f() -> tensor<3xi64> {
      %a = tg.constant dense<[-1, 0, 7]> : tensor<3xi64>
      return %a : tensor<3xi64>
    })",
                   {});
  checkTensor(i, {3}, {-1, 0, 7});
  // Half-precision constants hold their rounded values; f16 results round.
  Tensor hf = h.run(R"(
    func.func @f() -> tensor<2xf16> {
      %a = tg.constant dense<[0.1, 3.0]> : tensor<2xf16>
      %b = tg.constant dense<0.1> : tensor<bf16>
      %c = tg.cast %b : tensor<bf16> to tensor<f16>
      %r = tg.mul %a, %c : tensor<2xf16>, tensor<f16> -> tensor<2xf16>
      return %r : tensor<2xf16>
    })",
                    {});
  checkTensor(hf, {2},
              {roundTo(DType::F16, 0.0999755859375 * 0.10009765625),
               roundTo(DType::F16, 3 * 0.10009765625)},
              0);
  Tensor flags = h.run(R"(
    func.func @f() -> tensor<2xi1> {
      %a = tg.constant dense<[true, false]> : tensor<2xi1>
      return %a : tensor<2xi1>
    })",
                       {});
  checkTensor(flags, {2}, {1, 0});
}

TEST_CASE("matmul: 2-D, transposed and batched with broadcast batch dims",
          "[reference][contraction]") {
  Harness h;
  Tensor a = t({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = t({3, 2}, {1, 0, 0, 1, 1, 1});
  checkTensor(h.run(R"(
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
      %r = tg.matmul %a, %b : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
      return %r : tensor<2x2xf32>
    })",
                    {a, b}),
              {2, 2}, {4, 5, 10, 11});
  // a^T (3x2) @ a (2x3) and a @ a^T.
  checkTensor(h.run(R"(
    func.func @f(%a: tensor<2x3xf32>) -> tensor<3x3xf32> {
      %r = tg.matmul %a, %a {transpose_lhs} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<3x3xf32>
      return %r : tensor<3x3xf32>
    })",
                    {a}),
              {3, 3}, {17, 22, 27, 22, 29, 36, 27, 36, 45});
  checkTensor(h.run(R"(
    func.func @f(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
      %r = tg.matmul %a, %a {transpose_rhs} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x2xf32>
      return %r : tensor<2x2xf32>
    })",
                    {a}),
              {2, 2}, {14, 32, 32, 77});
  // Batch [2, 1] against batch [3]: result batch [2, 3]; rhs_k = k * I.
  Tensor lhs = t({2, 1, 1, 2}, {1, 2, 3, 4});
  Tensor rhs = t({3, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2, 3, 0, 0, 3});
  checkTensor(h.run(R"(
    func.func @f(%a: tensor<2x1x1x2xf32>, %b: tensor<3x2x2xf32>) -> tensor<2x3x1x2xf32> {
      %r = tg.matmul %a, %b : tensor<2x1x1x2xf32>, tensor<3x2x2xf32> -> tensor<2x3x1x2xf32>
      return %r : tensor<2x3x1x2xf32>
    })",
                    {lhs, rhs}),
              {2, 3, 1, 2}, {1, 2, 2, 4, 3, 6, 3, 4, 6, 8, 9, 12});
}

TEST_CASE("sum, mean and max over axes", "[reference][reduction]") {
  Harness h;
  Tensor x = t({2, 3}, {1, 2, 3, 4, 5, 6});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<3xf32> {
      %r = tg.sum %x axes = [0] : tensor<2x3xf32> -> tensor<3xf32>
      return %r : tensor<3xf32>
    })",
                    {x}),
              {3}, {5, 7, 9});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
      %r = tg.mean %x axes = [1] keepdims : tensor<2x3xf32> -> tensor<2x1xf32>
      return %r : tensor<2x1xf32>
    })",
                    {x}),
              {2, 1}, {2, 5});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<f32> {
      %r = tg.max %x axes = [0, 1] : tensor<2x3xf32> -> tensor<f32>
      return %r : tensor<f32>
    })",
                    {x}),
              {}, {6});
  Tensor y = t({2, 1, 2}, {-1, -2, -3, -4});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x1x2xf32>) -> tensor<1x1x2xf32> {
      %r = tg.max %x axes = [0, 1] keepdims : tensor<2x1x2xf32> -> tensor<1x1x2xf32>
      return %r : tensor<1x1x2xf32>
    })",
                    {y}),
              {1, 1, 2}, {-1, -2});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xi32>) -> tensor<2xi32> {
      %r = tg.sum %x axes = [1] : tensor<2x3xi32> -> tensor<2xi32>
      return %r : tensor<2xi32>
    })",
                    {t({2, 3}, {1, 2, 3, 4, 5, 6}, DType::I32)}),
              {2}, {6, 15});
}

TEST_CASE("softmax and log_softmax", "[reference][reduction]") {
  Harness h;
  double l3 = std::log(3.0);
  Tensor x = t({2, 2}, {0, l3, 1000, 1000}, DType::F64);
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x2xf64>) -> tensor<2x2xf64> {
      %r = tg.softmax %x axis = -1 : tensor<2x2xf64>
      return %r : tensor<2x2xf64>
    })",
                    {x}),
              {2, 2}, {0.25, 0.75, 0.5, 0.5}, 1e-12);
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x2xf64>) -> tensor<2x2xf64> {
      %r = tg.log_softmax %x axis = 1 : tensor<2x2xf64>
      return %r : tensor<2x2xf64>
    })",
                    {x}),
              {2, 2},
              {std::log(0.25), std::log(0.75), std::log(0.5), std::log(0.5)},
              1e-12);
  // Along axis 0, with a masked (-kInf) entry.
  Tensor y = t({2, 2}, {0, -kInf, l3, 0}, DType::F64);
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x2xf64>) -> tensor<2x2xf64> {
      %r = tg.softmax %x axis = 0 : tensor<2x2xf64>
      return %r : tensor<2x2xf64>
    })",
                    {y}),
              {2, 2}, {0.25, 0, 0.75, 1}, 1e-12);
}

TEST_CASE("cross_entropy averages over non-ignored labels",
          "[reference][loss]") {
  Harness h;
  double l3 = std::log(3.0);
  const char *ir = R"(
    func.func @f(%x: tensor<3x2xf64>, %y: tensor<3xi64>) -> tensor<f64> {
      %r = tg.cross_entropy %x, %y : tensor<3x2xf64>, tensor<3xi64> -> tensor<f64>
      return %r : tensor<f64>
    })";
  Tensor x = t({3, 2}, {0, l3, 0, 0, 5, 5}, DType::F64);
  checkTensor(h.run(ir, {x, t({3}, {1, -100, 0}, DType::I64)}), {},
              {(-std::log(0.75) - std::log(0.5)) / 2}, 1e-12);
  checkTensor(h.run(ir, {x, t({3}, {0, 1, 1}, DType::I64)}), {},
              {(-std::log(0.25) - 2 * std::log(0.5)) / 3}, 1e-12);
  checkTensor(h.run(ir, {x, t({3}, {-100, -100, -100}, DType::I64)}), {}, {0});
  // A custom ignore_index, labels of rank 2 and i32.
  Tensor r = h.run(
      R"(
    func.func @f(%x: tensor<1x2x2xf64>, %y: tensor<1x2xi32>) -> tensor<f64> {
      %r = tg.cross_entropy %x, %y {ignore_index = 1 : i64} : tensor<1x2x2xf64>, tensor<1x2xi32> -> tensor<f64>
      return %r : tensor<f64>
    })",
      {t({1, 2, 2}, {0, l3, 0, 0}, DType::F64), t({1, 2}, {0, 1}, DType::I32)});
  checkTensor(r, {}, {-std::log(0.25)}, 1e-12);
}

TEST_CASE("mse_loss, layer_norm and rms_norm", "[reference][loss]") {
  Harness h;
  checkTensor(h.run(R"(
    func.func @f(%a: tensor<2x1xf32>, %b: tensor<2x1xf32>) -> tensor<f32> {
      %r = tg.mse_loss %a, %b : tensor<2x1xf32>, tensor<2x1xf32> -> tensor<f32>
      return %r : tensor<f32>
    })",
                    {t({2, 1}, {1, 2}), t({2, 1}, {0, 0})}),
              {}, {2.5});
  double s = std::sqrt(1.5); // (x - 2) / sqrt(2/3) for x = 1, 2, 3
  Tensor x = t({2, 3}, {1, 2, 3, 5, 5, 5}, DType::F64);
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
      %r = tg.layer_norm %x {eps = 1.0e-30 : f64} : tensor<2x3xf64>
      return %r : tensor<2x3xf64>
    })",
                    {x}, true),
              {2, 3}, {-s, 0, s, 0, 0, 0}, 1e-12);
  checkTensor(
      h.run(R"(
    func.func @f(%x: tensor<2x3xf64>, %g: tensor<3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
      %r = tg.layer_norm %x scale(%g : tensor<3xf64>) bias(%b : tensor<3xf64>) : tensor<2x3xf64>
      return %r : tensor<2x3xf64>
    })",
            {x, t({3}, {1, 2, 3}, DType::F64), t({3}, {0, 1, 0}, DType::F64)}),
      {2, 3}, {-s, 1, 3 * s, 0, 1, 0}, 1e-4);
  double rms = std::sqrt(12.5);
  checkTensor(
      h.run(R"(
    func.func @f(%x: tensor<1x2xf64>, %g: tensor<2xf64>) -> tensor<1x2xf64> {
      %r = tg.rms_norm %x scale(%g : tensor<2xf64>) {eps = 1.0e-30 : f64} : tensor<1x2xf64>
      return %r : tensor<1x2xf64>
    })",
            {t({1, 2}, {3, 4}, DType::F64), t({2}, {1, -2}, DType::F64)}),
      {1, 2}, {3 / rms, -8 / rms}, 1e-12);
}

TEST_CASE("data movement", "[reference][movement]") {
  Harness h;
  Tensor table = t({3, 2}, {0, 1, 10, 11, 20, 21});
  checkTensor(h.run(R"(
    func.func @f(%t: tensor<3x2xf32>, %i: tensor<2x2xi64>) -> tensor<2x2x2xf32> {
      %r = tg.embedding %t, %i : tensor<3x2xf32>, tensor<2x2xi64> -> tensor<2x2x2xf32>
      return %r : tensor<2x2x2xf32>
    })",
                    {table, t({2, 2}, {-1, 1, 5, 2}, DType::I64)}),
              {2, 2, 2}, {0, 1, 10, 11, 20, 21, 20, 21});
  Tensor x = t({2, 3}, {1, 2, 3, 4, 5, 6});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<3x1x2xf32> {
      %r = tg.reshape %x : tensor<2x3xf32> to tensor<3x1x2xf32>
      return %r : tensor<3x1x2xf32>
    })",
                    {x}),
              {3, 1, 2}, {1, 2, 3, 4, 5, 6});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
      %r = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
      return %r : tensor<3x2xf32>
    })",
                    {x}),
              {3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor y = t({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x1x3xf32>) -> tensor<3x2x1xf32> {
      %r = tg.transpose %x perm = [2, 0, 1] : tensor<2x1x3xf32> -> tensor<3x2x1xf32>
      return %r : tensor<3x2x1xf32>
    })",
                    {y}),
              {3, 2, 1}, {1, 4, 2, 5, 3, 6});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x1xf32>) -> tensor<2x2x3xf32> {
      %r = tg.broadcast_to %x : tensor<2x1xf32> to tensor<2x2x3xf32>
      return %r : tensor<2x2x3xf32>
    })",
                    {t({2, 1}, {7, 8})}),
              {2, 2, 3}, {7, 7, 7, 8, 8, 8, 7, 7, 7, 8, 8, 8});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<1x2xf32> {
      %r = tg.slice %x start [1, 0] limit [2, 3] step [1, 2] : tensor<2x3xf32> -> tensor<1x2xf32>
      return %r : tensor<1x2xf32>
    })",
                    {x}),
              {1, 2}, {4, 6});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf32>, %y: tensor<2x1xf32>) -> tensor<2x4xf32> {
      %r = tg.concat %y, %x axis = 1 : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x4xf32>
      return %r : tensor<2x4xf32>
    })",
                    {x, t({2, 1}, {-1, -2})}),
              {2, 4}, {-1, 1, 2, 3, -2, 4, 5, 6});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
      %r = tg.concat %x, %x axis = 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
      return %r : tensor<4x3xf32>
    })",
                    {x}),
              {4, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  checkTensor(h.run(R"(
    func.func @f(%i: tensor<3xi32>) -> tensor<3x3xf32> {
      %r = tg.one_hot %i : tensor<3xi32> -> tensor<3x3xf32>
      return %r : tensor<3x3xf32>
    })",
                    {t({3}, {2, -100, 0}, DType::I32)}),
              {3, 3}, {0, 0, 1, 0, 0, 0, 1, 0, 0});
}

TEST_CASE("causal_mask fills the strict upper triangle",
          "[reference][masking]") {
  Harness h;
  Tensor x = Tensor::filled({2, 2, 3}, DType::F32, 1);
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x2x3xf32>) -> tensor<2x2x3xf32> {
      %r = tg.causal_mask %x : tensor<2x2x3xf32>
      return %r : tensor<2x2x3xf32>
    })",
                    {x}),
              {2, 2, 3},
              {1, -kInf, -kInf, 1, 1, -kInf, 1, -kInf, -kInf, 1, 1, -kInf});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
      %r = tg.causal_mask %x {value = -5.0 : f64} : tensor<3x2xf32>
      return %r : tensor<3x2xf32>
    })",
                    {Tensor::filled({3, 2}, DType::F32, 1)}),
              {3, 2}, {1, -5, 1, 1, 1, 1});
}

TEST_CASE("dropout follows the Philox mapping", "[reference][random]") {
  Harness h;
  const char *ir = R"(
    func.func @f(%x: tensor<4x50xf64>, %s: tensor<i64>) -> (tensor<4x50xf64>, tensor<4x50xf64>) {
      %a = tg.dropout %x, %s {p = 0.25 : f64, stream = 3 : i64} : tensor<4x50xf64>, tensor<i64>
      %b = tg.dropout %x, %s {p = 0.0 : f64, stream = 4 : i64} : tensor<4x50xf64>, tensor<i64>
      return %a, %b : tensor<4x50xf64>, tensor<4x50xf64>
    })";
  h.parse(ir);
  Tensor x = Tensor::random({4, 50}, DType::F64, 5);
  Tensor seed = t({}, {-7}, DType::I64);
  auto results = h.eval({x, seed});
  REQUIRE(mlir::succeeded(results));
  const Tensor &a = (*results)[0];
  int kept = 0;
  for (int64_t i = 0; i < 200; ++i) {
    bool keep =
        tgc::dropoutKeep(static_cast<uint64_t>(int64_t(-7)), 3, i, 0.25);
    kept += keep;
    CHECK(a.data[i] == (keep ? x.data[i] * (1.0 / 0.75) : 0.0));
  }
  CHECK(kept > 120);
  CHECK(kept < 180);
  CHECK((*results)[1].data == x.data);
  // The same seed gives the same mask.
  auto again = h.eval({x, seed});
  REQUIRE(mlir::succeeded(again));
  CHECK((*again)[0].data == a.data);
}

TEST_CASE("conv2d: padding, stride, dilation and groups", "[reference][conv]") {
  Harness h;
  Tensor x = t({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor ones = Tensor::filled({1, 1, 2, 2}, DType::F32, 1);
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
      %r = tg.conv2d %x, %w : tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
      return %r : tensor<1x1x2x2xf32>
    })",
                    {x, ones}),
              {1, 1, 2, 2}, {12, 16, 24, 28});
  // Padding 1, stride 2: windows at rows/cols -1 and 1.
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
      %r = tg.conv2d %x, %w {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
      return %r : tensor<1x1x2x2xf32>
    })",
                    {x, ones}),
              {1, 1, 2, 2}, {1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9});
  // Dilation 2: the four corners; weights tell them apart.
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32> {
      %r = tg.conv2d %x, %w {dilation = array<i64: 2, 2>} : tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x1x1xf32>
      return %r : tensor<1x1x1x1xf32>
    })",
                    {x, t({1, 1, 2, 2}, {1, 10, 100, 1000})}),
              {1, 1, 1, 1}, {1 + 30 + 700 + 9000});
  // Groups 2: 4 input channels, 4 output channels (2 per group), 1x1 kernel;
  // output o sees channels 2*(o/2) and 2*(o/2)+1.
  Tensor xg = t({1, 4, 1, 1}, {1, 2, 3, 4});
  Tensor wg = t({4, 2, 1, 1}, {1, 0, 0, 1, 1, 1, 10, 100});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x4x1x1xf32>, %w: tensor<4x2x1x1xf32>) -> tensor<1x4x1x1xf32> {
      %r = tg.conv2d %x, %w {groups = 2 : i64} : tensor<1x4x1x1xf32>, tensor<4x2x1x1xf32> -> tensor<1x4x1x1xf32>
      return %r : tensor<1x4x1x1xf32>
    })",
                    {xg, wg}),
              {1, 4, 1, 1}, {1, 2, 7, 430});
  // Batch 2 x 2 input channels into 1 output channel.
  Tensor xb = t({2, 2, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<2x2x1x2xf32>, %w: tensor<1x2x1x1xf32>) -> tensor<2x1x1x2xf32> {
      %r = tg.conv2d %x, %w : tensor<2x2x1x2xf32>, tensor<1x2x1x1xf32> -> tensor<2x1x1x2xf32>
      return %r : tensor<2x1x1x2xf32>
    })",
                    {xb, t({1, 2, 1, 1}, {1, -1})}),
              {2, 1, 1, 2}, {-2, -2, -2, -2});
}

TEST_CASE("max pooling ignores padding, average pooling counts it by default",
          "[reference][pool]") {
  Harness h;
  Tensor x = t({1, 1, 2, 2}, {-1, -2, -3, -4});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x3x3xf32> {
      %r = tg.max_pool2d %x kernel = [2, 2] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<1x1x2x2xf32> -> tensor<1x1x3x3xf32>
      return %r : tensor<1x1x3x3xf32>
    })",
                    {x}),
              {1, 1, 3, 3}, {-1, -1, -2, -1, -1, -2, -3, -3, -4});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x3x3xf32> {
      %r = tg.avg_pool2d %x kernel = [2, 2] stride = [1, 1] {padding = array<i64: 1, 1>, count_include_pad = false} : tensor<1x1x2x2xf32> -> tensor<1x1x3x3xf32>
      return %r : tensor<1x1x3x3xf32>
    })",
                    {x}),
              {1, 1, 3, 3}, {-1, -1.5, -2, -2, -2.5, -3, -3, -3.5, -4});
  // PyTorch's default: padded zeros count, every window divides by 4.
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x3x3xf32> {
      %r = tg.avg_pool2d %x kernel = [2, 2] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<1x1x2x2xf32> -> tensor<1x1x3x3xf32>
      return %r : tensor<1x1x3x3xf32>
    })",
                    {x}),
              {1, 1, 3, 3},
              {-0.25, -0.75, -0.5, -1, -2.5, -1.5, -0.75, -1.75, -1});
  Tensor y = t({1, 2, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 9});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x1x2xf32> {
      %r = tg.max_pool2d %x kernel = [2, 2] stride = [2, 2] : tensor<1x2x2x4xf32> -> tensor<1x2x1x2xf32>
      return %r : tensor<1x2x1x2xf32>
    })",
                    {y}),
              {1, 2, 1, 2}, {6, 8, 0, 9});
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x1x2xf32> {
      %r = tg.avg_pool2d %x kernel = [2, 2] stride = [2, 2] : tensor<1x2x2x4xf32> -> tensor<1x2x1x2xf32>
      return %r : tensor<1x2x1x2xf32>
    })",
                    {y}),
              {1, 2, 1, 2}, {3.5, 5.5, 0, 2.25});
}

TEST_CASE("func.call and scf.for with iter_args", "[reference][structure]") {
  Harness h;
  Tensor r = h.run(R"(
    func.func @double(%x: tensor<2xf32>) -> tensor<2xf32> {
      %r = tg.add %x, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      return %r : tensor<2xf32>
    }
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %zero = tg.constant dense<0.0> : tensor<2xf32>
      %acc = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %zero) -> (tensor<2xf32>) {
        %d = func.call @double(%x) : (tensor<2xf32>) -> tensor<2xf32>
        %n = tg.add %a, %d : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
        scf.yield %n : tensor<2xf32>
      }
      return %acc : tensor<2xf32>
    })",
                   {t({2}, {1, -0.5})});
  checkTensor(r, {2}, {8, -4});
  // A loop that runs zero times returns its initial values.
  Tensor z = h.run(R"(
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %c3 = arith.constant 3 : index
      %c1 = arith.constant 1 : index
      %acc = scf.for %i = %c3 to %c1 step %c1 iter_args(%a = %x) -> (tensor<2xf32>) {
        %n = tg.add %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
        scf.yield %n : tensor<2xf32>
      }
      return %acc : tensor<2xf32>
    })",
                   {t({2}, {1, 2})});
  checkTensor(z, {2}, {1, 2});
}

TEST_CASE("errors are diagnostics, not crashes", "[reference][errors]") {
  Harness h;
  h.parse(R"(
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %r = arith.addf %x, %x : tensor<2xf32>
      return %r : tensor<2xf32>
    })");
  CHECK(mlir::failed(h.eval({t({2}, {1, 2})})));
  CHECK_THAT(h.diagnostics, Catch::Contains("unsupported op 'arith.addf'"));

  h.diagnostics.clear();
  CHECK(mlir::failed(h.eval({t({3}, {1, 2, 3})})));
  CHECK_THAT(h.diagnostics,
             Catch::Contains("argument #0 has type tensor<3xf32>, "
                             "expected 'tensor<2xf32>'"));
  h.diagnostics.clear();
  Tensor shortData = t({2}, {1, 2});
  shortData.data.pop_back();
  CHECK(mlir::failed(h.eval({shortData})));
  CHECK_THAT(h.diagnostics, Catch::Contains("holds 1 values"));
  h.diagnostics.clear();
  CHECK(mlir::failed(h.eval({})));
  CHECK_THAT(h.diagnostics, Catch::Contains("takes 1 arguments, got 0"));

  h.diagnostics.clear();
  h.parse(R"(
    func.func @f(%x: tensor<2xi32>) -> tensor<2xi32> {
      %r = tg.div %x, %x : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
      return %r : tensor<2xi32>
    })");
  CHECK(mlir::failed(h.eval({t({2}, {1, 0}, DType::I32)})));
  CHECK_THAT(h.diagnostics, Catch::Contains("integer division by zero"));

  // IR that was never verified is verified before it is interpreted.
  h.diagnostics.clear();
  h.module = mlir::parseSourceString<mlir::ModuleOp>(
      R"(
    func.func @f(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
      %r = tg.matmul %x, %x : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x2xf32>
      return %r : tensor<2x2xf32>
    })",
      mlir::ParserConfig(&h.ctx, /*verifyAfterParse=*/false));
  REQUIRE(h.module);
  CHECK(mlir::failed(h.eval({t({2, 3}, {1, 2, 3, 4, 5, 6})})));
  CHECK_THAT(h.diagnostics, Catch::Contains("tg.matmul"));

  h.diagnostics.clear();
  h.parse(R"(
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %r = func.call @f(%x) : (tensor<2xf32>) -> tensor<2xf32>
      return %r : tensor<2xf32>
    })");
  CHECK(mlir::failed(h.eval({t({2}, {1, 0})})));
  CHECK_THAT(h.diagnostics, Catch::Contains("recursion"));
}
