//===- SemaBuiltins.cpp - the built-in functions of .tg ---*- C++ -*-===//
//
// Part of the elaborator; see SemaImpl.h.
//
//===----------------------------------------------------------------------===//

#include "frontend/SemaImpl.h"

using namespace tgc;

namespace tgc::sema {

//===----------------------------------------------------------------------===//
// The built-in table
//===----------------------------------------------------------------------===//

const std::vector<Builtin> &builtins() {
  static const std::vector<Builtin> table = [] {
    std::vector<Builtin> t;
    Formal x{"x", true}, y{"y", true};
#define TGC_BINARY(method, builtin, op) t.push_back({builtin, {x, y}, &Sema::biBinary});
#include "tgc/BuilderOps.def"
    t.push_back({"select", {{"cond", true}, x, y}, &Sema::biSelect});
#define TGC_UNARY(method, builtin, op) t.push_back({builtin, {x}, &Sema::biUnary});
#include "tgc/BuilderOps.def"
    t.push_back({"gelu", {x, {"approximate", false}}, &Sema::biGelu});
    t.push_back({"cast", {x, {"dtype", true}}, &Sema::biCast});
    t.push_back({"matmul", {x, y, {"transpose_lhs", false}, {"transpose_rhs", false}},
                 &Sema::biMatmul});
    for (const char *n : {"sum", "mean", "max"})
      t.push_back({n, {x, {"axis", false}, {"keepdims", false}}, &Sema::biReduce});
    for (const char *n : {"softmax", "log_softmax"})
      t.push_back({n, {x, {"axis", false}}, &Sema::biSoftmax});
    t.push_back({"cross_entropy",
                 {{"logits", true}, {"labels", true}, {"ignore_index", false}},
                 &Sema::biCrossEntropy});
    t.push_back({"mse_loss", {x, {"target", true}}, &Sema::biMse});
    t.push_back({"layer_norm", {x, {"weight", false}, {"bias", false}, {"eps", false}},
                 &Sema::biLayerNorm});
    t.push_back({"rms_norm", {x, {"weight", false}, {"eps", false}}, &Sema::biRmsNorm});
    t.push_back({"embedding", {{"table", true}, {"indices", true}}, &Sema::biEmbedding});
    t.push_back({"reshape", {x, {"shape", true}}, &Sema::biReshape});
    t.push_back({"transpose", {x, {"perm", false}}, &Sema::biTranspose});
    t.push_back({"broadcast_to", {x, {"shape", true}}, &Sema::biBroadcastTo});
    t.push_back({"concat", {{"tensors", true}, {"axis", false}}, &Sema::biConcat});
    t.push_back({"causal_mask", {x, {"value", false}}, &Sema::biCausalMask});
    t.push_back({"dropout", {x, {"seed", true}, {"p", false}}, &Sema::biDropout});
    // causal has no default: a silent mask (or its absence) is a wrong model.
    t.push_back({"attention",
                 {{"q", true}, {"k", true}, {"v", true}, {"causal", true},
                  {"scale", false}},
                 &Sema::biAttention});
    t.push_back({"one_hot", {{"indices", true}, {"classes", true}, {"dtype", false}},
                 &Sema::biOneHot});
    t.push_back({"conv2d",
                 {x, {"weight", true}, {"stride", false}, {"padding", false},
                  {"dilation", false}, {"groups", false}},
                 &Sema::biConv2d});
    t.push_back({"max_pool2d",
                 {x, {"kernel", true}, {"stride", false}, {"padding", false}},
                 &Sema::biPool});
    t.push_back({"avg_pool2d",
                 {x, {"kernel", true}, {"stride", false}, {"padding", false},
                  {"count_include_pad", false}},
                 &Sema::biPool});
    for (const char *n : {"int", "float"})
      t.push_back({n, {x}, &Sema::biScalarConv});
    t.push_back({"range", {{"start", true}, {"stop", false}}, &Sema::biRange});
    return t;
  }();
  return table;
}

const Builtin *Sema::findBuiltin(const std::string &name) const {
  for (const Builtin &bi : builtins())
    if (name == bi.name)
      return &bi;
  return nullptr;
}

std::vector<std::string> Sema::visibleNames() const {
  std::vector<std::string> names;
  if (frame)
    for (const auto &kv : frame->vars)
      names.push_back(kv.first);
  for (const auto &kv : hypers)
    names.push_back(kv.first);
  return names;
}

//===----------------------------------------------------------------------===//
// Built-in ops
//===----------------------------------------------------------------------===//

Value Sema::biBinary(const Expr &e, Args &a) {
  Tok op = llvm::StringSwitch<Tok>(e.text)
               .Case("add", Tok::Plus)
               .Case("sub", Tok::Minus)
               .Case("mul", Tok::Star)
               .Case("div", Tok::Slash)
               .Case("pow", Tok::StarStar)
               .Default(Tok::Eof);
  if (op != Tok::Eof)
    return binaryValues(op, a.values[0], a.values[1], e.loc);
  Value l = a.values[0], r = a.values[1];
  if (l.kind == Value::TensorV && r.isNum())
    r = scalarAsTensor(r, l.t.dtype(), a.locs[1]);
  else if (r.kind == Value::TensorV && l.isNum())
    l = scalarAsTensor(l, r.t.dtype(), a.locs[0]);
  Tensor x, y;
  if (!wantTensor(l, a.locs[0], "'x'", x) || !wantTensor(r, a.locs[1], "'y'", y))
    return Value::error();
  static const std::pair<const char *, Tensor (Builder::*)(Tensor, Tensor, Location)>
      methods[] = {
#define TGC_BINARY(method, builtin, op) {builtin, &Builder::method},
#include "tgc/BuilderOps.def"
      };
  for (const auto &[name, method] : methods)
    if (e.text == name)
      return fromBuilder(((*b).*method)(x, y, L(e.loc)), e.loc);
  return err(e.loc, "internal error: no method for '" + e.text + "'");
}

Value Sema::biSelect(const Expr &e, Args &a) {
  Tensor c;
  if (!wantTensor(a.values[0], a.locs[0], "the condition", c))
    return Value::error();
  Value t = a.values[1], f = a.values[2];
  if (t.kind == Value::TensorV && f.isNum())
    f = scalarAsTensor(f, t.t.dtype(), a.locs[2]);
  else if (f.kind == Value::TensorV && t.isNum())
    t = scalarAsTensor(t, f.t.dtype(), a.locs[1]);
  Tensor x, y;
  if (!wantTensor(t, a.locs[1], "'x'", x) || !wantTensor(f, a.locs[2], "'y'", y))
    return Value::error();
  return fromBuilder(b->select(c, x, y, L(e.loc)), e.loc);
}

Value Sema::biUnary(const Expr &e, Args &a) {
  const Value &v = a.values[0];
  const std::string &n = e.text;
  if (v.isNum()) {
    // Scalar math folds, e.g. `1.0 / sqrt(head_dim)`.
    double x = v.num();
    if ((n == "log" || n == "sqrt" || n == "rsqrt") && !(x > 0 || (n == "sqrt" && x == 0)))
      return err(a.locs[0], n + " of " + fmtNum(x) + " is undefined");
    if (n == "neg" || n == "abs") {
      if (v.kind != Value::Float && v.i != std::numeric_limits<int64_t>::min())
        return Value::ofInt(n == "neg" ? -v.i : std::llabs(v.i));
      return Value::ofFloat(n == "neg" ? -x : std::fabs(x));
    }
    std::optional<double> r =
        n == "exp"       ? std::exp(x)
        : n == "log"     ? std::log(x)
        : n == "sqrt"    ? std::sqrt(x)
        : n == "rsqrt"   ? 1.0 / std::sqrt(x)
        : n == "tanh"    ? std::tanh(x)
        : n == "erf"     ? std::erf(x)
        : n == "cos"     ? std::cos(x)
        : n == "sin"     ? std::sin(x)
        : n == "sigmoid" ? 1.0 / (1.0 + std::exp(-x))
        : n == "relu"    ? std::max(0.0, x)
        : n == "silu"
            ? x / (1.0 + std::exp(-x))
            : std::optional<double>(); // an op without a fold takes tensors
    if (r)
      return Value::ofFloat(*r);
  }
  Tensor x;
  if (!wantTensor(v, a.locs[0], "the operand of '" + n + "'", x))
    return Value::error();
  static const std::pair<const char *, Tensor (Builder::*)(Tensor, Location)>
      methods[] = {
#define TGC_UNARY(method, builtin, op) {builtin, &Builder::method},
#include "tgc/BuilderOps.def"
      };
  for (const auto &[name, method] : methods)
    if (n == name)
      return fromBuilder(((*b).*method)(x, L(e.loc)), e.loc);
  return err(e.loc, "internal error: no method for '" + n + "'");
}

Value Sema::biGelu(const Expr &e, Args &a) {
  Tensor x;
  if (!wantTensor(a.values[0], a.locs[0], "the operand of 'gelu'", x))
    return Value::error();
  bool tanhApprox = false;
  if (a.has(1)) {
    const Value &v = a.values[1];
    if (v.kind != Value::String || (v.s != "tanh" && v.s != "none"))
      return err(a.locs[1], "gelu: approximate must be \"none\" or \"tanh\", got " +
                                describe(v));
    tanhApprox = v.s == "tanh";
  }
  return fromBuilder(b->gelu(x, tanhApprox, L(e.loc)), e.loc);
}

Value Sema::biCast(const Expr &e, Args &a) {
  Tensor x;
  if (!wantTensor(a.values[0], a.locs[0], "the operand of 'cast'", x))
    return Value::error();
  const Value &t = a.values[1];
  if (t.kind != Value::DTypeName)
    return err(a.locs[1], "cast: expected an element type such as bf16, got " +
                              describe(t));
  return fromBuilder(b->cast(x, *parseDType(t.s), L(e.loc)), e.loc);
}

Value Sema::biMatmul(const Expr &e, Args &a) {
  Tensor x, y;
  bool tl = false, tr = false;
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      !wantTensor(a.values[1], a.locs[1], "'y'", y) ||
      (a.has(2) && !wantBool(a.values[2], a.locs[2], "transpose_lhs", tl)) ||
      (a.has(3) && !wantBool(a.values[3], a.locs[3], "transpose_rhs", tr)))
    return Value::error();
  return fromBuilder(b->matmul(x, y, tl, tr, L(e.loc)), e.loc);
}

