//===- TrainConfig.cpp - optimizers, schedules, initialisers ----*- C++ -*-===//
//
// The arithmetic of training, written as tg ops so that every backend runs
// the same update and the reference evaluator checks it: learning-rate
// schedules, global-norm clipping, SGD (momentum, Nesterov), Adam, AdamW and
// parameter initialisation. Formulas follow PyTorch's torch.optim.
//
//===----------------------------------------------------------------------===//

#include "passes/TrainConfig.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tg;

/// A numeric entry of `dict` (integer or float), if present.
static std::optional<double> number(DictionaryAttr dict, StringRef key) {
  if (!dict)
    return std::nullopt;
  Attribute a = dict.get(key);
  if (auto f = dyn_cast_if_present<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto i = dyn_cast_if_present<IntegerAttr>(a))
    return double(i.getInt());
  if (auto b = dyn_cast_if_present<BoolAttr>(a))
    return b.getValue() ? 1.0 : 0.0;
  return std::nullopt;
}

FailureOr<TrainConfig> TrainConfig::read(ModuleOp module) {
  auto train = module->getAttrOfType<DictionaryAttr>(attr::train);
  if (!train)
    return module.emitError("the module has no 'tg.train' attribute: the "
                            "model needs a train block to build a training "
                            "step");
  TrainConfig cfg;
  auto opt = train.getAs<DictionaryAttr>("optimizer");
  if (opt) {
    auto kind = opt.getAs<StringAttr>("kind");
    if (!kind || !llvm::is_contained({"sgd", "momentum", "adam", "adamw"},
                                     kind.getValue()))
      return module.emitError("tg.train: optimizer kind must be sgd, "
                              "momentum, adam or adamw");
    cfg.optimizer = kind.getValue().str();
    cfg.lr = number(opt, "lr").value_or(cfg.optimizer == "sgd" ||
                                                cfg.optimizer == "momentum"
                                            ? 0.01
                                            : 1e-3);
    cfg.momentum = number(opt, "momentum").value_or(cfg.momentum);
    cfg.nesterov = number(opt, "nesterov").value_or(0) != 0;
    cfg.beta1 = number(opt, "beta1").value_or(cfg.beta1);
    cfg.beta2 = number(opt, "beta2").value_or(cfg.beta2);
    cfg.eps = number(opt, "eps").value_or(cfg.eps);
    cfg.weightDecay = number(opt, "weight_decay")
                          .value_or(cfg.optimizer == "adamw" ? 0.01 : 0.0);
  }
  if (auto sched = train.getAs<DictionaryAttr>("schedule")) {
    auto kind = sched.getAs<StringAttr>("kind");
    if (!kind ||
        !llvm::is_contained({"constant", "warmup", "cosine"}, kind.getValue()))
      return module.emitError("tg.train: schedule kind must be constant, "
                              "warmup or cosine");
    cfg.schedule = kind.getValue().str();
    cfg.scheduleSteps = int64_t(number(sched, "steps").value_or(0));
    cfg.warmup = int64_t(number(sched, "warmup").value_or(0));
    cfg.minLr = number(sched, "min_lr").value_or(0.0);
    if (cfg.schedule == "warmup")
      cfg.warmup = cfg.scheduleSteps;
    if (cfg.schedule == "cosine" && cfg.scheduleSteps <= cfg.warmup)
      return module.emitError("tg.train: cosine schedule needs steps > "
                              "warmup");
  }
  cfg.clipGradNorm = number(train, "clip_grad_norm");
  if (auto k = number(train, "accumulate"))
    cfg.accumulate = int64_t(*k);
  if (cfg.accumulate < 1)
    return module.emitError("tg.train: accumulate must be >= 1");
  if (auto b = number(train, "batch"))
    cfg.batch = int64_t(*b);
  if (auto p = train.getAs<StringAttr>("precision"))
    cfg.precision = p.getValue().str();
  auto scaling = train.getAs<DictionaryAttr>("loss_scale");
  if (scaling && cfg.precision != "fp16")
    return module.emitError("tg.train: loss_scale needs precision = fp16 (bf16 "
                            "and fp32 have fp32's exponent range)");
  if (cfg.precision == "fp16") {
    TrainConfig::LossScale ls;
    ls.init = number(scaling, "init").value_or(ls.init);
    ls.growth = number(scaling, "growth").value_or(ls.growth);
    ls.backoff = number(scaling, "backoff").value_or(ls.backoff);
    ls.interval = int64_t(number(scaling, "interval").value_or(ls.interval));
    // The frontend checks these at their line; this is for IR by hand.
    if (!(ls.init > 0 && ls.init <= 3.4e38) || !(ls.growth > 1) ||
        !(ls.growth < 1e38) || !(ls.backoff > 0 && ls.backoff < 1) ||
        ls.interval < 1)
      return module.emitError("tg.train: loss_scale needs 0 < init <= 3.4e38, "
                              "growth > 1, 0 < backoff < 1 and interval >= 1");
    cfg.lossScale = ls;
  }
  return cfg;
}

