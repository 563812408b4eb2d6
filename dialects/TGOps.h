//===- TGOps.h - tg operations ----------------------------------*- C++ -*-===//
//
// Declares the tg ops and the shape-inference helpers they share.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TGOPS_H
#define TGC_DIALECTS_TGOPS_H

#include "dialects/TGDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>
#include <optional>

namespace mlir::tg {

/// The NumPy broadcast of two shapes, or std::nullopt when they do not
/// broadcast. `badDim` receives the first offending result dimension.
std::optional<SmallVector<int64_t>>
broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                int64_t *badDim = nullptr);

/// Infers the broadcast result of elementwise `operands` (all with one
/// element type, unless `resultElt` overrides the result's).
LogicalResult inferBroadcastResult(std::optional<Location> loc,
                                   ValueRange operands, Type resultElt,
                                   SmallVectorImpl<Type> &types);

/// Infers the result of a reduction over `axes`.
LogicalResult inferReduceResult(std::optional<Location> loc, Value input,
                                ArrayRef<int64_t> axes, bool keepdims,
                                SmallVectorImpl<Type> &types);

/// Infers the result of a 2-D pooling window.
LogicalResult inferPoolResult(std::optional<Location> loc, Value input,
                              ArrayRef<int64_t> kernel,
                              ArrayRef<int64_t> stride,
                              ArrayRef<int64_t> padding,
                              SmallVectorImpl<Type> &types);

/// Size of one output dimension of a sliding window, or <= 0 if the window
/// does not fit.
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t pad, int64_t dilation);

/// Elements of one rank's flat shard of a tensor of `type` over `ranks`
/// ranks (tg.reduce_scatter, tg.all_gather, tg.shard): ceil(n / ranks), the
/// tensor read flat and padded with zeros to `ranks` times as many.
int64_t shardElements(ShapedType type, int64_t ranks);

/// The type of that shard: `tensor<s x T>`.
RankedTensorType shardType(ShapedType type, int64_t ranks);

} // namespace mlir::tg

#include "dialects/TGInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/TGOps.h.inc"

namespace mlir::tg {
/// Whether `op` is a contraction whose accumulator `tg.acc` may choose:
/// matmul, conv2d, conv2d_grad_input or conv2d_grad_weight.
bool isContraction(Operation *op);

/// The element type a contraction accumulates in: its `tg.acc` if set,
/// otherwise f32 for bf16/f16 results (the dialect's default, which
/// tg-assign-precision writes out) and the result's element type for
/// everything else.
Type accumulatorType(Operation *op);
} // namespace mlir::tg

#endif // TGC_DIALECTS_TGOPS_H
