//===- Autodiff.cpp - reverse-mode differentiation --------------*- C++ -*-===//
//
// Builds @<func>_grad: the forward function followed by its backward pass.
// The walk is generic; every derivative comes from the op's own
// DifferentiableOpInterface::buildVJP.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/PoolingMasks.h"
#include "dialects/TGBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include <set>

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

/// True if `v` is a constant all of whose elements are zero.
bool isZeros(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType()))
    return dense.getSplatValue<APFloat>().isZero();
  return dense.getSplatValue<APInt>().isZero();
}

/// The sum of two zero-padded concatenations along one axis (the
/// cotangents of slices of one value: q, k and v cut from one projection)
/// as one concatenation of their data, or null when a data piece of one
/// straddles a boundary of the other. Added as tensors, each padded
/// cotangent would read zero tensors as large as the sliced value, which
/// the backends materialise (scratch live across the step on the CPU).
Value sumPaddedConcats(Value a, Value b, TensorBuilder &t) {
  auto ca = a.getDefiningOp<ConcatOp>(), cb = b.getDefiningOp<ConcatOp>();
  if (!ca || !cb || ca.getAxis() != cb.getAxis() ||
      a.getType() != b.getType())
    return {};
  int64_t axis = ca.getAxis();
  struct Piece {
    int64_t begin, end;
    Value data; // null: zeros
  };
  auto piecesOf = [&](ConcatOp c) {
    SmallVector<Piece> pieces;
    int64_t at = 0;
    for (Value in : c.getInputs()) {
      int64_t n = TensorBuilder::typeOf(in).getDimSize(axis);
      pieces.push_back({at, at + n, isZeros(in) ? Value() : in});
      at += n;
    }
    return pieces;
  };
  SmallVector<Piece> pa = piecesOf(ca), pb = piecesOf(cb);
  std::set<int64_t> cuts;
  for (const Piece &p : llvm::concat<const Piece>(pa, pb))
    cuts.insert({p.begin, p.end});
  // The data of `pieces` on [lo, hi): null for zeros; failure when a data
  // piece covers only part of it or more.
  auto on = [](ArrayRef<Piece> pieces, int64_t lo,
               int64_t hi) -> FailureOr<Value> {
    for (const Piece &p : pieces)
      if (p.begin <= lo && hi <= p.end) {
        if (p.data && (p.begin != lo || p.end != hi))
          return failure();
        return p.data;
      }
    return failure();
  };
  SmallVector<Piece> sum;
  for (auto it = cuts.begin(), next = std::next(it); next != cuts.end();
       ++it, ++next) {
    FailureOr<Value> x = on(pa, *it, *next), y = on(pb, *it, *next);
    if (failed(x) || failed(y))
      return {};
    Value data = !*x ? *y : !*y ? *x : t.add(*x, *y);
    if (!data && !sum.empty() && !sum.back().data)
      sum.back().end = *next; // adjacent zeros stay one piece
    else
      sum.push_back({*it, *next, data});
  }
  if (sum.size() == 1 && sum.front().data)
    return sum.front().data;
  auto type = TensorBuilder::typeOf(a);
  SmallVector<Value> parts;
  for (const Piece &p : sum) {
    if (p.data) {
      parts.push_back(p.data);
      continue;
    }
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = p.end - p.begin;
    parts.push_back(t.filled(type.clone(shape), 0.0));
  }
  // At the slices' place in the source (their cotangents' concatenations),
  // not the function's: the memory report names buffers by location.
  return ConcatOp::create(t.b, ca.getLoc(), parts, axis);
}

/// Cotangents of values, summed where a value is used more than once.
class Cotangents {
public:
  explicit Cotangents(TensorBuilder &t) : t(t) {}

  void accumulate(Value v, Value grad) {
    Value &slot = grads[v];
    if (!slot) {
      slot = grad;
      return;
    }
    Value merged = sumPaddedConcats(slot, grad, t);
    slot = merged ? merged : t.add(slot, grad);
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
  // What the backward pass saves is decided here, on the clone: the
  // forward function keeps its max_pool2d.
  selectPoolingMaxima(grad);
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