SmallVector<StringRef> TrainConfig::stateSlots() const {
  if (optimizer == "momentum")
    return {"momentum"};
  if (optimizer == "adam" || optimizer == "adamw")
    return {"exp_avg", "exp_avg_sq"};
  return {};
}

Value mlir::tg::buildLearningRate(TensorBuilder &t, const TrainConfig &cfg,
                                  Value step) {
  Type f32 = TensorBuilder::elt(step);
  Value lr = t.scalar(f32, cfg.lr), one = t.scalar(f32, 1.0);
  if (cfg.schedule == "constant")
    return lr;
  // Linear warm-up over the first `warmup` steps: lr * (step + 1) / warmup.
  Value warm = lr;
  if (cfg.warmup > 0) {
    Value frac = t.div(t.add(step, one), t.scalar(f32, double(cfg.warmup)));
    warm = t.mul(lr, MinimumOp::create(t.b, t.loc, frac, one));
  }
  if (cfg.schedule == "warmup")
    return warm;
  // Cosine decay from lr to min_lr over the remaining steps, then min_lr.
  double span = double(cfg.scheduleSteps - cfg.warmup);
  Value progress = t.div(t.sub(step, t.scalar(f32, double(cfg.warmup))),
                         t.scalar(f32, span));
  progress = MinimumOp::create(t.b, t.loc, progress, one);
  Value cosine = CosOp::create(t.b, t.loc, t.mul(t.scalar(f32, M_PI), progress));
  Value decayed = t.add(
      t.scalar(f32, cfg.minLr),
      t.mul(t.scalar(f32, 0.5 * (cfg.lr - cfg.minLr)), t.add(one, cosine)));
  Value inWarmup =
      t.cmp(CmpPredicate::lt, step, t.scalar(f32, double(cfg.warmup)));
  return t.select(inWarmup, warm, decayed);
}

void mlir::tg::buildClipByGlobalNorm(TensorBuilder &t,
                                     MutableArrayRef<Value> grads,
                                     double maxNorm,
                                     function_ref<Value(Value)> globalSum) {
  if (grads.empty())
    return;
  Value total;
  for (Value g : grads) {
    Value sq = t.sum(t.mul(g, g), TensorBuilder::allAxes(g), false);
    total = total ? t.add(total, sq) : sq;
  }
  if (globalSum)
    total = globalSum(total);
  Type f = TensorBuilder::elt(total);
  Value norm = SqrtOp::create(t.b, t.loc, total);
  // torch.nn.utils.clip_grad_norm_: scale = min(1, max / (norm + 1e-6)).
  Value scale = MinimumOp::create(
      t.b, t.loc, t.scalar(f, 1.0),
      t.div(t.scalar(f, maxNorm), t.add(norm, t.scalar(f, 1e-6))));
  for (Value &g : grads)
    g = t.mul(g, scale);
}

Value mlir::tg::buildAllFinite(TensorBuilder &t, ArrayRef<Value> grads,
                               function_ref<Value(Value)> globalSum) {
  Value total;
  for (Value g : grads) {
    Value zeros = t.mul(g, t.scalar(TensorBuilder::elt(g), 0.0));
    Value s = t.sum(zeros, TensorBuilder::allAxes(g), false);
    if (total && TensorBuilder::elt(s) != TensorBuilder::elt(total))
      s = CastOp::create(t.b, t.loc, TensorBuilder::typeOf(total), s);
    total = total ? t.add(total, s) : s;
  }
  if (!total)
    return t.cmp(CmpPredicate::eq, t.integer(t.b.getI64Type(), 0),
                 t.integer(t.b.getI64Type(), 0));
  // A NaN on any rank makes the sum over the ranks NaN on every rank.
  if (globalSum)
    total = globalSum(total);
  // NaN is the one value that is not equal to itself.
  return t.cmp(CmpPredicate::eq, total, total);
}