Value Sema::biReduce(const Expr &e, Args &a) {
  Tensor x;
  std::vector<int64_t> axes;
  bool keep = false;
  if (!wantTensor(a.values[0], a.locs[0], "the operand of '" + e.text + "'", x) ||
      (a.has(1) && !wantInts(a.values[1], a.locs[1], "axis", axes)) ||
      (a.has(2) && !wantBool(a.values[2], a.locs[2], "keepdims", keep)))
    return Value::error();
  if (a.has(1) && axes.empty())
    return err(a.locs[1], e.text + ": the axis list is empty");
  Location l = L(e.loc);
  Tensor r = e.text == "sum"    ? b->sum(x, axes, keep, l)
             : e.text == "mean" ? b->mean(x, axes, keep, l)
                                : b->max(x, axes, keep, l);
  return fromBuilder(r, e.loc);
}

Value Sema::biSoftmax(const Expr &e, Args &a) {
  Tensor x;
  int64_t axis = -1;
  if (!wantTensor(a.values[0], a.locs[0], "the operand of '" + e.text + "'", x) ||
      (a.has(1) && !wantInt(a.values[1], a.locs[1], "axis", axis)))
    return Value::error();
  Tensor r = e.text == "softmax" ? b->softmax(x, axis, L(e.loc))
                                 : b->logSoftmax(x, axis, L(e.loc));
  return fromBuilder(r, e.loc);
}

