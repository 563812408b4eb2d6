//===- FiniteDiff.h - gradients by finite differences -----------*- C++ -*-===//
//
// Central finite differences of a function evaluated in float64 by the
// reference evaluator: the independent check of every gradient that
// tg-autodiff builds.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_REFERENCE_FINITEDIFF_H
#define TGC_CODEGEN_REFERENCE_FINITEDIFF_H

#include "codegen/reference/Evaluator.h"

namespace mlir::tg::ref {

/// The gradient of the scalar (one-element) result `resultIndex` of `fn`
/// with respect to the float argument `argIndex`, by central differences in
/// float64 mode: g[i] = (f(x + h e_i) - f(x - h e_i)) / (2 h) with
/// h = relStep * max(1, |x_i|). Costs two evaluations per element, so it is
/// meant for test-sized arguments. Fails (with a diagnostic) if evaluation
/// fails or the argument or result does not qualify.
FailureOr<Tensor> finiteDifferenceGradient(func::FuncOp fn,
                                           ArrayRef<Tensor> args,
                                           unsigned argIndex,
                                           unsigned resultIndex,
                                           double relStep = 1e-6);

} // namespace mlir::tg::ref

#endif // TGC_CODEGEN_REFERENCE_FINITEDIFF_H
