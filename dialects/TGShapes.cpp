//===- TGShapes.cpp - result-type inference of tg ops -----------*- C++ -*-===//
//
// Every tg op whose result type follows from its operands infers it here, so
// that builders need no result types and each shape error names the shapes.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGOps.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::tg;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

std::optional<SmallVector<int64_t>>
mlir::tg::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                          int64_t *badDim) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align at the right: dimension i of the result is a[i - (rank - |a|)].
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) {
      if (badDim)
        *badDim = i;
      return std::nullopt;
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

LogicalResult mlir::tg::inferBroadcastResult(std::optional<Location> loc,
                                             ValueRange operands,
                                             Type resultElt,
                                             SmallVectorImpl<Type> &types) {
  // Operands that are not ranked tensors are rejected by the ODS verifier;
  // inference must still not crash on them.
  for (Value v : operands)
    if (!isa<RankedTensorType>(v.getType()))
      return failure();
  // For tg.select the i1 condition does not take part in the element check.
  bool isSelect = operands.size() == 3;
  ValueRange data = isSelect ? operands.drop_front() : operands;
  Type elt = tensorOf(data.front()).getElementType();
  for (Value v : data) {
    if (tensorOf(v).getElementType() != elt)
      return emitOptionalError(loc, "operands have different element types: ",
                               tensorOf(data.front()), " and ", v.getType());
  }
  SmallVector<int64_t> shape(tensorOf(operands.front()).getShape());
  for (Value v : operands.drop_front()) {
    int64_t bad = 0;
    auto next = broadcastShapes(shape, tensorOf(v).getShape(), &bad);
    if (!next)
      return emitOptionalError(
          loc, "shapes do not broadcast: ",
          RankedTensorType::get(shape, tensorOf(operands.front()).getElementType()),
          " and ", v.getType(), " differ in result dimension ", bad,
          " and neither is 1");
    shape = std::move(*next);
  }
  types.push_back(RankedTensorType::get(shape, resultElt ? resultElt : elt));
  return success();
}

LogicalResult mlir::tg::inferReduceResult(std::optional<Location> loc,
                                          Value input, ArrayRef<int64_t> axes,
                                          bool keepdims,
                                          SmallVectorImpl<Type> &types) {
  auto type = tensorOf(input);
  int64_t rank = type.getRank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis,
                               " is out of range for a tensor of rank ", rank,
                               " (axes must be in [0, ", rank, "))");
    if (reduced[axis])
      return emitOptionalError(loc, "axis ", axis, " is listed twice");
    reduced[axis] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      shape.push_back(type.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

int64_t mlir::tg::windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                                   int64_t pad, int64_t dilation) {
  if (stride <= 0)
    return 0;
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t room = in + 2 * pad - span;
  return room < 0 ? 0 : room / stride + 1;
}

/// Checks that a (h, w) attribute pair holds values of at least `min`.
static LogicalResult checkPair(std::optional<Location> loc, StringRef name,
                               ArrayRef<int64_t> pair, int64_t min) {
  if (pair.size() != 2)
    return emitOptionalError(loc, "'", name, "' needs 2 values (h, w), got ",
                             pair.size());
  if (pair[0] < min || pair[1] < min)
    return emitOptionalError(loc, "'", name, "' values must be >= ", min,
                             ", got [", pair[0], ", ", pair[1], "]");
  return success();
}

LogicalResult mlir::tg::inferPoolResult(std::optional<Location> loc,
                                        Value input, ArrayRef<int64_t> kernel,
                                        ArrayRef<int64_t> stride,
                                        ArrayRef<int64_t> padding,
                                        SmallVectorImpl<Type> &types) {
  auto type = tensorOf(input);
  if (type.getRank() != 4)
    return emitOptionalError(loc, "expects an NCHW input of rank 4, got ",
                             type);
  if (failed(checkPair(loc, "kernel", kernel, 1)) ||
      failed(checkPair(loc, "stride", stride, 1)) ||
      failed(checkPair(loc, "padding", padding, 0)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (padding[i] * 2 > kernel[i])
      return emitOptionalError(loc, "padding ", padding[i],
                               " is more than half the kernel size ",
                               kernel[i]);
  int64_t h = windowOutputSize(type.getDimSize(2), kernel[0], stride[0],
                               padding[0], 1);
  int64_t w = windowOutputSize(type.getDimSize(3), kernel[1], stride[1],
                               padding[1], 1);
  if (h <= 0 || w <= 0)
    return emitOptionalError(loc, "the ", kernel[0], "x", kernel[1],
                             " window does not fit the padded ",
                             type.getDimSize(2), "x", type.getDimSize(3),
                             " input");
  types.push_back(RankedTensorType::get(
      {type.getDimSize(0), type.getDimSize(1), h, w}, type.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Per-op inference
//===----------------------------------------------------------------------===//

LogicalResult CmpOp::inferReturnTypes(MLIRContext *ctx,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return inferBroadcastResult(loc, {adaptor.getLhs(), adaptor.getRhs()},
                              IntegerType::get(ctx, 1), types);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferBroadcastResult(loc, adaptor.getOperands(), {}, types);
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getValue().getType());
  return success();
}

/// Each rank receives a tensor like the one it sent.
LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  llvm::append_range(types, adaptor.getInputs().getTypes());
  return success();
}

int64_t mlir::tg::shardElements(ShapedType type, int64_t ranks) {
  return (type.getNumElements() + ranks - 1) / std::max<int64_t>(ranks, 1);
}

RankedTensorType mlir::tg::shardType(ShapedType type, int64_t ranks) {
  return RankedTensorType::get({shardElements(type, ranks)},
                               type.getElementType());
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhs = tensorOf(adaptor.getLhs()), rhs = tensorOf(adaptor.getRhs());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operands have different element types: ",
                             lhs, " and ", rhs);
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, got ", lhs,
                             " and ", rhs);
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  bool ta = adaptor.getTransposeLhs(), tb = adaptor.getTransposeRhs();
  int64_t m = a[a.size() - (ta ? 1 : 2)], ka = a[a.size() - (ta ? 2 : 1)];
  int64_t kb = b[b.size() - (tb ? 1 : 2)], n = b[b.size() - (tb ? 2 : 1)];
  if (ka != kb)
    return emitOptionalError(loc, "contraction dimensions differ: ", lhs,
                             ta ? " (transposed)" : "", " has K = ", ka,
                             " but ", rhs, tb ? " (transposed)" : "",
                             " has K = ", kb);
  int64_t bad = 0;
  auto batch = broadcastShapes(a.drop_back(2), b.drop_back(2), &bad);
  if (!batch)
    return emitOptionalError(loc, "batch dimensions of ", lhs, " and ", rhs,
                             " do not broadcast");
  batch->push_back(m);
  batch->push_back(n);
  types.push_back(RankedTensorType::get(*batch, lhs.getElementType()));
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  auto logits = tensorOf(adaptor.getLogits());
  auto labels = tensorOf(adaptor.getLabels());
  if (logits.getRank() < 1 ||
      logits.getShape().drop_back() != labels.getShape())
    return emitOptionalError(
        loc, "labels must have the shape of the logits without their last "
             "(class) dimension: logits ",
        logits, ", labels ", labels);
  types.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto input = tensorOf(adaptor.getInput());
  if (input != adaptor.getTarget().getType())
    return emitOptionalError(loc, "input and target must have the same type: ",
                             input, " vs ", adaptor.getTarget().getType());
  types.push_back(RankedTensorType::get({}, input.getElementType()));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto table = tensorOf(adaptor.getTable());
  if (table.getRank() != 2)
    return emitOptionalError(loc, "the table must be [rows, width], got ",
                             table);
  SmallVector<int64_t> shape(tensorOf(adaptor.getIndices()).getShape());
  shape.push_back(table.getDimSize(1));
  types.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto type = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = type.getRank();
  SmallVector<bool> seen(rank, false);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!ok || p < 0 || p >= rank || seen[p]) {
      ok = false;
      break;
    }
    seen[p] = true;
  }
  if (!ok)
    return emitOptionalError(loc, "permutation ", adaptor.getPermutationAttr(),
                             " is not a permutation of the ", rank,
                             " dimensions of ", type);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto type = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit(),
                    step = adaptor.getStep();
  size_t rank = type.getRank();
  if (start.size() != rank || limit.size() != rank || step.size() != rank)
    return emitOptionalError(loc, "start, limit and step need one value per "
                                  "dimension (",
                             rank, "), got ", start.size(), ", ",
                             limit.size(), " and ", step.size());
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(d);
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > size || step[d] < 1)
      return emitOptionalError(loc, "dimension ", d, " of size ", size,
                               " cannot be sliced [", start[d], ":", limit[d],
                               ":", step[d],
                               "] (need 0 <= start <= limit <= size, step >= 1)");
    shape.push_back((limit[d] - start[d] + step[d] - 1) / step[d]);
  }
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one input");
  auto first = tensorOf(inputs.front());
  int64_t rank = first.getRank(), axis = adaptor.getAxis();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for tensors of rank ", rank);
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : inputs.drop_front()) {
    auto t = tensorOf(v);
    bool ok = t.getRank() == rank && t.getElementType() == first.getElementType();
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == axis || t.getDimSize(d) == first.getDimSize(d);
    if (!ok)
      return emitOptionalError(loc, "cannot concatenate ", first, " and ", t,
                               " along axis ", axis,
                               ": other dimensions and element types must match");
    shape[axis] += t.getDimSize(axis);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getInput()), w = tensorOf(adaptor.getWeight());
  if (in.getRank() != 4 || w.getRank() != 4)
    return emitOptionalError(loc, "expects input [N, C, H, W] and weight "
                                  "[O, C/groups, KH, KW], got ",
                             in, " and ", w);
  if (in.getElementType() != w.getElementType())
    return emitOptionalError(loc, "input and weight have different element "
                                  "types: ",
                             in, " and ", w);
  ArrayRef<int64_t> stride = adaptor.getStride(), pad = adaptor.getPadding(),
                    dil = adaptor.getDilation();
  if (failed(checkPair(loc, "stride", stride, 1)) ||
      failed(checkPair(loc, "padding", pad, 0)) ||
      failed(checkPair(loc, "dilation", dil, 1)))
    return failure();
  int64_t groups = adaptor.getGroups();
  int64_t c = in.getDimSize(1), o = w.getDimSize(0);
  if (groups < 1 || c % groups || o % groups)
    return emitOptionalError(loc, "groups = ", groups,
                             " must divide the input channels (", c,
                             ") and the output channels (", o, ")");
  if (w.getDimSize(1) * groups != c)
    return emitOptionalError(loc, "weight ", w, " expects ",
                             w.getDimSize(1) * groups,
                             " input channels but the input ", in, " has ", c);
  int64_t h = windowOutputSize(in.getDimSize(2), w.getDimSize(2), stride[0],
                               pad[0], dil[0]);
  int64_t wd = windowOutputSize(in.getDimSize(3), w.getDimSize(3), stride[1],
                                pad[1], dil[1]);
  if (h <= 0 || wd <= 0)
    return emitOptionalError(loc, "the ", w.getDimSize(2), "x",
                             w.getDimSize(3), " kernel does not fit the padded ",
                             in.getDimSize(2), "x", in.getDimSize(3), " input");
  types.push_back(RankedTensorType::get({in.getDimSize(0), o, h, wd},
                                        in.getElementType()));
  return success();
}

