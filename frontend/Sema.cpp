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
#include "frontend/SemaImpl.h"

using namespace tgc;

/// A model file's element type: any DType but f64 (docs/language.md).
static std::optional<DType> languageDType(const std::string &name) {
  std::optional<DType> t = parseDType(name);
  return t == DType::F64 ? std::nullopt : t;
}

namespace tgc::sema {

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
  if (languageDType(e.text)) {
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
  std::optional<DType> dt = languageDType(ty.dtype);
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
  b = opts.context ? std::make_unique<Builder>(*opts.context, m.name)
                   : std::make_unique<Builder>(m.name);
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
    if (!b->numResults())
      diag.error(m.loc, "model '" + m.name + "' has no results; add "
                        "'minimize <loss>' or 'output <name>'");
    else if (!prog.trains.empty() && !b->hasLoss())
      diag.error(prog.trains[0].loc, "the train block needs a loss: add "
                                     "'minimize <loss>' to the model");
  }
  if (diag.hasErrors())
    return nullptr;
  return std::move(b);
}

} // namespace tgc::sema

using tgc::sema::Sema;

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
