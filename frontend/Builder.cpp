//===- Builder.cpp - C++ graph-builder API, creating tg ops directly -*- C++
//-*-===//
//
// Each call of tgc::Builder creates its `tg` op at once, in the body of a
// `func.func @forward` under construction, the way Toy's MLIRGen does: a real
// location on every op, verify() at the end. There are no shape rules here.
// A result type comes from the op's own type inference (dialects/
// TGShapes.cpp), and every operand check from its verifier; their messages,
// caught with a diagnostic handler, become the Builder's errors, so a model
// written in C++ or .tg is checked by exactly the rules the passes rely on.
//
// What stays here is the API's own business: names, roles and initializers
// of arguments, conveniences such as negative axes and `-1` in reshape, the
// results, and limits that keep fuzzed input small.
//
//===----------------------------------------------------------------------===//

#include "tgc/Builder.h"

#include "dialects/CallPath.h"
#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace tgc;
namespace tg = mlir::tg;
using mlir::Value;

namespace {
/// Largest accepted element count; keeps all size arithmetic in range.
constexpr int64_t kMaxElements = int64_t(1) << 50;

std::string join(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Normalises a negative axis in range; leaves any other value for the op's
/// verifier to report.
int64_t normAxis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  return axis < 0 && axis >= -r ? axis + r : axis;
}

/// "" when `s` is a shape the builder may create, else why not.
std::string checkShape(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d <= 0)
      return "dimensions must be positive, got " + std::to_string(d);
    if (d > kMaxElements || n > kMaxElements / d)
      return "the tensor " + join(s) + " has too many elements";
    n *= d;
  }
  return "";
}

std::optional<DType> dtypeOf(mlir::Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF64())
    return DType::F64;
  if (t.isBF16())
    return DType::BF16;
  if (t.isF16())
    return DType::F16;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(64))
    return DType::I64;
  if (t.isInteger(1))
    return DType::I1;
  return std::nullopt;
}
} // namespace

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d; // bounded by kMaxElements when built through Builder
  return n;
}

std::string TensorType::str() const { return dtypeName(dtype) + join(shape); }

const TensorType &Tensor::type() const { return b->typeOf(idx); }

Tensor Tensor::matmul(const Tensor &rhs, Location loc) const {
  return b->matmul(*this, rhs, false, false, std::move(loc));
}

//===----------------------------------------------------------------------===//
// The module under construction
//===----------------------------------------------------------------------===//

struct Builder::Impl {
  Impl(mlir::MLIRContext *given, std::string modelName)
      : owned(given ? nullptr : std::make_unique<mlir::MLIRContext>()),
        ctx(given ? *given : *owned), ob(&ctx),
        modelName(std::move(modelName)) {
    ctx.getOrLoadDialect<tg::TGDialect>();
    ctx.getOrLoadDialect<mlir::func::FuncDialect>();
    module = mlir::ModuleOp::create(ob.getUnknownLoc());
    ob.setInsertionPointToEnd(module->getBody());
    // The signature is set by build(): arguments are added as they come.
    func = mlir::func::FuncOp::create(ob, ob.getUnknownLoc(), "forward",
                                      ob.getFunctionType({}, {}));
    ob.setInsertionPointToStart(func.addEntryBlock());
  }

  /// A function argument: an input or a parameter.
  struct Arg {
    std::string name, role;
    Init init;
  };
  /// A value marked by minimize or output.
  struct Result {
    std::string name, role;
    int value;
    Location loc;
  };
  /// A value the Builder handed out, with its type in the API's terms.
  struct Entry {
    Value value;
    TensorType type;
  };

  /// The API's role words are the enum's names ("input", "param", "loss",
  /// "output").
  tg::RoleAttr roleAttr(const std::string &role) {
    return tg::RoleAttr::get(&ctx, *tg::symbolizeRole(role));
  }

  int fail(const std::string &message) {
    last = message;
    errorList.push_back(message);
    return -1;
  }
  int poison() {
    last.clear();
    return -1;
  }
  bool valid(const Builder *self,
             std::initializer_list<const Tensor *> ts) const {
    for (const Tensor *t : ts)
      if (!*t || t->builder() != self)
        return false;
    return true;
  }
  Value v(const Tensor &t) const { return t ? values[t.id()].value : Value(); }
  mlir::RankedTensorType mlirType(const Tensor &t) const {
    return mlir::cast<mlir::RankedTensorType>(v(t).getType());
  }

