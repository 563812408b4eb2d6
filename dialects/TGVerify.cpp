//===- TGVerify.cpp - verifiers of tg ops -----------------------*- C++ -*-===//
//
// Semantic checks that ODS constraints and type inference cannot express.
// Each message names the values and shapes a user needs to fix the model.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGOps.h"

using namespace mlir;
using namespace mlir::tg;

/// Softmax and log-softmax share their axis check.
static LogicalResult verifyAxis(Operation *op, RankedTensorType type,
                                int64_t axis) {
  int64_t rank = type.getRank();
  if (rank == 0)
    return op->emitOpError("needs a tensor of rank >= 1, got ") << type;
  if (axis < -rank || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " is out of range for " << type << " (valid: " << -rank
           << " to " << rank - 1 << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getInput().getType(), getAxis());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getInput().getType(), getAxis());
}

/// Checks an optional [D] scale/bias of a normalisation of `input`.
static LogicalResult verifyNormParam(Operation *op, StringRef name,
                                     RankedTensorType input, Value param) {
  if (!param)
    return success();
  auto type = cast<RankedTensorType>(param.getType());
  int64_t d = input.getShape().back();
  if (type.getRank() != 1 || type.getDimSize(0) != d ||
      type.getElementType() != input.getElementType())
    return op->emitOpError()
           << name << " must be "
           << RankedTensorType::get({d}, input.getElementType())
           << " to match the last dimension of " << input
                             << ", got " << type;
  return success();
}

/// Checks the input rank and epsilon of layer_norm and rms_norm.
static LogicalResult verifyNorm(Operation *op, RankedTensorType input,
                                double eps) {
  if (input.getRank() < 1)
    return op->emitOpError("needs an input of rank >= 1, got ") << input;
  if (!(eps > 0))
    return op->emitOpError("eps must be > 0, got ") << eps;
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto type = getInput().getType();
  if (failed(verifyNorm(*this, type, getEps().convertToDouble())))
    return failure();
  return failure(failed(verifyNormParam(*this, "scale", type, getScale())) ||
                 failed(verifyNormParam(*this, "bias", type, getBias())));
}

LogicalResult RmsNormOp::verify() {
  auto type = getInput().getType();
  if (failed(verifyNorm(*this, type, getEps().convertToDouble())))
    return failure();
  return verifyNormParam(*this, "scale", type, getScale());
}

LogicalResult ReshapeOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError("cannot change the element type (")
           << in.getElementType() << " to " << out.getElementType()
           << "); use tg.cast";
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << in << " (" << in.getNumElements() << " elements) to " << out
           << " (" << out.getNumElements() << " elements)";
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError("cannot change the element type; use tg.cast");
  auto shape = broadcastShapes(in.getShape(), out.getShape());
  if (in.getRank() > out.getRank() || !shape || *shape != out.getShape())
    return emitOpError("cannot broadcast ") << in << " to " << out;
  return success();
}

LogicalResult CausalMaskOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError("needs a tensor of rank >= 2 (its last two dimensions "
                       "are query and key positions), got ")
           << getInput().getType();
  return success();
}

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0 && p < 1))
    return emitOpError("probability p must be in [0, 1), got ") << p;
  return success();
}

LogicalResult OneHotOp::verify() {
  auto in = getIndices().getType();
  auto out = getType();
  if (out.getRank() != in.getRank() + 1 ||
      out.getShape().drop_back() != in.getShape())
    return emitOpError("result must be the indices' shape plus a class "
                       "dimension: indices ")
           << in << ", result " << out;
  return success();
}

/// A planned bucket buffer lies in the arena: its offset is not negative.
static LogicalResult verifyBucketOffset(Operation *op, IntegerAttr offset) {
  if (offset && offset.getInt() < 0)
    return op->emitOpError("bucket_offset must be a byte offset in the arena "
                           "(at least 0), got ")
           << offset.getInt();
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyBucketOffset(*this, getBucketOffsetAttr())))
    return failure();
  if (getInputs().empty())
    return emitOpError("needs at least one tensor (a bucket is never empty)");
  if (getOp() != "sum" && getOp() != "mean")
    return emitOpError("op must be \"sum\" or \"mean\", got \"")
           << getOp() << "\"";
  return success();
}

/// Checks that each of `shards` is one of `ranks` flat shards of the
/// tensor of the same position in `full` (shardType).
static LogicalResult verifyShards(Operation *op, TypeRange shards,
                                  TypeRange full, int64_t ranks) {
  if (shards.empty())
    return op->emitOpError(
        "needs at least one tensor (a bucket is never empty)");
  if (shards.size() != full.size())
    return op->emitOpError("has ")
           << full.size() << " whole tensors but " << shards.size()
           << " shards; each tensor has one shard";
  for (auto [i, shard, whole] : llvm::enumerate(shards, full)) {
    RankedTensorType want = shardType(cast<ShapedType>(whole), ranks);
    if (shard != want)
      return op->emitOpError("shard #")
             << i << " is " << shard << " but one of " << ranks
             << " shards of " << whole << " is " << want;
  }
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyBucketOffset(*this, getBucketOffsetAttr())))
    return failure();
  if (getOp() != "sum" && getOp() != "mean")
    return emitOpError("op must be \"sum\" or \"mean\", got \"")
           << getOp() << "\"";
  return verifyShards(*this, getResultTypes(), getInputs().getTypes(),
                      getRanks());
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyBucketOffset(*this, getBucketOffsetAttr())))
    return failure();
  return verifyShards(*this, getInputs().getTypes(), getResultTypes(),
                      getRanks());
}

LogicalResult ShardOp::verify() {
  return verifyShards(*this, getType(), getInput().getType(), getRanks());
}

