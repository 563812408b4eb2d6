//===- MLIRGen.cpp - lowering of forward graphs to the tg dialect -*- C++ -*-===//
//
// Structured like Toy's MLIRGen: a private MLIRGenImpl walks the graph, gives
// every op the FileLineColLoc of the expression (or C++ call) that made it,
// and verifies the module at the end. Parameters and inputs become arguments
// of `func.func @forward` tagged tg.name / tg.role / tg.init; results are
// tagged tg.name / tg.role; hyper-parameters and the train block become the
// module attributes tg.hyper and tg.train.
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGen.h"

#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using tgc::ConfigValue;
using tgc::DType;
using tgc::Graph;
using tgc::Node;

namespace {

class MLIRGenImpl {
public:
  MLIRGenImpl(MLIRContext &ctx, const Graph &g) : ctx(ctx), builder(&ctx), g(g) {}

  OwningOpRef<ModuleOp> gen() {
    ModuleOp module = ModuleOp::create(builder.getUnknownLoc());
    module->setAttr(tg::attr::model, builder.getStringAttr(g.modelName));
    module->setAttr(tg::attr::hyper, dict(g.hyper));
    module->setAttr(tg::attr::train, dict(g.train));

    SmallVector<Type> argTypes, resultTypes;
    for (int a : g.args)
      argTypes.push_back(type(g.nodes[a].type));
    for (const tgc::Result &r : g.results)
      resultTypes.push_back(type(g.nodes[r.node].type));
    builder.setInsertionPointToEnd(module.getBody());
    Location funcLoc = g.args.empty() ? builder.getUnknownLoc()
                                      : loc(g.nodes[g.args.front()].loc);
    auto func = func::FuncOp::create(builder, funcLoc, "forward",
                                     builder.getFunctionType(argTypes, resultTypes));
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);

    values.assign(g.nodes.size(), Value());
    for (size_t i = 0; i < g.args.size(); ++i) {
      const Node &n = g.nodes[g.args[i]];
      BlockArgument arg = entry->getArgument(i);
      arg.setLoc(loc(n.loc));
      values[g.args[i]] = arg;
      func.setArgAttr(i, tg::attr::name, builder.getStringAttr(n.name));
      func.setArgAttr(i, tg::attr::role, roleAttr(n.role));
      if (n.role == "param")
        func.setArgAttr(i, tg::attr::init,
                        tg::InitializerAttr::get(&ctx, n.init.kind, n.init.args));
    }
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].op != "arg")
        values[i] = emit(g.nodes[i]);

    SmallVector<Value> results;
    for (size_t i = 0; i < g.results.size(); ++i) {
      const tgc::Result &r = g.results[i];
      results.push_back(values[r.node]);
      func.setResultAttr(i, tg::attr::name, builder.getStringAttr(r.name));
      func.setResultAttr(i, tg::attr::role, roleAttr(r.role));
    }
    Location retLoc = g.results.empty() ? funcLoc : loc(g.results.back().loc);
    func::ReturnOp::create(builder, retLoc, results);

    if (failed(verify(module))) {
      module->erase();
      return nullptr;
    }
    return module;
  }

