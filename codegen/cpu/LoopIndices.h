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

/// The indices `map` reads at the loop point `point` (one induction value
/// per loop dimension); constant results become index constants.
inline SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                                    ArrayRef<Value> point) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      idx.push_back(point[d.getPosition()]);
    else
      idx.push_back(index(b, loc, cast<AffineConstantExpr>(e).getValue()));
  }
  return idx;
}

} // namespace mlir::tg::cpu

#endif // TGC_CODEGEN_CPU_LOOPINDICES_H