Value Sema::biCrossEntropy(const Expr &e, Args &a) {
  Tensor logits, labels;
  int64_t ignore = -100;
  if (!wantTensor(a.values[0], a.locs[0], "logits", logits) ||
      !wantTensor(a.values[1], a.locs[1], "labels", labels) ||
      (a.has(2) && !wantInt(a.values[2], a.locs[2], "ignore_index", ignore)))
    return Value::error();
  return fromBuilder(b->crossEntropy(logits, labels, ignore, L(e.loc)), e.loc);
}

Value Sema::biMse(const Expr &e, Args &a) {
  Tensor x, y;
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      !wantTensor(a.values[1], a.locs[1], "target", y))
    return Value::error();
  return fromBuilder(b->mseLoss(x, y, L(e.loc)), e.loc);
}

Value Sema::biLayerNorm(const Expr &e, Args &a) {
  Tensor x, w, bias;
  double eps = 1e-5;
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      (a.has(1) && !wantTensor(a.values[1], a.locs[1], "weight", w)) ||
      (a.has(2) && !wantTensor(a.values[2], a.locs[2], "bias", bias)) ||
      (a.has(3) && !wantFloat(a.values[3], a.locs[3], "eps", eps)))
    return Value::error();
  return fromBuilder(b->layerNorm(x, w, bias, eps, L(e.loc)), e.loc);
}

