//===- BuildTrainStep.cpp - init, train_step and eval -----------*- C++ -*-===//
//
// Turns a forward function and its train block into the three entry points
// a runtime calls. The arithmetic of the update lives in TrainConfig.cpp;
// this file builds the functions, the accumulation loop and their
// signatures.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TrainConfig.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir::tg {
#define GEN_PASS_DEF_BUILDTRAINSTEPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// One argument or result of a generated function: type, role and name.
struct Slot {
  Type type;
  Role role;
  std::string name;
};

/// Creates `name(args) -> results` at the end of `module` with tg.role and
/// tg.name on every argument and result, and returns it with an entry block.
func::FuncOp createFunction(OpBuilder &b, ModuleOp module, StringRef name,
                            ArrayRef<Slot> args, ArrayRef<Slot> results) {
  auto types = [](ArrayRef<Slot> slots) {
    return llvm::map_to_vector(slots, [](const Slot &s) { return s.type; });
  };
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(
      b, module.getLoc(), name,
      b.getFunctionType(types(args), types(results)));
  auto tag = [&](const Slot &s) {
    NamedAttrList attrs;
    attrs.set(attr::role, RoleAttr::get(b.getContext(), s.role));
    attrs.set(attr::name, b.getStringAttr(s.name));
    return attrs.getDictionary(b.getContext());
  };
  fn.setAllArgAttrs(llvm::map_to_vector(args, tag));
  fn.setAllResultAttrs(llvm::map_to_vector(results, tag));
  b.setInsertionPointToStart(fn.addEntryBlock());
  return fn;
}

/// The parts of the forward function the entry points are built from.
struct Model {
  mutable func::FuncOp forward, grad;
  SmallVector<unsigned> params, inputs; ///< forward argument indices
  unsigned loss = 0;                    ///< index of the loss result

  StringRef name(unsigned arg) const {
    auto a = forward.getArgAttrOfType<StringAttr>(arg, attr::name);
    return a ? a.getValue() : StringRef();
  }
  RankedTensorType type(unsigned arg) const {
    return cast<RankedTensorType>(forward.getArgumentTypes()[arg]);
  }
};

/// Loss scaling's half of the gradient function: the seed argument (the
/// loss's cotangent) is the scaler's state `loss_scale`, and the gradients
/// are divided by it before they are returned, so `@forward_grad` returns
/// true gradients that were computed on the scaled loss.
LogicalResult scaleLoss(func::FuncOp grad, unsigned numForward,
                        Type lossType) {
  auto scalar = dyn_cast<RankedTensorType>(lossType);
  if (!scalar || scalar.getRank() != 0 || !scalar.getElementType().isF32())
    return grad.emitOpError("loss scaling needs a scalar f32 loss, not ")
           << lossType;
  MLIRContext *ctx = grad.getContext();
  unsigned seedArg = grad.getNumArguments() - 1;
  grad.setArgAttr(seedArg, attr::role, RoleAttr::get(ctx, Role::state));
  grad.setArgAttr(seedArg, attr::name, StringAttr::get(ctx, kLossScaleName));
  auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
  OpBuilder b(ret);
  TensorBuilder t{b, grad.getLoc()};
  // PyTorch's unscale_ multiplies by the reciprocal: exact for the powers of
  // two a default scaler holds.
  Value inv = t.div(t.scalar(b.getF32Type(), 1.0), grad.getArgument(seedArg));
  for (OpOperand &g : ret->getOpOperands().drop_front(numForward)) {
    Value factor = inv;
    if (TensorBuilder::elt(g.get()) != TensorBuilder::elt(inv))
      factor = CastOp::create(
          b, t.loc, TensorBuilder::typeOf(inv).clone(TensorBuilder::elt(g.get())),
          inv);
    g.set(t.mul(g.get(), factor));
  }
  return success();
}

/// Suffix of the micro-batch clone of a gradient function
/// (shareComputeCopies).
constexpr StringLiteral kMicroSuffix = "_micro";

/// A parameter's low-precision compute copy, made once per step in
/// @train_step and passed to the micro-batch gradient function.
struct SharedCopy {
  unsigned arg;          ///< the parameter's argument number
  RankedTensorType type; ///< the copy's type
};

