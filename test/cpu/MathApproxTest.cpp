//===- MathApproxTest.cpp - polynomial math and vector loops ----*- C++ -*-===//
//
// tg-approximate-math replaces libm's tanhf, expf, logf and erff by inline
// polynomials: over a dense sweep of f32 inputs (every 1024th bit pattern
// of each sign, and the special values) the JIT's results are compared with
// the exact function (double precision, rounded once), the largest error is
// printed in ulp and relative terms next to libm's own, and bounded.
// tg-vectorize-elementwise must not change a single bit: a fused step's
// row reductions, GELU and losses give the same bytes with and without it,
// at 8 and 16 lanes, and match the reference evaluator.
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace cputest;

namespace {

/// Position of `f` among the floats, so that the difference of two
/// positions is their distance in ulp (-0 and +0 are both 0).
int64_t ordinal(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i < 0 ? -int64_t(i & 0x7fffffff) : int64_t(i);
}

/// Every 1024th positive float (8192 per binade, subnormals included) with
/// its negation, then the values at the edges.
std::vector<float> sweep() {
  std::vector<float> xs;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 1u << 10) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    xs.push_back(x);
    xs.push_back(-x);
  }
  float inf = std::numeric_limits<float>::infinity();
  for (float x : {inf, -inf, std::numeric_limits<float>::quiet_NaN(), FLT_MAX,
                  -FLT_MAX, FLT_MIN, -FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN,
                  88.72f, 88.73f, -87.33f, -103.9f, -104.0f, 1.0f, -1.0f,
                  9.0f, -9.0f, 1e-4f, -1e-4f})
    xs.push_back(x);
  return xs;
}

/// The largest error of `got` against the exact function over `xs`.
struct Error {
  double ulp = 0, rel = 0; ///< results of normal magnitude
  float worst = 0;         ///< the input of the largest ulp error
  double subnormalAbs = 0; ///< results below FLT_MIN: absolute error
  int64_t specials = 0;    ///< NaN or infinity where the other is not
};

template <typename Got>
Error measure(const std::vector<float> &xs, double (*exact)(double), Got got) {
  Error e;
  for (size_t i = 0; i < xs.size(); ++i) {
    double ref = exact(double(xs[i]));
    float want = float(ref), have = got(i);
    if (std::isnan(want) || std::isinf(want) || std::isnan(have) ||
        std::isinf(have)) {
      bool same = std::isnan(want) ? std::isnan(have) : have == want;
      e.specials += !same;
      continue;
    }
    if (std::fabs(want) < FLT_MIN) {
      e.subnormalAbs = std::max(e.subnormalAbs, std::fabs(double(have) - ref));
      continue;
    }
    double ulp = double(std::llabs(ordinal(have) - ordinal(want)));
    if (ulp > e.ulp) {
      e.ulp = ulp;
      e.worst = xs[i];
    }
    e.rel = std::max(e.rel, std::fabs(double(have) - ref) / std::fabs(ref));
  }
  return e;
}

double erfExact(double x) { return std::erf(x); }
double expExact(double x) { return std::exp(x); }
double logExact(double x) { return std::log(x); }
double tanhExact(double x) { return std::tanh(x); }

} // namespace

