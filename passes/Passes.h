//===- Passes.h - TGC passes ------------------------------------*- C++ -*-===//
//
// Declarations of every pass in Passes.td, their pattern populators and the
// registration entry point.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_PASSES_H
#define TGC_PASSES_PASSES_H

#include "dialects/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tg {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// The `tg.precision` rule of a parameter's low-precision compute copy
/// (tg-assign-precision), which the precision and memory reports count.
inline constexpr StringLiteral kComputeCopyRule = "compute-copy";

/// Patterns that rewrite composite ops into primitive ones. `only` names the
/// ops to decompose (without the "tg." prefix); empty means all of them.
void populateDecomposeCompositesPatterns(RewritePatternSet &patterns,
                                         ArrayRef<std::string> only = {});

/// The names (without the "tg." prefix) of the ops tg-decompose rewrites.
ArrayRef<StringLiteral> compositeOpNames();

/// Adds `@<fn>_grad` next to `fn` (see tg-autodiff) and returns it. With
/// `lossSeed` it takes one more, last, argument of the loss's type: the
/// loss's cotangent (ones without it), which loss scaling sets to the scale;
/// the caller gives it its tg.role and tg.name.
FailureOr<func::FuncOp> buildGradientFunction(func::FuncOp fn,
                                              bool wrtInputs,
                                              bool lossSeed = false);

/// The forward function of the gradient function `grad`: `@F` for `@F_grad`
/// (tg-autodiff) and for `@F_grad_micro` (tg-build-train-step's clone that
/// the micro-batch loop calls with the compute copies shared by every
/// micro-batch); null for any other function.
func::FuncOp forwardOfGradient(func::FuncOp grad);

/// The gradient functions of `module` for its gradient function named
/// `gradName`: that function, then its micro-batch clone if
/// tg-build-train-step made one (that clone is the one @train_step runs,
/// so passes that shape the step's memory treat both).
SmallVector<func::FuncOp, 2> gradientFunctions(ModuleOp module,
                                               StringRef gradName);

/// Bytes of a value of type `type` in memory (0 for non-tensors and dynamic
/// shapes); i1 takes one byte per element, as in every buffer of TGC.
int64_t tensorBytes(Type type);

/// FLOPs of one op, roughly: 2MNK for matmuls and convolutions, 8 per
/// element for normalisations, softmax and GELU, one per element of the
/// largest operand or result for other tg ops, 0 for ops of other dialects;
/// a tg.fused group's is the sum of its body's.
int64_t opFlops(Operation *op);

/// Sum of opFlops over `fn` (loop bodies counted once: a ratio of two such
/// sums is what the notes report).
int64_t functionFlops(func::FuncOp fn);

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_PASSES_PASSES_H
