//===- DecomposeComposites.cpp - composite tg ops to primitives -*- C++ -*-===//
//
// Rewrites softmax, log_softmax, gelu, silu, sigmoid, layer_norm, rms_norm,
// cross_entropy, mse_loss, attention and attention_grad into primitive tg
// ops. Each decomposition is one
// function below; the pattern around them is shared.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "dialects/TGBuilder.h"

#include "mlir/IR/IRMapping.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::tg {
#define GEN_PASS_DEF_DECOMPOSECOMPOSITESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

using Emit = TensorBuilder;

Value decompose(SoftmaxOp op, Emit &e) {
  Value x = op.getInput();
  int64_t axis = Emit::normAxis(x, op.getAxis());
  Value shifted = e.sub(x, e.max(x, axis, true));
  Value exp = ExpOp::create(e.b, e.loc, shifted);
  return e.div(exp, e.sum(exp, axis, true));
}

Value decompose(LogSoftmaxOp op, Emit &e) {
  Value x = op.getInput();
  int64_t axis = Emit::normAxis(x, op.getAxis());
  Value shifted = e.sub(x, e.max(x, axis, true));
  Value sum = e.sum(ExpOp::create(e.b, e.loc, shifted), axis, true);
  return e.sub(shifted, LogOp::create(e.b, e.loc, sum));
}

Value decompose(GeluOp op, Emit &e) {
  Value x = op.getInput();
  Type t = Emit::elt(x);
  Value inner;
  if (op.getApproximate() == GeluApproximation::tanh) {
    Value cube = e.mul(e.mul(x, x), x);
    Value poly = e.add(x, e.mul(e.scalar(t, 0.044715), cube));
    inner = TanhOp::create(e.b, e.loc,
                           e.mul(e.scalar(t, std::sqrt(2.0 / M_PI)), poly));
  } else {
    inner = ErfOp::create(e.b, e.loc, e.mul(x, e.scalar(t, M_SQRT1_2)));
  }
  Value half = e.mul(e.scalar(t, 0.5), x);
  return e.mul(half, e.add(e.scalar(t, 1.0), inner));
}

Value decompose(SigmoidOp op, Emit &e) {
  Value x = op.getInput();
  Type t = Emit::elt(x);
  Value exp = ExpOp::create(e.b, e.loc, NegOp::create(e.b, e.loc, x));
  return e.div(e.scalar(t, 1.0), e.add(e.scalar(t, 1.0), exp));
}

Value decompose(SiluOp op, Emit &e) {
  Value x = op.getInput();
  return e.mul(x, SigmoidOp::create(e.b, e.loc, x));
}

/// `x * rsqrt(meanSquare + eps)`, shared by layer_norm and rms_norm.
Value normalise(Emit &e, Value x, Value meanSquare, double eps) {
  Value var = e.add(meanSquare, e.scalar(Emit::elt(x), eps));
  return e.mul(x, RsqrtOp::create(e.b, e.loc, var));
}

Value decompose(LayerNormOp op, Emit &e) {
  Value x = op.getInput();
  int64_t last = Emit::normAxis(x, -1);
  Value centred = e.sub(x, e.mean(x, last, true));
  Value y = normalise(e, centred, e.mean(e.mul(centred, centred), last, true),
                      op.getEps().convertToDouble());
  if (op.getScale())
    y = e.mul(y, op.getScale());
  if (op.getBias())
    y = e.add(y, op.getBias());
  return y;
}

Value decompose(RmsNormOp op, Emit &e) {
  Value x = op.getInput();
  Value y = normalise(e, x, e.mean(e.mul(x, x), Emit::normAxis(x, -1), true),
                      op.getEps().convertToDouble());
  return op.getScale() ? e.mul(y, op.getScale()) : y;
}

Value decompose(CrossEntropyOp op, Emit &e) {
  Value logits = op.getLogits(), labels = op.getLabels();
  auto logitsType = cast<RankedTensorType>(logits.getType());
  Type t = logitsType.getElementType();
  int64_t last = logitsType.getRank() - 1;
  Value logp = LogSoftmaxOp::create(e.b, e.loc, logits, last);
  Value onehot = OneHotOp::create(e.b, e.loc, logitsType, labels);
  Value zero = e.scalar(t, 0.0), one = e.scalar(t, 1.0);
  // Selected, not multiplied by the one-hot row: a masked (-inf) logit that
  // is not the label would make 0 * -inf = NaN of the whole loss.
  Value isLabel = CmpOp::create(e.b, e.loc, CmpPredicate::ne, onehot, zero);
  Value picked = e.sum(SelectOp::create(e.b, e.loc, isLabel, logp, zero), last,
                       false);
  Value ignore =
      e.integer(Emit::elt(labels), op.getIgnoreIndexAttr().getInt());
  Value valid = CmpOp::create(e.b, e.loc, CmpPredicate::ne, labels, ignore);
  Value nll = SelectOp::create(e.b, e.loc, valid,
                               NegOp::create(e.b, e.loc, picked), zero);
  Value count = SelectOp::create(e.b, e.loc, valid, one, zero);
  Value total = e.sum(nll, Emit::allAxes(nll), false);
  Value n = e.sum(count, Emit::allAxes(count), false);
  // An all-ignored batch has loss 0, not 0/0.
  return e.div(total, MaximumOp::create(e.b, e.loc, n, one));
}

