//===- TrainStepTest.cpp - training steps against closed forms --*- C++ -*-===//
//
// Runs @train_step and @init built by tg-build-train-step through the
// reference evaluator in float64 and compares them with the optimizers'
// update rules written out by hand, and accumulated micro-batches with one
// full batch.
//
//===----------------------------------------------------------------------===//

#include "test/autodiff/GradCheck.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"

#include <cmath>

using namespace mlir;
using namespace tgtest;

namespace {

/// A linear model in f64 (so that constants such as lr are exact),
/// loss = sum(x * w): its gradient is sum over rows of x,
/// whatever w is, so the updates have closed forms.
std::string linearModel(const std::string &train) {
  return "module attributes {tg.train = " + train + R"(} {
func.func @forward(%x: tensor<2x3xf64> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<3xf64> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f64> {tg.role = #tg.role<loss>}) {
  %0 = tg.mul %x, %w : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
  %1 = tg.sum %0 axes = [0, 1] : tensor<2x3xf64> -> tensor<f64>
  return %1 : tensor<f64>
}
})";
}

/// Parses `ir` into `h` and runs tg-build-train-step on it.
void buildStep(Harness &h, const std::string &ir) {
  h.parse(ir);
  PassManager pm(&h.ctx);
  pm.addPass(tg::createBuildTrainStepPass());
  INFO(h.diagnostics);
  REQUIRE(succeeded(pm.run(*h.module)));
}

/// Runs `steps` train steps of the linear model from w0 and returns the
/// parameter after each step.
std::vector<std::vector<double>> runLinear(const std::string &train,
                                           int slots, int steps,
                                           const std::vector<double> &w0,
                                           const Tensor &x) {
  Harness h;
  buildStep(h, linearModel(train));
  Tensor w = Tensor::fromValues({3}, DType::F64, w0);
  SmallVector<Tensor> state(slots, Tensor::filled({3}, DType::F64, 0));
  Tensor step = Tensor::filled({}, DType::I64, 0);
  std::vector<std::vector<double>> out;
  for (int s = 0; s < steps; ++s) {
    SmallVector<Tensor> args{w};
    llvm::append_range(args, state);
    args.push_back(step);
    args.push_back(x);
    SmallVector<Tensor> r = evalF64(h, "train_step", args);
    w = r[1];
    for (int i = 0; i < slots; ++i)
      state[i] = r[2 + i];
    step = r[2 + slots];
    CHECK(step.data[0] == s + 1);
    out.push_back(w.data);
  }
  return out;
}

void checkClose(const std::vector<double> &got, const std::vector<double> &want,
                double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

const std::vector<double> w0 = {0.5, -0.25, 1.0};

Tensor xData() {
  return Tensor::fromValues({2, 3}, DType::F64, {0.1, -0.4, 0.7, 0.3, 0.2, -0.5});
}

/// The gradient of the linear model: the column sums of x.
std::vector<double> gradOf(const Tensor &x) {
  return {x.data[0] + x.data[3], x.data[1] + x.data[4], x.data[2] + x.data[5]};
}

} // namespace

TEST_CASE("sgd with weight decay", "[train]") {
  Tensor x = xData();
  auto g = gradOf(x);
  double lr = 0.1, wd = 0.05;
  auto got = runLinear("{optimizer = {kind = \"sgd\", lr = 0.1 : f64, "
                       "weight_decay = 0.05 : f64}}",
                       0, 3, w0, x);
  std::vector<double> w = w0;
  for (int s = 0; s < 3; ++s) {
    for (int i = 0; i < 3; ++i)
      w[i] -= lr * (g[i] + wd * w[i]);
    checkClose(got[s], w);
  }
}

TEST_CASE("momentum, plain and Nesterov", "[train]") {
  Tensor x = xData();
  auto g = gradOf(x);
  for (int nesterov = 0; nesterov < 2; ++nesterov) {
    double lr = 0.05, mu = 0.9;
    auto got = runLinear("{optimizer = {kind = \"momentum\", lr = 0.05 : f64, "
                         "momentum = 0.9 : f64, nesterov = " +
                             std::to_string(nesterov) + " : i64}}",
                         1, 3, w0, x);
    std::vector<double> w = w0, buf(3, 0.0);
    for (int s = 0; s < 3; ++s) {
      for (int i = 0; i < 3; ++i) {
        buf[i] = mu * buf[i] + g[i];
        w[i] -= lr * (nesterov ? g[i] + mu * buf[i] : buf[i]);
      }
      checkClose(got[s], w);
    }
  }
}

