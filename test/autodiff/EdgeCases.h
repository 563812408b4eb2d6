//===- EdgeCases.h - op semantics at the edges, as PyTorch has them -*- C++ -*-===//
//
// A table of edge inputs (zeros of both signs, ties, +-inf, NaN, padding
// corners, all-ignored labels) for every differentiable tg op, each with
// its forward value and gradient computed here in float64 from PyTorch
// 1.13's documented formulas (derivatives.yaml) - an independent reference,
// not the project's evaluator. The reference evaluator (test/autodiff) and
// the CPU JIT (test/cpu) both run the table.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TEST_AUTODIFF_EDGECASES_H
#define TGC_TEST_AUTODIFF_EDGECASES_H

#include "test/reference/EvalTestUtil.h"

#include <string>
#include <vector>

namespace tgtest::edge {

/// One argument of the op under test.
struct Arg {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<double> values;
  const char *elt = "f32";
};

/// One op on edge inputs. The module is
///   @forward(args..., %dy) -> (sum(y * dy) {loss}, y {output})
/// so forward_grad returns the loss, y and the gradient of every float
/// argument in order (then %dy's, which is y and is not checked).
struct Case {
  std::string name;
  std::vector<Arg> args;
  std::string body; ///< computes %y from the arguments
  std::vector<int64_t> yShape;
  std::vector<double> dy; ///< the cotangent of y
  std::vector<double> y;  ///< expected forward value
  /// Expected gradient of each float argument, in order.
  std::vector<std::vector<double>> grads;
};

/// Every case, with its expected values.
std::vector<Case> cases();

/// The module of `c` (see Case).
std::string moduleOf(const Case &c);

/// Runs tg-autodiff on the module of `h` (wrt every float input).
void differentiate(Harness &h);

/// The arguments of @forward_grad for `c`, as `dtype` tensors.
std::vector<Tensor> argsOf(const Case &c);

/// Checks `got` against `want`: NaN where NaN is wanted, the same infinity,
/// and |got - want| <= tol * (1 + |want|) elsewhere.
void checkValues(const std::string &what, llvm::ArrayRef<double> got,
                 llvm::ArrayRef<double> want, double tol);

} // namespace tgtest::edge

#endif // TGC_TEST_AUTODIFF_EDGECASES_H