Value decompose(MseLossOp op, Emit &e) {
  Value d = e.sub(op.getInput(), op.getTarget());
  Value sq = e.mul(d, d);
  return e.mean(sq, Emit::allAxes(sq), false);
}

/// The scores `scale * q k^T` of attention, masked above the diagonal when
/// `causal`. The forward scales the product and the backward scales `q`
/// first: the two computations must not be identical ops, or CSE would
/// merge the backward's recomputation into the forward's T x T scores and
/// keep them alive from the forward to the backward, which is exactly the
/// memory that tg.attention_grad exists to avoid.
Value attentionScores(Emit &e, Value q, Value k, bool causal, double scale,
                      bool forward) {
  Value c = e.scalar(Emit::elt(q), scale);
  Value s = forward ? e.mul(MatmulOp::create(e.b, e.loc, q, k, false, true), c)
              : MatmulOp::create(e.b, e.loc, e.mul(q, c), k, false, true);
  return causal ? CausalMaskOp::create(e.b, e.loc, s,
                                       e.b.getF64FloatAttr(-INFINITY))
                : s;
}

/// `[B, H, T]` as `[B, H, T, 1]`, to broadcast against a row of scores.
Value rowVector(Emit &e, Value x) {
  auto type = Emit::typeOf(x);
  SmallVector<int64_t> shape(type.getShape());
  shape.push_back(1);
  return e.reshape(x, type.clone(shape));
}

SmallVector<Value> decompose(AttentionOp op, Emit &e) {
  Value v = op.getValue();
  Value s = attentionScores(e, op.getQuery(), op.getKey(), op.getCausal(),
                            op.getScale().convertToDouble(), true);
  Value m = e.max(s, 3, true);
  Value p = e.exp(e.sub(s, m));
  Value l = e.sum(p, 3, true);
  // Normalised after the product: a [T, dv] division instead of [T, T].
  Value o = e.div(MatmulOp::create(e.b, e.loc, p, v, false, false), l);
  Value lse = e.add(m, LogOp::create(e.b, e.loc, l));
  return {o, e.reshape(lse, Emit::typeOf(op.getLse()))};
}

SmallVector<Value> decompose(AttentionGradOp op, Emit &e) {
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  Value dout = op.getGradOutput();
  Value s = attentionScores(e, q, k, op.getCausal(),
                            op.getScale().convertToDouble(), false);
  // Masked scores are -inf, so their probabilities are exactly 0.
  Value p = e.exp(e.sub(s, rowVector(e, op.getLse())));
  Value dv = MatmulOp::create(e.b, e.loc, p, dout, true, false);
  Value dp = MatmulOp::create(e.b, e.loc, dout, v, false, true);
  Value rowDot = e.sub(e.sum(e.mul(dout, op.getOutput()), 3, true),
                       rowVector(e, op.getGradLse()));
  Value ds = e.mul(p, e.sub(dp, rowDot));
  Value c = e.scalar(Emit::elt(q), op.getScale().convertToDouble());
  Value dq = e.mul(MatmulOp::create(e.b, e.loc, ds, k, false, false), c);
  Value dk = e.mul(MatmulOp::create(e.b, e.loc, ds, q, true, false), c);
  return {dq, dk, dv};
}

/// One value per result, whichever form a decomposition returns.
SmallVector<Value> asResults(Value v) { return {v}; }
SmallVector<Value> asResults(SmallVector<Value> v) { return v; }

/// A bf16/f16 element type (the types whose arithmetic runs in f32).
bool isNarrowFloat(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && isa<FloatType>(type.getElementType()) &&
         type.getElementType().getIntOrFloatBitWidth() < 32;
}

bool narrow(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isNarrowFloat) ||
         llvm::any_of(op->getResultTypes(), isNarrowFloat);
}

