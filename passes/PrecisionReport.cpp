//===- PrecisionReport.cpp - what tg-assign-precision chose -----*- C++ -*-===//
//
// See PrecisionReport.h. The rows come from the IR alone, so the report says
// what the backends will run, not what the policy meant to do.
//
//===----------------------------------------------------------------------===//

#include "passes/PrecisionReport.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "passes/TrainConfig.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <map>

using namespace mlir;
using namespace mlir::tg;

namespace {

/// One row: a named tensor, or a class of activations (op kind, type, rule).
struct Row {
  std::string kind, name, dtype, rule;
  int64_t count = 1, bytes = 0;
};

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}


StringRef ruleOf(Operation *op) {
  if (auto r = dialect(op->getContext()).getPrecisionAttrHelper().getAttr(op))
    return r.getValue();
  return "as written";
}

/// The rows of `module`, in report order, and the policy's name.
std::vector<Row> collect(ModuleOp module, StringRef forward,
                         std::string &precision) {
  precision = "fp32";
  if (auto train = module->getAttrOfType<DictionaryAttr>(attr::train))
    if (auto p = train.getAs<StringAttr>("precision"))
      precision = p.str();
  std::vector<Row> rows;
  auto fn = module.lookupSymbol<func::FuncOp>(forward);
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  auto grad = module.lookupSymbol<func::FuncOp>((forward + "_grad").str());
  if (!fn)
    return rows;
  // Parameters and their compute copies.
  DenseMap<Value, Operation *> copies;
  fn.walk([&](CastOp c) {
    if (ruleOf(c) == kComputeCopyRule)
      copies[c.getInput()] = c;
  });
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    if (getArgRole(fn, i) != Role::param)
      continue;
    auto name = fn.getArgAttrOfType<StringAttr>(i, attr::name);
    Value arg = fn.getArgument(i);
    rows.push_back({"param", name ? name.str() : "", "",
                    "master (optimizer updates it)", 1, tensorBytes(arg.getType())});
    rows.back().dtype = typeName(cast<RankedTensorType>(arg.getType())
                                     .getElementType());
    if (Operation *c = copies.lookup(arg)) {
      Type t = c->getResult(0).getType();
      rows.push_back({"copy", rows.back().name,
                      typeName(cast<RankedTensorType>(t).getElementType()),
                      "compute-copy (once per step)", 1,
                      tensorBytes(t)});
    }
  }
  // Activations: every other result of the forward function, by op kind,
  // element type and rule.
  std::map<std::tuple<std::string, std::string, std::string>, Row> classes;
  fn.walk([&](Operation *op) {
    if (!isa<TGDialect>(op->getDialect()) || op->getNumResults() != 1 ||
        isa<ConstantOp>(op) || ruleOf(op) == kComputeCopyRule)
      return;
    Type t = op->getResult(0).getType();
    std::string rule = ruleOf(op).str();
    if (Type acc = isContraction(op) ? accumulatorType(op) : Type())
      rule += ", accumulates in " + typeName(acc);
    std::string dtype = typeName(cast<RankedTensorType>(t).getElementType());
    std::string opName = op->getName().getStringRef().str();
    Row &r = classes[{opName, dtype, rule}];
    if (r.kind.empty()) {
      r = {"activation", opName, dtype, rule, 0, 0};
    }
    ++r.count;
    r.bytes += tensorBytes(t);
  });
  for (auto &entry : classes)
    rows.push_back(entry.second);
  // Gradients of the parameters, as forward_grad returns them.
  if (grad)
    for (unsigned i = 0; i < grad.getNumResults(); ++i) {
      if (getResultRole(grad, i) != Role::grad)
        continue;
      auto name = grad.getResultAttrOfType<StringAttr>(i, attr::name);
      Type t = grad.getResultTypes()[i];
      rows.push_back({"grad", name ? name.str() : "",
                      typeName(cast<RankedTensorType>(t).getElementType()),
                      "as its master (the cast back of the compute copy's "
                      "gradient); accumulated in this type",
                      1, tensorBytes(t)});
    }
  // Optimizer state and the step counter.
  if (step)
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      if (getArgRole(step, i) != Role::state)
        continue;
      auto name = step.getArgAttrOfType<StringAttr>(i, attr::name);
      Type t = step.getArgumentTypes()[i];
      StringRef n = name ? name.getValue() : "";
      rows.push_back({"state", n.str(),
                      typeName(cast<RankedTensorType>(t).getElementType()),
                      n == kLossScaleName ? "loss scaler: the loss's factor "
                                            "before the backward pass"
                      : n == kGrowthTrackerName
                          ? "loss scaler: finite steps since the scale "
                            "last changed"
                          : "as its master (the update runs in fp32)",
                      1, tensorBytes(t)});
    }
  return rows;
}

} // namespace

void mlir::tg::printPrecisionTable(ModuleOp module, StringRef forward,
                                   llvm::raw_ostream &os) {
  std::string precision;
  std::vector<Row> rows = collect(module, forward, precision);
  size_t nameW = 4;
  for (const Row &r : rows)
    nameW = std::max(nameW, r.name.size());
  os << "precision: " << precision << "\n";
  os << llvm::left_justify("kind", 10) << "  "
     << llvm::left_justify("name", nameW) << "  dtype  "
     << llvm::right_justify("count", 5) << "  " << llvm::right_justify("bytes", 12)
     << "  rule\n";
  int64_t masters = 0, copies = 0;
  for (const Row &r : rows) {
    os << llvm::left_justify(r.kind, 10) << "  "
       << llvm::left_justify(r.name, nameW) << "  "
       << llvm::left_justify(r.dtype, 5) << "  "
       << llvm::right_justify(std::to_string(r.count), 5) << "  "
       << llvm::right_justify(formatBytes(r.bytes), 12) << "  " << r.rule
       << "\n";
    if (r.kind == "param")
      masters += r.bytes;
    if (r.kind == "copy")
      copies += r.bytes;
  }
  os << "masters: " << formatBytes(masters)
     << ", compute copies: " << formatBytes(copies) << "\n";
}

void mlir::tg::printPrecisionJson(ModuleOp module, StringRef forward,
                                  llvm::raw_ostream &os) {
  std::string precision;
  std::vector<Row> rows = collect(module, forward, precision);
  llvm::json::Array tensors;
  int64_t masters = 0, copies = 0;
  for (const Row &r : rows) {
    tensors.push_back(llvm::json::Object{{"kind", r.kind},
                                         {"name", r.name},
                                         {"dtype", r.dtype},
                                         {"rule", r.rule},
                                         {"count", r.count},
                                         {"bytes", r.bytes}});
    if (r.kind == "param")
      masters += r.bytes;
    if (r.kind == "copy")
      copies += r.bytes;
  }
  llvm::json::Object root{{"precision", precision},
                          {"master_bytes", masters},
                          {"compute_copy_bytes", copies},
                          {"tensors", std::move(tensors)}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
