//===- LoweringUtils.h - shared helpers of tg-convert-to-linalg -*- C++ -*-===//
//
// Building blocks that every op family's conversion uses: the element type
// a value is computed in, scalar conversions, filled tensors, broadcast
// indexing maps and the one elementwise linalg.generic builder.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_CPU_LOWERINGUTILS_H
#define TGC_CODEGEN_CPU_LOWERINGUTILS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tg::cpu {

/// The type arithmetic on `elt` is done in: f32 for bf16 and f16 (rounded
/// once at the op's result), `elt` itself otherwise.
Type computeType(Type elt);

/// `v` converted to scalar type `to`: float extension/truncation,
/// int<->float (signed; i1 reads as 0/1), integer extension/truncation, and
/// `!= 0` for a conversion to i1.
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to);

/// A scalar constant of type `type` (float or integer) with value `v`.
Value scalarConstant(OpBuilder &b, Location loc, Type type, double v);
/// An index constant.
Value indexConstant(OpBuilder &b, Location loc, int64_t v);

/// tensor.empty of the given shape and element type.
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elt);
/// A tensor of the given shape with every element `v` (linalg.fill).
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type elt, double v);

/// The indexing map that reads an operand of shape `operand` inside a loop
/// nest over `result` with NumPy broadcasting: dimensions are aligned at the
/// right, and a size-1 operand dimension against a larger loop reads 0.
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> operand,
                       ArrayRef<int64_t> result);

/// `n` parallel iterators followed by `r` reduction iterators.
SmallVector<utils::IteratorType> iterators(unsigned n, unsigned r = 0);

/// Body of an elementwise generic: gets the loop's scalar operands, already
/// converted to their compute types, and returns the result element (in
/// any type; it is converted to the result's element type).
using ScalarFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// One parallel linalg.generic producing `resultType` from `inputs` read
/// through `inputMaps` (one per input, over the result's loops).
Value buildParallel(OpBuilder &b, Location loc, RankedTensorType resultType,
                    ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                    ScalarFn body);

/// One parallel linalg.generic producing `resultType` from `inputs`, each
/// broadcast into the result's shape.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, ScalarFn body);

/// `t` with its elements converted to `elt` (`t` itself when equal).
Value convertTensor(OpBuilder &b, Location loc, Value t, Type elt);

/// Replaces `op`, of one ranked tensor result, with `r` (computed in the
/// compute type) converted to that result's element type: the end of every
/// conversion that accumulates in a wider type. Returns success().
LogicalResult replaceWithConverted(RewriterBase &rw, Operation *op, Value r);

/// Row-major reshape of `v` to `type` (same element count): a collapse to
/// rank 1, then an expand; `v` itself when the types are equal.
Value reshapeTensor(OpBuilder &b, Location loc, Value v, RankedTensorType type);

/// The row-major linear index (i64) of the current iteration of the
/// enclosing linalg.generic, whose first `shape.size()` loops run over
/// `shape`.
Value linearIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> shape);

/// The element type of a ranked tensor value.
/// The address (an !llvm.ptr) of the first element of buffer `v`, whose
/// elements have `eltBytes` bytes: its aligned base pointer plus its offset
/// from `meta`, `v`'s memref.extract_strided_metadata. For calls into C
/// (CBLAS, the artifact's collectives).
Value firstElementPointer(OpBuilder &b, Location loc, Operation *meta,
                          int64_t eltBytes);

inline Type elementType(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}
/// The shape of a ranked tensor value.
inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

} // namespace mlir::tg::cpu

#endif // TGC_CODEGEN_CPU_LOWERINGUTILS_H