std::pair<Value, Value>
mlir::tg::buildLossScaleUpdate(TensorBuilder &t,
                               const TrainConfig::LossScale &ls, Value finite,
                               Value scale, Value tracker) {
  // torch.amp's _amp_update_scale_: an overflow backs off and restarts the
  // count; `interval` finite steps in a row grow the scale unless that would
  // overflow f32.
  Type f = TensorBuilder::elt(scale), i = TensorBuilder::elt(tracker);
  Value counted = t.add(tracker, t.integer(i, 1));
  Value due = t.cmp(CmpPredicate::eq, counted, t.integer(i, ls.interval));
  Value grown = t.mul(scale, t.scalar(f, ls.growth));
  Value grownFits = t.cmp(CmpPredicate::le, grown,
                          t.scalar(f, double(std::numeric_limits<float>::max())));
  Value onFinite = t.select(due, t.select(grownFits, grown, scale), scale);
  Value nextScale =
      t.select(finite, onFinite, t.mul(scale, t.scalar(f, ls.backoff)));
  Value zero = t.integer(i, 0);
  Value nextTracker =
      t.select(finite, t.select(due, zero, counted), zero);
  return {nextScale, nextTracker};
}

Value mlir::tg::buildOptimizerUpdate(TensorBuilder &t, const TrainConfig &cfg,
                                     Value param, Value grad,
                                     MutableArrayRef<Value> state, Value lr,
                                     Value t1) {
  Type f = TensorBuilder::elt(param);
  auto c = [&](double v) { return t.scalar(f, v); };
  bool decoupled = cfg.optimizer == "adamw";
  // L2 regularisation (sgd, momentum, adam) adds wd * p to the gradient.
  if (cfg.weightDecay != 0 && !decoupled)
    grad = t.add(grad, t.mul(c(cfg.weightDecay), param));

  if (cfg.optimizer == "sgd")
    return t.sub(param, t.mul(lr, grad));
  if (cfg.optimizer == "momentum") {
    // buf = mu * buf + g; step along g + mu * buf (Nesterov) or buf.
    Value buf = t.add(t.mul(c(cfg.momentum), state[0]), grad);
    state[0] = buf;
    Value dir = cfg.nesterov ? t.add(grad, t.mul(c(cfg.momentum), buf)) : buf;
    return t.sub(param, t.mul(lr, dir));
  }
  // Adam / AdamW with bias correction.
  if (decoupled && cfg.weightDecay != 0)
    param = t.mul(param, t.sub(c(1.0), t.mul(lr, c(cfg.weightDecay))));
  Value m = t.add(t.mul(c(cfg.beta1), state[0]),
                  t.mul(c(1.0 - cfg.beta1), grad));
  Value v = t.add(t.mul(c(cfg.beta2), state[1]),
                  t.mul(c(1.0 - cfg.beta2), t.mul(grad, grad)));
  state[0] = m;
  state[1] = v;
  Value bc1 = t.sub(c(1.0), PowOp::create(t.b, t.loc, c(cfg.beta1), t1));
  Value bc2 = t.sub(c(1.0), PowOp::create(t.b, t.loc, c(cfg.beta2), t1));
  Value denom = t.add(t.div(SqrtOp::create(t.b, t.loc, v),
                            SqrtOp::create(t.b, t.loc, bc2)),
                      c(cfg.eps));
  Value stepSize = t.div(lr, bc1);
  return t.sub(param, t.mul(stepSize, t.div(m, denom)));
}

