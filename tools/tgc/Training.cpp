//===- Training.cpp - tgc's training and memory actions ---------*- C++ -*-===//
//
// See Training.h.
//
//===----------------------------------------------------------------------===//

#include "tools/tgc/Training.h"
#include "dialects/TGDialect.h"
#include "passes/Pipelines.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;

std::optional<int64_t> tgc::parseByteSize(llvm::StringRef text) {
  text = text.trim();
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) ||
          text[digits] == '.'))
    ++digits;
  double value;
  if (digits == 0 || text.take_front(digits).getAsDouble(value))
    return std::nullopt;
  std::string unit = text.drop_front(digits).trim().lower();
  double scale = -1;
  const std::pair<const char *, double> units[] = {
      {"", 1},           {"b", 1},           {"kib", 1024.0},
      {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
      {"kb", 1e3},       {"mb", 1e6},        {"gb", 1e9},
      {"tb", 1e12}};
  for (auto [name, s] : units)
    if (unit == name)
      scale = s;
  double bytes = value * scale;
  if (scale < 0 || !(bytes >= 1) || bytes > 9.0e18)
    return std::nullopt;
  return static_cast<int64_t>(bytes);
}

std::string tgc::formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  if (u == 0)
    os << bytes << " B";
  else
    os << llvm::format("%.2f", v) << " " << units[u];
  return s;
}

bool tgc::buildTraining(ModuleOp module) {
  PassManager pm(module.getContext());
  tg::buildTrainingPipeline(pm, {});
  return succeeded(pm.run(module));
}

FailureOr<tg::MemoryPlan> tgc::planTraining(ModuleOp module) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  if (!copy->lookupSymbol("train_step") && !buildTraining(*copy))
    return failure();
  auto step = copy->lookupSymbol<func::FuncOp>("train_step");
  return tg::planMemory(step, {});
}

namespace {
/// An integer entry of a dictionary attribute.
std::optional<int64_t> intEntry(DictionaryAttr dict, StringRef key) {
  if (auto v = dyn_cast_if_present<IntegerAttr>(dict ? dict.get(key) : nullptr))
    return v.getInt();
  return std::nullopt;
}

/// Sets tg.train.accumulate and tg.train.batch of `module`.
void setMicroBatching(ModuleOp module, int64_t batch, int64_t accumulate) {
  Builder b(module.getContext());
  auto train = module->getAttrOfType<DictionaryAttr>(tg::attr::train);
  NamedAttrList entries(train ? train.getValue() : ArrayRef<NamedAttribute>());
  entries.set("accumulate", b.getI64IntegerAttr(accumulate));
  entries.set("batch", b.getI64IntegerAttr(batch));
  module->setAttr(tg::attr::train, entries.getDictionary(b.getContext()));
}
} // namespace

std::optional<tgc::BudgetFit> tgc::fitBudget(const CompileFn &compile,
                                             std::optional<int64_t> budget) {
  OwningOpRef<ModuleOp> module = compile({});
  if (!module)
    return std::nullopt;
  auto train = (*module)->getAttrOfType<DictionaryAttr>(tg::attr::train);
  if (!budget)
    budget = intEntry(train, "memory_budget");
  FailureOr<tg::MemoryPlan> plan = planTraining(*module);
  if (failed(plan))
    return std::nullopt;
  if (!budget || plan->peakBytes() <= *budget)
    return BudgetFit{std::move(module), std::move(*plan), ""};

  // Over budget: split the batch into micro-batches. The model's `batch`
  // hyper-parameter is the micro-batch; accumulate keeps the effective batch.
  auto hyper = (*module)->getAttrOfType<DictionaryAttr>(tg::attr::hyper);
  std::optional<int64_t> batch = intEntry(hyper, "batch");
  int64_t accumulate = intEntry(train, "accumulate").value_or(1);
  int64_t least = plan->peakBytes();
  int64_t unconstrained = least;
  if (batch) {
    for (int64_t f = 2; f <= *batch; f *= 2) {
      if (*batch % f)
        continue;
      OwningOpRef<ModuleOp> smaller =
          compile({{"batch", std::to_string(*batch / f)}});
      if (!smaller)
        return std::nullopt;
      setMicroBatching(*smaller, *batch / f, accumulate * f);
      FailureOr<tg::MemoryPlan> p = planTraining(*smaller);
      if (failed(p))
        return std::nullopt;
      least = std::min(least, p->peakBytes());
      if (p->peakBytes() <= *budget) {
        std::string note;
        llvm::raw_string_ostream os(note);
        os << "tgc: note: the step needs " << formatBytes(unconstrained)
           << ", over the budget of " << formatBytes(*budget)
           << "; split each batch of " << *batch << " into " << f
           << " micro-batches of " << *batch / f << " (accumulate "
           << accumulate * f << "): peak " << formatBytes(p->peakBytes())
           << ", extra FLOPs 0%";
        return BudgetFit{std::move(smaller), std::move(*p), note};
      }
    }
  }
  int64_t fixed = plan->bytesOf(tg::BufferKind::Param) +
                  plan->bytesOf(tg::BufferKind::Optimizer);
  llvm::errs() << "tgc: error: the training step does not fit the memory "
                  "budget of "
               << formatBytes(*budget) << ": the least it reached is "
               << formatBytes(least) << " ("
               << (batch ? "micro-batches down to 1 sample"
                         : "the model has no 'batch' hyper-parameter to split")
               << "; parameters and optimizer state alone take "
               << formatBytes(fixed)
               << "); a larger budget, a smaller model, or bf16 precision "
                  "would help\n";
  return std::nullopt;
}