/// With accumulate > 1, the compute copies of the weights
/// (tg-assign-precision's `compute-copy` casts at the top of the gradient
/// function) would be made again for every micro-batch. Returns a private
/// clone of `grad` that takes each copy as an extra argument, after the
/// others, in `copies` order, instead of casting the master itself, so that
/// @train_step casts once per step before the loop and every micro-batch
/// reads the same copy; the clone's gradients are unchanged (the VJP of the
/// copy, the cast back to fp32, stays inside). Returns null when `grad`
/// makes no compute copy. `grad` itself, the `forward_grad` entry point,
/// keeps its fp32 signature.
func::FuncOp shareComputeCopies(func::FuncOp grad,
                                SmallVectorImpl<SharedCopy> &copies) {
  auto copiesOf = [](func::FuncOp fn) {
    SmallVector<CastOp> casts;
    for (auto c : fn.getBody().front().getOps<CastOp>()) {
      auto rule = dialect(fn.getContext()).getPrecisionAttrHelper().getAttr(c);
      auto arg = dyn_cast<BlockArgument>(c.getInput());
      if (rule && rule.getValue() == kComputeCopyRule && arg &&
          arg.getOwner() == &fn.getBody().front())
        casts.push_back(c);
    }
    return casts;
  };
  if (copiesOf(grad).empty())
    return {};
  OpBuilder b(grad.getContext());
  auto micro = cast<func::FuncOp>(grad->clone());
  micro.setSymName((grad.getSymName() + kMicroSuffix).str());
  micro.setPrivate();
  // After the gradient function, under a unique name.
  SymbolTable(grad->getParentOp())
      .insert(micro, std::next(Block::iterator(grad)));
  for (CastOp c : copiesOf(micro)) {
    auto arg = cast<BlockArgument>(c.getInput());
    auto type = cast<RankedTensorType>(c.getType());
    unsigned index = micro.getNumArguments();
    if (failed(micro.insertArgument(index, type, {}, c.getLoc())))
      return {};
    micro.setArgAttr(index, attr::role,
                     RoleAttr::get(b.getContext(), Role::param));
    if (auto name = micro.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                       attr::name))
      micro.setArgAttr(index, attr::name,
                       b.getStringAttr(name.getValue() + ".compute_copy"));
    c.getResult().replaceAllUsesWith(micro.getArgument(index));
    copies.push_back({arg.getArgNumber(), type});
    c.erase();
  }
  return micro;
}

FailureOr<Model> analyse(func::FuncOp fn, const TrainConfig &cfg) {
  Model m;
  m.forward = fn;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    std::optional<Role> role = getArgRole(fn, i);
    if (!role)
      return fn.emitOpError("argument #") << i << " has no tg.role";
    if (*role == Role::param) {
      if (!isa<FloatType>(m.type(i).getElementType()))
        return fn.emitOpError("parameter '")
               << m.name(i) << "' must have a float element type";
      m.params.push_back(i);
    } else {
      m.inputs.push_back(i);
    }
  }
  bool scaled = cfg.lossScale.has_value();
  if (scaled)
    for (unsigned p : m.params)
      if (m.name(p) == kLossScaleName || m.name(p) == kGrowthTrackerName)
        return fn.emitOpError("parameter '")
               << m.name(p) << "' has the name of the loss scaler's state";
  FailureOr<func::FuncOp> grad = buildGradientFunction(fn, false, scaled);
  if (failed(grad))
    return failure();
  m.grad = *grad;
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (getResultRole(fn, i) == Role::loss)
      m.loss = i;
  if (scaled && failed(scaleLoss(m.grad, fn.getNumResults(),
                                 fn.getResultTypes()[m.loss])))
    return failure();
  return m;
}