private:
  /// The builder API's role names are the enum's ("input", "param", ...).
  tg::RoleAttr roleAttr(const std::string &role) {
    return tg::RoleAttr::get(&ctx, *tg::symbolizeRole(role));
  }

  Location loc(const tgc::Location &l) {
    if (l.file.empty())
      return builder.getUnknownLoc();
    return FileLineColLoc::get(&ctx, l.file, l.line, l.col);
  }

  Type elt(DType t) {
    switch (t) {
    case DType::F32: return builder.getF32Type();
    case DType::F64: return builder.getF64Type();
    case DType::BF16: return builder.getBF16Type();
    case DType::F16: return builder.getF16Type();
    case DType::I32: return builder.getI32Type();
    case DType::I64: return builder.getI64Type();
    case DType::I1: return builder.getI1Type();
    }
    return builder.getF32Type();
  }

  RankedTensorType type(const tgc::TensorType &t) {
    return RankedTensorType::get(t.shape, elt(t.dtype));
  }

  Attribute config(const ConfigValue &v) {
    switch (v.kind) {
    case ConfigValue::Int: return builder.getI64IntegerAttr(v.i);
    case ConfigValue::Float: return builder.getF64FloatAttr(v.f);
    case ConfigValue::String: return builder.getStringAttr(v.s);
    case ConfigValue::Bool: return builder.getBoolAttr(v.i != 0);
    case ConfigValue::Dict: return dict(v.dict);
    }
    return {};
  }

  DictionaryAttr dict(const tgc::ConfigDict &d) {
    SmallVector<NamedAttribute> attrs;
    for (const auto &kv : d)
      attrs.push_back(builder.getNamedAttr(kv.first, config(kv.second)));
    return builder.getDictionaryAttr(attrs);
  }

  // Typed accessors for node attributes (the Builder always sets them).
  template <typename T> T get(const Node &n, const char *key, T dflt = T()) {
    if (const tgc::NodeAttr *a = n.attr(key))
      if (const T *v = std::get_if<T>(a))
        return *v;
    return dflt;
  }
  DenseI64ArrayAttr ints(const Node &n, const char *key) {
    return builder.getDenseI64ArrayAttr(get<std::vector<int64_t>>(n, key));
  }
  UnitAttr unit(const Node &n, const char *key) {
    return get<bool>(n, key) ? builder.getUnitAttr() : UnitAttr();
  }

  Value emit(const Node &n) {
    Location l = loc(n.loc);
    RankedTensorType t = type(n.type);
    auto in = [&](size_t i) -> Value {
      return i < n.operands.size() && n.operands[i] >= 0 ? values[n.operands[i]]
                                                         : Value();
    };
    const std::string &op = n.op;
#define TG_BINARY(NAME, OP)                                                    \
  if (op == NAME)                                                              \
    return tg::OP::create(builder, l, t, in(0), in(1));
    TG_BINARY("tg.add", AddOp)
    TG_BINARY("tg.sub", SubOp)
    TG_BINARY("tg.mul", MulOp)
    TG_BINARY("tg.div", DivOp)
    TG_BINARY("tg.pow", PowOp)
    TG_BINARY("tg.maximum", MaximumOp)
    TG_BINARY("tg.minimum", MinimumOp)
    TG_BINARY("tg.embedding", EmbeddingOp)
    TG_BINARY("tg.mse_loss", MseLossOp)
#undef TG_BINARY
#define TG_UNARY(NAME, OP)                                                     \
  if (op == NAME)                                                              \
    return tg::OP::create(builder, l, t, in(0));
    TG_UNARY("tg.neg", NegOp)
    TG_UNARY("tg.abs", AbsOp)
    TG_UNARY("tg.exp", ExpOp)
    TG_UNARY("tg.log", LogOp)
    TG_UNARY("tg.sqrt", SqrtOp)
    TG_UNARY("tg.rsqrt", RsqrtOp)
    TG_UNARY("tg.tanh", TanhOp)
    TG_UNARY("tg.erf", ErfOp)
    TG_UNARY("tg.sigmoid", SigmoidOp)
    TG_UNARY("tg.relu", ReluOp)
    TG_UNARY("tg.silu", SiluOp)
    TG_UNARY("tg.cast", CastOp)
    TG_UNARY("tg.reshape", ReshapeOp)
    TG_UNARY("tg.broadcast_to", BroadcastToOp)
    TG_UNARY("tg.one_hot", OneHotOp)
#undef TG_UNARY
    if (op == "tg.constant") {
      double v = get<double>(n, "value");
      Attribute scalar = isa<FloatType>(t.getElementType())
                             ? Attribute(builder.getFloatAttr(t.getElementType(), v))
                             : Attribute(builder.getIntegerAttr(
                                   t.getElementType(), static_cast<int64_t>(v)));
      return tg::ConstantOp::create(
          builder, l, t, cast<ElementsAttr>(DenseElementsAttr::get(t, scalar)));
    }
    if (op == "tg.cmp") {
      auto pred = tg::symbolizeCmpPredicate(get<std::string>(n, "predicate"));
      return tg::CmpOp::create(
          builder, l, t,
          tg::CmpPredicateAttr::get(&ctx, pred.value_or(tg::CmpPredicate::eq)),
          in(0), in(1));
    }
    if (op == "tg.select")
      return tg::SelectOp::create(builder, l, t, in(0), in(1), in(2));
    if (op == "tg.gelu")
      return tg::GeluOp::create(
          builder, l, t, in(0),
          tg::GeluApproximationAttr::get(
              &ctx, get<std::string>(n, "approximate") == "tanh"
                        ? tg::GeluApproximation::tanh
                        : tg::GeluApproximation::none));
    if (op == "tg.matmul")
      return tg::MatmulOp::create(builder, l, t, in(0), in(1),
                                  unit(n, "transpose_lhs"),
                                  unit(n, "transpose_rhs"));
    if (op == "tg.sum")
      return tg::SumOp::create(builder, l, t, in(0), ints(n, "axes"),
                               unit(n, "keepdims"));
    if (op == "tg.mean")
      return tg::MeanOp::create(builder, l, t, in(0), ints(n, "axes"),
                                unit(n, "keepdims"));
    if (op == "tg.max")
      return tg::MaxOp::create(builder, l, t, in(0), ints(n, "axes"),
                               unit(n, "keepdims"));
    if (op == "tg.softmax")
      return tg::SoftmaxOp::create(builder, l, t, in(0),
                                   builder.getI64IntegerAttr(get<int64_t>(n, "axis")));
    if (op == "tg.log_softmax")
      return tg::LogSoftmaxOp::create(
          builder, l, t, in(0), builder.getI64IntegerAttr(get<int64_t>(n, "axis")));
    if (op == "tg.cross_entropy")
      return tg::CrossEntropyOp::create(
          builder, l, t, in(0), in(1),
          builder.getI64IntegerAttr(get<int64_t>(n, "ignore_index", -100)));
    if (op == "tg.layer_norm")
      return tg::LayerNormOp::create(builder, l, t, in(0), in(1), in(2),
                                     builder.getF64FloatAttr(get<double>(n, "eps")));
    if (op == "tg.rms_norm")
      return tg::RmsNormOp::create(builder, l, t, in(0), in(1),
                                   builder.getF64FloatAttr(get<double>(n, "eps")));
    if (op == "tg.transpose")
      return tg::TransposeOp::create(builder, l, t, in(0), ints(n, "permutation"));
    if (op == "tg.slice")
      return tg::SliceOp::create(builder, l, t, in(0), ints(n, "start"),
                                 ints(n, "limit"), ints(n, "step"));
    if (op == "tg.concat") {
      SmallVector<Value> inputs;
      for (size_t i = 0; i < n.operands.size(); ++i)
        inputs.push_back(in(i));
      return tg::ConcatOp::create(builder, l, t, inputs,
                                  builder.getI64IntegerAttr(get<int64_t>(n, "axis")));
    }
    if (op == "tg.causal_mask")
      return tg::CausalMaskOp::create(builder, l, t, in(0),
                                      builder.getF64FloatAttr(get<double>(n, "value")));
    if (op == "tg.dropout")
      return tg::DropoutOp::create(builder, l, t, in(0), in(1),
                                   builder.getF64FloatAttr(get<double>(n, "p")),
                                   builder.getI64IntegerAttr(get<int64_t>(n, "stream")));
    if (op == "tg.conv2d")
      return tg::Conv2dOp::create(builder, l, t, in(0), in(1), ints(n, "stride"),
                                  ints(n, "padding"), ints(n, "dilation"),
                                  builder.getI64IntegerAttr(get<int64_t>(n, "groups", 1)));
    if (op == "tg.max_pool2d")
      return tg::MaxPool2dOp::create(builder, l, t, in(0), ints(n, "kernel"),
                                     ints(n, "stride"), ints(n, "padding"));
    if (op == "tg.avg_pool2d")
      return tg::AvgPool2dOp::create(builder, l, t, in(0), ints(n, "kernel"),
                                     ints(n, "stride"), ints(n, "padding"),
                                     get<bool>(n, "count_include_pad", true));
    // Unreachable for graphs made by tgc::Builder; keep the IR well-formed.
    emitError(l) << "internal error: no lowering for '" << op << "'";
    return tg::ConstantOp::create(
        builder, l, t,
        cast<ElementsAttr>(DenseElementsAttr::get(t, builder.getZeroAttr(t.getElementType()))));
  }

  MLIRContext &ctx;
  OpBuilder builder;
  const Graph &g;
  std::vector<Value> values;
};

} // namespace

OwningOpRef<ModuleOp> tgc::mlirGen(MLIRContext &ctx, const Graph &graph,
                                   std::vector<std::string> &errors) {
  ctx.getOrLoadDialect<tg::TGDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  // Verifier messages are returned to the caller instead of printed, so the
  // C++ API and tgc can both present them.
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Error)
      return success();
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (auto fl = dyn_cast<FileLineColLoc>(d.getLocation()))
      os << fl.getFilename().getValue() << ':' << fl.getLine() << ':'
         << fl.getColumn() << ": ";
    os << d.str();
    errors.push_back(os.str());
    return success();
  });
  return MLIRGenImpl(ctx, graph).gen();
}

mlir::OwningOpRef<mlir::ModuleOp> tgc::Builder::build(mlir::MLIRContext &ctx) {
  if (!ok())
    return nullptr;
  return mlirGen(ctx, g, errorList);
}
