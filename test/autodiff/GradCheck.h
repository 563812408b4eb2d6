//===- GradCheck.h - finite-difference gradient checks ----------*- C++ -*-===//
//
// Differentiates a function with tg-autodiff and compares every gradient
// with central finite differences, both through the reference evaluator in
// float64.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TEST_AUTODIFF_GRADCHECK_H
#define TGC_TEST_AUTODIFF_GRADCHECK_H

#include "test/reference/EvalTestUtil.h"

#include <string>

namespace tgtest {

/// Ranges of the random data fed to the function under test.
struct GradCheckOptions {
  double lo = -1, hi = 1;     ///< float arguments
  int64_t intHi = 4;          ///< integer arguments in [0, intHi)
  unsigned maxProbes = 24;    ///< finite-difference probes per argument
  double tolerance = 1e-6;    ///< |fd - ad| <= tol * (1 + |fd|)
  uint64_t seed = 1;
};

/// Parses `ir` (a module whose @forward returns a scalar loss, float
/// arguments tagged tg.role = #tg.role<param> or "input"), checks every float
/// argument's gradient against central differences, and returns the number
/// of probes compared. Fails the current Catch2 test on a mismatch.
unsigned checkGradients(const std::string &ir,
                        const GradCheckOptions &opts = {});

/// Runs @name of the current module of `h` in float64.
llvm::SmallVector<Tensor> evalF64(Harness &h, llvm::StringRef name,
                                  llvm::ArrayRef<Tensor> args);

} // namespace tgtest

#endif // TGC_TEST_AUTODIFF_GRADCHECK_H