/// Checks the operands of tg.attention and gives its result types: the
/// output [B, H, Tq, dv] and the log-sum-exp [B, H, Tq], the latter in f32
/// for bf16/f16 inputs (softmax statistics are never rounded to 8 bits).
static LogicalResult inferAttention(std::optional<Location> loc, Value query,
                                    Value key, Value value, FloatAttr scale,
                                    RankedTensorType &outType,
                                    RankedTensorType &lseType) {
  auto q = tensorOf(query), k = tensorOf(key), v = tensorOf(value);
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType())
    return emitOptionalError(loc, "query, key and value have different "
                                  "element types: ",
                             q, ", ", k, " and ", v);
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return emitOptionalError(loc, "query, key and value must be [B, H, T, d], "
                                  "got ",
                             q, ", ", k, " and ", v);
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  if (qs.take_front(2) != ks.take_front(2) ||
      qs.take_front(2) != vs.take_front(2))
    return emitOptionalError(loc, "query, key and value must have the same "
                                  "batch and head dimensions [B, H, ...], got ",
                             q, ", ", k, " and ", v);
  if (qs[3] != ks[3])
    return emitOptionalError(loc, "query and key must have the same head "
                                  "dimension d, got ",
                             q, " and ", k);
  if (ks[2] != vs[2])
    return emitOptionalError(loc, "key and value must have the same length "
                                  "T, got ",
                             k, " and ", v);
  if (scale && !std::isfinite(scale.getValueAsDouble()))
    return emitOptionalError(loc, "scale must be finite, got ",
                             scale.getValueAsDouble());
  Type elt = q.getElementType();
  Type stats = elt.getIntOrFloatBitWidth() < 32
                   ? Type(Float32Type::get(elt.getContext()))
                   : elt;
  outType = RankedTensorType::get({qs[0], qs[1], qs[2], vs[3]}, elt);
  lseType = RankedTensorType::get({qs[0], qs[1], qs[2]}, stats);
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType out, lse;
  if (failed(inferAttention(loc, adaptor.getQuery(), adaptor.getKey(),
                            adaptor.getValue(), adaptor.getScaleAttr(), out,
                            lse)))
    return failure();
  types.push_back(out);
  types.push_back(lse);
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  RankedTensorType out, lse;
  if (failed(inferAttention(loc, adaptor.getQuery(), adaptor.getKey(),
                            adaptor.getValue(), adaptor.getScaleAttr(), out,
                            lse)))
    return failure();
  auto expect = [&](Value v, RankedTensorType want,
                    StringRef what) -> LogicalResult {
    if (v.getType() == want)
      return success();
    return emitOptionalError(loc, what, " must be ", want, " (from query, key "
                             "and value), got ", v.getType());
  };
  if (failed(expect(adaptor.getOutput(), out, "the output")) ||
      failed(expect(adaptor.getGradOutput(), out, "the output's cotangent")) ||
      failed(expect(adaptor.getLse(), lse, "the log-sum-exp")) ||
      failed(expect(adaptor.getGradLse(), lse, "the log-sum-exp's cotangent")))
    return failure();
  for (Value operand :
       {adaptor.getQuery(), adaptor.getKey(), adaptor.getValue()})
    types.push_back(operand.getType());
  return success();
}
