//===- TGBuilder.cpp - terse construction of tg arithmetic ------*- C++ -*-===//
//
// See TGBuilder.h.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGBuilder.h"
#include "dialects/TGDialect.h"

using namespace mlir;
using namespace mlir::tg;

Value TensorBuilder::scalar(Type elt, double v) {
  return filled(RankedTensorType::get({}, elt), v);
}

Value TensorBuilder::integer(Type elt, int64_t v) {
  auto type = RankedTensorType::get({}, elt);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, IntegerAttr::get(elt, v)));
}

Value TensorBuilder::filled(Type type, double v) {
  auto tensor = cast<RankedTensorType>(type);
  Type elt = tensor.getElementType();
  Attribute value = isa<FloatType>(elt)
                        ? Attribute(FloatAttr::get(elt, v))
                        : Attribute(IntegerAttr::get(elt, (int64_t)v));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(tensor, value));
}

Value TensorBuilder::reshape(Value x, RankedTensorType type) {
  if (x.getType() == type)
    return x;
  return ReshapeOp::create(b, loc, type, x);
}

Value TensorBuilder::broadcastTo(Value x, RankedTensorType type) {
  if (x.getType() == type)
    return x;
  return BroadcastToOp::create(b, loc, type, x);
}

Value TensorBuilder::reduceToShape(Value g, RankedTensorType target) {
  ArrayRef<int64_t> from = typeOf(g).getShape(), to = target.getShape();
  size_t lead = from.size() - to.size();
  SmallVector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  if (!axes.empty())
    g = sum(g, axes, /*keep=*/true);
  return reshape(g, target);
}

Value TensorBuilder::expandReduced(Value g, ArrayRef<int64_t> axes,
                                   RankedTensorType target) {
  SmallVector<int64_t> kept(target.getShape());
  for (int64_t a : axes)
    kept[a] = 1;
  auto keptType = RankedTensorType::get(kept, elt(g));
  return broadcastTo(reshape(g, keptType), target);
}

SmallVector<int64_t> TensorBuilder::allAxes(Value x) {
  return llvm::to_vector(llvm::seq<int64_t>(0, typeOf(x).getRank()));
}

int64_t TensorBuilder::normAxis(Value x, int64_t axis) {
  int64_t rank = typeOf(x).getRank();
  return axis < 0 ? axis + rank : axis;
}

ReplayScope::ReplayScope(OpBuilder &b) : b(b), block(b.getInsertionBlock()) {
  Block::iterator at = b.getInsertionPoint();
  before = at == block->begin() ? nullptr : &*std::prev(at);
}

ReplayScope::~ReplayScope() {
  // Constants stay unmarked: they are not saved, and marked ones would not
  // be merged with the equal constants hoisted beside them.
  auto recomputed = dialect(b.getContext()).getRecomputedAttrHelper();
  for (Operation &op : llvm::make_range(
           before ? std::next(before->getIterator()) : block->begin(),
           b.getInsertionPoint()))
    if (!op.hasTrait<OpTrait::ConstantLike>())
      recomputed.setAttr(&op, b.getUnitAttr());
}