Value mlir::tg::buildInitializer(TensorBuilder &t, InitializerAttr init,
                                 RankedTensorType type, Value seed,
                                 int64_t stream) {
  StringRef kind = init ? init.getKind() : StringRef("zeros");
  ArrayRef<double> args = init ? init.getValues() : ArrayRef<double>();
  if (kind == "zeros" || kind == "ones" || kind == "constant")
    return t.filled(type, kind == "zeros" ? 0.0
                          : kind == "ones" ? 1.0
                                           : args[0]);
  // Fans as PyTorch computes them for a weight used as x @ W ([in, out]) or
  // a convolution kernel [out, in, kh, kw].
  ArrayRef<int64_t> s = type.getShape();
  double fanIn = 1, fanOut = 1;
  if (s.size() == 1) {
    fanIn = fanOut = double(s[0]);
  } else if (s.size() == 2) {
    fanIn = double(s[0]);
    fanOut = double(s[1]);
  } else if (s.size() > 2) {
    double field = 1;
    for (int64_t d : s.drop_front(2))
      field *= double(d);
    fanOut = double(s[0]) * field;
    fanIn = double(s[1]) * field;
  }
  RandomDistribution dist = RandomDistribution::uniform;
  double a = 0, b = 0;
  if (kind == "normal" || kind == "uniform") {
    dist = kind == "normal" ? RandomDistribution::normal
                            : RandomDistribution::uniform;
    a = args[0];
    b = args[1];
  } else if (kind == "glorot_uniform" || kind == "kaiming_uniform") {
    double bound = kind == "glorot_uniform" ? std::sqrt(6.0 / (fanIn + fanOut))
                                            : std::sqrt(6.0 / fanIn);
    a = -bound;
    b = bound;
  } else {
    dist = RandomDistribution::normal;
    b = kind == "glorot_normal" ? std::sqrt(2.0 / (fanIn + fanOut))
                                : std::sqrt(2.0 / fanIn);
  }
  return RandomOp::create(t.b, t.loc, type,
                          RandomDistributionAttr::get(t.b.getContext(), dist),
                          seed, t.b.getF64FloatAttr(a),
                          t.b.getF64FloatAttr(b),
                          t.b.getI64IntegerAttr(stream));
}

StepUpdate mlir::tg::buildStepUpdate(TensorBuilder &t, const TrainConfig &cfg,
                                     ValueRange params, ArrayRef<Value> grads,
                                     ValueRange state, Value step,
                                     function_ref<Value(Value)> globalSum) {
  OpBuilder &b = t.b;
  size_t np = params.size(), slots = cfg.stateSlots().size();
  SmallVector<Value> g(grads);
  // Loss scaling: one check over every (unscaled) gradient; a step that
  // saw inf or NaN keeps every parameter, state tensor and the step count
  // (selected below) and only backs the scale off.
  Value finite;
  if (cfg.lossScale)
    finite = buildAllFinite(t, g, globalSum);
  if (cfg.clipGradNorm)
    buildClipByGlobalNorm(t, g, *cfg.clipGradNorm, globalSum);

  // Scalars of the update in the parameters' float type.
  Type f = np ? TensorBuilder::elt(params[0]) : b.getF32Type();
  auto scalarF = RankedTensorType::get({}, f);
  Value stepF = CastOp::create(b, t.loc, scalarF, step);
  Value t1 = t.add(stepF, t.scalar(f, 1.0));
  Value lr = buildLearningRate(t, cfg, stepF);

  StepUpdate out;
  out.state.resize(slots * np);
  for (size_t i = 0; i < np; ++i) {
    SmallVector<Value> st;
    for (size_t s = 0; s < slots; ++s)
      st.push_back(state[s * np + i]);
    Value p = params[i], lrP = lr, t1P = t1;
    if (TensorBuilder::elt(p) != f) {
      auto pt = RankedTensorType::get({}, TensorBuilder::elt(p));
      lrP = CastOp::create(b, t.loc, pt, lr);
      t1P = CastOp::create(b, t.loc, pt, t1);
    }
    out.params.push_back(buildOptimizerUpdate(t, cfg, p, g[i], st, lrP, t1P));
    for (size_t s = 0; s < slots; ++s)
      out.state[s * np + i] = st[s];
  }
  out.step = t.add(step, t.integer(b.getI64Type(), 1));
  if (finite) {
    for (size_t i = 0; i < np; ++i)
      out.params[i] = t.select(finite, out.params[i], params[i]);
    for (size_t i = 0; i < out.state.size(); ++i)
      out.state[i] = t.select(finite, out.state[i], state[i]);
    out.step = t.select(finite, out.step, step);
    auto [scale, tracker] =
        buildLossScaleUpdate(t, *cfg.lossScale, finite, state[slots * np],
                             state[slots * np + 1]);
    out.state.push_back(scale);
    out.state.push_back(tracker);
  }
  return out;
}
