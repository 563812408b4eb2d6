//===- Sema.cpp - checking and elaboration of .tg programs -----*- C++ -*-===//
//
// A small tree-walking evaluator. Values are compile-time scalars, lists,
// strings or graph tensors; every tensor operation goes through tgc::Builder,
// which infers and checks shapes. Errors poison the value they produce, so one
// mistake is reported once and evaluation continues to find the next one.
//
//===----------------------------------------------------------------------===//

#include "frontend/Sema.h"
#include "frontend/Parser.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>

using namespace tgc;

namespace {

/// Shortest readable spelling of a number for messages.
std::string fmtNum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// A compile-time value.
struct Value {
  enum Kind { None, Error, Int, Float, Bool, String, DTypeName, TensorV, List };
  Kind kind = None;
  int64_t i = 0;
  double f = 0;
  std::string s;
  Tensor t;
  std::vector<Value> list;

  static Value error() { return make(Error); }
  static Value make(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }
  static Value ofInt(int64_t x) {
    Value v = make(Int);
    v.i = x;
    return v;
  }
  static Value ofFloat(double x) {
    Value v = make(Float);
    v.f = x;
    return v;
  }
  static Value ofBool(bool x) {
    Value v = make(Bool);
    v.i = x;
    return v;
  }
  static Value ofTensor(Tensor x) {
    Value v = make(TensorV);
    v.t = x;
    return v;
  }
  bool isError() const { return kind == Error; }
  bool isNum() const { return kind == Int || kind == Float || kind == Bool; }
  double num() const { return kind == Float ? f : static_cast<double>(i); }
};

std::string describe(const Value &v) {
  switch (v.kind) {
  case Value::None: return "nothing";
  case Value::Error: return "an invalid value";
  case Value::Int: return "the integer " + std::to_string(v.i);
  case Value::Float: return "the number " + fmtNum(v.f);
  case Value::Bool: return v.i ? "true" : "false";
  case Value::String: return "the string \"" + v.s + "\"";
  case Value::DTypeName: return "the type " + v.s;
  case Value::TensorV: return "a tensor " + v.t.type().str();
  case Value::List: return "a list";
  }
  return "a value";
}

/// Formal parameter of a built-in: name and whether it must be given.
struct Formal {
  const char *name;
  bool required;
};

/// The arguments of a built-in call, bound to its formals.
struct Args {
  std::vector<Value> values;
  std::vector<SrcLoc> locs;
  bool has(size_t i) const { return values[i].kind != Value::None; }
};

class Sema;
using BuiltinFn = Value (Sema::*)(const Expr &, Args &);

struct Builtin {
  const char *name;
  std::vector<Formal> formals;
  BuiltinFn fn;
};

/// Variables of a model body or a def invocation.
struct Frame {
  std::map<std::string, Value> vars;
  const DefDecl *def = nullptr;
};

/// Limit on nested def calls: recursion is reported, not followed.
constexpr unsigned kMaxCallDepth = 16;

class Sema {
public:
  Sema(const Program &prog, const SourceFile &file, DiagEngine &diag,
       const FrontendOptions &opts)
      : prog(prog), file(file), diag(diag), opts(opts) {}

  std::unique_ptr<Builder> run();

  // Built-in handlers (public so the table can take their addresses).
  Value biBinary(const Expr &e, Args &a);
  Value biSelect(const Expr &e, Args &a);
  Value biUnary(const Expr &e, Args &a);
  Value biGelu(const Expr &e, Args &a);
  Value biCast(const Expr &e, Args &a);
  Value biMatmul(const Expr &e, Args &a);
  Value biReduce(const Expr &e, Args &a);
  Value biSoftmax(const Expr &e, Args &a);
  Value biCrossEntropy(const Expr &e, Args &a);
  Value biMse(const Expr &e, Args &a);
  Value biLayerNorm(const Expr &e, Args &a);
  Value biRmsNorm(const Expr &e, Args &a);
  Value biEmbedding(const Expr &e, Args &a);
  Value biReshape(const Expr &e, Args &a);
  Value biTranspose(const Expr &e, Args &a);
  Value biBroadcastTo(const Expr &e, Args &a);
  Value biConcat(const Expr &e, Args &a);
  Value biCausalMask(const Expr &e, Args &a);
  Value biDropout(const Expr &e, Args &a);
  Value biOneHot(const Expr &e, Args &a);
  Value biConv2d(const Expr &e, Args &a);
  Value biPool(const Expr &e, Args &a);
  Value biScalarConv(const Expr &e, Args &a);
  Value biRange(const Expr &e, Args &a);

private:
  // Helpers.
  Location L(SrcLoc l) const { return {file.name().str(), l.line, l.col}; }
  Value err(SrcLoc loc, const std::string &msg) {
    diag.error(loc, msg);
    return Value::error();
  }
  /// Turns a Builder result into a Value, reporting its error at `loc`.
  Value fromBuilder(Tensor t, SrcLoc loc) {
    if (t)
      return Value::ofTensor(t);
    if (!b->lastError().empty())
      diag.error(loc, b->lastError());
    return Value::error();
  }
  bool wantTensor(const Value &v, SrcLoc loc, const std::string &what, Tensor &out);
  bool wantInt(const Value &v, SrcLoc loc, const std::string &what, int64_t &out);
  bool wantFloat(const Value &v, SrcLoc loc, const std::string &what, double &out);
  bool wantBool(const Value &v, SrcLoc loc, const std::string &what, bool &out);
  bool wantInts(const Value &v, SrcLoc loc, const std::string &what,
                std::vector<int64_t> &out);
  bool wantPair(const Value &v, SrcLoc loc, const std::string &what,
                std::vector<int64_t> &out);
  /// A scalar turned into a rank-0 constant of `like`'s element type.
  Value scalarAsTensor(const Value &scalar, DType like, SrcLoc loc);

  std::vector<std::string> visibleNames() const;
  const Builtin *findBuiltin(const std::string &name) const;

  // Evaluation.
  Value eval(const Expr &e);
  Value evalName(const Expr &e);
  Value evalUnary(const Expr &e);
  Value evalBinary(const Expr &e);
  Value binaryValues(Tok op, Value l, Value r, SrcLoc loc);
  Value evalIndex(const Expr &e);
  Value evalMember(const Expr &e);
  Value evalCall(const Expr &e);
  Value callDef(const Expr &e, const DefDecl &def);
  bool bindArgs(const Expr &e, const std::vector<Formal> &formals, Args &out);
  bool evalType(const TypeExpr &ty, TensorType &out);
  bool evalInit(const Expr *e, const TensorType &type, Init &out);

  // Statements.
  bool step(SrcLoc loc);
  /// Executes statements; returns true when a `return` ended the block.
  bool execBlock(const std::vector<StmtPtr> &body, Value *ret);
  bool execStmt(const Stmt &s, Value *ret);
  void bindVar(const std::string &name, SrcLoc loc, Value v);