  mlir::Location loc(const Location &l) {
    if (l.file.empty())
      return ob.getUnknownLoc();
    return mlir::FileLineColLoc::get(&ctx, l.file, l.line, l.col);
  }

  mlir::Type elt(DType t) {
    switch (t) {
    case DType::F32:
      return ob.getF32Type();
    case DType::F64:
      return ob.getF64Type();
    case DType::BF16:
      return ob.getBF16Type();
    case DType::F16:
      return ob.getF16Type();
    case DType::I32:
      return ob.getI32Type();
    case DType::I64:
      return ob.getI64Type();
    case DType::I1:
      return ob.getI1Type();
    }
    return ob.getF32Type();
  }
  mlir::RankedTensorType type(const TensorType &t) {
    return mlir::RankedTensorType::get(t.shape, elt(t.dtype));
  }

  /// Creates `OpTy` with `OpTy::create(builder, loc, type, args...)` and
  /// checks it as the dialect would. The result type is the op's own
  /// inference where it has one (`resultType` is then a placeholder, since
  /// the inferring create would abort on a shape error), else `resultType`.
  /// Returns the new value's id, or -1 with the dialect's message.
  template <typename OpTy, typename... Args>
  int make(const Location &l, mlir::Type resultType, Args &&...args) {
    if (values.size() >= maxNodes)
      return fail("the model has more than " + std::to_string(maxNodes) +
                  " ops; reduce the model size");
    std::string message;
    mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && message.empty())
        message = d.str();
      return mlir::success();
    });
    // Ops inside a def call carry its path (keep_fp32 selects by it).
    mlir::Location where = tg::withCallPath(loc(l), prefix);
    mlir::Operation *op =
        OpTy::create(ob, where, resultType ? resultType : ob.getNoneType(),
                     std::forward<Args>(args)...)
            .getOperation();
    std::string name = "'" + OpTy::getOperationName().str() + "' op ";
    auto reject = [&](const std::string &why) {
      op->erase();
      return fail(why);
    };
    if (auto infer = mlir::dyn_cast<mlir::InferTypeOpInterface>(op)) {
      llvm::SmallVector<mlir::Type> types;
      if (mlir::failed(infer.inferReturnTypes(
              &ctx, where, op->getOperands(), op->getRawDictionaryAttrs(),
              op->getPropertiesStorage(), op->getRegions(), types)))
        return reject(name +
                      (message.empty() ? "has invalid operands" : message));
      for (auto [result, type] : llvm::zip(op->getResults(), types))
        result.setType(type);
    }
    auto result =
        mlir::dyn_cast<mlir::RankedTensorType>(op->getResult(0).getType());
    std::optional<DType> dtype =
        result ? dtypeOf(result.getElementType()) : std::nullopt;
    if (!dtype)
      return reject(name + "has no result type");
    Shape shape(result.getShape());
    for (int64_t d : shape)
      if (d <= 0)
        return reject("result of " + OpTy::getOperationName().str() +
                      " would have a dimension of size " + std::to_string(d));
    if (std::string why = checkShape(shape); !why.empty())
      return reject("result of " + OpTy::getOperationName().str() + ": " + why);
    if (mlir::failed(mlir::verify(op)))
      return reject(message.empty() ? name + "does not verify" : message);
    last.clear();
    values.push_back({op->getResult(0), TensorType{*dtype, std::move(shape)}});
    return static_cast<int>(values.size() - 1);
  }

  std::unique_ptr<mlir::MLIRContext> owned;
  mlir::MLIRContext &ctx;
  mlir::OpBuilder ob;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  std::string modelName;
  ConfigDict hyper, train;
  std::vector<Arg> args; ///< one per argument of the entry block
  /// The names in `args`, so that the duplicate check is not a scan (a
  /// scan made a 20,000-layer model quadratic: 86 s to reach maxNodes).
  llvm::StringSet<> argNames;
  std::vector<Result> results;
  std::vector<Entry> values;
  std::string prefix;
  std::vector<std::string> errorList;
  std::string last;
  size_t maxNodes = size_t(1) << 22;
  int64_t dropoutStreams = 0;
};

//===----------------------------------------------------------------------===//
// Bookkeeping
//===----------------------------------------------------------------------===//

