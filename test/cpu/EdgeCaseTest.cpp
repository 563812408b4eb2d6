//===- EdgeCaseTest.cpp - edge inputs through the CPU backend ---*- C++ -*-===//
//
// Every case of test/autodiff/EdgeCases.h differentiated by tg-autodiff,
// JIT-compiled and run in float32: the forward value and every gradient
// must equal the float64 values computed from PyTorch's formulas (NaN where
// they are NaN, the same infinity where infinite), so the CPU backend and
// the reference evaluator agree at the edges too.
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"
#include "test/autodiff/EdgeCases.h"

using namespace cputest;
namespace edge = tgtest::edge;

namespace {
std::vector<double> values(const HostTensor &t) {
  std::vector<double> v;
  for (int64_t i = 0, e = t.numElements(); i < e; ++i)
    v.push_back(t.get(i));
  return v;
}
} // namespace

TEST_CASE("edge inputs match PyTorch on the CPU", "[cpu][edge]") {
  for (const edge::Case &c : edge::cases()) {
    DYNAMIC_SECTION(c.name) {
      Harness h;
      h.parse(edge::moduleOf(c));
      edge::differentiate(h);
      auto jit = h.compile();
      std::vector<HostTensor> got =
          h.jitRun(*jit, edge::argsOf(c), "forward_grad");
      REQUIRE(got.size() >= 2 + c.grads.size());
      // f32 arithmetic and the backend's polynomial transcendentals.
      const double tol = 2e-5;
      edge::checkValues("forward", values(got[1]), c.y, tol);
      for (size_t k = 0; k < c.grads.size(); ++k)
        edge::checkValues("gradient of argument " + std::to_string(k),
                          values(got[2 + k]), c.grads[k], tol);
    }
  }
}

TEST_CASE("the JIT rounds f32 to f16 and bf16 as the reference does: ties, "
          "subnormals, overflow, NaN",
          "[cpu][edge][rounding]") {
  // tg.cast f32 -> f16 / bf16 (arith.truncf on the CPU) against
  // ref::roundTo, compared exactly: the edges of both formats, then a
  // sweep of f32 values over the whole f16 range.
  std::vector<double> xs = {
      65504.0, 65519.0, 65520.0, 1e6, -1e6, 0x1p-24, 0x1p-25, -0x1p-25,
      3 * 0x1p-25, 0x1.ffcp-15, 1 + 0x1p-11, 1 + 3 * 0x1p-11, 0x1.ffp127,
      0x1.fep127, 0x1p-133, 0x1p-134, 1 + 0x1p-8, 1 + 3 * 0x1p-8, -0.0,
      std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(), std::nan("")};
  for (int i = 0; i < 2000; ++i) // 2^-26 .. 2^17, and a fraction of ulps
    xs.push_back((i % 2 ? -1 : 1) *
                 std::ldexp(1.0 + (i * 0.6180339887) - std::floor(i * 0.6180339887),
                            -26 + (i % 43)));
  for (double &x : xs)
    x = double(float(x)); // the inputs are f32
  int64_t n = int64_t(xs.size());
  for (const char *elt : {"f16", "bf16"}) {
    INFO(elt);
    std::string t = "tensor<" + std::to_string(n) + "x";
    Harness h;
    h.parse(fn("%x: " + t + "f32>", t + elt + ">",
               "  %r = tg.cast %x : " + t + "f32> to " + t + elt + ">"));
    Tensor in = Tensor::fromValues({n}, DType::F32, xs);
    std::vector<Tensor> want = h.reference({in});
    auto jit = h.compile();
    std::vector<HostTensor> got = h.jitRun(*jit, {in});
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; ++i) {
      double g = got[0].get(i), w = want[0].data[i];
      bool ok = std::isnan(w) ? std::isnan(g)
                              : g == w && std::signbit(g) == std::signbit(w);
      if (!ok) {
        ++bad;
        UNSCOPED_INFO("x = " << xs[i] << ": jit " << g << ", reference " << w);
      }
    }
    CHECK(bad == 0);
  }
}
