//===- Autodiff.cpp - reverse-mode differentiation --------------*- C++ -*-===//
//
// Builds @<func>_grad: the forward function followed by its backward pass.
// The walk is generic; every derivative comes from the op's own
// DifferentiableOpInterface::buildVJP.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "dialects/TGBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// The string attribute `name` of argument or result `i`, or "".
StringRef argAttr(func::FuncOp fn, unsigned i, StringRef name) {
  auto attr = fn.getArgAttrOfType<StringAttr>(i, name);
  return attr ? attr.getValue() : StringRef();
}

/// Index of the loss result: the one tagged tg.role = #tg.role<loss>, or the only
/// result if it is a scalar.
FailureOr<unsigned> findLoss(func::FuncOp fn) {
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (getResultRole(fn, i) == Role::loss)
      return i;
  if (fn.getNumResults() == 1 &&
      cast<RankedTensorType>(fn.getResultTypes()[0]).getRank() == 0)
    return 0u;
  return fn.emitOpError("has no result tagged tg.role = \"loss\" to "
                        "differentiate");
}

bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// Cotangents of values, summed where a value is used more than once.
class Cotangents {
public:
  explicit Cotangents(TensorBuilder &t) : t(t) {}

  void accumulate(Value v, Value grad) {
    Value &slot = grads[v];
    slot = slot ? t.add(slot, grad) : grad;
  }
  Value lookup(Value v) const { return grads.lookup(v); }

private:
  TensorBuilder &t;
  DenseMap<Value, Value> grads;
};

/// Appends the backward pass of `fn`'s body before its return and returns
/// the cotangents it computed.
/// `seed` is the loss's cotangent (null: ones).
LogicalResult backward(func::FuncOp fn, unsigned lossIndex, Value seed,
                       Cotangents &cot, TensorBuilder &t) {
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperand(lossIndex);
  cot.accumulate(loss, seed ? seed : t.filled(loss.getType(), 1.0));

  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultGrads;
    bool reached = false;
    for (Value r : op->getResults()) {
      Value g = cot.lookup(r);
      reached |= static_cast<bool>(g);
      resultGrads.push_back(g ? g : t.filled(r.getType(), 0.0));
    }
    if (!reached)
      continue;
    auto diff = dyn_cast<DifferentiableOpInterface>(op);
    if (!diff) {
      // tg ops without a derivative (cmp, one_hot, constant) are constants.
      if (isa<TGDialect>(op->getDialect()))
        continue;
      return op->emitOpError("is not differentiable, but the loss depends on "
                             "it");
    }
    SmallVector<Value> operandGrads;
    Block *block = t.b.getInsertionBlock();
    Block::iterator end = t.b.getInsertionPoint();
    Operation *last = end == block->begin() ? nullptr : &*std::prev(end);
    if (failed(diff.buildVJP(t.b, resultGrads, operandGrads)))
      return failure();
    // The contractions of a derivative accumulate as their primal does
    // (tg-assign-precision's tg.acc), so the backward pass keeps the
    // forward's precision decisions.
    if (TypeAttr acc = tg::dialect(op->getContext()).getAccAttrHelper().getAttr(op))
      for (Operation &vjp : llvm::make_range(
               last ? std::next(last->getIterator()) : block->begin(),
               t.b.getInsertionPoint()))
        if (isContraction(&vjp))
          tg::dialect(op->getContext()).getAccAttrHelper().setAttr(&vjp, acc);
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("built ")
             << operandGrads.size() << " operand gradients for "
             << op->getNumOperands() << " operands";
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!grad || !isFloatTensor(operand))
        continue;
      if (grad.getType() != operand.getType())
        return op->emitOpError("gradient of type ")
               << grad.getType() << " does not match its operand type "
               << operand.getType();
      cot.accumulate(operand, grad);
    }
  }
  return success();
}

struct AutodiffPass final : tg::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(funcName);
    if (!fn) {
      module.emitError() << "tg-autodiff: no function named '" << funcName
                         << "'";
      return signalPassFailure();
    }
    if (failed(buildGradientFunction(fn, wrtInputs)))
      signalPassFailure();
  }
};

} // namespace

FailureOr<func::FuncOp> mlir::tg::buildGradientFunction(func::FuncOp fn,
                                                      bool wrtInputs,
                                                      bool lossSeed) {
  FailureOr<unsigned> lossIndex = findLoss(fn);
  if (failed(lossIndex))
    return failure();
  if (!fn.getBody().hasOneBlock())
    return fn.emitOpError("must have a single block to be differentiated");

  OpBuilder b(fn);
  auto grad = cast<func::FuncOp>(b.clone(*fn));
  grad.setSymName((fn.getSymName() + "_grad").str());
  Block &body = grad.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  TensorBuilder t{b, fn.getLoc()};
  Value seed;
  if (lossSeed) {
    Type lossType = fn.getResultTypes()[*lossIndex];
    unsigned at = grad.getNumArguments();
    if (failed(grad.insertArgument(at, lossType, {}, fn.getLoc())))
      return failure();
    seed = grad.getArgument(at);
  }
  Cotangents cot(t);
  if (failed(backward(grad, *lossIndex, seed, cot, t)))
    return failure();

  // Gradients of parameters (and float inputs on request), in argument
  // order; unused ones are zero.
  SmallVector<Value> results(ret.getOperands());
  SmallVector<unsigned> wrt;
  for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
    std::optional<Role> role = getArgRole(grad, i);
    Value arg = grad.getArgument(i);
    if (!isFloatTensor(arg) ||
        !(role == Role::param || (wrtInputs && role == Role::input)))
      continue;
    Value g = cot.lookup(arg);
    results.push_back(g ? g : t.filled(arg.getType(), 0.0));
    wrt.push_back(i);
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();

  unsigned numForward = grad.getNumResults();
  grad.setType(FunctionType::get(fn.getContext(), grad.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < numForward; ++i)
    resultAttrs.push_back(grad.getResultAttrDict(i));
  for (unsigned i : wrt) {
    NamedAttrList attrs;
    attrs.set(attr::role, RoleAttr::get(b.getContext(), Role::grad));
    StringRef name = argAttr(grad, i, attr::name);
    attrs.set(attr::name,
              b.getStringAttr(name.empty() ? "arg" + std::to_string(i)
                                           : name.str()));
    resultAttrs.push_back(attrs.getDictionary(fn.getContext()));
  }
  grad.setAllResultAttrs(resultAttrs);
  return grad;
}
