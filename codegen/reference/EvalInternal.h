//===- EvalInternal.h - evaluator internals ---------------------*- C++ -*-===//
//
// Index arithmetic shared by the op families, and the entry point of each
// family. A family function returns std::nullopt for an op that is not
// one of its own, so the driver can try them in turn.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_REFERENCE_EVALINTERNAL_H
#define TGC_CODEGEN_REFERENCE_EVALINTERNAL_H

#include "codegen/reference/Evaluator.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::tg::ref::internal {

/// What a family evaluator returns: nullopt if the op is not in the family,
/// failure (diagnosed) if it is but cannot be evaluated, else its result.
using FamilyResult = std::optional<FailureOr<Tensor>>;

FamilyResult evalElementwise(Operation *op, ArrayRef<Tensor> operands);
FamilyResult evalReduction(Operation *op, ArrayRef<Tensor> operands);
FamilyResult evalMovement(Operation *op, ArrayRef<Tensor> operands);
FamilyResult evalConvPool(Operation *op, ArrayRef<Tensor> operands);

/// The same for the families whose ops have several results.
using MultiResult = std::optional<FailureOr<SmallVector<Tensor>>>;
/// tg.attention and tg.attention_grad (Attention.cpp).
MultiResult evalAttention(Operation *op, ArrayRef<Tensor> operands);

/// Product of the dimensions.
int64_t numElements(ArrayRef<int64_t> shape);
/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape);
/// The multi-index of row-major position `linear` in `shape`.
SmallVector<int64_t> unravel(int64_t linear, ArrayRef<int64_t> shape);
/// For every element of `out` (row-major), the position of the element of a
/// tensor of shape `in` that NumPy broadcasting reads for it.
std::vector<int64_t> broadcastIndices(ArrayRef<int64_t> in,
                                      ArrayRef<int64_t> out);

/// A zero tensor shaped like result `i` of `op` (diagnosed failure if its
/// type is not a ranked tensor of a known element type).
FailureOr<Tensor> resultLike(Operation *op, unsigned i = 0);
/// The value of a constant attribute (tg.constant, arith.constant).
FailureOr<Tensor> fromAttr(Operation *op, Attribute attr);

} // namespace mlir::tg::ref::internal

#endif // TGC_CODEGEN_REFERENCE_EVALINTERNAL_H