Value Sema::biRmsNorm(const Expr &e, Args &a) {
  Tensor x, w;
  double eps = 1e-6;
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      (a.has(1) && !wantTensor(a.values[1], a.locs[1], "weight", w)) ||
      (a.has(2) && !wantFloat(a.values[2], a.locs[2], "eps", eps)))
    return Value::error();
  return fromBuilder(b->rmsNorm(x, w, eps, L(e.loc)), e.loc);
}

Value Sema::biEmbedding(const Expr &e, Args &a) {
  Tensor table, idx;
  if (!wantTensor(a.values[0], a.locs[0], "the table", table) ||
      !wantTensor(a.values[1], a.locs[1], "the indices", idx))
    return Value::error();
  return fromBuilder(b->embedding(table, idx, L(e.loc)), e.loc);
}

Value Sema::biReshape(const Expr &e, Args &a) {
  Tensor x;
  std::vector<int64_t> shape;
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      !wantInts(a.values[1], a.locs[1], "the shape", shape))
    return Value::error();
  return fromBuilder(b->reshape(x, shape, L(e.loc)), e.loc);
}

Value Sema::biTranspose(const Expr &e, Args &a) {
  Tensor x;
  std::vector<int64_t> perm;
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      (a.has(1) && !wantInts(a.values[1], a.locs[1], "the permutation", perm)))
    return Value::error();
  if (!a.has(1)) {
    // Default: swap the last two axes.
    size_t r = x.shape().size();
    if (r < 2)
      return err(e.loc, "transpose without a permutation swaps the last two "
                        "axes, but " + x.type().str() + " has rank " +
                        std::to_string(r));
    for (size_t i = 0; i < r; ++i)
      perm.push_back(static_cast<int64_t>(i));
    std::swap(perm[r - 1], perm[r - 2]);
  }
  return fromBuilder(b->transpose(x, perm, L(e.loc)), e.loc);
}

Value Sema::biBroadcastTo(const Expr &e, Args &a) {
  Tensor x;
  std::vector<int64_t> shape;
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      !wantInts(a.values[1], a.locs[1], "the shape", shape))
    return Value::error();
  return fromBuilder(b->broadcastTo(x, shape, L(e.loc)), e.loc);
}

Value Sema::biConcat(const Expr &e, Args &a) {
  const Value &v = a.values[0];
  int64_t axis = 0;
  if (a.has(1) && !wantInt(a.values[1], a.locs[1], "axis", axis))
    return Value::error();
  if (v.kind != Value::List)
    return err(a.locs[0], "concat takes a list of tensors, as in concat([a, b], "
                          "axis=1); got " + describe(v));
  std::vector<Tensor> ts;
  for (const Value &x : v.list) {
    Tensor t;
    if (!wantTensor(x, a.locs[0], "each element of the list", t))
      return Value::error();
    ts.push_back(t);
  }
  return fromBuilder(b->concat(ts, axis, L(e.loc)), e.loc);
}

Value Sema::biCausalMask(const Expr &e, Args &a) {
  Tensor x;
  double value = -std::numeric_limits<double>::infinity();
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      (a.has(1) && !wantFloat(a.values[1], a.locs[1], "value", value)))
    return Value::error();
  return fromBuilder(b->causalMask(x, value, L(e.loc)), e.loc);
}

Value Sema::biDropout(const Expr &e, Args &a) {
  Tensor x, seed;
  double p = 0.1;
  if (!wantTensor(a.values[0], a.locs[0], "'x'", x) ||
      !wantTensor(a.values[1], a.locs[1], "the seed", seed) ||
      (a.has(2) && !wantFloat(a.values[2], a.locs[2], "p", p)))
    return Value::error();
  return fromBuilder(b->dropout(x, seed, p, L(e.loc)), e.loc);
}