/// A bf16/f16 composite is one op: computed in f32 and rounded once at its
/// result, as the reference evaluator evaluates it. Decomposing it into
/// bf16 primitives would round after every step (a softmax's sum, a
/// norm's variance), so the parts run on an f32 copy of the op instead.
template <typename OpTy>
SmallVector<Value> decomposeInF32(OpTy op, PatternRewriter &rw, Emit &e) {
  auto widen = [&](Type t) {
    return isNarrowFloat(t) ? Type(cast<RankedTensorType>(t).clone(
                                  rw.getF32Type()))
                            : t;
  };
  IRMapping wide;
  for (Value v : op->getOperands())
    if (isNarrowFloat(v.getType()))
      wide.map(v, CastOp::create(rw, e.loc, widen(v.getType()), v));
  Operation *copy = rw.clone(*op.getOperation(), wide);
  for (OpResult r : copy->getResults())
    r.setType(widen(r.getType()));
  SmallVector<Value> results = asResults(decompose(cast<OpTy>(copy), e));
  rw.eraseOp(copy);
  // Results that are f32 already (attention's log-sum-exp) stay as they are.
  for (auto [value, original] : llvm::zip(results, op->getResults()))
    if (value.getType() != original.getType())
      value = CastOp::create(rw, e.loc, original.getType(), value);
  return results;
}

/// Replaces a composite op by its decomposition.
template <typename OpTy>
struct DecomposeOp final : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rw) const override {
    Emit e{rw, op.getLoc()};
    Operation *prev = op->getPrevNode();
    SmallVector<Value> results =
        narrow(op) ? decomposeInF32(op, rw, e) : asResults(decompose(op, e));
    // The parts keep the composite's precision rule (tg-assign-precision),
    // so reports after decomposition still say why each tensor has its type.
    // A composite the backward pass replays (tg.recomputed, a VJP's
    // ReplayScope) is replayed as a whole: its parts stay marked, so CSE
    // cannot merge them into the forward's equal parts and keep those alive
    // into the backward pass.
    TGDialect &tgd = dialect(op->getContext());
    auto rule = tgd.getPrecisionAttrHelper();
    auto recomputed = tgd.getRecomputedAttrHelper();
    StringAttr r = rule.getAttr(op);
    bool replayed = recomputed.isAttrPresent(op);
    if (r || replayed)
      for (Operation *p = prev ? prev->getNextNode() : &op->getBlock()->front();
           p != op.getOperation(); p = p->getNextNode())
        rw.modifyOpInPlace(p, [&] {
          if (r)
            rule.setAttr(p, r);
          if (replayed && !p->hasTrait<OpTrait::ConstantLike>())
            recomputed.setAttr(p, rw.getUnitAttr());
        });
    rw.replaceOp(op, results);
    return success();
  }
};

template <typename... OpTys>
void addIfSelected(RewritePatternSet &patterns, ArrayRef<std::string> only) {
  auto selected = [&](StringRef name) {
    return only.empty() || llvm::is_contained(only, name.drop_front(3).str());
  };
  (void)std::initializer_list<int>{
      (selected(OpTys::getOperationName())
           ? (patterns.add<DecomposeOp<OpTys>>(patterns.getContext()), 0)
           : 0)...};
}

struct DecomposeCompositesPass final
    : tg::impl::DecomposeCompositesPassBase<DecomposeCompositesPass> {
  using Base::Base;
  LogicalResult initialize(MLIRContext *ctx) override {
    for (const std::string &name : ops)
      if (!llvm::is_contained(compositeOpNames(), name))
        return emitError(UnknownLoc::get(ctx))
               << "tg-decompose: '" << name
               << "' is not a composite op (known: softmax, log_softmax, "
                  "gelu, silu, sigmoid, layer_norm, rms_norm, cross_entropy, "
                  "mse_loss, attention, attention_grad)";
    return success();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeCompositesPatterns(patterns, ops);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

ArrayRef<StringLiteral> mlir::tg::compositeOpNames() {
  static constexpr llvm::StringLiteral known[] = {
      "softmax", "log_softmax", "gelu", "silu", "sigmoid",
      "layer_norm", "rms_norm", "cross_entropy", "mse_loss",
      "attention", "attention_grad"};
  return known;
}

void mlir::tg::populateDecomposeCompositesPatterns(RewritePatternSet &patterns,
                                                   ArrayRef<std::string> only) {
  addIfSelected<SoftmaxOp, LogSoftmaxOp, GeluOp, SiluOp, SigmoidOp,
                LayerNormOp, RmsNormOp, CrossEntropyOp, MseLossOp, AttentionOp,
                AttentionGradOp>(patterns, only);
}