struct BuildTrainStepPass final
    : tg::impl::BuildTrainStepPassBase<BuildTrainStepPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(funcName);
    if (!fn) {
      module.emitError() << "tg-build-train-step: no function named '"
                         << funcName << "'";
      return signalPassFailure();
    }
    FailureOr<TrainConfig> cfg = TrainConfig::read(module);
    if (failed(cfg))
      return signalPassFailure();
    for (StringRef taken : {"train_step", "init", "eval"})
      if (module.lookupSymbol(taken)) {
        module.emitError() << "tg-build-train-step: the module already has "
                              "a function named '"
                           << taken << "'";
        return signalPassFailure();
      }
    FailureOr<Model> model = analyse(fn, *cfg);
    if (failed(model) || failed(buildTrainStep(*model, *cfg)))
      return signalPassFailure();
    buildInit(*model, *cfg);
    OpBuilder b(module.getBody(), module.getBody()->end());
    auto eval = cast<func::FuncOp>(b.clone(*fn));
    eval.setSymName("eval");
  }

  /// Names of the optimizer state tensors, in train_step argument order.
  SmallVector<Slot> stateSlots(const Model &m, const TrainConfig &cfg) {
    SmallVector<Slot> slots;
    for (StringRef slot : cfg.stateSlots())
      for (unsigned p : m.params)
        slots.push_back({m.type(p), Role::state, (m.name(p) + "." + slot).str()});
    if (cfg.lossScale) {
      OpBuilder b(&getContext());
      slots.push_back({RankedTensorType::get({}, b.getF32Type()), Role::state,
                       kLossScaleName.str()});
      slots.push_back({RankedTensorType::get({}, b.getI64Type()), Role::state,
                       kGrowthTrackerName.str()});
    }
    return slots;
  }

  LogicalResult buildTrainStep(const Model &m, const TrainConfig &cfg) {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    int64_t k = cfg.accumulate;

    // Inputs hold k micro-batches along their leading dimension.
    SmallVector<Slot> inputSlots;
    int64_t rows = -1;
    for (unsigned i : m.inputs) {
      RankedTensorType type = m.type(i);
      if (type.getRank() == 0 && k > 1)
        return m.forward.emitOpError("input '")
               << m.name(i) << "' is a scalar, so it cannot be split into "
               << k << " micro-batches";
      if (type.getRank() > 0) {
        SmallVector<int64_t> shape(type.getShape());
        rows = shape[0];
        shape[0] *= k;
        type = RankedTensorType::get(shape, type.getElementType());
      }
      inputSlots.push_back({type, Role::input, m.name(i).str()});
    }
    if (cfg.batch && rows > 0 && *cfg.batch != rows)
      return module.emitError()
             << "train block: batch = " << *cfg.batch
             << " but the model's inputs hold " << rows
             << " rows; the batch is the micro-batch that accumulate = " << k
             << " repeats (write 'batch = batch' to follow the model)";

    SmallVector<Slot> paramSlots;
    for (unsigned p : m.params)
      paramSlots.push_back({m.type(p), Role::param, m.name(p).str()});
    SmallVector<Slot> state = stateSlots(m, cfg);
    Slot stepSlot{RankedTensorType::get({}, b.getI64Type()), Role::step, "step"};
    Type lossType = m.forward.getResultTypes()[m.loss];

    SmallVector<Slot> args(paramSlots);
    llvm::append_range(args, state);
    args.push_back(stepSlot);
    llvm::append_range(args, inputSlots);
    SmallVector<Slot> results{{lossType, Role::loss, "loss"}};
    llvm::append_range(results, paramSlots);
    llvm::append_range(results, state);
    results.push_back(stepSlot);
    func::FuncOp step = createFunction(b, module, "train_step", args, results);
    Location loc = m.forward.getLoc();
    TensorBuilder t{b, loc};

    size_t np = m.params.size();
    auto paramArg = [&](size_t i) { return step.getArgument(i); };
    auto stateArg = [&](size_t i) { return step.getArgument(np + i); };
    Value stepArg = step.getArgument(np + state.size());
    auto inputArg = [&](size_t i) {
      return step.getArgument(np + state.size() + 1 + i);
    };

    size_t slots = cfg.stateSlots().size();
    // The loss scaler's state follows the per-parameter slots.
    Value scaleArg, trackerArg;
    if (cfg.lossScale) {
      scaleArg = stateArg(slots * np);
      trackerArg = stateArg(slots * np + 1);
    }

    // With micro-batches, the weights' compute copies are made here, once
    // per step, and shared by every micro-batch (shareComputeCopies).
    func::FuncOp gradFn = m.grad;
    SmallVector<Value> sharedCopies;
    if (k > 1) {
      SmallVector<SharedCopy> copies;
      if (func::FuncOp micro = shareComputeCopies(m.grad, copies)) {
        gradFn = micro;
        for (const SharedCopy &c : copies) {
          unsigned param = llvm::find(m.params, c.arg) - m.params.begin();
          auto cast = CastOp::create(b, loc, c.type, paramArg(param));
          dialect(&getContext())
              .getPrecisionAttrHelper()
              .setAttr(cast, b.getStringAttr(kComputeCopyRule));
          sharedCopies.push_back(cast);
        }
      }
    }

    // Runs forward+backward on `inputs` (one micro-batch): loss and grads.
    auto callGrad = [&](ValueRange inputs, Value &loss,
                        SmallVectorImpl<Value> &grads) {
      SmallVector<Value> operands(m.forward.getNumArguments());
      for (auto [i, p] : llvm::enumerate(m.params))
        operands[p] = paramArg(i);
      for (auto [i, in] : llvm::enumerate(m.inputs))
        operands[in] = inputs[i];
      if (scaleArg)
        operands.push_back(scaleArg);
      llvm::append_range(operands, sharedCopies);
      auto call = func::CallOp::create(b, loc, gradFn, operands);
      loss = call.getResult(m.loss);
      unsigned first = m.forward.getNumResults();
      for (size_t i = 0; i < np; ++i)
        grads.push_back(call.getResult(first + i));
    };

    Value loss;
    SmallVector<Value> grads;
    SmallVector<Value> allInputs;
    for (size_t i = 0; i < m.inputs.size(); ++i)
      allInputs.push_back(inputArg(i));
    if (k == 1) {
      callGrad(allInputs, loss, grads);
    } else {
      // Accumulate over micro-batches; loss and gradients are averaged.
      SmallVector<Value> init{t.filled(lossType, 0.0)};
      for (size_t i = 0; i < np; ++i)
        init.push_back(t.filled(m.type(m.params[i]), 0.0));
      Value lo = arith::ConstantIndexOp::create(b, loc, 0);
      Value hi = arith::ConstantIndexOp::create(b, loc, k);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value rowsPer = arith::ConstantIndexOp::create(b, loc, rows);
      auto loop = scf::ForOp::create(
          b, loc, lo, hi, one, init,
          [&](OpBuilder &lb, Location l, Value iv, ValueRange acc) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(lb.getInsertionBlock(),
                                lb.getInsertionPoint());
            Value offset = arith::MulIOp::create(b, l, iv, rowsPer);
            SmallVector<Value> micro;
            for (auto [i, in] : llvm::enumerate(m.inputs)) {
              RankedTensorType type = m.type(in);
              Value full = inputArg(i);
              if (type.getRank() == 0) {
                micro.push_back(full);
                continue;
              }
              SmallVector<OpFoldResult> offsets(type.getRank(),
                                                b.getIndexAttr(0));
              offsets[0] = offset;
              SmallVector<OpFoldResult> sizes = llvm::map_to_vector(
                  type.getShape(),
                  [&](int64_t d) -> OpFoldResult { return b.getIndexAttr(d); });
              SmallVector<OpFoldResult> strides(type.getRank(),
                                                b.getIndexAttr(1));
              micro.push_back(tensor::ExtractSliceOp::create(
                  b, l, type, full, offsets, sizes, strides));
            }
            Value microLoss;
            SmallVector<Value> microGrads;
            callGrad(micro, microLoss, microGrads);
            SmallVector<Value> next{t.add(acc[0], microLoss)};
            for (size_t i = 0; i < np; ++i)
              next.push_back(t.add(acc[1 + i], microGrads[i]));
            scf::YieldOp::create(b, l, next);
          });
      Type lossElt = cast<RankedTensorType>(lossType).getElementType();
      loss = t.div(loop.getResult(0), t.scalar(lossElt, double(k)));
      for (size_t i = 0; i < np; ++i) {
        Type elt = m.type(m.params[i]).getElementType();
        grads.push_back(t.div(loop.getResult(1 + i), t.scalar(elt, double(k))));
      }
    }

    StepUpdate next = buildStepUpdate(
        t, cfg, step.getArguments().take_front(np), grads,
        step.getArguments().slice(np, state.size()), stepArg);
    SmallVector<Value> ret{loss};
    llvm::append_range(ret, next.params);
    llvm::append_range(ret, next.state);
    ret.push_back(next.step);
    func::ReturnOp::create(b, loc, ret);
    return success();
  }

  void buildInit(const Model &m, const TrainConfig &cfg) {
    OpBuilder b(&getContext());
    SmallVector<Slot> results;
    for (unsigned p : m.params)
      results.push_back({m.type(p), Role::param, m.name(p).str()});
    SmallVector<Slot> state = stateSlots(m, cfg);
    llvm::append_range(results, state);
    Slot stepSlot{RankedTensorType::get({}, b.getI64Type()), Role::step, "step"};
    results.push_back(stepSlot);
    Slot seed{stepSlot.type, Role::input, "seed"};
    func::FuncOp init =
        createFunction(b, getOperation(), "init", {seed}, results);
    TensorBuilder t{b, m.forward.getLoc()};
    SmallVector<Value> ret;
    for (auto [stream, p] : llvm::enumerate(m.params))
      ret.push_back(buildInitializer(
          t, m.forward.getArgAttrOfType<InitializerAttr>(p, attr::init),
          m.type(p), init.getArgument(0), stream));
    for (const Slot &s : state)
      ret.push_back(t.filled(s.type, s.name == kLossScaleName
                                         ? cfg.lossScale->init
                                         : 0.0));
    ret.push_back(t.integer(b.getI64Type(), 0));
    func::ReturnOp::create(b, t.loc, ret);
  }
};

} // namespace

func::FuncOp mlir::tg::forwardOfGradient(func::FuncOp grad) {
  StringRef name = grad.getSymName();
  name.consume_back(kMicroSuffix);
  auto module = grad->getParentOfType<ModuleOp>();
  if (!module || !name.consume_back("_grad"))
    return {};
  return module.lookupSymbol<func::FuncOp>(name);
}

SmallVector<func::FuncOp, 2> mlir::tg::gradientFunctions(ModuleOp module,
                                                         StringRef gradName) {
  SmallVector<func::FuncOp, 2> fns;
  for (std::string name : {gradName.str(), (gradName + kMicroSuffix).str()})
    if (auto fn = module.lookupSymbol<func::FuncOp>(name))
      fns.push_back(fn);
  return fns;
}