Value Sema::biAttention(const Expr &e, Args &a) {
  Tensor q, k, v;
  bool causal = false;
  std::optional<double> scale;
  if (!wantTensor(a.values[0], a.locs[0], "the query", q) ||
      !wantTensor(a.values[1], a.locs[1], "the key", k) ||
      !wantTensor(a.values[2], a.locs[2], "the value", v) ||
      !wantBool(a.values[3], a.locs[3], "causal", causal))
    return Value::error();
  if (a.has(4)) {
    double s = 0;
    if (!wantFloat(a.values[4], a.locs[4], "scale", s))
      return Value::error();
    scale = s;
  }
  return fromBuilder(b->attention(q, k, v, causal, scale, L(e.loc)), e.loc);
}

Value Sema::biOneHot(const Expr &e, Args &a) {
  Tensor idx;
  int64_t classes;
  DType dt = DType::F32;
  if (!wantTensor(a.values[0], a.locs[0], "the indices", idx) ||
      !wantInt(a.values[1], a.locs[1], "classes", classes))
    return Value::error();
  if (a.has(2)) {
    if (a.values[2].kind != Value::DTypeName)
      return err(a.locs[2], "one_hot: dtype must be an element type, got " +
                                describe(a.values[2]));
    dt = *parseDType(a.values[2].s);
  }
  return fromBuilder(b->oneHot(idx, classes, dt, L(e.loc)), e.loc);
}

Value Sema::biConv2d(const Expr &e, Args &a) {
  Tensor x, w;
  std::vector<int64_t> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  if (!wantTensor(a.values[0], a.locs[0], "the input", x) ||
      !wantTensor(a.values[1], a.locs[1], "the weight", w) ||
      (a.has(2) && !wantPair(a.values[2], a.locs[2], "stride", stride)) ||
      (a.has(3) && !wantPair(a.values[3], a.locs[3], "padding", padding)) ||
      (a.has(4) && !wantPair(a.values[4], a.locs[4], "dilation", dilation)) ||
      (a.has(5) && !wantInt(a.values[5], a.locs[5], "groups", groups)))
    return Value::error();
  return fromBuilder(b->conv2d(x, w, stride, padding, dilation, groups, L(e.loc)),
                     e.loc);
}

Value Sema::biPool(const Expr &e, Args &a) {
  Tensor x;
  std::vector<int64_t> kernel, stride, padding{0, 0};
  // PyTorch's default, so that a ported model averages the same numbers.
  bool countIncludePad = true;
  if (!wantTensor(a.values[0], a.locs[0], "the input", x) ||
      !wantPair(a.values[1], a.locs[1], "kernel", kernel) ||
      (a.has(2) && !wantPair(a.values[2], a.locs[2], "stride", stride)) ||
      (a.has(3) && !wantPair(a.values[3], a.locs[3], "padding", padding)) ||
      // Only avg_pool2d has a fifth formal.
      (a.values.size() > 4 && a.has(4) &&
       !wantBool(a.values[4], a.locs[4], "count_include_pad", countIncludePad)))
    return Value::error();
  if (!a.has(2))
    stride = kernel;
  Tensor r = e.text == "max_pool2d"
                 ? b->maxPool2d(x, kernel, stride, padding, L(e.loc))
                 : b->avgPool2d(x, kernel, stride, padding, countIncludePad,
                                L(e.loc));
  return fromBuilder(r, e.loc);
}

Value Sema::biScalarConv(const Expr &e, Args &a) {
  const Value &v = a.values[0];
  if (!v.isNum())
    return err(a.locs[0], e.text + "() takes a number, got " + describe(v));
  if (e.text == "float")
    return Value::ofFloat(v.num());
  double x = std::trunc(v.num());
  if (!(std::fabs(x) < 9e18))
    return err(a.locs[0], "int(): value out of range");
  return Value::ofInt(static_cast<int64_t>(x));
}

Value Sema::biRange(const Expr &e, Args &) {
  return err(e.loc, "range() is only allowed as the subject of a for loop");
}


} // namespace tgc::sema