  // Model-level pieces.
  void evalHypers(const ModelDecl &m);
  void evalTrain(const TrainDecl &tr);
  bool trainCall(const Expr &e, const std::string &key,
                 const std::vector<std::string> &kinds, ConfigValue &out);

  const Program &prog;
  const SourceFile &file;
  DiagEngine &diag;
  const FrontendOptions &opts;
  std::unique_ptr<Builder> b;
  std::map<std::string, Value> hypers;
  std::map<std::string, const DefDecl *> defs;
  Frame *frame = nullptr;
  unsigned callDepth = 0;
  size_t steps = 0;
  bool aborted = false;
};

//===----------------------------------------------------------------------===//
// The built-in table
//===----------------------------------------------------------------------===//

const std::vector<Builtin> &builtins() {
  static const std::vector<Builtin> table = [] {
    std::vector<Builtin> t;
    Formal x{"x", true}, y{"y", true};
    for (const char *n : {"add", "sub", "mul", "div", "pow", "maximum", "minimum"})
      t.push_back({n, {x, y}, &Sema::biBinary});
    t.push_back({"select", {{"cond", true}, x, y}, &Sema::biSelect});
    for (const char *n : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh",
                          "erf", "sigmoid", "relu", "silu"})
      t.push_back({n, {x}, &Sema::biUnary});
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
    t.push_back({"one_hot", {{"indices", true}, {"classes", true}, {"dtype", false}},
                 &Sema::biOneHot});
    t.push_back({"conv2d",
                 {x, {"weight", true}, {"stride", false}, {"padding", false},
                  {"dilation", false}, {"groups", false}},
                 &Sema::biConv2d});
    for (const char *n : {"max_pool2d", "avg_pool2d"})
      t.push_back({n, {x, {"kernel", true}, {"stride", false}, {"padding", false}},
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
// Value conversions
//===----------------------------------------------------------------------===//

bool Sema::wantTensor(const Value &v, SrcLoc loc, const std::string &what,
                      Tensor &out) {
  if (v.isError())
    return false;
  if (v.kind != Value::TensorV)
    return diag.error(loc, what + " must be a tensor, got " + describe(v));
  out = v.t;
  return true;
}

bool Sema::wantInt(const Value &v, SrcLoc loc, const std::string &what,
                   int64_t &out) {
  if (v.isError())
    return false;
  if (v.kind == Value::Int) {
    out = v.i;
    return true;
  }
  if (v.kind == Value::Float && std::isfinite(v.f) && v.f == std::floor(v.f) &&
      std::fabs(v.f) < 9e15) {
    out = static_cast<int64_t>(v.f);
    return true;
  }
  return diag.error(loc, what + " must be an integer, got " + describe(v));
}

bool Sema::wantFloat(const Value &v, SrcLoc loc, const std::string &what,
                     double &out) {
  if (v.isError())
    return false;
  if (v.kind != Value::Int && v.kind != Value::Float)
    return diag.error(loc, what + " must be a number, got " + describe(v));
  out = v.num();
  return true;
}

bool Sema::wantBool(const Value &v, SrcLoc loc, const std::string &what,
                    bool &out) {
  if (v.isError())
    return false;
  if (v.kind != Value::Bool)
    return diag.error(loc, what + " must be true or false, got " + describe(v));
  out = v.i != 0;
  return true;
}

bool Sema::wantInts(const Value &v, SrcLoc loc, const std::string &what,
                    std::vector<int64_t> &out) {
  if (v.isError())
    return false;
  out.clear();
  if (v.kind == Value::Int) {
    out.push_back(v.i);
    return true;
  }
  if (v.kind != Value::List)
    return diag.error(loc, what + " must be a list of integers, got " + describe(v));
  for (const Value &e : v.list) {
    int64_t x;
    if (!wantInt(e, loc, "each entry of " + what, x))
      return false;
    out.push_back(x);
  }
  return true;
}

bool Sema::wantPair(const Value &v, SrcLoc loc, const std::string &what,
                    std::vector<int64_t> &out) {
  if (!wantInts(v, loc, what, out))
    return false;
  if (out.size() == 1)
    out.push_back(out[0]);
  if (out.size() != 2)
    return diag.error(loc, what + " takes one integer or a pair [h, w], got " +
                               std::to_string(out.size()) + " values");
  return true;
}

Value Sema::scalarAsTensor(const Value &s, DType like, SrcLoc loc) {
  if (like == DType::I1)
    return err(loc, "cannot combine a number with a boolean tensor");
  if (isInteger(like) && s.kind == Value::Float && s.f != std::floor(s.f))
    return err(loc, "the number " + fmtNum(s.f) +
                        " does not fit an integer tensor (" + dtypeName(like) + ")");
  return fromBuilder(b->constant(s.num(), {like, {}}, L(loc)), loc);
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Value Sema::eval(const Expr &e) {
  if (aborted)
    return Value::error();
  switch (e.kind) {
  case Expr::Int:
    return Value::ofInt(e.intValue);
  case Expr::Float:
    return Value::ofFloat(e.floatValue);
  case Expr::String: {
    Value v = Value::make(Value::String);
    v.s = e.text;
    return v;
  }
  case Expr::Name:
    return evalName(e);
  case Expr::Unary:
    return evalUnary(e);
  case Expr::Binary:
    return evalBinary(e);
  case Expr::Call:
    return evalCall(e);
  case Expr::Index:
    return evalIndex(e);
  case Expr::Member:
    return evalMember(e);
  case Expr::Slice:
    return err(e.loc, "a slice 'a:b' is only allowed inside [ ]");
  case Expr::List: {
    Value v = Value::make(Value::List);
    bool bad = false;
    for (const ExprPtr &a : e.args) {
      v.list.push_back(eval(*a));
      bad |= v.list.back().isError();
    }
    return bad ? Value::error() : v;
  }
  }
  return Value::error();
}

Value Sema::evalName(const Expr &e) {
  if (frame) {
    auto it = frame->vars.find(e.text);
    if (it != frame->vars.end())
      return it->second;
  }
  auto h = hypers.find(e.text);
  if (h != hypers.end())
    return h->second;
  if (e.text == "true" || e.text == "false")
    return Value::ofBool(e.text == "true");
  if (e.text == "inf")
    return Value::ofFloat(std::numeric_limits<double>::infinity());
  if (parseDType(e.text)) {
    Value v = Value::make(Value::DTypeName);
    v.s = e.text;
    return v;
  }
  if (defs.count(e.text) || findBuiltin(e.text))
    return err(e.loc, "'" + e.text + "' is " +
                          (defs.count(e.text) ? "a def" : "a built-in op") +
                          "; call it with arguments, as in " + e.text + "(x)");
  return err(e.loc, withSuggestion("unknown name '" + e.text + "'", e.text,
                                   visibleNames()));
}

Value Sema::evalUnary(const Expr &e) {
  Value v = eval(*e.args[0]);
  switch (v.kind) {
  case Value::Error:
    return v;
  case Value::Int:
    if (v.i == std::numeric_limits<int64_t>::min())
      return err(e.loc, "integer overflow");
    return Value::ofInt(-v.i);
  case Value::Float:
    return Value::ofFloat(-v.f);
  case Value::TensorV:
    return fromBuilder(b->neg(v.t, L(e.loc)), e.loc);
  default:
    return err(e.loc, "cannot negate " + describe(v));
  }
}

Value Sema::evalBinary(const Expr &e) {
  Value l = eval(*e.args[0]);
  Value r = eval(*e.args[1]);
  if (l.isError() || r.isError())
    return Value::error();
  return binaryValues(e.op, std::move(l), std::move(r), e.loc);
}

static const char *opSpelling(Tok op) {
  switch (op) {
  case Tok::Plus: return "+";
  case Tok::Minus: return "-";
  case Tok::Star: return "*";
  case Tok::Slash: return "/";
  case Tok::At: return "@";
  case Tok::StarStar: return "**";
  case Tok::Less: return "<";
  case Tok::LessEq: return "<=";
  case Tok::Greater: return ">";
  case Tok::GreaterEq: return ">=";
  case Tok::EqEq: return "==";
  case Tok::NotEq: return "!=";
  default: return "?";
  }
}

Value Sema::binaryValues(Tok op, Value l, Value r, SrcLoc loc) {
  std::string sp = opSpelling(op);
  // Scalars fold at compile time.
  if (l.isNum() && r.isNum()) {
    bool ints = l.kind != Value::Float && r.kind != Value::Float;
    switch (op) {
    case Tok::Less: return Value::ofBool(l.num() < r.num());
    case Tok::LessEq: return Value::ofBool(l.num() <= r.num());
    case Tok::Greater: return Value::ofBool(l.num() > r.num());
    case Tok::GreaterEq: return Value::ofBool(l.num() >= r.num());
    case Tok::EqEq: return Value::ofBool(l.num() == r.num());
    case Tok::NotEq: return Value::ofBool(l.num() != r.num());
    case Tok::At: return err(loc, "'@' multiplies tensors, not numbers");
    default: break;
    }
    if (ints) {
      int64_t out;
      switch (op) {
      case Tok::Plus:
        if (__builtin_add_overflow(l.i, r.i, &out))
          return err(loc, "integer overflow in '+'");
        return Value::ofInt(out);
      case Tok::Minus:
        if (__builtin_sub_overflow(l.i, r.i, &out))
          return err(loc, "integer overflow in '-'");
        return Value::ofInt(out);
      case Tok::Star:
        if (__builtin_mul_overflow(l.i, r.i, &out))
          return err(loc, "integer overflow in '*'");
        return Value::ofInt(out);
      case Tok::Slash:
        if (r.i == 0)
          return err(loc, "division by zero");
        // Exact quotients stay integers so shapes like `d / heads` work;
        // inexact ones become numbers (and fail where a size is needed).
        if (r.i != -1 && l.i % r.i == 0)
          return Value::ofInt(l.i / r.i);
        if (r.i == -1 && l.i != std::numeric_limits<int64_t>::min())
          return Value::ofInt(-l.i);
        return Value::ofFloat(static_cast<double>(l.i) / static_cast<double>(r.i));
      case Tok::StarStar: {
        if (r.i < 0)
          return Value::ofFloat(std::pow(l.num(), r.num()));
        out = 1;
        for (int64_t k = 0; k < r.i; ++k) {
          if (__builtin_mul_overflow(out, l.i, &out))
            return err(loc, "integer overflow in '**'");
          if (out == 0 || out == 1)
            break;
        }
        if (l.i == -1)
          out = (r.i % 2) ? -1 : 1;
        return Value::ofInt(out);
      }
      default:
        break;
      }
    }
    double a = l.num(), c = r.num();
    switch (op) {
    case Tok::Plus: return Value::ofFloat(a + c);
    case Tok::Minus: return Value::ofFloat(a - c);
    case Tok::Star: return Value::ofFloat(a * c);
    case Tok::Slash:
      if (c == 0)
        return err(loc, "division by zero");
      return Value::ofFloat(a / c);
    case Tok::StarStar: return Value::ofFloat(std::pow(a, c));
    default: break;
    }
    return err(loc, "unsupported operator '" + sp + "'");
  }
  // Tensors, possibly with one scalar side.
  if (l.kind == Value::TensorV && r.isNum())
    r = scalarAsTensor(r, l.t.dtype(), loc);
  else if (r.kind == Value::TensorV && l.isNum())
    l = scalarAsTensor(l, r.t.dtype(), loc);
  if (l.isError() || r.isError())
    return Value::error();
  if (l.kind != Value::TensorV || r.kind != Value::TensorV)
    return err(loc, "operator '" + sp + "' cannot combine " + describe(l) +
                        " and " + describe(r));
  Location lc = L(loc);
  Tensor x = l.t, y = r.t;
  switch (op) {
  case Tok::Plus: return fromBuilder(b->add(x, y, lc), loc);
  case Tok::Minus: return fromBuilder(b->sub(x, y, lc), loc);
  case Tok::Star: return fromBuilder(b->mul(x, y, lc), loc);
  case Tok::Slash: return fromBuilder(b->div(x, y, lc), loc);
  case Tok::StarStar: return fromBuilder(b->pow(x, y, lc), loc);
  case Tok::At: return fromBuilder(b->matmul(x, y, false, false, lc), loc);
  case Tok::Less: return fromBuilder(b->cmp(CmpPredicate::LT, x, y, lc), loc);
  case Tok::LessEq: return fromBuilder(b->cmp(CmpPredicate::LE, x, y, lc), loc);
  case Tok::Greater: return fromBuilder(b->cmp(CmpPredicate::GT, x, y, lc), loc);
  case Tok::GreaterEq: return fromBuilder(b->cmp(CmpPredicate::GE, x, y, lc), loc);
  case Tok::EqEq: return fromBuilder(b->cmp(CmpPredicate::EQ, x, y, lc), loc);
  case Tok::NotEq: return fromBuilder(b->cmp(CmpPredicate::NE, x, y, lc), loc);
  default: return err(loc, "unsupported operator '" + sp + "'");
  }
}

Value Sema::evalIndex(const Expr &e) {
  Value base = eval(*e.args[0]);
  if (base.isError())
    return base;
  size_t nsub = e.args.size() - 1;
  if (base.kind == Value::List) {
    if (nsub != 1 || e.args[1]->kind == Expr::Slice)
      return err(e.loc, "a list takes a single integer index");
    int64_t idx;
    if (!wantInt(eval(*e.args[1]), e.args[1]->loc, "a list index", idx))
      return Value::error();
    int64_t n = static_cast<int64_t>(base.list.size());
    if (idx < -n || idx >= n)
      return err(e.args[1]->loc, "index " + std::to_string(idx) +
                                     " is out of range for a list of " +
                                     std::to_string(n));
    return base.list[idx < 0 ? idx + n : idx];
  }
  if (base.kind != Value::TensorV)
    return err(e.loc, "cannot index " + describe(base));
  const Shape shape = base.t.shape();
  if (nsub > shape.size())
    return err(e.loc, std::to_string(nsub) + " indices for " +
                          base.t.type().str() + " of rank " +
                          std::to_string(shape.size()));
  std::vector<int64_t> start(shape.size(), 0), limit(shape), step(shape.size(), 1);
  std::vector<bool> drop(shape.size(), false);
  for (size_t i = 0; i < nsub; ++i) {
    const Expr &sub = *e.args[i + 1];
    int64_t dim = shape[i];
    auto bound = [&](const Expr *x, int64_t dflt, int64_t &out) {
      if (!x) {
        out = dflt;
        return true;
      }
      if (!wantInt(eval(*x), x->loc, "a slice bound", out))
        return false;
      if (out < 0)
        out += dim;
      return true;
    };
    if (sub.kind == Expr::Slice) {
      if (!bound(sub.args[0].get(), 0, start[i]) ||
          !bound(sub.args[1].get(), dim, limit[i]))
        return Value::error();
      if (sub.args[2] && !wantInt(eval(*sub.args[2]), sub.args[2]->loc,
                                  "a slice step", step[i]))
        return Value::error();
      if (start[i] < 0 || limit[i] > dim || start[i] >= limit[i] || step[i] <= 0)
        return err(sub.loc, "slice " + std::to_string(start[i]) + ":" +
                                std::to_string(limit[i]) +
                                (step[i] != 1 ? ":" + std::to_string(step[i]) : "") +
                                " of axis " + std::to_string(i) +
                                " is empty or outside " + base.t.type().str());
    } else {
      if (!bound(&sub, 0, start[i]))
        return Value::error();
      if (start[i] < 0 || start[i] >= dim)
        return err(sub.loc, "index " + std::to_string(start[i]) +
                                " is out of range for axis " + std::to_string(i) +
                                " of " + base.t.type().str());
      limit[i] = start[i] + 1;
      drop[i] = true;
    }
  }
  Tensor t = base.t;
  if (start != std::vector<int64_t>(shape.size(), 0) || limit != shape ||
      step != std::vector<int64_t>(shape.size(), 1)) {
    t = b->slice(t, start, limit, step, L(e.loc));
    if (!t)
      return fromBuilder(t, e.loc);
  }
  Shape kept;
  bool dropped = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (drop[i])
      dropped = true;
    else
      kept.push_back(t.shape()[i]);
  }
  if (dropped)
    t = b->reshape(t, kept, L(e.loc));
  return fromBuilder(t, e.loc);
}

Value Sema::evalMember(const Expr &e) {
  Value base = eval(*e.args[0]);
  if (base.isError())
    return base;
  if (base.kind == Value::TensorV) {
    if (e.text == "shape") {
      Value v = Value::make(Value::List);
      for (int64_t d : base.t.shape())
        v.list.push_back(Value::ofInt(d));
      return v;
    }
    if (e.text == "rank")
      return Value::ofInt(static_cast<int64_t>(base.t.shape().size()));
    if (e.text == "dtype") {
      Value v = Value::make(Value::DTypeName);
      v.s = dtypeName(base.t.dtype());
      return v;
    }
    return err(e.loc, withSuggestion("a tensor has no member '" + e.text +
                                         "' (members: shape, rank, dtype)",
                                     e.text, {"shape", "rank", "dtype"}));
  }
  return err(e.loc, describe(base) + " has no member '" + e.text + "'");
}

bool Sema::bindArgs(const Expr &e, const std::vector<Formal> &formals, Args &out) {
  out.values.assign(formals.size(), Value());
  out.locs.assign(formals.size(), e.loc);
  bool ok = true;
  size_t positional = 0;
  for (size_t i = 0; i < e.args.size(); ++i) {
    size_t slot;
    if (e.argNames[i].empty()) {
      slot = positional++;
      if (slot >= formals.size()) {
        ok = diag.error(e.args[i]->loc,
                        "'" + e.text + "' takes at most " +
                            std::to_string(formals.size()) + " argument" +
                            (formals.size() == 1 ? "" : "s") + ", got " +
                            std::to_string(e.args.size()));
        break;
      }
    } else {
      slot = formals.size();
      std::vector<std::string> names;
      for (size_t f = 0; f < formals.size(); ++f) {
        names.push_back(formals[f].name);
        if (e.argNames[i] == formals[f].name)
          slot = f;
      }
      if (slot == formals.size()) {
        ok = diag.error(e.args[i]->loc,
                        withSuggestion("'" + e.text + "' has no argument named '" +
                                           e.argNames[i] + "'",
                                       e.argNames[i], names));
        continue;
      }
      if (out.values[slot].kind != Value::None) {
        ok = diag.error(e.args[i]->loc, "argument '" + e.argNames[i] +
                                            "' of '" + e.text + "' is given twice");
        continue;
      }
    }
    out.values[slot] = eval(*e.args[i]);
    out.locs[slot] = e.args[i]->loc;
    if (out.values[slot].isError())
      ok = false;
    else if (out.values[slot].kind == Value::None)
      ok = diag.error(e.args[i]->loc, "argument '" + std::string(formals[slot].name) +
                                          "' of '" + e.text + "' has no value "
                                          "(a def without 'return'?)");
  }
  if (!ok)
    return false;
  for (size_t f = 0; f < formals.size(); ++f)
    if (formals[f].required && out.values[f].kind == Value::None)
      return diag.error(e.loc, "'" + e.text + "' needs its argument '" +
                                   formals[f].name + "'");
  return true;
}

Value Sema::evalCall(const Expr &e) {
  auto d = defs.find(e.text);
  if (d != defs.end())
    return callDef(e, *d->second);
  const Builtin *bi = findBuiltin(e.text);
  if (!bi) {
    std::vector<std::string> names;
    for (const Builtin &x : builtins())
      names.push_back(x.name);
    for (const auto &kv : defs)
      names.push_back(kv.first);
    return err(e.loc, withSuggestion("unknown op or def '" + e.text + "'", e.text,
                                     names));
  }
  if (e.hasAs)
    return err(e.asPath[0].loc, "'as' names the parameters of a def call; '" +
                                    e.text + "' is a built-in op");
  Args args;
  if (!bindArgs(e, bi->formals, args))
    return Value::error();
  return (this->*bi->fn)(e, args);
}

Value Sema::callDef(const Expr &e, const DefDecl &def) {
  if (callDepth >= kMaxCallDepth)
    return err(e.loc, "def calls are nested more than " +
                          std::to_string(kMaxCallDepth) +
                          " deep; is '" + def.name + "' recursive?");
  std::vector<Formal> formals;
  for (const std::string &p : def.params)
    formals.push_back({p.c_str(), true});
  if (e.args.size() != formals.size())
    return err(e.loc, "def '" + def.name + "' takes " +
                          std::to_string(formals.size()) + " argument" +
                          (formals.size() == 1 ? "" : "s") + " (" +
                          llvm::join(def.params, ", ") + "), got " +
                          std::to_string(e.args.size()));
  Args args;
  if (!bindArgs(e, formals, args))
    return Value::error();
  // The call site names the parameters the def creates.
  std::string scope;
  if (e.hasAs) {
    for (const PathSeg &seg : e.asPath) {
      std::string part = seg.name;
      if (seg.index) {
        Value v = eval(*seg.index);
        if (v.kind == Value::String) {
          part = v.s;
        } else {
          int64_t idx;
          if (!wantInt(v, seg.index->loc, "a name index", idx))
            return Value::error();
          part = std::to_string(idx);
        }
      }
      scope += (scope.empty() ? "" : ".") + part;
    }
  } else {
    scope = def.name;
  }
  Frame callee;
  callee.def = &def;
  for (size_t i = 0; i < def.params.size(); ++i)
    callee.vars[def.params[i]] = args.values[i];
  Builder::Scope s(*b, scope);
  Frame *saved = frame;
  frame = &callee;
  ++callDepth;
  Value ret;
  unsigned errorsBefore = diag.numErrors();
  execBlock(def.body, &ret);
  --callDepth;
  frame = saved;
  if (diag.numErrors() != errorsBefore) {
    diag.note(e.loc, "in the call of def '" + def.name + "'" +
                         (e.hasAs ? " as '" + scope + "'" : std::string()));
    return Value::error();
  }
  return ret;
}

bool Sema::evalType(const TypeExpr &ty, TensorType &out) {
  std::optional<DType> dt = parseDType(ty.dtype);
  bool ok = true;
  if (!dt)
    ok = diag.error(ty.loc, withSuggestion("unknown element type '" + ty.dtype +
                                               "' (use f32, bf16, f16, i32, i64 "
                                               "or i1)",
                                           ty.dtype,
                                           {"f32", "bf16", "f16", "i32", "i64", "i1"}));
  out.shape.clear();
  for (const ExprPtr &d : ty.dims) {
    Value v = eval(*d);
    int64_t n;
    if (!wantInt(v, d->loc, "a dimension", n)) {
      ok = false;
      continue;
    }
    if (n <= 0) {
      ok = diag.error(d->loc, "dimension must be positive, got " + std::to_string(n));
      continue;
    }
    out.shape.push_back(n);
  }
  if (dt)
    out.dtype = *dt;
  return ok;
}

bool Sema::evalInit(const Expr *e, const TensorType &type, Init &out) {
  if (!e) {
    // Matrices default to Glorot so that a forgotten initializer still trains.
    out.kind = type.shape.size() >= 2 ? "glorot_uniform" : "zeros";
    return true;
  }
  if (e->kind != Expr::Name && e->kind != Expr::Call)
    return diag.error(e->loc, "expected an initializer such as zeros, ones, "
                              "normal(0.02) or glorot_uniform");
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"zeros", "zeros"},
      {"ones", "ones"},
      {"constant", "constant"},
      {"normal", "normal"},
      {"uniform", "uniform"},
      {"glorot_uniform", "glorot_uniform"},
      {"glorot_normal", "glorot_normal"},
      {"xavier_uniform", "glorot_uniform"},
      {"xavier_normal", "glorot_normal"},
      {"glorot", "glorot_uniform"},
      {"xavier", "glorot_uniform"},
      {"kaiming_uniform", "kaiming_uniform"},
      {"kaiming_normal", "kaiming_normal"},
      {"he_uniform", "kaiming_uniform"},
      {"he_normal", "kaiming_normal"},
      {"kaiming", "kaiming_uniform"},
      {"he", "kaiming_uniform"},
  };
  std::string kind;
  std::vector<std::string> names;
  for (const auto &a : aliases) {
    names.push_back(a.first);
    if (a.first == e->text)
      kind = a.second;
  }
  if (kind.empty())
    return diag.error(e->loc, withSuggestion("unknown initializer '" + e->text + "'",
                                             e->text, names));
  std::vector<Formal> formals;
  if (kind == "constant")
    formals = {{"value", true}};
  else if (kind == "normal")
    formals = {{"std", false}, {"mean", false}};
  else if (kind == "uniform")
    formals = {{"lo", true}, {"hi", true}};
  if (e->kind == Expr::Name && !formals.empty() && formals[0].required)
    return diag.error(e->loc, "initializer '" + e->text + "' needs arguments, as in " +
                                  e->text + (kind == "constant" ? "(0.5)" : "(-0.1, 0.1)"));
  out.kind = kind;
  out.args.clear();
  Args args;
  if (e->kind == Expr::Call) {
    if (!bindArgs(*e, formals, args))
      return false;
  } else {
    // A bare name (`= normal`) takes every default.
    args.values.assign(formals.size(), Value());
    args.locs.assign(formals.size(), e->loc);
  }
  std::vector<double> vals;
  for (size_t i = 0; i < formals.size(); ++i) {
    double v = 0;
    if (args.has(i) && !wantFloat(args.values[i], args.locs[i],
                                  std::string("'") + formals[i].name + "'", v))
      return false;
    vals.push_back(v);
  }
  if (kind == "normal") {
    // normal(std) for the common case; normal(mean, std) like the IR.
    bool twoPositional = e->kind == Expr::Call && e->args.size() == 2 &&
                         e->argNames[0].empty() && e->argNames[1].empty();
    if (twoPositional)
      std::swap(vals[0], vals[1]);
    double stddev = args.has(0) ? vals[0] : 1.0;
    double mean = args.has(1) ? vals[1] : 0.0;
    if (!(stddev > 0))
      return diag.error(e->loc, "normal: the standard deviation must be positive");
    out.args = {mean, stddev};
  } else if (kind == "uniform") {
    if (!(vals[0] < vals[1]))
      return diag.error(e->loc, "uniform: the lower bound must be below the upper bound");
    out.args = vals;
  } else {
    out.args = vals;
  }
  if ((kind.rfind("glorot", 0) == 0 || kind.rfind("kaiming", 0) == 0) &&
      type.shape.size() < 2)
    return diag.error(e->loc, "'" + e->text + "' needs a parameter of rank 2 or "
                              "more (it reads fan-in and fan-out); use zeros, "
                              "ones or normal for " + type.str());
  return true;
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
  if (e.text == "maximum")
    return fromBuilder(b->maximum(x, y, L(e.loc)), e.loc);
  return fromBuilder(b->minimum(x, y, L(e.loc)), e.loc);
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
    double r = n == "exp" ? std::exp(x)
             : n == "log" ? std::log(x)
             : n == "sqrt" ? std::sqrt(x)
             : n == "rsqrt" ? 1.0 / std::sqrt(x)
             : n == "tanh" ? std::tanh(x)
             : n == "erf" ? std::erf(x)
             : n == "sigmoid" ? 1.0 / (1.0 + std::exp(-x))
             : n == "relu" ? std::max(0.0, x)
             : x / (1.0 + std::exp(-x)); // silu
    return Value::ofFloat(r);
  }
  Tensor x;
  if (!wantTensor(v, a.locs[0], "the operand of '" + n + "'", x))
    return Value::error();
  Location l = L(e.loc);
  Tensor r = n == "neg" ? b->neg(x, l)
           : n == "abs" ? b->abs(x, l)
           : n == "exp" ? b->exp(x, l)
           : n == "log" ? b->log(x, l)
           : n == "sqrt" ? b->sqrt(x, l)
           : n == "rsqrt" ? b->rsqrt(x, l)
           : n == "tanh" ? b->tanh(x, l)
           : n == "erf" ? b->erf(x, l)
           : n == "sigmoid" ? b->sigmoid(x, l)
           : n == "relu" ? b->relu(x, l)
           : b->silu(x, l);
  return fromBuilder(r, e.loc);
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
  if (!wantTensor(a.values[0], a.locs[0], "the input", x) ||
      !wantPair(a.values[1], a.locs[1], "kernel", kernel) ||
      (a.has(2) && !wantPair(a.values[2], a.locs[2], "stride", stride)) ||
      (a.has(3) && !wantPair(a.values[3], a.locs[3], "padding", padding)))
    return Value::error();
  if (!a.has(2))
    stride = kernel;
  Tensor r = e.text == "max_pool2d" ? b->maxPool2d(x, kernel, stride, padding, L(e.loc))
                                    : b->avgPool2d(x, kernel, stride, padding, L(e.loc));
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

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool Sema::step(SrcLoc loc) {
  if (aborted)
    return false;
  if (++steps > opts.maxSteps) {
    diag.error(loc, "the model takes more than " + std::to_string(opts.maxSteps) +
                        " steps to elaborate; is a loop too long?");
    aborted = true;
    return false;
  }
  return !diag.tooMany();
}

void Sema::bindVar(const std::string &name, SrcLoc loc, Value v) {
  // A def argument may shadow a hyper-parameter and is then assignable.
  if (hypers.count(name) && !frame->vars.count(name)) {
    diag.error(loc, "cannot assign to hyper-parameter '" + name +
                        "'; hyper-parameters are constants (override them "
                        "with -D " + name + "=...)");
    return;
  }
  frame->vars[name] = std::move(v);
}

bool Sema::execBlock(const std::vector<StmtPtr> &body, Value *ret) {
  for (const StmtPtr &s : body) {
    if (!step(s->loc))
      return true;
    if (execStmt(*s, ret))
      return true;
  }
  return false;
}

bool Sema::execStmt(const Stmt &s, Value *ret) {
  bool inDef = frame->def != nullptr;
  switch (s.kind) {
  case Stmt::Input:
  case Stmt::Param: {
    const char *what = s.kind == Stmt::Input ? "input" : "param";
    if (s.kind == Stmt::Input && inDef) {
      diag.error(s.loc, "inputs belong to the model, not to def '" +
                            frame->def->name + "'; pass the tensor as an argument");
      bindVar(s.name, s.nameLoc, Value::error());
      return false;
    }
    if (frame->vars.count(s.name) && !inDef) {
      diag.error(s.nameLoc, std::string("'") + s.name + "' is already defined; " +
                                what + "s need unique names");
      return false;
    }
    TensorType ty;
    Init init;
    bool ok = evalType(s.type, ty);
    if (ok && s.kind == Stmt::Param)
      ok = evalInit(s.value.get(), ty, init);
    Value v = Value::error();
    if (ok) {
      Tensor t = s.kind == Stmt::Input ? b->input(s.name, ty, L(s.nameLoc))
                                       : b->param(s.name, ty, init, L(s.nameLoc));
      v = fromBuilder(t, s.nameLoc);
    }
    bindVar(s.name, s.nameLoc, v);
    return false;
  }
  case Stmt::Assign: {
    Value v = eval(*s.value);
    if (v.kind == Value::None) {
      diag.error(s.value->loc, "'" + s.value->text +
                                   "' returns nothing; add a 'return' to the def");
      v = Value::error();
    }
    bindVar(s.name, s.nameLoc, std::move(v));
    return false;
  }
  case Stmt::For: {
    const Expr &r = *s.value;
    if (r.kind != Expr::Call || r.text != "range")
      return diag.error(r.loc, "a for loop iterates over range(n) or range(a, b)"),
             false;
    Args args;
    if (!bindArgs(r, {{"start", true}, {"stop", false}}, args))
      return false;
    int64_t lo = 0, hi;
    if (!wantInt(args.values[0], args.locs[0], "the range bound", hi))
      return false;
    if (args.has(1)) {
      lo = hi;
      if (!wantInt(args.values[1], args.locs[1], "the range bound", hi))
        return false;
    }
    for (int64_t i = lo; i < hi && !aborted; ++i) {
      // Each iteration counts as a step, so even an empty body is bounded.
      if (!step(s.loc))
        return true;
      bindVar(s.name, s.nameLoc, Value::ofInt(i));
      if (execBlock(s.body, ret))
        return true;
    }
    return false;
  }
  case Stmt::Return: {
    if (!inDef) {
      diag.error(s.loc, "'return' is only allowed in a def; a model marks its "
                        "results with 'minimize' and 'output'");
      return false;
    }
    Value v = eval(*s.value);
    if (ret)
      *ret = std::move(v);
    return true;
  }
  case Stmt::Minimize:
  case Stmt::Output: {
    const char *kw = s.kind == Stmt::Minimize ? "minimize" : "output";
    if (inDef) {
      diag.error(s.loc, std::string("'") + kw + "' belongs in the model, not in def '" +
                            frame->def->name + "'");
      return false;
    }
    Value v;
    std::string name = s.name;
    SrcLoc loc = s.nameLoc;
    if (s.kind == Stmt::Minimize) {
      v = eval(*s.value);
      name = s.value->kind == Expr::Name ? s.value->text : "loss";
      loc = s.value->loc;
    } else if (s.value) {
      v = eval(*s.value);
      loc = s.value->loc;
    } else {
      Expr ref(Expr::Name, s.nameLoc);
      ref.text = s.name;
      v = evalName(ref);
    }
    Tensor t;
    if (!wantTensor(v, loc, std::string("the value of '") + kw + "'", t))
      return false;
    size_t before = b->errors().size();
    if (s.kind == Stmt::Minimize)
      b->minimize(t, name, L(loc));
    else
      b->output(name, t, L(loc));
    if (b->errors().size() != before)
      diag.error(loc, b->lastError());
    return false;
  }
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Hyper-parameters and the train block
//===----------------------------------------------------------------------===//

void Sema::evalHypers(const ModelDecl &m) {
  std::vector<std::string> names;
  for (const HyperDecl &h : m.hypers)
    names.push_back(h.name);
  std::map<std::string, std::string> overrides;
  for (const auto &d : opts.defines) {
    if (std::find(names.begin(), names.end(), d.first) == names.end()) {
      diag.error({}, withSuggestion("unknown hyper-parameter '" + d.first +
                                        "' in -D " + d.first + "=" + d.second +
                                        " (model '" + m.name + "' has: " +
                                        llvm::join(names, ", ") + ")",
                                    d.first, names));
      continue;
    }
    overrides[d.first] = d.second;
  }
  Frame empty;
  frame = &empty;
  for (const HyperDecl &h : m.hypers) {
    if (hypers.count(h.name)) {
      diag.error(h.loc, "hyper-parameter '" + h.name + "' is declared twice");
      continue;
    }
    Value v = eval(*h.value);
    if (!v.isError() && v.kind != Value::Int && v.kind != Value::Float &&
        v.kind != Value::Bool) {
      diag.error(h.value->loc, "hyper-parameter '" + h.name +
                                   "' must be a number, got " + describe(v));
      v = Value::error();
    }
    auto o = overrides.find(h.name);
    if (o != overrides.end() && !v.isError()) {
      const std::string &text = o->second;
      const char *begin = text.c_str();
      char *end = nullptr;
      errno = 0;
      long long iv = std::strtoll(begin, &end, 10);
      bool isInt = !text.empty() && *end == '\0' && errno == 0;
      errno = 0;
      double fv = std::strtod(begin, &end);
      bool isNum = !text.empty() && *end == '\0' && errno == 0 && std::isfinite(fv);
      if (v.kind == Value::Int && isInt) {
        v = Value::ofInt(iv);
      } else if (v.kind == Value::Float && isNum) {
        v = Value::ofFloat(fv);
      } else if (v.kind == Value::Bool && (text == "true" || text == "false")) {
        v = Value::ofBool(text == "true");
      } else {
        diag.error(h.loc, "-D " + h.name + "=" + text + ": hyper-parameter '" +
                              h.name + "' is " +
                              (v.kind == Value::Int    ? "an integer"
                               : v.kind == Value::Bool ? "true or false"
                                                       : "a number") +
                              ", and '" + text + "' is not");
        v = Value::error();
      }
    }
    hypers[h.name] = v;
    if (v.kind == Value::Int)
      b->setHyper(h.name, ConfigValue::ofInt(v.i));
    else if (v.kind == Value::Float)
      b->setHyper(h.name, ConfigValue::ofFloat(v.f));
    else if (v.kind == Value::Bool)
      b->setHyper(h.name, ConfigValue::ofBool(v.i));
  }
  frame = nullptr;
}

bool Sema::trainCall(const Expr &e, const std::string &key,
                     const std::vector<std::string> &kinds, ConfigValue &out) {
  if (e.kind != Expr::Name && e.kind != Expr::Call)
    return diag.error(e.loc, key + " must be one of " + llvm::join(kinds, ", ") +
                                 ", optionally with arguments");
  if (std::find(kinds.begin(), kinds.end(), e.text) == kinds.end())
    return diag.error(e.loc, withSuggestion("unknown " + key + " '" + e.text +
                                                "' (choose " +
                                                llvm::join(kinds, ", ") + ")",
                                            e.text, kinds));
  // Settings of each kind with their defaults: (name, default, min, max).
  struct Setting {
    const char *name;
    double dflt;
    double lo, hi;
    bool isInt;
  };
  std::vector<Setting> settings;
  const std::string &k = e.text;
  const double inf = std::numeric_limits<double>::infinity();
  if (key == "optimizer") {
    settings.push_back({"lr", k == "sgd" || k == "momentum" ? 0.01 : 1e-3, 0, inf, false});
    if (k == "momentum") {
      settings.push_back({"momentum", 0.9, 0, 1, false});
      settings.push_back({"nesterov", 0, 0, 1, true});
    }
    if (k == "adam" || k == "adamw") {
      settings.push_back({"beta1", 0.9, 0, 1, false});
      settings.push_back({"beta2", 0.999, 0, 1, false});
      settings.push_back({"eps", 1e-8, 0, inf, false});
    }
    settings.push_back({"weight_decay", k == "adamw" ? 0.01 : 0.0, 0, inf, false});
  } else if (k == "warmup") {
    settings.push_back({"steps", -1, 1, inf, true});
  } else if (k == "cosine") {
    settings.push_back({"steps", -1, 1, inf, true});
    settings.push_back({"warmup", 0, 0, inf, true});
    settings.push_back({"min_lr", 0, 0, inf, false});
  }
  std::vector<Formal> formals;
  for (const Setting &s : settings)
    formals.push_back({s.name, s.dflt < 0});
  Args args;
  if (e.kind == Expr::Call) {
    if (!bindArgs(e, formals, args))
      return false;
  } else {
    args.values.assign(formals.size(), Value());
    args.locs.assign(formals.size(), e.loc);
    for (const Formal &f : formals)
      if (f.required)
        return diag.error(e.loc, key + " '" + k + "' needs '" + f.name +
                                     "', as in " + k + "(" + f.name + "=1000)");
  }
  out = ConfigValue::ofDict();
  out.dict.emplace_back("kind", ConfigValue::ofString(k));
  bool ok = true;
  for (size_t i = 0; i < settings.size(); ++i) {
    const Setting &s = settings[i];
    double v = s.dflt;
    if (args.has(i)) {
      const Value &val = args.values[i];
      if (s.isInt && s.hi == 1 && val.kind == Value::Bool) {
        v = static_cast<double>(val.i);
      } else if (!wantFloat(val, args.locs[i], std::string("'") + s.name + "'", v)) {
        ok = false;
        continue;
      }
      bool inRange = s.hi == 1 && !s.isInt ? (v >= s.lo && v < s.hi)
                                            : (v >= s.lo && v <= s.hi);
      if (std::string(s.name) == "lr" || std::string(s.name) == "eps")
        inRange = v > 0 && std::isfinite(v);
      if (!inRange || (s.isInt && v != std::floor(v))) {
        std::string range = std::string(s.name) == "lr" || std::string(s.name) == "eps"
                                ? "positive"
                            : s.hi == 1 && !s.isInt ? "in [0, 1)"
                            : s.isInt ? "a non-negative integer"
                                      : "non-negative";
        if (s.isInt && s.lo == 1)
          range = "a positive integer";
        ok = diag.error(args.locs[i], key + " " + k + ": '" + s.name + "' must be " +
                                          range + ", got " + fmtNum(v));
        continue;
      }
    }
    if (s.isInt && s.hi == 1)
      out.dict.emplace_back(s.name, ConfigValue::ofBool(v != 0));
    else if (s.isInt)
      out.dict.emplace_back(s.name, ConfigValue::ofInt(static_cast<int64_t>(v)));
    else
      out.dict.emplace_back(s.name, ConfigValue::ofFloat(v));
  }
  if (ok && k == "cosine") {
    int64_t steps = out.dict[1].second.i, warm = out.dict[2].second.i;
    if (warm >= steps)
      ok = diag.error(e.loc, "schedule cosine: warmup (" + std::to_string(warm) +
                                 ") must be shorter than steps (" +
                                 std::to_string(steps) + ")");
  }
  return ok;
}

void Sema::evalTrain(const TrainDecl &tr) {
  static const std::vector<std::string> keys = {
      "optimizer", "schedule", "batch", "accumulate",
      "precision", "memory_budget", "clip_grad_norm"};
  ConfigDict dict;
  std::set<std::string> seen;
  Frame empty;
  frame = &empty;
  for (const TrainEntry &en : tr.entries) {
    if (std::find(keys.begin(), keys.end(), en.key) == keys.end()) {
      diag.error(en.loc, withSuggestion("unknown train setting '" + en.key + "'",
                                        en.key, keys));
      continue;
    }
    if (!seen.insert(en.key).second) {
      diag.error(en.loc, "train setting '" + en.key + "' is given twice");
      continue;
    }
    const Expr &e = *en.value;
    ConfigValue cv;
    if (en.key == "optimizer") {
      if (!trainCall(e, "optimizer", {"sgd", "momentum", "adam", "adamw"}, cv))
        continue;
    } else if (en.key == "schedule") {
      if (!trainCall(e, "schedule", {"constant", "warmup", "cosine"}, cv))
        continue;
    } else if (en.key == "precision") {
      static const std::vector<std::string> precs = {"fp32", "bf16", "fp16"};
      std::string p = e.kind == Expr::Name || e.kind == Expr::String ? e.text : "";
      if (std::find(precs.begin(), precs.end(), p) == precs.end()) {
        diag.error(e.loc, withSuggestion("precision must be fp32, bf16 or fp16, got '" +
                                             (p.empty() ? std::string("?") : p) + "'",
                                         p, precs));
        continue;
      }
      cv = ConfigValue::ofString(p);
    } else if (en.key == "clip_grad_norm") {
      double v;
      if (!wantFloat(eval(e), e.loc, "clip_grad_norm", v))
        continue;
      if (!(v > 0) || !std::isfinite(v)) {
        diag.error(e.loc, "clip_grad_norm must be positive, got " + fmtNum(v));
        continue;
      }
      cv = ConfigValue::ofFloat(v);
    } else {
      // batch, accumulate, memory_budget: positive integers.
      int64_t v;
      if (!wantInt(eval(e), e.loc, en.key, v))
        continue;
      if (v <= 0) {
        diag.error(e.loc, en.key + " must be positive, got " + std::to_string(v));
        continue;
      }
      cv = ConfigValue::ofInt(v);
    }
    dict.emplace_back(en.key, std::move(cv));
  }
  frame = nullptr;
  b->setTrain(std::move(dict));
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

std::unique_ptr<Builder> Sema::run() {
  if (prog.models.empty()) {
    if (!diag.hasErrors())
      diag.error({1, 1}, "no model in this file; declare one with "
                         "'model NAME(hyper = value, ...) { ... }'");
    return nullptr;
  }
  for (size_t i = 1; i < prog.models.size(); ++i)
    diag.error(prog.models[i].loc, "only one model per file ('" +
                                       prog.models[0].name + "' is declared first)");
  for (size_t i = 1; i < prog.trains.size(); ++i)
    diag.error(prog.trains[i].loc, "only one train block per file");
  const ModelDecl &m = prog.models[0];
  b = std::make_unique<Builder>(m.name);
  b->setMaxNodes(opts.maxNodes);
  for (const DefDecl &d : prog.defs) {
    if (findBuiltin(d.name))
      diag.error(d.loc, "def '" + d.name + "' has the name of a built-in op");
    else if (!defs.emplace(d.name, &d).second)
      diag.error(d.loc, "def '" + d.name + "' is defined twice");
    std::set<std::string> params;
    for (size_t i = 0; i < d.params.size(); ++i)
      if (!params.insert(d.params[i]).second)
        diag.error(d.paramLocs[i], "argument '" + d.params[i] +
                                       "' of def '" + d.name + "' is listed twice");
  }
  evalHypers(m);
  Frame model;
  frame = &model;
  execBlock(m.body, nullptr);
  frame = nullptr;
  if (!prog.trains.empty())
    evalTrain(prog.trains[0]);
  if (!aborted && !diag.hasErrors()) {
    bool hasLoss = false;
    for (const Result &r : b->graph().results)
      hasLoss |= r.role == "loss";
    if (b->graph().results.empty())
      diag.error(m.loc, "model '" + m.name + "' has no results; add "
                        "'minimize <loss>' or 'output <name>'");
    else if (!prog.trains.empty() && !hasLoss)
      diag.error(prog.trains[0].loc, "the train block needs a loss: add "
                                     "'minimize <loss>' to the model");
  }
  if (diag.hasErrors())
    return nullptr;
  return std::move(b);
}

} // namespace

std::unique_ptr<Builder> tgc::elaborate(const Program &prog,
                                        const SourceFile &file,
                                        DiagEngine &diag,
                                        const FrontendOptions &opts) {
  return Sema(prog, file, diag, opts).run();
}

std::unique_ptr<Builder> tgc::parseAndElaborate(const SourceFile &file,
                                                DiagEngine &diag,
                                                const FrontendOptions &opts) {
  Program prog = parseProgram(file, diag);
  // After a syntax error the program has holes (a statement that failed to
  // parse never defined its name); checking it would report phantom errors.
  if (diag.hasErrors())
    return nullptr;
  return elaborate(prog, file, diag, opts);
}
