//===- BackwardOpsTest.cpp - backward and random ops ------------*- C++ -*-===//
//
// The backward ops (embedding_grad, conv2d_grad_input/weight,
// max/avg_pool2d_grad) by hand and by the adjoint identity
// <f(x), g> = <x, f^T(g)> on random data, tg.random against the Philox
// mapping, and the micro-batch loop of gradient accumulation (scf.for,
// arith index math, tensor.extract_slice).
//
//===----------------------------------------------------------------------===//

#include "EvalTestUtil.h"
#include "codegen/reference/FiniteDiff.h"
#include "tgc/Philox.h"

using namespace tgtest;
using mlir::tg::ref::roundTo;

namespace {
double dot(const Tensor &a, const Tensor &b) {
  REQUIRE(a.data.size() == b.data.size());
  double s = 0;
  for (size_t i = 0; i < a.data.size(); ++i)
    s += a.data[i] * b.data[i];
  return s;
}

Tensor rnd(llvm::ArrayRef<int64_t> shape, uint64_t stream) {
  return Tensor::random(shape, DType::F64, 99, stream);
}

Tensor call(Harness &h, llvm::StringRef fn, llvm::ArrayRef<Tensor> args) {
  auto r = h.eval(args, /*f64=*/true, fn);
  INFO(h.diagnostics);
  REQUIRE(mlir::succeeded(r));
  return (*r)[0];
}
} // namespace

TEST_CASE("cos and sin", "[reference][elementwise]") {
  Harness h;
  Tensor x = t({3}, {0, M_PI / 2, M_PI}, DType::F64);
  h.parse(R"(
    func.func @c(%x: tensor<3xf64>) -> tensor<3xf64> {
      %r = tg.cos %x : tensor<3xf64>
      return %r : tensor<3xf64>
    }
    func.func @s(%x: tensor<3xf64>) -> tensor<3xf64> {
      %r = tg.sin %x : tensor<3xf64>
      return %r : tensor<3xf64>
    })");
  checkTensor(call(h, "c", {x}), {3}, {1, 0, -1}, 1e-12);
  checkTensor(call(h, "s", {x}), {3}, {0, 1, 0}, 1e-12);
}

TEST_CASE("embedding_grad scatter-adds into clamped rows",
          "[reference][backward]") {
  Harness h;
  checkTensor(
      h.run(R"(
    func.func @f(%g: tensor<3x2xf32>, %i: tensor<3xi64>) -> tensor<3x2xf32> {
      %r = tg.embedding_grad %g, %i : tensor<3x2xf32>, tensor<3xi64> -> tensor<3x2xf32>
      return %r : tensor<3x2xf32>
    })",
            {t({3, 2}, {1, 1, 2, 2, 4, 4}), t({3}, {-5, 2, 7}, DType::I64)}),
      {3, 2}, {1, 1, 0, 0, 6, 6});
}

TEST_CASE("conv2d backward ops are the adjoints of conv2d",
          "[reference][backward]") {
  Harness h;
  h.parse(R"(
    func.func @fwd(%x: tensor<2x4x5x6xf64>, %w: tensor<6x2x3x2xf64>) -> tensor<2x6x2x9xf64> {
      %r = tg.conv2d %x, %w {groups = 2 : i64, stride = array<i64: 2, 1>, padding = array<i64: 1, 2>, dilation = array<i64: 2, 1>} : tensor<2x4x5x6xf64>, tensor<6x2x3x2xf64> -> tensor<2x6x2x9xf64>
      return %r : tensor<2x6x2x9xf64>
    }
    func.func @gi(%g: tensor<2x6x2x9xf64>, %w: tensor<6x2x3x2xf64>) -> tensor<2x4x5x6xf64> {
      %r = tg.conv2d_grad_input %g, %w {groups = 2 : i64, stride = array<i64: 2, 1>, padding = array<i64: 1, 2>, dilation = array<i64: 2, 1>} : tensor<2x6x2x9xf64>, tensor<6x2x3x2xf64> -> tensor<2x4x5x6xf64>
      return %r : tensor<2x4x5x6xf64>
    }
    func.func @gw(%x: tensor<2x4x5x6xf64>, %g: tensor<2x6x2x9xf64>) -> tensor<6x2x3x2xf64> {
      %r = tg.conv2d_grad_weight %x, %g {groups = 2 : i64, stride = array<i64: 2, 1>, padding = array<i64: 1, 2>, dilation = array<i64: 2, 1>} : tensor<2x4x5x6xf64>, tensor<2x6x2x9xf64> -> tensor<6x2x3x2xf64>
      return %r : tensor<6x2x3x2xf64>
    })");
  Tensor x = rnd({2, 4, 5, 6}, 1), w = rnd({6, 2, 3, 2}, 2),
         g = rnd({2, 6, 2, 9}, 3);
  double y = dot(call(h, "fwd", {x, w}), g);
  CHECK(dot(x, call(h, "gi", {g, w})) == Approx(y).epsilon(1e-12));
  CHECK(dot(w, call(h, "gw", {x, g})) == Approx(y).epsilon(1e-12));
}

