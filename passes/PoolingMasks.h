//===- PoolingMasks.h - max pooling that saves masks ------------*- C++ -*-===//
//
// A rewrite of the function about to be differentiated (tg-autodiff's
// clone), kept apart from the generic reverse walk in Autodiff.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_POOLINGMASKS_H
#define TGC_PASSES_POOLINGMASKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {

/// Rewrites every max_pool2d of `fn` whose windows tile its input (stride =
/// kernel, no padding, sizes divisible by the kernel) as a running maximum
/// over the windows' positions: strided slices of a view of the input, and
/// one `tg.select` per position after the first, whose i1 condition (the
/// position wins) is all its derivative reads. The backward pass then keeps
/// those conditions, kh kw - 1 bytes per window, instead of the input's
/// 4 kh kw (max_pool2d_grad reads the input to find each argmax again). A
/// relu read only by the pooling moves after it (max and relu commute), so
/// its derivative reads the pooled output rather than the input-sized one.
/// The values and the gradients are those of max_pool2d and
/// max_pool2d_grad: the first maximum in row-major order wins, a NaN wins
/// over any number, the last NaN over earlier ones.
void selectPoolingMaxima(func::FuncOp fn);

} // namespace mlir::tg

#endif // TGC_PASSES_POOLINGMASKS_H
