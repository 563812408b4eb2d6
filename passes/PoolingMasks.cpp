//===- PoolingMasks.cpp - max pooling that saves masks ----------*- C++ -*-===//
//
// max_pool2d's derivative, max_pool2d_grad, reads the pooling's input to
// find each window's argmax again, so the backward pass keeps that input
// (in LeNet, the first convolution's relu output, 1.15 MiB at batch 64,
// from the forward pass to the end of the backward one) and the relu
// before it reads the same tensor for its mask. When the windows tile the
// input, the pooling is rewritten, before differentiation, as a running
// maximum over the windows' positions whose every step is a select: a
// select's derivative reads only its i1 condition. What is saved is then
// kh kw - 1 bytes per window (LeNet's first pooling: 221 KiB) and the
// pooled output the next layer keeps anyway. The rewrite applies to the
// gradient function only: @forward and @eval keep max_pool2d.
//
//===----------------------------------------------------------------------===//

#include "passes/PoolingMasks.h"
#include "dialects/TGBuilder.h"

using namespace mlir;
using namespace mlir::tg;

namespace {
/// Windows with more positions than this stay max_pool2d: the running
/// maximum is one slice, two compares and two selects per position.
constexpr int64_t kMaxPositions = 16;

/// True if `pool`'s windows tile its input: stride equal to kernel, no
/// padding, spatial sizes divisible by the kernel, at most kMaxPositions
/// positions (and more than one).
bool windowsTile(MaxPool2dOp pool) {
  auto in = cast<RankedTensorType>(pool.getInput().getType());
  ArrayRef<int64_t> k = pool.getKernel(), s = pool.getStride(),
                    pad = pool.getPadding();
  return in.getRank() == 4 && k == s && pad[0] == 0 && pad[1] == 0 &&
         in.getDimSize(2) % k[0] == 0 && in.getDimSize(3) % k[1] == 0 &&
         k[0] * k[1] > 1 && k[0] * k[1] <= kMaxPositions;
}

/// Copies `from`'s discardable attributes (a precision decision) to the ops
/// built after `before` up to `b`'s insertion point.
void copyAttrs(Operation *from, Operation *before, OpBuilder &b) {
  Block *block = b.getInsertionBlock();
  auto first = before ? std::next(before->getIterator()) : block->begin();
  for (Operation &op : llvm::make_range(first, b.getInsertionPoint()))
    for (NamedAttribute a : from->getDiscardableAttrs())
      if (!op.hasAttr(a.getName()))
        op.setAttr(a.getName(), a.getValue());
}
} // namespace

void mlir::tg::selectPoolingMaxima(func::FuncOp fn) {
  SmallVector<MaxPool2dOp> pools;
  fn.walk([&](MaxPool2dOp pool) {
    if (windowsTile(pool))
      pools.push_back(pool);
  });
  for (MaxPool2dOp pool : pools) {
    Value x = pool.getInput();
    // relu(max(window)) = max(relu(window)), NaN included (relu keeps it),
    // and the first maximum is the same position whenever it is positive:
    // elsewhere relu's derivative is zero on both sides.
    auto relu = x.getDefiningOp<ReluOp>();
    if (relu && relu->hasOneUse())
      x = relu.getInput();
    else
      relu = {};
    auto in = cast<RankedTensorType>(x.getType());
    auto out = cast<RankedTensorType>(pool.getType());
    int64_t kh = pool.getKernel()[0], kw = pool.getKernel()[1];
    int64_t rows = in.getDimSize(0) * in.getDimSize(1) * out.getDimSize(2);
    int64_t wo = out.getDimSize(3);
    Type elt = in.getElementType();

    OpBuilder b(pool);
    TensorBuilder t{b, pool.getLoc()};
    Operation *before = pool->getPrevNode();
    // [rows, kh, wo, kw] is a view of the input (buffers are row-major);
    // transposed to [kh, kw, rows, wo] and viewed as [kh kw, rows wo],
    // position (i, j) of every window is row i kw + j: a contiguous
    // slice. Strided slices, and the strided concatenation their
    // cotangents sum to, bufferize on the CPU to upstream's
    // element-by-element memrefCopy (LeNet's step took 4x as long); a
    // transpose is a loop nest.
    Value v = t.reshape(x, RankedTensorType::get({rows, kh, wo, kw}, elt));
    Value tr = TransposeOp::create(b, pool.getLoc(), v,
                                   ArrayRef<int64_t>{1, 3, 0, 2});
    int64_t positions = kh * kw, count = rows * wo;
    Value flat =
        t.reshape(tr, RankedTensorType::get({positions, count}, elt));
    // Row-major window order, the order in which max_pool2d's scan meets
    // the positions. The slices' cotangents, zero-padded concatenations
    // along one axis, sum to one concatenation (sumPaddedConcats in
    // Autodiff.cpp) rather than to input-sized sums.
    Value max;
    for (int64_t k = 0; k < positions; ++k) {
      Value at = SliceOp::create(b, pool.getLoc(), flat,
                                 ArrayRef<int64_t>{k, 0},
                                 ArrayRef<int64_t>{k + 1, count},
                                 ArrayRef<int64_t>{1, 1});
      if (!max) {
        max = at;
        continue;
      }
      // The position wins when it is greater or NaN (PyTorch's scan);
      // ties keep the earlier one.
      Value nan = t.cmp(CmpPredicate::ne, at, at);
      Value wins = t.select(nan, nan, t.cmp(CmpPredicate::gt, at, max));
      max = t.select(wins, at, max);
    }
    Value pooled = t.reshape(max, out);
    copyAttrs(pool, before, b);
    if (relu) {
      auto moved = ReluOp::create(b, relu.getLoc(), pooled);
      moved->setDiscardableAttrs(relu->getDiscardableAttrDictionary());
      pooled = moved;
    }
    pool.replaceAllUsesWith(pooled);
    pool.erase();
    if (relu)
      relu.erase();
  }
}
