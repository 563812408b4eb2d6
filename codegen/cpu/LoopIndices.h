//===- LoopIndices.h - indices of a linalg map at a loop point --*- C++ -*-===//
//
// The two small builders that the CPU vector kernels (tg-vectorize-contractions,
// tg-vectorize-elementwise) both need when they replace a linalg op on
// buffers by explicit loops: an index constant, and the indices an indexing
// map reads at the current point of those loops. Header-only and included by
// those two files alone, so that changing it recompiles nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_CPU_LOOPINDICES_H
#define TGC_CODEGEN_CPU_LOOPINDICES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"

namespace mlir::tg::cpu {

/// An `index` constant.
inline Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The value of `e`, a sum of constants and constant multiples of loop
/// dimensions (what the vector kernels accept), at the loop point `point`.
/// A plain dimension is its induction value and a constant an index
/// constant, so maps of loops and constants add no arithmetic.
inline Value indexAt(OpBuilder &b, Location loc, AffineExpr e,
                     ArrayRef<Value> point) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return point[d.getPosition()];
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return index(b, loc, c.getValue());
  auto sum = cast<AffineBinaryOpExpr>(e);
  Value lhs = indexAt(b, loc, sum.getLHS(), point);
  Value rhs = indexAt(b, loc, sum.getRHS(), point);
  if (e.getKind() == AffineExprKind::Mul)
    return arith::MulIOp::create(b, loc, lhs, rhs);
  return arith::AddIOp::create(b, loc, lhs, rhs);
}

/// The indices `map` reads at the loop point `point` (one induction value
/// per loop dimension); see indexAt for the expressions it may hold.
inline SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                                    ArrayRef<Value> point) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults())
    idx.push_back(indexAt(b, loc, e, point));
  return idx;
}

} // namespace mlir::tg::cpu

#endif // TGC_CODEGEN_CPU_LOOPINDICES_H