LogicalResult EmbeddingGradOp::verify() {
  SmallVector<Type> fwd;
  auto table = getType();
  if (table.getRank() != 2 ||
      failed(EmbeddingOp::inferReturnTypes(
          getContext(), getLoc(),
          EmbeddingOp::Adaptor({getResult(), getIndices()}), fwd)) ||
      fwd.front() != getGrad().getType())
    return emitOpError("gradient ")
           << getGrad().getType() << " does not match an embedding of "
           << table << " by indices " << getIndices().getType();
  return success();
}

/// Checks that conv2d(input, weight) with `op`'s attributes yields `grad`.
template <typename OpTy>
static LogicalResult verifyConvGrad(OpTy op, Value input, Value weight,
                                    Value grad) {
  SmallVector<Type> fwd;
  SmallVector<Value> operands{input, weight};
  // The forward op's attributes, copied through its properties.
  auto props = Conv2dOp::Properties();
  props.stride = op.getStrideAttr();
  props.padding = op.getPaddingAttr();
  props.dilation = op.getDilationAttr();
  props.groups = op.getGroupsAttr();
  if (failed(Conv2dOp::inferReturnTypes(
          op.getContext(), op.getLoc(),
          Conv2dOp::Adaptor(ValueRange(operands), DictionaryAttr(), props),
          fwd)))
    return failure();
  if (fwd.front() != grad.getType())
    return op.emitOpError("gradient ")
           << grad.getType() << " does not match the convolution output "
           << fwd.front();
  return success();
}

LogicalResult Conv2dGradInputOp::verify() {
  return verifyConvGrad(*this, getResult(), getWeight(), getGrad());
}

LogicalResult Conv2dGradWeightOp::verify() {
  return verifyConvGrad(*this, getInput(), getResult(), getGrad());
}

/// Checks that pooling `input` with the given window yields `grad`.
static LogicalResult verifyPoolGrad(Operation *op, Value input,
                                    ArrayRef<int64_t> kernel,
                                    ArrayRef<int64_t> stride,
                                    ArrayRef<int64_t> padding, Value grad) {
  SmallVector<Type> fwd;
  if (failed(inferPoolResult(op->getLoc(), input, kernel, stride, padding,
                             fwd)))
    return failure();
  if (fwd.front() != grad.getType())
    return op->emitOpError("gradient ")
           << grad.getType() << " does not match the pooling output "
           << fwd.front();
  return success();
}

LogicalResult MaxPool2dGradOp::verify() {
  return verifyPoolGrad(*this, getInput(), getKernel(), getStride(),
                        getPadding(), getGrad());
}

LogicalResult AvgPool2dGradOp::verify() {
  return verifyPoolGrad(*this, getResult(), getKernel(), getStride(),
                        getPadding(), getGrad());
}

LogicalResult RandomOp::verify() {
  double a = getA().convertToDouble(), b = getB().convertToDouble();
  if (getDistribution() == RandomDistribution::uniform && !(a < b))
    return emitOpError("uniform bounds need a < b, got [") << a << ", " << b
                                                           << ")";
  if (getDistribution() == RandomDistribution::normal && !(b > 0))
    return emitOpError("normal std (b) must be > 0, got ") << b;
  return success();
}

/// True for the ops that reduce over axes (a fusion group's reduction).
static bool isReduction(Operation *op) {
  return isa<SumOp, MeanOp, MaxOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp,
             RmsNormOp, CrossEntropyOp, MseLossOp>(op);
}

LogicalResult FusedOp::verify() {
  Block &block = getBody().front();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size()
                         << " inputs but its body takes "
                         << block.getNumArguments() << " arguments";
  for (auto [i, in, arg] : llvm::enumerate(getInputs(), block.getArguments()))
    if (in.getType() != arg.getType())
      return emitOpError() << "input #" << i << " has type " << in.getType()
                           << " but body argument #" << i << " has type "
                           << arg.getType();
  auto yield = dyn_cast_if_present<YieldOp>(
      block.empty() ? nullptr : &block.back());
  if (!yield)
    return emitOpError() << "body must end with tg.yield";
  if (getNumResults() == 0)
    return emitOpError() << "must have at least one result (a kernel that "
                            "writes nothing is dead code)";
  if (yield.getValues().size() != getNumResults())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values but has " << getNumResults()
                         << " results";
  for (auto [i, v, r] : llvm::enumerate(yield.getValues(), getResults())) {
    if (v.getType() != r.getType())
      return emitOpError() << "yields " << v.getType() << " as result #" << i
                           << " of type " << r.getType();
    if (isa<BlockArgument>(v))
      return emitOpError() << "result #" << i
                           << " is an input of the group; a group's results "
                              "are values it computes";
  }
  int matmuls = 0, reductions = 0;
  for (Operation &op : block.without_terminator()) {
    if (isa<FusedOp>(op) || !isa<TGDialect>(op.getDialect()))
      return emitOpError() << "body may hold only tg ops, not '"
                           << op.getName() << "'";
    matmuls += isa<MatmulOp>(op);
    reductions += isReduction(&op);
  }
  switch (getKind()) {
  case KernelKind::gemm:
    if (matmuls != 1)
      return emitOpError() << "of kind gemm must hold exactly one tg.matmul, "
                              "found "
                           << matmuls;
    break;
  case KernelKind::elementwise:
    if (matmuls || reductions)
      return emitOpError() << "of kind elementwise must hold no matmul or "
                              "reduction";
    break;
  case KernelKind::row_reduction:
  case KernelKind::reduction:
    if (matmuls || !reductions)
      return emitOpError() << "of kind " << stringifyKernelKind(getKind())
                           << " must hold a reduction and no matmul";
    break;
  case KernelKind::optimizer:
    if (matmuls)
      return emitOpError() << "of kind optimizer must hold no matmul";
    break;
  }
  return success();
}