TEST_CASE("pooling backward ops", "[reference][backward]") {
  Harness h;
  // Overlapping windows share the maximum at (0, 1); ties go to the first.
  checkTensor(
      h.run(R"(
    func.func @f(%g: tensor<1x1x1x2xf32>, %x: tensor<1x1x2x3xf32>) -> tensor<1x1x2x3xf32> {
      %r = tg.max_pool2d_grad %g, %x kernel = [2, 2] stride = [1, 1] : tensor<1x1x1x2xf32>, tensor<1x1x2x3xf32>
      return %r : tensor<1x1x2x3xf32>
    })",
            {t({1, 1, 1, 2}, {1, 10}), t({1, 1, 2, 3}, {1, 5, 2, 0, 1, 5})}),
      {1, 1, 2, 3}, {0, 11, 0, 0, 0, 0});
  // By default (PyTorch's count_include_pad) every window divides by 4, so
  // each input position, in 4 windows, gets 4 * 1/4.
  checkTensor(h.run(R"(
    func.func @f(%g: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
      %r = tg.avg_pool2d_grad %g kernel = [2, 2] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
      return %r : tensor<1x1x2x2xf32>
    })",
                    {Tensor::filled({1, 1, 3, 3}, DType::F32, 1)}),
              {1, 1, 2, 2}, {1, 1, 1, 1});
  // Without it padding is not counted: the corner window of a padded 2x2
  // has 1 element.
  checkTensor(h.run(R"(
    func.func @f(%g: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
      %r = tg.avg_pool2d_grad %g kernel = [2, 2] stride = [1, 1] {padding = array<i64: 1, 1>, count_include_pad = false} : tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
      return %r : tensor<1x1x2x2xf32>
    })",
                    {Tensor::filled({1, 1, 3, 3}, DType::F32, 1)}),
              {1, 1, 2, 2},
              {1 + 0.5 + 0.5 + 0.25, 1 + 0.5 + 0.5 + 0.25, 1 + 0.5 + 0.5 + 0.25,
               1 + 0.5 + 0.5 + 0.25});

  h.parse(R"(
    func.func @avg(%x: tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64> {
      %r = tg.avg_pool2d %x kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<1x2x5x5xf64> -> tensor<1x2x3x3xf64>
      return %r : tensor<1x2x3x3xf64>
    }
    func.func @avgT(%g: tensor<1x2x3x3xf64>) -> tensor<1x2x5x5xf64> {
      %r = tg.avg_pool2d_grad %g kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<1x2x3x3xf64> -> tensor<1x2x5x5xf64>
      return %r : tensor<1x2x5x5xf64>
    }
    func.func @max(%x: tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64> {
      %r = tg.max_pool2d %x kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<1x2x5x5xf64> -> tensor<1x2x3x3xf64>
      return %r : tensor<1x2x3x3xf64>
    }
    func.func @maxT(%g: tensor<1x2x3x3xf64>, %x: tensor<1x2x5x5xf64>) -> tensor<1x2x5x5xf64> {
      %r = tg.max_pool2d_grad %g, %x kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} : tensor<1x2x3x3xf64>, tensor<1x2x5x5xf64>
      return %r : tensor<1x2x5x5xf64>
    })");
  Tensor x = rnd({1, 2, 5, 5}, 4), g = rnd({1, 2, 3, 3}, 5);
  CHECK(dot(x, call(h, "avgT", {g})) ==
        Approx(dot(call(h, "avg", {x}), g)).epsilon(1e-12));
  CHECK(dot(x, call(h, "maxT", {g, x})) ==
        Approx(dot(call(h, "max", {x}), g)).epsilon(1e-12));
}

