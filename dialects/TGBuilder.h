//===- TGBuilder.h - terse construction of tg arithmetic --------*- C++ -*-===//
//
// A small builder of tg ops at one location, shared by the decompositions
// (passes/DecomposeComposites.cpp) and the vector-Jacobian products
// (TGGradients*.cpp), which both write formulas as sequences of tg ops.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TGBUILDER_H
#define TGC_DIALECTS_TGBUILDER_H

#include "dialects/TGOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::tg {

/// Builds tg ops at `loc` with `b`'s insertion point.
struct TensorBuilder {
  OpBuilder &b;
  Location loc;

  /// A rank-0 float constant of type `elt` (broadcasts against anything).
  Value scalar(Type elt, double v);
  /// A rank-0 integer constant of type `elt`.
  Value integer(Type elt, int64_t v);
  /// A constant of `type` with every element equal to `v`.
  Value filled(Type type, double v);

  Value add(Value a, Value c) { return AddOp::create(b, loc, a, c); }
  Value sub(Value a, Value c) { return SubOp::create(b, loc, a, c); }
  Value mul(Value a, Value c) { return MulOp::create(b, loc, a, c); }
  Value div(Value a, Value c) { return DivOp::create(b, loc, a, c); }
  Value neg(Value a) { return NegOp::create(b, loc, a); }
  Value exp(Value a) { return ExpOp::create(b, loc, a); }
  Value sum(Value x, ArrayRef<int64_t> axes, bool keep) {
    return SumOp::create(b, loc, x, axes, keep);
  }
  Value mean(Value x, ArrayRef<int64_t> axes, bool keep) {
    return MeanOp::create(b, loc, x, axes, keep);
  }
  Value max(Value x, ArrayRef<int64_t> axes, bool keep) {
    return MaxOp::create(b, loc, x, axes, keep);
  }
  Value select(Value c, Value t, Value f) {
    return SelectOp::create(b, loc, c, t, f);
  }
  Value cmp(CmpPredicate p, Value x, Value y) {
    return CmpOp::create(b, loc, p, x, y);
  }
  Value reshape(Value x, RankedTensorType type);
  Value broadcastTo(Value x, RankedTensorType type);

  /// Sums `g` over the dimensions along which a value of type `target` was
  /// broadcast to `g`'s shape, giving a value of type `target`: the
  /// cotangent of a broadcast operand.
  Value reduceToShape(Value g, RankedTensorType target);
  /// Undoes a reduction over `axes` (kept or dropped): reshapes `g` to the
  /// keepdims shape and broadcasts it to `target`.
  Value expandReduced(Value g, ArrayRef<int64_t> axes,
                      RankedTensorType target);

  static RankedTensorType typeOf(Value x) {
    return cast<RankedTensorType>(x.getType());
  }
  static Type elt(Value x) { return typeOf(x).getElementType(); }
  /// Every axis of `x`, for full reductions.
  static SmallVector<int64_t> allAxes(Value x);
  /// A possibly negative axis of `x`, normalised to [0, rank).
  static int64_t normAxis(Value x, int64_t axis);
};

/// Marks every non-constant op built with `b` while it lives `tg.recomputed`:
/// a vector-Jacobian product's replay of a composite's cheap internals
/// (GELU's tanh, cross-entropy's softmax and one-hot) from what the backward
/// pass keeps anyway (the composite's input or output). Unmarked, the replay
/// would equal the forward's decomposition, and CSE would merge the two and
/// keep every full-size intermediate alive from the forward pass to the
/// backward one; marked, only the replay's operands are saved. Ops must be
/// inserted at one fixed point of one block while the scope lives.
class ReplayScope {
public:
  explicit ReplayScope(OpBuilder &b);
  ~ReplayScope();
  ReplayScope(const ReplayScope &) = delete;
  ReplayScope &operator=(const ReplayScope &) = delete;

private:
  OpBuilder &b;
  Block *block;
  Operation *before; ///< the op before the first inserted one (null: none)
};

} // namespace mlir::tg

#endif // TGC_DIALECTS_TGBUILDER_H
