//===- SemaImpl.h - the elaborator's internals ------------------*- C++ -*-===//
//
// Values, argument binding and the Sema class shared by the elaborator's
// translation units: Sema.cpp (expressions and statements), SemaBuiltins.cpp
// (the built-in table and functions) and SemaTrain.cpp (hyper-parameters and the train
// block). Not part of the frontend's interface (see Sema.h).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_SEMAIMPL_H
#define TGC_FRONTEND_SEMAIMPL_H

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


namespace tgc::sema {

/// Shortest readable spelling of a number for messages.
inline std::string fmtNum(double v) {
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

inline std::string describe(const Value &v) {
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

/// Every built-in function of the language (SemaBuiltins.cpp).
const std::vector<Builtin> &builtins();

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
  Value biAttention(const Expr &e, Args &a);
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
  /// `keep_fp32 = [ln_f, "h.*.ln_*", softmax]`: each pattern must select
  /// an op of the model by call path or op kind (dialects/CallPath.h).
  bool evalKeepFp32(const Expr &e, ConfigValue &out);
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

} // namespace tgc::sema

#endif // TGC_FRONTEND_SEMAIMPL_H