TEST_CASE("tg.random follows the Philox mapping", "[reference][random]") {
  Harness h;
  h.parse(R"(
    func.func @u(%s: tensor<i64>) -> tensor<100x100xf32> {
      %r = tg.random uniform %s {a = 2.0 : f64, b = 4.0 : f64, stream = 5 : i64} : tensor<i64> -> tensor<100x100xf32>
      return %r : tensor<100x100xf32>
    }
    func.func @n(%s: tensor<i64>) -> tensor<100x100xf64> {
      %r = tg.random normal %s {a = 1.0 : f64, b = 2.0 : f64, stream = 6 : i64} : tensor<i64> -> tensor<100x100xf64>
      return %r : tensor<100x100xf64>
    })");
  Tensor seed = t({}, {12345}, DType::I64);
  auto rounded = h.eval({seed}, /*f64=*/false, "u");
  REQUIRE(mlir::succeeded(rounded));
  Tensor u = (*rounded)[0], n = call(h, "n", {seed});
  double su = 0, sn = 0, sn2 = 0;
  for (int64_t i = 0; i < 10000; ++i) {
    CHECK(u.data[i] ==
          roundTo(DType::F32, 2 + 2 * tgc::philoxUniform(12345, 5, i)));
    CHECK(n.data[i] == 1 + 2 * tgc::philoxNormal(12345, 6, i));
    CHECK(u.data[i] >= 2);
    CHECK(u.data[i] <= 4);
    su += u.data[i];
    sn += n.data[i];
    sn2 += (n.data[i] - 1) * (n.data[i] - 1);
  }
  CHECK(su / 10000 == Approx(3).margin(0.03));
  CHECK(sn / 10000 == Approx(1).margin(0.06));
  CHECK(std::sqrt(sn2 / 10000) == Approx(2).margin(0.06));
}

TEST_CASE("micro-batch loop: scf.for, index arithmetic, extract_slice",
          "[reference][structure]") {
  Harness h;
  // Sums the rows of x two at a time, the shape of gradient accumulation.
  Tensor r = h.run(R"(
    func.func @f(%x: tensor<4x3xf32>) -> tensor<3xf32> {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %zero = tg.constant dense<0.0> : tensor<3xf32>
      %acc = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %zero) -> (tensor<3xf32>) {
        %off = arith.muli %i, %c2 : index
        %mb = tensor.extract_slice %x[%off, 0] [2, 3] [1, 1] : tensor<4x3xf32> to tensor<2x3xf32>
        %s = tg.sum %mb axes = [0] : tensor<2x3xf32> -> tensor<3xf32>
        %n = tg.add %a, %s : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
        scf.yield %n : tensor<3xf32>
      }
      return %acc : tensor<3xf32>
    })",
                   {t({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})});
  checkTensor(r, {3}, {22, 26, 30});
  // Rank-reducing, strided slice.
  checkTensor(h.run(R"(
    func.func @f(%x: tensor<4x3xf32>) -> tensor<2xf32> {
      %s = tensor.extract_slice %x[1, 0] [1, 2] [1, 2] : tensor<4x3xf32> to tensor<2xf32>
      return %s : tensor<2xf32>
    })",
                    {t({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})}),
              {2}, {4, 6});
  // An out-of-bounds dynamic offset is an error, not a crash.
  h.parse(R"(
    func.func @f(%x: tensor<4x3xf32>) -> tensor<2x3xf32> {
      %c3 = arith.constant 3 : index
      %s = tensor.extract_slice %x[%c3, 0] [2, 3] [1, 1] : tensor<4x3xf32> to tensor<2x3xf32>
      return %s : tensor<2x3xf32>
    })");
  CHECK(mlir::failed(
      h.eval({t({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})})));
  CHECK_THAT(h.diagnostics, Catch::Contains("out of bounds"));
}

TEST_CASE("finite differences recover known gradients",
          "[reference][finite-diff]") {
  Harness h;
  h.parse(R"(
    func.func @f(%x: tensor<2x3xf32>, %y: tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>) {
      %l = tg.cross_entropy %x, %y : tensor<2x3xf32>, tensor<2xi64> -> tensor<f32>
      %p = tg.softmax %x axis = 1 : tensor<2x3xf32>
      return %l, %p : tensor<f32>, tensor<2x3xf32>
    })");
  auto fn = h.module->lookupSymbol<mlir::func::FuncOp>("f");
  Tensor x = Tensor::random({2, 3}, DType::F32, 1),
         y = t({2}, {2, 0}, DType::I64);
  auto g = mlir::tg::ref::finiteDifferenceGradient(fn, {x, y}, 0, 0);
  REQUIRE(mlir::succeeded(g));
  auto p = h.eval({x, y}, /*f64=*/true);
  REQUIRE(mlir::succeeded(p));
  // d CE / d logits = (softmax - one_hot) / N.
  for (int64_t i = 0; i < 6; ++i) {
    double onehot = (i == 2 || i == 3) ? 1 : 0;
    CHECK(g->data[i] == Approx(((*p)[1].data[i] - onehot) / 2).margin(1e-8));
  }
  // Integer arguments and non-scalar results are refused with a diagnostic.
  CHECK(
      mlir::failed(mlir::tg::ref::finiteDifferenceGradient(fn, {x, y}, 1, 0)));
  CHECK(
      mlir::failed(mlir::tg::ref::finiteDifferenceGradient(fn, {x, y}, 0, 1)));
  CHECK_THAT(h.diagnostics, Catch::Contains("not a scalar"));
}