TEST_CASE("adam and adamw with bias correction", "[train]") {
  Tensor x = xData();
  auto g0 = gradOf(x);
  for (bool decoupled : {false, true}) {
    double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-6, wd = 0.1;
    std::string kind = decoupled ? "adamw" : "adam";
    auto got = runLinear("{optimizer = {kind = \"" + kind +
                             "\", lr = 0.01 : f64, beta1 = 0.8 : f64, beta2 = "
                             "0.95 : f64, eps = 1.0e-6 : f64, weight_decay = "
                             "0.1 : f64}}",
                         2, 3, w0, x);
    std::vector<double> w = w0, m(3, 0.0), v(3, 0.0);
    for (int s = 0; s < 3; ++s) {
      int t = s + 1;
      for (int i = 0; i < 3; ++i) {
        double g = g0[i];
        if (decoupled)
          w[i] *= 1 - lr * wd;
        else
          g += wd * w[i];
        m[i] = b1 * m[i] + (1 - b1) * g;
        v[i] = b2 * v[i] + (1 - b2) * g * g;
        double mhat = m[i] / (1 - std::pow(b1, t));
        double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(b2, t)) + eps;
        w[i] -= lr * mhat / denom;
      }
      checkClose(got[s], w, 1e-10);
    }
  }
}

TEST_CASE("learning-rate schedules and clipping", "[train]") {
  Tensor x = xData();
  auto g = gradOf(x);
  double norm = std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
  SECTION("cosine after a linear warm-up, clipped gradients") {
    double lr = 0.2, minLr = 0.01, clip = 0.3;
    int warmup = 2, total = 6;
    auto got = runLinear("{clip_grad_norm = 0.3 : f64, optimizer = {kind = "
                         "\"sgd\", lr = 0.2 : f64}, schedule = {kind = "
                         "\"cosine\", steps = 6 : i64, warmup = 2 : i64, "
                         "min_lr = 0.01 : f64}}",
                         0, 6, w0, x);
    double scale = std::min(1.0, clip / (norm + 1e-6));
    std::vector<double> w = w0;
    for (int s = 0; s < 6; ++s) {
      double rate;
      if (s < warmup) {
        rate = lr * std::min(1.0, (s + 1.0) / warmup);
      } else {
        double p = std::min(1.0, double(s - warmup) / (total - warmup));
        rate = minLr + 0.5 * (lr - minLr) * (1 + std::cos(M_PI * p));
      }
      for (int i = 0; i < 3; ++i)
        w[i] -= rate * g[i] * scale;
      checkClose(got[s], w, 1e-10);
    }
  }
  SECTION("linear warm-up then constant") {
    auto got = runLinear("{optimizer = {kind = \"sgd\", lr = 0.3 : f64}, "
                         "schedule = {kind = \"warmup\", steps = 2 : i64}}",
                         0, 3, w0, x);
    std::vector<double> w = w0;
    for (int s = 0; s < 3; ++s) {
      double rate = 0.3 * std::min(1.0, (s + 1.0) / 2);
      for (int i = 0; i < 3; ++i)
        w[i] -= rate * g[i];
      checkClose(got[s], w);
    }
  }
}

/// A small nonlinear regression model at micro-batch `rows`.
static std::string mlpModel(int rows, int accumulate) {
  std::string r = std::to_string(rows);
  return "module attributes {tg.train = {accumulate = " +
         std::to_string(accumulate) +
         R"( : i64, optimizer = {kind = "adam", lr = 0.01 : f64}}} {
func.func @forward(%x: tensor<)" + r + R"(x4xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %t: tensor<)" + r + R"(x2xf32> {tg.name = "t", tg.role = #tg.role<input>},
                   %w: tensor<4x2xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>},
                   %b: tensor<2xf32> {tg.name = "b", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<)" + r + R"(x4xf32>, tensor<4x2xf32> -> tensor<)" + r + R"(x2xf32>
  %1 = tg.add %0, %b : tensor<)" + r + R"(x2xf32>, tensor<2xf32> -> tensor<)" + r + R"(x2xf32>
  %2 = tg.tanh %1 : tensor<)" + r + R"(x2xf32>
  %3 = tg.mse_loss %2, %t : tensor<)" + r + R"(x2xf32>, tensor<)" + r + R"(x2xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
})";
}

TEST_CASE("K accumulated micro-batches equal one full batch", "[train]") {
  const int k = 3, rows = 2;
  Tensor x = Tensor::random({k * rows, 4}, DType::F32, 7, 0);
  Tensor t = Tensor::random({k * rows, 2}, DType::F32, 7, 1);
  Tensor w = Tensor::random({4, 2}, DType::F32, 7, 2);
  Tensor b = Tensor::random({2}, DType::F32, 7, 3);
  Tensor zw = Tensor::filled({4, 2}, DType::F32, 0);
  Tensor zb = Tensor::filled({2}, DType::F32, 0);
  Tensor step = Tensor::filled({}, DType::I64, 0);
  SmallVector<Tensor> args{w, b, zw, zb, zw, zb, step, x, t};

  Harness accumulated, full;
  buildStep(accumulated, mlpModel(rows, k));
  buildStep(full, mlpModel(k * rows, 1));
  SmallVector<Tensor> a = evalF64(accumulated, "train_step", args);
  SmallVector<Tensor> f = evalF64(full, "train_step", args);
  REQUIRE(a.size() == f.size());
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    INFO("result #" << i);
    checkClose(a[i].data, f[i].data, 1e-9);
  }
}

