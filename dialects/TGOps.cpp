//===- TGOps.cpp - tg operations --------------------------------*- C++ -*-===//
//
// The generated op definitions and the folders. Verifiers live in
// TGVerify.cpp and type inference in TGShapes.cpp, so that the heavy
// generated code compiles in one translation unit and the rest in others.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::tg;

#include "dialects/TGInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/TGOps.cpp.inc"

/// True if `attr` is a splat constant equal to `value`.
static bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type elt = splat.getElementType();
  if (isa<FloatType>(elt))
    return splat.getSplatValue<APFloat>().convertToDouble() == value;
  if (isa<IntegerType>(elt))
    return splat.getSplatValue<APInt>().getSExtValue() ==
           static_cast<int64_t>(value);
  return false;
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  // x + 0 -> x, when the zero does not broadcast x to a larger shape.
  if (getLhs().getType() == getType() && isSplatOf(adaptor.getRhs(), 0.0))
    return getLhs();
  if (getRhs().getType() == getType() && isSplatOf(adaptor.getLhs(), 0.0))
    return getRhs();
  return {};
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  // x * 1 -> x under the same condition.
  if (getLhs().getType() == getType() && isSplatOf(adaptor.getRhs(), 1.0))
    return getLhs();
  if (getRhs().getType() == getType() && isSplatOf(adaptor.getLhs(), 1.0))
    return getRhs();
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) -> reshape(x).
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getInput()))
    return splat.resizeSplat(cast<ShapedType>(getType()));
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    if (static_cast<int64_t>(i) != p)
      return {};
  return getInput();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getInput()))
    return splat.resizeSplat(cast<ShapedType>(getType()));
  return {};
}

bool mlir::tg::isContraction(Operation *op) {
  return isa<MatmulOp, Conv2dOp, Conv2dGradInputOp, Conv2dGradWeightOp>(op);
}

Type mlir::tg::accumulatorType(Operation *op) {
  if (auto acc = dialect(op->getContext()).getAccAttrHelper().getAttr(op))
    return acc.getValue();
  Type elt = cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  if (elt.isBF16() || elt.isF16())
    return Float32Type::get(op->getContext());
  return elt;
}

void FusedOp::build(OpBuilder &builder, OperationState &state,
                    TypeRange resultTypes, ValueRange inputs,
                    KernelKind kind) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  state.addAttribute(getKindAttrName(state.name),
                     KernelKindAttr::get(builder.getContext(), kind));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value v : inputs)
    block->addArgument(v.getType(), v.getLoc());
}

YieldOp FusedOp::getYield() {
  return cast<YieldOp>(getBodyBlock().getTerminator());
}
