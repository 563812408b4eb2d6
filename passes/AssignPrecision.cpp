//===- AssignPrecision.cpp - mixed-precision policy -------------*- C++ -*-===//
//
// Rewrites a model's forward function for the train block's `precision`:
// fp32 master parameters with one low-precision compute copy each, bf16
// contractions that accumulate in fp32 (`tg.acc`), fp32 for the numerically
// sensitive ops (softmax: bf16 storage, f32 arithmetic inside), and bf16
// for everything that follows a bf16 value. Every
// decision is an explicit tg.cast or attribute (`tg.precision` names the
// rule), so tg-opt shows it and each backend runs exactly what it says.
// Runs before autodiff: the VJP of each cast is the cast back, so the
// gradients of the fp32 masters arrive in fp32. docs/training.md has the
// policy and the reasons.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/CallPath.h"

#include "mlir/IR/Verifier.h"

namespace mlir::tg {
#define GEN_PASS_DEF_ASSIGNPRECISIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// The rules, as `tg.precision` spells them (and --report=precision); the
/// low-precision ones start with the type's name ("bf16-acc-f32",
/// "fp16-acc-f32", ...), see Assigner.
constexpr StringLiteral kSensitive = "fp32-sensitive";
constexpr StringLiteral kFollow = "follow";
constexpr StringLiteral kOutput = "output";
constexpr StringLiteral kKeep = "keep-fp32";

/// Ops whose result loses accuracy in bf16: variance statistics, losses and
/// long sums. They run in fp32, on fp32 operands, with fp32 results.
bool isSensitive(Operation *op) {
  return isa<LayerNormOp, RmsNormOp, CrossEntropyOp, MseLossOp, SumOp,
             MeanOp>(op);
}

/// The element type of a tensor value (null for anything else).
Type eltOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getElementType() : Type();
}

/// Rewrites one function for compute type `low` (bf16 or f16), whose
/// rules are spelled with `prefix` ("bf16", "fp16").
class Assigner {
public:
  Assigner(func::FuncOp fn, Type low, StringRef prefix,
           ArrayRef<StringRef> keep)
      : fn(fn), b(fn.getContext()), low(low), f32(b.getF32Type()), keep(keep),
        used(keep.size(), false),
        tg(dialect(fn.getContext())), contraction((prefix + "-acc-f32").str()),
        gather((prefix + "-gather").str()),
        f32Math((prefix + "-io-f32-math").str()),
        attention((prefix + "-attention").str()) {}