Builder::Builder(std::string modelName)
    : impl(std::make_unique<Impl>(nullptr, std::move(modelName))) {}
Builder::Builder(mlir::MLIRContext &ctx, std::string modelName)
    : impl(std::make_unique<Impl>(&ctx, std::move(modelName))) {}
Builder::~Builder() = default;

Builder::Scope::Scope(Builder &b, const std::string &name)
    : b(b), saved(b.impl->prefix.size()) {
  std::string &prefix = b.impl->prefix;
  if (!name.empty())
    prefix += (prefix.empty() ? "" : ".") + name;
}
Builder::Scope::~Scope() { b.impl->prefix.resize(saved); }

const std::string &Builder::scopePrefix() const { return impl->prefix; }

std::vector<std::string> Builder::callPaths() const {
  std::vector<std::string> paths;
  llvm::StringSet<> seen;
  impl->func.walk([&](mlir::Operation *op) {
    llvm::StringRef p = tg::callPath(op->getLoc());
    if (!p.empty() && seen.insert(p).second)
      paths.push_back(p.str());
  });
  return paths;
}

bool Builder::keepFp32Selects(const std::string &pattern) const {
  bool any = false;
  impl->func.walk([&](mlir::Operation *op) {
    any = tg::keepFp32Selects(pattern, op);
    return any ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  return any;
}
const std::vector<std::string> &Builder::errors() const {
  return impl->errorList;
}
const std::string &Builder::lastError() const { return impl->last; }
void Builder::setMaxNodes(size_t n) { impl->maxNodes = n; }
const TensorType &Builder::typeOf(int id) const {
  return impl->values[id].type;
}
size_t Builder::numResults() const { return impl->results.size(); }
bool Builder::hasLoss() const {
  return llvm::any_of(impl->results,
                      [](const Impl::Result &r) { return r.role == "loss"; });
}
mlir::MLIRContext &Builder::context() { return impl->ctx; }
void Builder::setTrain(ConfigDict train) { impl->train = std::move(train); }

void Builder::setHyper(const std::string &name, ConfigValue value) {
  for (auto &kv : impl->hyper)
    if (kv.first == name) {
      kv.second = std::move(value);
      return;
    }
  impl->hyper.emplace_back(name, std::move(value));
}

Tensor Builder::wrap(int id) { return id < 0 ? Tensor() : Tensor(this, id); }

//===----------------------------------------------------------------------===//
// Leaves
//===----------------------------------------------------------------------===//

Tensor Builder::argument(const std::string &name, const std::string &role,
                         TensorType type, Init init, Location loc) {
  Impl &m = *impl;
  std::string full = m.prefix.empty() ? name : m.prefix + "." + name;
  if (std::string why = checkShape(type.shape); !why.empty())
    return wrap(
        m.fail("invalid shape for " + role + " '" + full + "': " + why));
  if (m.argNames.contains(full))
    return wrap(m.fail("duplicate " + role + " name '" + full +
                       "' (name each call of a def with 'as')"));
  if (m.values.size() >= m.maxNodes)
    return wrap(m.fail("the model has more than " + std::to_string(m.maxNodes) +
                       " ops; reduce the model size"));
  Value arg = m.func.front().addArgument(m.type(type), m.loc(loc));
  m.argNames.insert(full);
  m.args.push_back({full, role, std::move(init)});
  m.values.push_back({arg, std::move(type)});
  m.last.clear();
  return wrap(static_cast<int>(m.values.size() - 1));
}

Tensor Builder::input(const std::string &name, TensorType type, Location loc) {
  return argument(name, "input", std::move(type), {}, std::move(loc));
}

Tensor Builder::param(const std::string &name, TensorType type, Init init,
                      Location loc) {
  if (!isFloat(type.dtype))
    return wrap(impl->fail("parameter '" + name +
                           "' must have a floating-point type, not " +
                           type.str()));
  return argument(name, "param", std::move(type), std::move(init),
                  std::move(loc));
}

Tensor Builder::constant(double value, TensorType type, Location loc) {
  Impl &m = *impl;
  if (std::string why = checkShape(type.shape); !why.empty())
    return wrap(m.fail("invalid constant shape: " + why));
  if (isInteger(type.dtype) || type.dtype == DType::I1) {
    double lim = type.dtype == DType::I64   ? 9.2e18
                 : type.dtype == DType::I32 ? 2147483647.0
                                            : 1.0;
    double lo = type.dtype == DType::I1 ? 0.0 : -lim;
    if (!(value >= lo && value <= lim) || value != std::floor(value))
      return wrap(m.fail("the number " + std::to_string(value) +
                         " does not fit " + dtypeName(type.dtype)));
  }
  mlir::RankedTensorType t = m.type(type);
  mlir::Type e = t.getElementType();
  mlir::Attribute scalar = mlir::isa<mlir::FloatType>(e)
                               ? mlir::Attribute(m.ob.getFloatAttr(e, value))
                               : mlir::Attribute(m.ob.getIntegerAttr(
                                     e, static_cast<int64_t>(value)));
  auto attr =
      mlir::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(t, scalar));
  return wrap(m.make<tg::ConstantOp>(loc, t, attr));
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define TGC_UNARY(method, builtin, op)                                         \
  Tensor Builder::method(Tensor x, Location l) {                               \
    if (!impl->valid(this, {&x}))                                              \
      return wrap(impl->poison());                                             \
    return wrap(impl->make<tg::op>(l, impl->v(x).getType(), impl->v(x)));      \
  }
#define TGC_BINARY(method, builtin, op)                                        \
  Tensor Builder::method(Tensor a, Tensor b, Location l) {                     \
    if (!impl->valid(this, {&a, &b}))                                          \
      return wrap(impl->poison());                                             \
    return wrap(impl->make<tg::op>(l, {}, impl->v(a), impl->v(b)));            \
  }
#include "tgc/BuilderOps.def"

Tensor Builder::cmp(CmpPredicate p, Tensor a, Tensor b, Location loc) {
  if (!impl->valid(this, {&a, &b}))
    return wrap(impl->poison());
  static const tg::CmpPredicate preds[] = {
      tg::CmpPredicate::eq, tg::CmpPredicate::ne, tg::CmpPredicate::lt,
      tg::CmpPredicate::le, tg::CmpPredicate::gt, tg::CmpPredicate::ge};
  auto pred = tg::CmpPredicateAttr::get(&impl->ctx, preds[static_cast<int>(p)]);
  return wrap(impl->make<tg::CmpOp>(loc, {}, pred, impl->v(a), impl->v(b)));
}

Tensor Builder::select(Tensor c, Tensor t, Tensor f, Location loc) {
  if (!impl->valid(this, {&c, &t, &f}))
    return wrap(impl->poison());
  return wrap(
      impl->make<tg::SelectOp>(loc, {}, impl->v(c), impl->v(t), impl->v(f)));
}

Tensor Builder::gelu(Tensor x, bool tanhApprox, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  auto approx = tg::GeluApproximationAttr::get(
      &impl->ctx,
      tanhApprox ? tg::GeluApproximation::tanh : tg::GeluApproximation::none);
  return wrap(
      impl->make<tg::GeluOp>(loc, impl->v(x).getType(), impl->v(x), approx));
}

Tensor Builder::cast(Tensor x, DType to, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  return wrap(
      impl->make<tg::CastOp>(loc, impl->type({to, x.shape()}), impl->v(x)));
}

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

Tensor Builder::matmul(Tensor a, Tensor b, bool ta, bool tb, Location loc) {
  if (!impl->valid(this, {&a, &b}))
    return wrap(impl->poison());
  mlir::UnitAttr unit = impl->ob.getUnitAttr();
  return wrap(impl->make<tg::MatmulOp>(loc, {}, impl->v(a), impl->v(b),
                                       ta ? unit : mlir::UnitAttr(),
                                       tb ? unit : mlir::UnitAttr()));
}

template <typename OpTy>
Tensor Builder::reduce(Tensor x, std::vector<int64_t> axes, bool keepdims,
                       Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  size_t rank = x.shape().size();
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(static_cast<int64_t>(i));
  for (int64_t &a : axes)
    a = normAxis(a, rank);
  std::sort(axes.begin(), axes.end());
  return wrap(
      impl->make<OpTy>(loc, {}, impl->v(x), impl->ob.getDenseI64ArrayAttr(axes),
                       keepdims ? impl->ob.getUnitAttr() : mlir::UnitAttr()));
}

Tensor Builder::sum(Tensor x, std::vector<int64_t> a, bool k, Location l) {
  return reduce<tg::SumOp>(x, std::move(a), k, l);
}
Tensor Builder::mean(Tensor x, std::vector<int64_t> a, bool k, Location l) {
  return reduce<tg::MeanOp>(x, std::move(a), k, l);
}
Tensor Builder::max(Tensor x, std::vector<int64_t> a, bool k, Location l) {
  return reduce<tg::MaxOp>(x, std::move(a), k, l);
}

Tensor Builder::softmax(Tensor x, int64_t axis, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  return wrap(impl->make<tg::SoftmaxOp>(loc, impl->v(x).getType(), impl->v(x),
                                        impl->ob.getI64IntegerAttr(axis)));
}

Tensor Builder::logSoftmax(Tensor x, int64_t axis, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  return wrap(impl->make<tg::LogSoftmaxOp>(
      loc, impl->v(x).getType(), impl->v(x), impl->ob.getI64IntegerAttr(axis)));
}

//===----------------------------------------------------------------------===//
// Losses and normalisation
//===----------------------------------------------------------------------===//

Tensor Builder::crossEntropy(Tensor logits, Tensor labels, int64_t ignoreIndex,
                             Location loc) {
  if (!impl->valid(this, {&logits, &labels}))
    return wrap(impl->poison());
  return wrap(
      impl->make<tg::CrossEntropyOp>(loc, {}, impl->v(logits), impl->v(labels),
                                     impl->ob.getI64IntegerAttr(ignoreIndex)));
}

Tensor Builder::mseLoss(Tensor a, Tensor b, Location loc) {
  if (!impl->valid(this, {&a, &b}))
    return wrap(impl->poison());
  return wrap(impl->make<tg::MseLossOp>(loc, {}, impl->v(a), impl->v(b)));
}

Tensor Builder::layerNorm(Tensor x, Tensor scale, Tensor bias, double eps,
                          Location loc) {
  if (!impl->valid(this, {&x}) || (scale && !impl->valid(this, {&scale})) ||
      (bias && !impl->valid(this, {&bias})))
    return wrap(impl->poison());
  return wrap(impl->make<tg::LayerNormOp>(loc, impl->v(x).getType(), impl->v(x),
                                          impl->v(scale), impl->v(bias),
                                          impl->ob.getF64FloatAttr(eps)));
}

Tensor Builder::rmsNorm(Tensor x, Tensor scale, double eps, Location loc) {
  if (!impl->valid(this, {&x}) || (scale && !impl->valid(this, {&scale})))
    return wrap(impl->poison());
  return wrap(impl->make<tg::RmsNormOp>(loc, impl->v(x).getType(), impl->v(x),
                                        impl->v(scale),
                                        impl->ob.getF64FloatAttr(eps)));
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

Tensor Builder::embedding(Tensor table, Tensor indices, Location loc) {
  if (!impl->valid(this, {&table, &indices}))
    return wrap(impl->poison());
  return wrap(
      impl->make<tg::EmbeddingOp>(loc, {}, impl->v(table), impl->v(indices)));
}

Tensor Builder::reshape(Tensor x, Shape shape, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  // `-1` (once) stands for what the other dimensions leave.
  auto infer = std::find(shape.begin(), shape.end(), -1);
  if (infer != shape.end()) {
    int64_t known = 1;
    for (auto it = shape.begin(); it != shape.end(); ++it)
      if (it != infer && *it > 0 && *it <= kMaxElements)
        known = known > kMaxElements / *it ? kMaxElements + 1 : known * *it;
    int64_t total = x.type().numElements();
    if (known > kMaxElements || total % known)
      return wrap(impl->fail("reshape: cannot reshape " + x.type().str() +
                             " (" + std::to_string(total) + " elements) into " +
                             join(shape)));
    *infer = total / known;
  }
  if (std::string why = checkShape(shape); !why.empty())
    return wrap(impl->fail("reshape: invalid target shape " + join(shape) +
                           ": " + why));
  return wrap(impl->make<tg::ReshapeOp>(loc, impl->type({x.dtype(), shape}),
                                        impl->v(x)));
}

Tensor Builder::transpose(Tensor x, std::vector<int64_t> perm, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  for (int64_t &p : perm)
    p = normAxis(p, x.shape().size());
  return wrap(impl->make<tg::TransposeOp>(loc, {}, impl->v(x),
                                          impl->ob.getDenseI64ArrayAttr(perm)));
}

Tensor Builder::broadcastTo(Tensor x, Shape shape, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  if (std::string why = checkShape(shape); !why.empty())
    return wrap(impl->fail("broadcast_to: " + why));
  return wrap(impl->make<tg::BroadcastToOp>(loc, impl->type({x.dtype(), shape}),
                                            impl->v(x)));
}

Tensor Builder::slice(Tensor x, std::vector<int64_t> start,
                      std::vector<int64_t> limit, std::vector<int64_t> step,
                      Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  mlir::OpBuilder &ob = impl->ob;
  return wrap(impl->make<tg::SliceOp>(
      loc, {}, impl->v(x), ob.getDenseI64ArrayAttr(start),
      ob.getDenseI64ArrayAttr(limit), ob.getDenseI64ArrayAttr(step)));
}

Tensor Builder::concat(std::vector<Tensor> xs, int64_t axis, Location loc) {
  llvm::SmallVector<Value> inputs;
  for (const Tensor &t : xs) {
    if (!impl->valid(this, {&t}))
      return wrap(impl->poison());
    inputs.push_back(impl->v(t));
  }
  if (!xs.empty())
    axis = normAxis(axis, xs[0].shape().size());
  return wrap(impl->make<tg::ConcatOp>(loc, {}, inputs,
                                       impl->ob.getI64IntegerAttr(axis)));
}

Tensor Builder::causalMask(Tensor x, double value, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  return wrap(impl->make<tg::CausalMaskOp>(
      loc, impl->v(x).getType(), impl->v(x), impl->ob.getF64FloatAttr(value)));
}

Tensor Builder::attention(Tensor q, Tensor k, Tensor v, bool causal,
                          std::optional<double> scale, Location loc) {
  if (!impl->valid(this, {&q, &k, &v}))
    return wrap(impl->poison());
  // The usual 1 / sqrt(d); a q of the wrong rank is the op's error below.
  Shape qs = q.shape();
  double s = scale ? *scale
                   : 1.0 / std::sqrt(static_cast<double>(
                                          qs.empty() ? 1 : std::max<int64_t>(
                                                               qs.back(), 1)));
  return wrap(impl->make<tg::AttentionOp>(
      loc, {}, impl->ob.getNoneType(), impl->v(q), impl->v(k), impl->v(v),
      causal ? impl->ob.getUnitAttr() : mlir::UnitAttr(),
      impl->ob.getF64FloatAttr(s)));
}

Tensor Builder::dropout(Tensor x, Tensor seed, double p, Location loc) {
  if (!impl->valid(this, {&x, &seed}))
    return wrap(impl->poison());
  // Each dropout draws its own stream of the seed's random numbers.
  return wrap(impl->make<tg::DropoutOp>(
      loc, impl->v(x).getType(), impl->v(x), impl->v(seed),
      impl->ob.getF64FloatAttr(p),
      impl->ob.getI64IntegerAttr(impl->dropoutStreams++)));
}

Tensor Builder::oneHot(Tensor indices, int64_t classes, DType dtype,
                       Location loc) {
  if (!impl->valid(this, {&indices}))
    return wrap(impl->poison());
  Shape shape = indices.shape();
  shape.push_back(classes);
  if (std::string why = checkShape(shape); !why.empty())
    return wrap(impl->fail("one_hot: " + why));
  return wrap(impl->make<tg::OneHotOp>(loc, impl->type({dtype, shape}),
                                       impl->v(indices)));
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

Tensor Builder::conv2d(Tensor x, Tensor w, std::vector<int64_t> stride,
                       std::vector<int64_t> padding,
                       std::vector<int64_t> dilation, int64_t groups,
                       Location loc) {
  if (!impl->valid(this, {&x, &w}))
    return wrap(impl->poison());
  mlir::OpBuilder &ob = impl->ob;
  return wrap(impl->make<tg::Conv2dOp>(
      loc, {}, impl->v(x), impl->v(w), ob.getDenseI64ArrayAttr(stride),
      ob.getDenseI64ArrayAttr(padding), ob.getDenseI64ArrayAttr(dilation),
      ob.getI64IntegerAttr(groups)));
}

Tensor Builder::maxPool2d(Tensor x, std::vector<int64_t> k,
                          std::vector<int64_t> s, std::vector<int64_t> p,
                          Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  mlir::OpBuilder &ob = impl->ob;
  return wrap(impl->make<tg::MaxPool2dOp>(
      loc, {}, impl->v(x), ob.getDenseI64ArrayAttr(k),
      ob.getDenseI64ArrayAttr(s), ob.getDenseI64ArrayAttr(p)));
}

Tensor Builder::avgPool2d(Tensor x, std::vector<int64_t> k,
                          std::vector<int64_t> s, std::vector<int64_t> p,
                          bool countIncludePad, Location loc) {
  if (!impl->valid(this, {&x}))
    return wrap(impl->poison());
  mlir::OpBuilder &ob = impl->ob;
  return wrap(impl->make<tg::AvgPool2dOp>(
      loc, {}, impl->v(x), ob.getDenseI64ArrayAttr(k),
      ob.getDenseI64ArrayAttr(s), ob.getDenseI64ArrayAttr(p),
      ob.getBoolAttr(countIncludePad)));
}

//===----------------------------------------------------------------------===//
// Results and the module
//===----------------------------------------------------------------------===//

void Builder::minimize(Tensor loss, const std::string &name, Location loc) {
  Impl &m = *impl;
  if (!m.valid(this, {&loss})) {
    m.poison();
    return;
  }
  if (!loss.shape().empty() || !isFloat(loss.dtype())) {
    m.fail("minimize needs a floating-point scalar loss, got " +
           loss.type().str() + " (reduce it with mean or sum)");
    return;
  }
  for (const Impl::Result &r : m.results)
    if (r.role == "loss") {
      m.fail("the model already minimizes '" + r.name +
             "'; only one loss is allowed");
      return;
    }
  m.results.push_back({name, "loss", loss.id(), std::move(loc)});
}

void Builder::output(const std::string &name, Tensor value, Location loc) {
  Impl &m = *impl;
  if (!m.valid(this, {&value})) {
    m.poison();
    return;
  }
  for (const Impl::Result &r : m.results)
    if (r.name == name) {
      m.fail("'" + name + "' is already a result of the model");
      return;
    }
  m.results.push_back({name, "output", value.id(), std::move(loc)});
}

namespace {
mlir::Attribute configAttr(mlir::OpBuilder &b, const ConfigValue &v);

mlir::DictionaryAttr configDict(mlir::OpBuilder &b, const ConfigDict &d) {
  llvm::SmallVector<mlir::NamedAttribute> attrs;
  for (const auto &kv : d)
    attrs.push_back(b.getNamedAttr(kv.first, configAttr(b, kv.second)));
  return b.getDictionaryAttr(attrs);
}

mlir::Attribute configAttr(mlir::OpBuilder &b, const ConfigValue &v) {
  switch (v.kind) {
  case ConfigValue::Int:
    return b.getI64IntegerAttr(v.i);
  case ConfigValue::Float:
    return b.getF64FloatAttr(v.f);
  case ConfigValue::String:
    return b.getStringAttr(v.s);
  case ConfigValue::Bool:
    return b.getBoolAttr(v.i != 0);
  case ConfigValue::Dict:
    return configDict(b, v.dict);
  case ConfigValue::List: {
    llvm::SmallVector<mlir::Attribute> elts;
    for (const ConfigValue &e : v.list)
      elts.push_back(configAttr(b, e));
    return b.getArrayAttr(elts);
  }
  }
  return {};
}
} // namespace

mlir::OwningOpRef<mlir::ModuleOp> Builder::build() {
  if (!ok())
    return nullptr;
  Impl &m = *impl;
  // Verifier messages are kept instead of printed, so the C++ API and tgc
  // can both present them.
  mlir::ScopedDiagnosticHandler handler(&m.ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
      return mlir::success();
    std::string msg;
    llvm::raw_string_ostream os(msg);
    mlir::Location where = d.getLocation();
    if (auto named = mlir::dyn_cast<mlir::NameLoc>(where))
      where = named.getChildLoc(); // a call path around the position
    if (auto fl = mlir::dyn_cast<mlir::FileLineColLoc>(where))
      os << fl.getFilename().getValue() << ':' << fl.getLine() << ':'
         << fl.getColumn() << ": ";
    os << d.str();
    m.errorList.push_back(os.str());
    return mlir::success();
  });

  // A copy gets the signature, the tags and the return, so that building can
  // go on after this call.
  mlir::IRMapping map;
  auto module =
      mlir::cast<mlir::ModuleOp>(m.module->getOperation()->clone(map));
  mlir::OwningOpRef<mlir::ModuleOp> owned(module);
  mlir::OpBuilder &b = m.ob;
  module->setAttr(tg::attr::model, b.getStringAttr(m.modelName));
  module->setAttr(tg::attr::hyper, configDict(b, m.hyper));
  module->setAttr(tg::attr::train, configDict(b, m.train));

  auto func = mlir::cast<mlir::func::FuncOp>(module.getBody()->front());
  mlir::Block &entry = func.front();
  llvm::SmallVector<Value> results;
  for (const Impl::Result &r : m.results)
    results.push_back(map.lookup(m.values[r.value].value));
  func.setType(b.getFunctionType(entry.getArgumentTypes(),
                                 mlir::ValueRange(results).getTypes()));
  if (entry.getNumArguments())
    func->setLoc(entry.getArgument(0).getLoc());
  // All at once: setArgAttr rebuilds the array of every argument's
  // attributes, which made a model of N parameters O(N^2) in time and in
  // uniqued attributes (8,000 parameters: 5 s and 1.3 GB).
  auto tags = [&](const std::string &name, const std::string &role) {
    mlir::NamedAttrList attrs;
    attrs.set(tg::attr::name, b.getStringAttr(name));
    attrs.set(tg::attr::role, m.roleAttr(role));
    return attrs;
  };
  llvm::SmallVector<mlir::DictionaryAttr> argAttrs, resultAttrs;
  for (const Impl::Arg &a : m.args) {
    mlir::NamedAttrList attrs = tags(a.name, a.role);
    if (a.role == "param")
      attrs.set(tg::attr::init,
                tg::InitializerAttr::get(&m.ctx, a.init.kind, a.init.args));
    argAttrs.push_back(attrs.getDictionary(&m.ctx));
  }
  for (const Impl::Result &r : m.results)
    resultAttrs.push_back(tags(r.name, r.role).getDictionary(&m.ctx));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  mlir::OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&entry);
  mlir::Location retLoc =
      m.results.empty() ? func.getLoc() : m.loc(m.results.back().loc);
  mlir::func::ReturnOp::create(b, retLoc, results);
  if (mlir::failed(mlir::verify(module)))
    return nullptr;
  return owned;
}

std::vector<ParamInfo> tgc::listParams(mlir::ModuleOp module) {
  std::vector<ParamInfo> out;
  auto func = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!func)
    return out;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    std::optional<tg::Role> role = tg::getArgRole(func, i);
    auto name = func.getArgAttrOfType<mlir::StringAttr>(i, tg::attr::name);
    auto type =
        mlir::dyn_cast<mlir::RankedTensorType>(func.getArgumentTypes()[i]);
    std::optional<DType> dtype =
        type ? dtypeOf(type.getElementType()) : std::nullopt;
    if (role != tg::Role::param || !name || !dtype)
      continue;
    TensorType t{*dtype, Shape(type.getShape())};
    out.push_back({name.str(), t, t.numElements()});
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Operators
//===----------------------------------------------------------------------===//

static Builder *owner(const Tensor &a, const Tensor &b) {
  return a.builder() ? a.builder() : b.builder();
}

Tensor tgc::operator+(const Tensor &a, const Tensor &b) {
  Builder *bl = owner(a, b);
  return bl ? bl->add(a, b) : Tensor();
}
Tensor tgc::operator-(const Tensor &a, const Tensor &b) {
  Builder *bl = owner(a, b);
  return bl ? bl->sub(a, b) : Tensor();
}
Tensor tgc::operator*(const Tensor &a, const Tensor &b) {
  Builder *bl = owner(a, b);
  return bl ? bl->mul(a, b) : Tensor();
}
Tensor tgc::operator/(const Tensor &a, const Tensor &b) {
  Builder *bl = owner(a, b);
  return bl ? bl->div(a, b) : Tensor();
}
Tensor tgc::operator-(const Tensor &a) {
  return a.builder() ? a.builder()->neg(a) : Tensor();
}
Tensor tgc::operator*(const Tensor &a, double s) {
  if (!a)
    return Tensor();
  Builder *b = a.builder();
  return b->mul(a, b->constant(s, {a.dtype(), {}}));
}
Tensor tgc::operator+(const Tensor &a, double s) {
  if (!a)
    return Tensor();
  Builder *b = a.builder();
  return b->add(a, b->constant(s, {a.dtype(), {}}));
}
