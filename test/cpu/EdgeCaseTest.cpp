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
