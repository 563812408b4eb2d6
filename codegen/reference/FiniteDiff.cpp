//===- FiniteDiff.cpp - gradients by finite differences ---------*- C++ -*-===//
//
// See FiniteDiff.h. Each probe is a full float64 evaluation, so a gradient
// is only as good as central differences allow (error O(h^2) plus
// cancellation O(eps / h)); h ~ 1e-6 gives about 1e-8 relative accuracy on
// smooth functions.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/FiniteDiff.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg::ref;

FailureOr<Tensor> mlir::tg::ref::finiteDifferenceGradient(func::FuncOp fn,
                                                          ArrayRef<Tensor> args,
                                                          unsigned argIndex,
                                                          unsigned resultIndex,
                                                          double relStep) {
  if (argIndex >= args.size() || !isFloat(args[argIndex].dtype))
    return fn.emitError("finite differences: argument #")
           << argIndex << " is not a float argument";
  if (resultIndex >= fn.getNumResults())
    return fn.emitError("finite differences: no result #") << resultIndex;
  EvalOptions f64;
  f64.roundToDtype = false;
  SmallVector<Tensor> probe(args);
  auto valueAt = [&]() -> FailureOr<double> {
    FailureOr<SmallVector<Tensor>> r = evaluate(fn, probe, f64);
    if (failed(r))
      return failure();
    const Tensor &out = (*r)[resultIndex];
    if (out.numElements() != 1)
      return fn.emitError("finite differences: result #")
             << resultIndex << " is " << out.typeString() << ", not a scalar";
    return out.data[0];
  };
  Tensor grad = args[argIndex];
  grad.dtype = DType::F64;
  for (int64_t i = 0, e = grad.numElements(); i < e; ++i) {
    double x = args[argIndex].data[i];
    double h = relStep * std::max(1.0, std::fabs(x));
    probe[argIndex].data[i] = x + h;
    FailureOr<double> up = valueAt();
    probe[argIndex].data[i] = x - h;
    FailureOr<double> down = valueAt();
    probe[argIndex].data[i] = x;
    if (failed(up) || failed(down))
      return failure();
    grad.data[i] = (*up - *down) / (2 * h);
  }
  return grad;
}