/// mlpModel at precision = bf16 through tg-assign-precision and
/// tg-build-train-step.
static void buildMixedStep(Harness &h, int rows, int accumulate) {
  h.parse(mlpModel(rows, accumulate));
  PassManager pm(&h.ctx);
  tg::AssignPrecisionPassOptions assign;
  assign.precision = "bf16";
  pm.addPass(tg::createAssignPrecisionPass(assign));
  pm.addPass(tg::createBuildTrainStepPass());
  INFO(h.diagnostics);
  REQUIRE(succeeded(pm.run(*h.module)));
}

/// How many compute-copy casts one call of @train_step executes: its own,
/// plus those of each function it calls, times the micro-batch loop's trip
/// count for a call inside the loop.
static int64_t copiesPerStep(ModuleOp module, int64_t accumulate) {
  auto isCopy = [](Operation *op) {
    auto rule = tg::dialect(op->getContext()).getPrecisionAttrHelper().getAttr(op);
    return isa<tg::CastOp>(op) && rule && rule.getValue() == tg::kComputeCopyRule;
  };
  int64_t n = 0;
  module.lookupSymbol<func::FuncOp>("train_step").walk([&](Operation *op) {
    if (isCopy(op))
      ++n;
    auto call = dyn_cast<func::CallOp>(op);
    if (!call)
      return;
    int64_t calls = op->getParentOfType<scf::ForOp>() ? accumulate : 1;
    module.lookupSymbol<func::FuncOp>(call.getCallee()).walk([&](Operation *c) {
      n += isCopy(c) ? calls : 0;
    });
  });
  return n;
}

TEST_CASE("bf16: one compute copy per parameter per step, whatever "
          "accumulate is, and the same numbers",
          "[train][precision]") {
  // Two identical micro-batches average to exactly one (0 + g + g = 2g and
  // 2g / 2 = g are exact), so the accumulated step, whose copies are made
  // once before the loop, must be bit-identical to the step on one
  // micro-batch, whose gradient function makes them itself.
  const int k = 2, rows = 2;
  Tensor x1 = Tensor::random({rows, 4}, DType::F32, 7, 0);
  Tensor t1 = Tensor::random({rows, 2}, DType::F32, 7, 1);
  Tensor x = Tensor::filled({k * rows, 4}, DType::F32, 0);
  Tensor t = Tensor::filled({k * rows, 2}, DType::F32, 0);
  for (int i = 0; i < k; ++i) {
    std::copy(x1.data.begin(), x1.data.end(), x.data.begin() + i * x1.data.size());
    std::copy(t1.data.begin(), t1.data.end(), t.data.begin() + i * t1.data.size());
  }
  Tensor w = Tensor::random({4, 2}, DType::F32, 7, 2);
  Tensor b = Tensor::random({2}, DType::F32, 7, 3);
  Tensor zw = Tensor::filled({4, 2}, DType::F32, 0);
  Tensor zb = Tensor::filled({2}, DType::F32, 0);
  Tensor step = Tensor::filled({}, DType::I64, 0);

  Harness accumulated, one;
  buildMixedStep(accumulated, rows, k);
  buildMixedStep(one, rows, 1);
  CHECK(copiesPerStep(*accumulated.module, k) == 2); // w and b
  CHECK(copiesPerStep(*one.module, 1) == 2);
  auto a = accumulated.eval({w, b, zw, zb, zw, zb, step, x, t}, false,
                            "train_step");
  auto o = one.eval({w, b, zw, zb, zw, zb, step, x1, t1}, false, "train_step");
  INFO(accumulated.diagnostics << one.diagnostics);
  REQUIRE(succeeded(a));
  REQUIRE(succeeded(o));
  REQUIRE(a->size() == o->size());
  for (size_t i = 0; i < a->size(); ++i) {
    INFO("result #" << i);
    CHECK((*a)[i].data == (*o)[i].data);
  }
}

TEST_CASE("init is reproducible from its seed", "[train]") {
  Harness h;
  buildStep(h, mlpModel(2, 1));
  auto run = [&](int64_t seed) {
    return evalF64(h, "init", {Tensor::filled({}, DType::I64, double(seed))});
  };
  SmallVector<Tensor> a = run(1), b = run(1), c = run(2);
  REQUIRE(a.size() == 2 + 4 + 1); // w, b; adam state for each; step
  CHECK(a[0].data == b[0].data);
  CHECK(a[0].data != c[0].data);
  double bound = std::sqrt(6.0 / (4 + 2)); // glorot_uniform of [4, 2]
  for (double v : a[0].data)
    CHECK(std::abs(v) <= bound);
  for (size_t i = 1; i < a.size(); ++i)
    for (double v : a[i].data)
      CHECK(v == 0);
}