TEST_CASE("polynomial tanh, exp, log and erf stay within their bounds",
          "[cpu][math]") {
  struct Case {
    const char *op;
    double (*exact)(double);
    float (*libm)(float);
    double maxUlp; ///< the bound stated in docs/cpu-backend.md
  } cases[] = {{"tanh", tanhExact, tanhf, 4},
               {"exp", expExact, expf, 5},
               {"log", logExact, logf, 2},
               {"erf", erfExact, erff, 4}};
  std::vector<float> xs = sweep();
  HostTensor in = HostTensor::zeros({int64_t(xs.size())}, HostType::F32);
  std::memcpy(in.data<float>(), xs.data(), xs.size() * sizeof(float));
  std::string t = "tensor<" + std::to_string(xs.size()) + "xf32>";
  for (const Case &c : cases) {
    DYNAMIC_SECTION(c.op) {
      Harness h;
      h.parse(fn("%a: " + t, t, std::string("  %r = tg.") + c.op + " %a : " + t));
      auto jit = h.compile();
      std::string error;
      auto out = jit->run("f", {in}, &error);
      INFO(error);
      REQUIRE(mlir::succeeded(out));
      const float *y = (*out)[0].data<float>();
      Error ours = measure(xs, c.exact, [&](size_t i) { return y[i]; });
      Error libm = measure(xs, c.exact, [&](size_t i) { return c.libm(xs[i]); });
      std::printf("%-4s over %zu inputs: polynomial max %.0f ulp (at %.9g), "
                  "rel %.3g, subnormal abs %.3g, special mismatches %lld; "
                  "libm max %.0f ulp, rel %.3g\n",
                  c.op, xs.size(), ours.ulp, ours.worst, ours.rel,
                  ours.subnormalAbs, (long long)ours.specials, libm.ulp,
                  libm.rel);
      CHECK(ours.ulp <= c.maxUlp);
      CHECK(ours.subnormalAbs <= FLT_MIN);
      CHECK(ours.specials == 0);
    }
  }
}

TEST_CASE("vector loops give the scalar loops' bits", "[cpu][math][vector]") {
  // A fused forward: GELU (tanh), softmax and log_softmax rows of 37 (four
  // vectors of 8 and a masked 5, or two of 16 and a masked 5), cross-entropy,
  // a column sum, and rows of 4 and 3 (one vector each).
  std::string model = R"(
func.func @f(%a: tensor<5x37xf32>, %b: tensor<37xf32>, %l: tensor<5xi64>,
             %c: tensor<6x4xf32>, %d: tensor<2x3xf32>)
    -> (tensor<5x37xf32>, tensor<5x37xf32>, tensor<f32>, tensor<37xf32>,
        tensor<6x4xf32>, tensor<2x3xf32>) {
  %0 = tg.add %a, %b : tensor<5x37xf32>, tensor<37xf32> -> tensor<5x37xf32>
  %1 = tg.gelu %0 approximate = tanh : tensor<5x37xf32>
  %2 = tg.softmax %1 axis = 1 : tensor<5x37xf32>
  %3 = tg.log_softmax %0 axis = 1 : tensor<5x37xf32>
  %4 = tg.cross_entropy %0, %l : tensor<5x37xf32>, tensor<5xi64> -> tensor<f32>
  %5 = tg.sum %1 axes = [0] : tensor<5x37xf32> -> tensor<37xf32>
  %6 = tg.softmax %c axis = 1 : tensor<6x4xf32>
  %7 = tg.erf %d : tensor<2x3xf32>
  %8 = tg.exp %7 : tensor<2x3xf32>
  return %2, %3, %4, %5, %6, %8 : tensor<5x37xf32>, tensor<5x37xf32>,
      tensor<f32>, tensor<37xf32>, tensor<6x4xf32>, tensor<2x3xf32>
}
)";
  Harness h;
  h.parse(model);
  mlir::PassManager pm(&h.ctx);
  pm.addPass(mlir::tg::createDecomposeCompositesPass());
  pm.addPass(mlir::tg::createFusePass());
  {
    INFO(h.diagnostics);
    REQUIRE(mlir::succeeded(pm.run(*h.module)));
  }
  std::vector<Tensor> args = h.randomArgs({{0, {-6, 6}}, {2, {0, 37}}});
  std::vector<Tensor> want = h.reference(args);

  mlir::tg::cpu::CpuPipelineOptions scalar;
  scalar.vectorElementwise = false;
  std::vector<HostTensor> base = h.jitRun(*h.compile(scalar), args);
  Harness::compare(base, want, 5);
  for (int64_t lanes : {8, 16}) {
    DYNAMIC_SECTION(lanes << " lanes") {
      mlir::tg::cpu::CpuPipelineOptions vector;
      vector.vectorLanes = lanes;
      std::vector<HostTensor> got = h.jitRun(*h.compile(vector), args);
      REQUIRE(got.size() == base.size());
      for (size_t r = 0; r < got.size(); ++r) {
        INFO("result " << r);
        CHECK(got[r].bytes == base[r].bytes);
      }
    }
  }
}
