//===- Movement.cpp - data-movement tg ops ----------------------*- C++ -*-===//
//
// embedding, reshape, transpose, broadcast_to, slice, concat and one_hot:
// ops that only move (or select) elements. Each is written as "for every
// output element, which input element is it".
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/EvalInternal.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::ref;
using internal::FamilyResult;

namespace {

/// Rows of `table` picked by `indices`, clamped to [0, V).
FailureOr<Tensor> embedding(Operation *op, const Tensor &table,
                            const Tensor &indices) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  int64_t v = table.shape[0], d = table.shape[1];
  for (int64_t r = 0, e = indices.numElements(); r < e; ++r) {
    auto row = static_cast<int64_t>(
        std::clamp(indices.data[r], 0.0, static_cast<double>(v - 1)));
    std::copy_n(table.data.begin() + row * d, d, out->data.begin() + r * d);
  }
  return out;
}

/// The transpose of embedding: rows of `grad` summed into the clamped rows.
FailureOr<Tensor> embeddingGrad(Operation *op, const Tensor &grad,
                                const Tensor &indices) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  int64_t v = out->shape[0], d = out->shape[1];
  for (int64_t r = 0, e = indices.numElements(); r < e; ++r) {
    auto row = static_cast<int64_t>(
        std::clamp(indices.data[r], 0.0, static_cast<double>(v - 1)));
    for (int64_t k = 0; k < d; ++k)
      out->data[row * d + k] += grad.data[r * d + k];
  }
  return out;
}

/// result[i] = input[j] where j is i mapped by `source(outIndex) -> inIndex`.
template <typename Fn>
FailureOr<Tensor> gather(Operation *op, const Tensor &in, Fn source) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  SmallVector<int64_t> inStrides = internal::stridesOf(in.shape);
  for (int64_t i = 0, e = out->numElements(); i < e; ++i) {
    SmallVector<int64_t> idx = source(internal::unravel(i, out->shape));
    int64_t pos = 0;
    for (auto [x, s] : llvm::zip(idx, inStrides))
      pos += x * s;
    out->data[i] = in.data[pos];
  }
  return out;
}

FailureOr<Tensor> transpose(TransposeOp op, const Tensor &in) {
  ArrayRef<int64_t> perm = op.getPermutation();
  return gather(op, in, [&](ArrayRef<int64_t> outIdx) {
    SmallVector<int64_t> idx(outIdx.size());
    for (auto [d, p] : llvm::enumerate(perm))
      idx[p] = outIdx[d];
    return idx;
  });
}

FailureOr<Tensor> slice(SliceOp op, const Tensor &in) {
  ArrayRef<int64_t> start = op.getStart(), step = op.getStep();
  return gather(op, in, [&](ArrayRef<int64_t> outIdx) {
    SmallVector<int64_t> idx(outIdx.size());
    for (size_t d = 0; d < idx.size(); ++d)
      idx[d] = start[d] + outIdx[d] * step[d];
    return idx;
  });
}

/// tensor.extract_slice (the micro-batch of gradient accumulation): static
/// or dynamic offsets, sizes and strides; a rank-reduced result only drops
/// unit dimensions, so the row-major order of the slice is unchanged.
FailureOr<Tensor> extractSlice(tensor::ExtractSliceOp op, ArrayRef<Tensor> in) {
  auto value = [&](OpFoldResult r) -> int64_t {
    if (auto attr = dyn_cast<Attribute>(r))
      return cast<IntegerAttr>(attr).getInt();
    Value v = cast<Value>(r);
    for (unsigned k = 0; k < op->getNumOperands(); ++k)
      if (op->getOperand(k) == v)
        return static_cast<int64_t>(in[k].data[0]);
    llvm_unreachable("a dynamic slice bound is an operand");
  };
  const Tensor &src = in[0];
  SmallVector<int64_t> offsets, sizes, strides;
  for (OpFoldResult r : op.getMixedOffsets())
    offsets.push_back(value(r));
  for (OpFoldResult r : op.getMixedSizes())
    sizes.push_back(value(r));
  for (OpFoldResult r : op.getMixedStrides())
    strides.push_back(value(r));
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 0 &&
        (offsets[d] < 0 || strides[d] < 1 ||
         offsets[d] + (sizes[d] - 1) * strides[d] >= src.shape[d]))
      return op.emitError("reference evaluator: slice [")
             << offsets[d] << " + " << sizes[d] << " x " << strides[d]
             << ") is out of bounds for dimension " << d << " of size "
             << src.shape[d];
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  SmallVector<int64_t> srcStrides = internal::stridesOf(src.shape);
  for (int64_t i = 0, e = out->numElements(); i < e; ++i) {
    SmallVector<int64_t> idx = internal::unravel(i, sizes);
    int64_t pos = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      pos += (offsets[d] + idx[d] * strides[d]) * srcStrides[d];
    out->data[i] = src.data[pos];
  }
  return out;
}

FailureOr<Tensor> broadcastTo(Operation *op, const Tensor &in) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  std::vector<int64_t> src = internal::broadcastIndices(in.shape, out->shape);
  for (size_t i = 0; i < src.size(); ++i)
    out->data[i] = in.data[src[i]];
  return out;
}

FailureOr<Tensor> concat(ConcatOp op, ArrayRef<Tensor> in) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  int64_t axis = op.getAxis();
  // Each input contributes, per outer index, one contiguous run.
  int64_t outer =
      internal::numElements(ArrayRef<int64_t>(out->shape).take_front(axis));
  auto pos = out->data.begin();
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor &t : in) {
      int64_t run = t.numElements() / std::max<int64_t>(outer, 1);
      pos = std::copy_n(t.data.begin() + o * run, run, pos);
    }
  return out;
}

/// result[i..., c] = indices[i...] == c; out-of-range indices give zeros.
FailureOr<Tensor> oneHot(Operation *op, const Tensor &indices) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  int64_t classes = out->shape.back();
  for (int64_t r = 0, e = indices.numElements(); r < e; ++r) {
    double c = indices.data[r];
    if (c >= 0 && c < classes)
      out->data[r * classes + static_cast<int64_t>(c)] = 1;
  }
  return out;
}

} // namespace

FamilyResult mlir::tg::ref::internal::evalMovement(Operation *op,
                                                   ArrayRef<Tensor> in) {
  using R = FamilyResult;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](EmbeddingOp) -> R { return embedding(op, in[0], in[1]); })
      .Case(
          [&](EmbeddingGradOp) -> R { return embeddingGrad(op, in[0], in[1]); })
      .Case([&](ReshapeOp) -> R {
        FailureOr<Tensor> out = resultLike(op);
        if (succeeded(out))
          out->data = in[0].data;
        return out;
      })
      .Case([&](TransposeOp t) -> R { return transpose(t, in[0]); })
      .Case([&](BroadcastToOp) -> R { return broadcastTo(op, in[0]); })
      .Case([&](SliceOp s) -> R { return slice(s, in[0]); })
      .Case([&](ConcatOp c) -> R { return concat(c, in); })
      .Case([&](OneHotOp) -> R { return oneHot(op, in[0]); })
      .Case([&](tensor::ExtractSliceOp s) -> R { return extractSlice(s, in); })
      .Default([](Operation *) -> R { return std::nullopt; });
}