  void run() {
    SmallVector<Operation *> ops;
    fn.walk([&](Operation *op) {
      if (isa<TGDialect>(op->getDialect()) && !isa<CastOp, ConstantOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      assign(op);
    // The function's results keep their declared types (the signature and
    // so the runtime's view of outputs do not change).
    fn.walk([&](func::ReturnOp ret) {
      for (OpOperand &o : ret->getOpOperands()) {
        Type want = fn.getResultTypes()[o.getOperandNumber()];
        if (o.get().getType() != want)
          o.set(castTo(ret, o.get(), cast<RankedTensorType>(want)
                                         .getElementType(), kOutput));
      }
    });
  }

  /// The train block's keep_fp32 patterns that selected no op.
  SmallVector<StringRef> unused() const {
    SmallVector<StringRef> out;
    for (auto [pattern, hit] : llvm::zip(keep, used))
      if (!hit)
        out.push_back(pattern);
    return out;
  }

private:
  /// Whether `v`'s element type is one this policy converts (f32 or low).
  bool convertible(Value v) const {
    Type e = eltOf(v);
    return e && (e == f32 || e == low);
  }

  /// `v` as element type `elt`: the parameter's shared compute copy, or a
  /// cast right before `user` tagged with `rule`.
  Value castTo(Operation *user, Value v, Type elt, StringRef rule) {
    if (eltOf(v) == elt)
      return v;
    auto type = cast<RankedTensorType>(v.getType()).clone(elt);
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner() == &fn.front() &&
        getArgRole(fn, arg.getArgNumber()) == Role::param) {
      // One copy per parameter per step, at the top of the function, in
      // argument order; the backward pass reads the same copy.
      Value &copy = copies[v];
      if (!copy) {
        if (lastCopy)
          b.setInsertionPointAfter(lastCopy);
        else
          b.setInsertionPointToStart(&fn.front());
        auto c = CastOp::create(b, v.getLoc(), type, v);
        tg.getPrecisionAttrHelper().setAttr(c, b.getStringAttr(kComputeCopyRule));
        lastCopy = c;
        copy = c;
      }
      return copy;
    }
    b.setInsertionPoint(user);
    auto c = CastOp::create(b, user->getLoc(), type, v);
    tg.getPrecisionAttrHelper().setAttr(c, b.getStringAttr(rule));
    return c;
  }

  /// Whether a keep_fp32 pattern selects `op` (each pattern is tried on
  /// every op, so that unused() names each that selected nothing).
  bool kept(Operation *op) {
    bool any = false;
    for (auto [pattern, hit] : llvm::zip(keep, used))
      if (keepFp32Selects(pattern, op))
        any = hit = true;
    return any;
  }

  void assign(Operation *op) {
    Type target;
    StringRef rule;
    if (kept(op)) {
      // The user's choice overrides every rule below: fp32 operands and
      // results, fp32 accumulation (no tg.acc: the dialect's default).
      target = f32;
      rule = kKeep;
    } else if (isContraction(op)) {
      target = low;
      rule = contraction;
    } else if (isa<EmbeddingOp>(op)) {
      target = low; // a gather is exact in any type: read the compute copy
      rule = gather;
    } else if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
      // Attention probabilities are the largest activations of a
      // transformer: stored in bf16, computed in f32 inside the op (as every
      // backend and tg-decompose compute a bf16 composite, rounding once).
      target = low;
      rule = f32Math;
    } else if (isa<AttentionOp>(op)) {
      // Low-precision q, k, v and output: the operands of its two matmuls,
      // which accumulate in f32 inside the op; the softmax statistics
      // (running maximum and sum, the stored log-sum-exp) stay f32, as the
      // op infers an f32 log-sum-exp for bf16/f16 inputs.
      target = low;
      rule = attention;
    } else if (isSensitive(op)) {
      target = f32;
      rule = kSensitive;
    } else if (llvm::any_of(op->getOperands(),
                            [&](Value v) { return eltOf(v) == low; })) {
      target = low;
      rule = kFollow;
    } else {
      return;
    }
    bool changed = false;
    for (OpOperand &o : op->getOpOperands()) {
      if (!convertible(o.get()) || eltOf(o.get()) == target)
        continue;
      o.set(castTo(op, o.get(), target, rule));
      changed = true;
    }
    for (OpResult r : op->getResults()) {
      if (!convertible(r) || eltOf(r) == target)
        continue;
      if (auto att = dyn_cast<AttentionOp>(op); att && r == att.getLse())
        continue;
      r.setType(cast<RankedTensorType>(r.getType()).clone(target));
      changed = true;
    }
    // A kept op is marked even when it was fp32 already, so that tg-opt
    // shows every op the pattern selected.
    bool floats = llvm::any_of(op->getResults(),
                               [&](Value r) { return convertible(r); });
    if (!changed && !(rule == kKeep && floats))
      return;
    tg.getPrecisionAttrHelper().setAttr(op, b.getStringAttr(rule));
    if (rule == contraction)
      tg.getAccAttrHelper().setAttr(op, TypeAttr::get(f32));
  }

  func::FuncOp fn;
  OpBuilder b;
  Type low, f32;
  ArrayRef<StringRef> keep;
  SmallVector<bool> used;
  TGDialect &tg;
  DenseMap<Value, Value> copies;
  Operation *lastCopy = nullptr;
  std::string contraction, gather, f32Math, attention;
};

struct AssignPrecisionPass final
    : tg::impl::AssignPrecisionPassBase<AssignPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string prec = precision;
    if (prec.empty()) {
      prec = "fp32";
      if (auto train = module->getAttrOfType<DictionaryAttr>(attr::train))
        if (auto p = train.getAs<StringAttr>("precision"))
          prec = p.str();
    }
    if (prec == "fp32")
      return;
    if (prec != "bf16" && prec != "fp16") {
      module.emitError() << "unknown precision '" << prec
                         << "' (supported: fp32, bf16, fp16)";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>(funcName);
    if (!fn) {
      module.emitError() << "tg-assign-precision: no function named '"
                         << funcName << "'";
      return signalPassFailure();
    }
    // keep_fp32 patterns (the frontend checked each against the model; a
    // hand-written module is checked here).
    SmallVector<StringRef> keep;
    if (auto train = module->getAttrOfType<DictionaryAttr>(attr::train))
      if (Attribute given = train.get("keep_fp32")) {
        auto list = dyn_cast<ArrayAttr>(given);
        if (!list) {
          module.emitError() << "keep_fp32 must be an array of strings, got "
                             << given;
          return signalPassFailure();
        }
        for (Attribute a : list) {
          auto str = dyn_cast<StringAttr>(a);
          if (!str) {
            module.emitError() << "keep_fp32 entries must be strings, got "
                               << a;
            return signalPassFailure();
          }
          keep.push_back(str.getValue());
        }
      }
    // fp16's gradients need loss scaling, which tg-build-train-step adds
    // for the train block's precision = fp16 (TrainConfig::lossScale).
    Assigner assigner(fn,
                      prec == "fp16"
                          ? Type(Float16Type::get(&getContext()))
                          : Type(BFloat16Type::get(&getContext())),
                      prec, keep);
    assigner.run();
    if (SmallVector<StringRef> unused = assigner.unused(); !unused.empty()) {
      module.emitError() << "keep_fp32: '" << unused.front()
                         << "' matches no call-site name or op kind of @"
                         << funcName;
      return signalPassFailure();
    }
    if (failed(mlir::verify(fn)))
      return signalPassFailure();
  }
};

} // namespace
