//===- EdgeCaseTest.cpp - edge inputs through the reference evaluator -*- C++ -*-===//
//
// Every case of EdgeCases.h differentiated by tg-autodiff and run by the
// reference evaluator in float64: the forward value and every gradient
// must equal the float64 values computed from PyTorch's formulas.
//
//===----------------------------------------------------------------------===//

#include "test/autodiff/EdgeCases.h"
#include "test/autodiff/GradCheck.h"

using namespace tgtest;

TEST_CASE("edge inputs match PyTorch in the reference evaluator",
          "[autodiff][edge]") {
  for (const edge::Case &c : edge::cases()) {
    DYNAMIC_SECTION(c.name) {
      Harness h;
      h.parse(edge::moduleOf(c));
      edge::differentiate(h);
      auto results = evalF64(h, "forward_grad", edge::argsOf(c));
      REQUIRE(results.size() >= 2 + c.grads.size());
      // The arithmetic is float64, but the graph's constants (eps, 2/sqrt(pi))
      // are f32 like its tensors.
      const double tol = 1e-6;
      edge::checkValues("forward", results[1].data, c.y, tol);
      for (size_t k = 0; k < c.grads.size(); ++k)
        edge::checkValues("gradient of argument " + std::to_string(k),
                          results[2 + k].data, c.grads[k], tol);
    }
  }
}
