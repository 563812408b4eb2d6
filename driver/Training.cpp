//===- Training.cpp - training step, memory plan, budget fit ---*- C++ -*-===//
//
// See Training.h.
//
//===----------------------------------------------------------------------===//

#include "driver/Training.h"
#include "dialects/TGDialect.h"
#include "codegen/artifact/CpuObject.h"
#include "codegen/artifact/Manifest.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"
#include "passes/Fusion.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "frontend/Sema.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using mlir::tg::formatBytes;

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

TimingScope tgc::nestTiming(TimingScope *parent, StringRef name) {
  return parent ? parent->nest(name) : TimingScope();
}

/// Times the passes of `pm` under `scope` when it is active (PassTiming
/// keeps a reference: `scope` must outlive the run).
static void enableTiming(PassManager &pm, TimingScope &scope) {
  if (scope)
    pm.enableTiming(scope);
}

tgc::CompileFn tgc::frontendCompileFn(const SourceFile &file, Defines defines,
                                      MLIRContext &ctx, StringRef tool,
                                      llvm::raw_ostream &diagnostics) {
  return [&file, defines = std::move(defines), &ctx, tool = tool.str(),
          &diagnostics](const Defines &extra) -> OwningOpRef<ModuleOp> {
    tgc::DiagEngine diag(file);
    tgc::FrontendOptions options;
    options.defines = defines;
    options.defines.insert(options.defines.end(), extra.begin(), extra.end());
    options.context = &ctx;
    std::unique_ptr<tgc::Builder> builder = tgc::parseAndElaborate(file, diag, options);
    if (!builder) {
      diag.print(diagnostics);
      return nullptr;
    }
    OwningOpRef<ModuleOp> module = builder->build();
    if (!module) {
      for (const std::string &e : builder->errors())
        diagnostics << tool << ": error: " << e << "\n";
      diagnostics << tool
                  << ": error: internal error: the generated IR does not "
                     "verify; please report this model\n";
    }
    return module;
  };
}

/// Adds tg-fuse as `settings` ask for it. The optimizer group (every
/// parameter's update as one kernel) is the GPU's multi-tensor update; on
/// the CPU each parameter's update is its own loop nest either way, and one
/// group over thousands of parameters would be lowered at once where the
/// CPU scratch is measured op by op (superlinear: bench/scaling/params.tg
/// at 2,000 parameters took 8.3 s of CPU instead of 0.8 s).
/// The free replays come first, as in the pipeline's own `fuse`.
static void addFusePass(PassManager &pm, const tgc::BuildSettings &settings) {
  tg::addFreeReplays(pm,
                     tg::TrainingPipelineOptions().forward.getValue() + "_grad");
  tg::FusePassOptions fuse;
  fuse.optimizerGroup = settings.optimizerGroup;
  pm.addPass(tg::createFusePass(fuse));
}

bool tgc::buildTraining(ModuleOp module, const BuildSettings &settings,
                        bool remat) {
  PassManager pm(module.getContext());
  tg::TrainingPipelineOptions options;
  options.rematerialize = remat;
  options.ranks = settings.ranks;
  options.bucketBytes = settings.bucketBytes;
  options.zero = settings.zero;
  options.keepCollectives = settings.keepCollectives;
  options.commDtype = settings.commDtype;
  // What is planned and reported is what the backend runs: the composite
  // ops' intermediates are buffers of the plan, not hidden scratch.
  options.decompose = true;
  options.keepAttention = settings.keepAttention;
  tg::buildTrainingPipeline(pm, options);
  // After the step is complete and simplified, before planning (as the
  // pipeline's own `fuse` would).
  if (settings.fuse)
    addFusePass(pm, settings);
  TimingScope timing = nestTiming(settings.timing, "training step");
  enableTiming(pm, timing);
  return succeeded(pm.run(module));
}

/// Lowers the planned functions `entries` of `module` in place as far as
/// tg-plan-scratch, which records each one's final arena size.
static LogicalResult lowerToScratch(ModuleOp module,
                                    ArrayRef<std::string> entries,
                                    TimingScope &timing) {
  DialectRegistry registry;
  tg::cpu::registerCpuDialects(registry);
  module.getContext()->appendDialectRegistry(registry);
  PassManager pm(module.getContext());
  tg::cpu::CpuPipelineOptions options;
  options.arena = true;
  options.stopAfterScratch = true;
  options.entryPoints.assign(entries.begin(), entries.end());
  tg::cpu::buildCpuPipeline(pm, options);
  enableTiming(pm, timing);
  return pm.run(module);
}

FailureOr<tg::MemoryPlan> tgc::planTraining(ModuleOp module,
                                            const BuildSettings &settings,
                                            bool remat) {
  // What the budget and the report cover is what the runtime allocates:
  // the CPU backend's op scratch included. tg-size-scratch records each
  // op's (tg.scratch, each distinct op lowered alone), and the plan places
  // it at the op's moment like any buffer, so the lower bound counts it.
  OwningOpRef<ModuleOp> copy = cast<ModuleOp>(module->clone());
  if (!copy->lookupSymbol("train_step") &&
      !tgc::buildTraining(*copy, settings, remat))
    return failure();
  TimingScope timing = nestTiming(settings.timing, "memory plan");
  TimingScope sizing = timing.nest("op scratch (tg-size-scratch)");
  FailureOr<int64_t> unsized = tg::cpu::sizeOpScratch(*copy);
  sizing.stop();
  if (failed(unsized))
    return failure();
  TimingScope planning = timing.nest("plan");
  FailureOr<tg::MemoryPlan> plan =
      tg::planMemory(copy->lookupSymbol<func::FuncOp>("train_step"), {});
  planning.stop();
  if (failed(plan) || *unsized == 0)
    return plan;
  // Some op's lowering alone allocates what its own plan cannot place: the
  // step's lowering appends that op's scratch after the plan, so lower the
  // whole step as far as tg-plan-scratch to learn how much (superlinear
  // in the step's length, hence only here).
  TimingScope lowering = timing.nest("lowering to tg-plan-scratch");
  if (failed(lowerToScratch(*copy, {"train_step"}, lowering)))
    return failure();
  int64_t arena = tg::cpu::loweredArenaBytes(*copy, "train_step");
  plan->scratchBytes = arena ? arena - plan->transientBytes : 0;
  return plan;
}

namespace {
/// An integer entry of a dictionary attribute.
std::optional<int64_t> intEntry(DictionaryAttr dict, StringRef key) {
  if (auto v = dyn_cast_if_present<IntegerAttr>(dict ? dict.get(key) : nullptr))
    return v.getInt();
  return std::nullopt;
}

/// `bytes` as formatBytes prints it, rounded up rather than to nearest: a
/// budget given as printed is then at least `bytes` (the MLP's 3,591,168
/// bytes print as 3.42 MiB, which --memory-budget reads as 3,586,130).
std::string formatBytesUp(int64_t bytes) {
  int64_t unit = 1;
  while (bytes >= unit * 1024 && unit < (int64_t(1) << 40))
    unit *= 1024;
  if (unit == 1)
    return tg::formatBytes(bytes);
  int64_t hundredths = (bytes * 100 + unit - 1) / unit;
  return tg::formatBytes((hundredths * unit + 99) / 100);
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

/// Groups the kernels (tg-fuse) of `module`, whose training step is built.
static LogicalResult fuseStep(ModuleOp module,
                              const tgc::BuildSettings &settings) {
  PassManager pm(module.getContext());
  addFusePass(pm, settings);
  TimingScope timing = tgc::nestTiming(settings.timing, "training step");
  enableTiming(pm, timing);
  return pm.run(module);
}

/// Runs tg-fit-budget on `module` (a model); its #tg.budget_fit, or null
/// on error (printed).
static tg::BudgetFitAttr runFit(ModuleOp module, int64_t budget,
                               StringRef precision, int64_t microBatches,
                               const tgc::BuildSettings &settings) {
  PassManager pm(module.getContext());
  tg::FitBudgetPassOptions options;
  options.budget = budget;
  options.precision = precision.str();
  options.microBatches = microBatches;
  options.mustFit = false;
  options.ranks = settings.ranks;
  options.bucketBytes = settings.bucketBytes;
  options.zero = settings.zero;
  options.keepCollectives = settings.keepCollectives;
  options.commDtype = settings.commDtype;
  options.shard = settings.mayShard;
  options.keepAttention = settings.keepAttention;
  pm.addPass(tg::createFitBudgetPass(options));
  TimingScope timing = tgc::nestTiming(settings.timing, "budget fit");
  enableTiming(pm, timing);
  if (failed(pm.run(module)))
    return nullptr;
  return tg::dialect(module.getContext()).getBudgetFitAttrHelper().getAttr(module);
}

std::optional<tgc::BudgetFit> tgc::fitBudget(const CompileFn &compile,
                                             std::optional<int64_t> budget,
                                             BuildSettings &settings,
                                             std::string &error) {
  OwningOpRef<ModuleOp> module = compile({});
  if (!module)
    return std::nullopt;
  auto train = (*module)->getAttrOfType<DictionaryAttr>(tg::attr::train);
  if (!budget)
    budget = intEntry(train, "memory_budget");
  if (!budget) {
    FailureOr<tg::MemoryPlan> plan = planTraining(*module, settings);
    if (failed(plan))
      return std::nullopt;
    return BudgetFit{std::move(module), std::move(*plan), ""};
  }

  // In order of extra cost: recomputation (tg-fit-budget's ladder), then
  // micro-batches (the model's `batch` hyper-parameter is the micro-batch;
  // accumulate keeps the effective batch), then bf16 activations.
  auto hyper = (*module)->getAttrOfType<DictionaryAttr>(tg::attr::hyper);
  std::optional<int64_t> batch = intEntry(hyper, "batch");
  int64_t accumulate = intEntry(train, "accumulate").value_or(1);
  auto precision = train ? train.getAs<StringAttr>("precision") : StringAttr();
  SmallVector<StringRef> precisions{""};
  if (!precision || precision.getValue() == "fp32")
    precisions.push_back("bf16");
  // What the step needs as given, the backend's op scratch included (the
  // peak every candidate's note is compared with; the fit pass's own
  // `unconstrained` is the graph's plan alone).
  FailureOr<tg::MemoryPlan> asGiven = planTraining(*module, settings);
  if (failed(asGiven))
    return std::nullopt;
  // The step as given is what runs without a fit: when it fits, nothing is
  // chosen. tg-fit-budget weighs the unfused graph without the op scratch,
  // which can exceed the fused step's peak (the MLP's: 4.07 against
  // 3.42 MiB), so without this a budget the step already met was refused.
  if (asGiven->peakBytes() <= *budget)
    return BudgetFit{std::move(module), std::move(*asGiven), ""};
  tg::BudgetFitAttr least;
  OwningOpRef<ModuleOp> leastModule;
  for (StringRef prec : precisions) {
    for (int64_t f = 1; f <= batch.value_or(1); f *= 2) {
      if (batch && *batch % f)
        continue;
      OwningOpRef<ModuleOp> model =
          f == 1 ? OwningOpRef<ModuleOp>(cast<ModuleOp>((*module)->clone()))
                 : compile({{"batch", std::to_string(*batch / f)}});
      if (!model)
        return std::nullopt;
      if (f > 1)
        setMicroBatching(*model, *batch / f, accumulate * f);
      // tg-fit-budget fits the graph's plan; the CPU backend's op scratch
      // comes on top, so a fit that the scratch pushes over is tried again
      // with the budget less that scratch.
      OwningOpRef<ModuleOp> m;
      tg::BudgetFitAttr fit;
      FailureOr<tg::MemoryPlan> plan = failure();
      // Sharding is tried first where allowed; a sharded step whose CPU
      // scratch eats what sharding saved falls back to the replicated
      // ladder at the same batch, so allowing sharding never makes the
      // choice worse than --zero 0.
      SmallVector<bool, 2> shardChoices{settings.mayShard};
      if (settings.mayShard)
        shardChoices.push_back(false);
      for (bool shard : shardChoices) {
        BuildSettings trial = settings;
        trial.mayShard = shard;
        for (int64_t reserve = 0, tries = 0; tries < 2; ++tries) {
          m = cast<ModuleOp>((*model)->clone());
          fit = runFit(*m, std::max<int64_t>(1, *budget - reserve), prec, f,
                       trial);
          if (!fit)
            return std::nullopt;
          if (!fit.getFits())
            break;
          // tg-fit-budget builds and weighs the unfused step; the step
          // that runs is fused, and its plan (checked below) is the one
          // the budget must hold.
          if (trial.fuse && failed(fuseStep(*m, trial)))
            return std::nullopt;
          plan = planTraining(*m, trial);
          if (failed(plan))
            return std::nullopt;
          if (plan->peakBytes() <= *budget)
            break;
          // What the fused step with its op scratch needs beyond the
          // graph's plan that the fit weighed.
          reserve = plan->peakBytes() - fit.getPeak();
          fit = tg::BudgetFitAttr();
        }
        if (fit)
          break;
      }
      if (!fit)
        continue;
      if (!fit.getFits()) {
        if (!least || fit.getPeak() < least.getPeak()) {
          least = fit;
          leastModule = std::move(m);
        }
        continue;
      }
      if (fit.getChoice() == "none")
        return BudgetFit{std::move(m), std::move(*plan), ""};
      // A fit that sharded the optimizer state makes the job's step a ZeRO
      // step: later builds of this run (the kernel report) build it alike.
      bool sharded = fit.getZero() == 1 && settings.zero == 0;
      if (sharded)
        settings.zero = 1;
      std::string note;
      llvm::raw_string_ostream os(note);
      os << "the step needs " << formatBytes(asGiven->peakBytes())
         << ", over the budget of " << formatBytes(*budget) << "; chose "
         << fit.getChoice() << ":";
      StringRef sep = " ";
      if (sharded) {
        os << sep << "shard the optimizer state over the " << settings.ranks
           << " ranks (ZeRO stage 1)";
        sep = " and ";
      }
      if (fit.getLevel() > 0) {
        os << sep << "recompute activations in the backward pass (level "
           << fit.getLevel() << " of 4)";
        sep = " and ";
      }
      if (f > 1) {
        os << sep << "split each batch of " << *batch << " into " << f
           << " micro-batches of " << *batch / f << " (accumulate "
           << accumulate * f << ")";
        sep = " and ";
      }
      if (!prec.empty())
        os << sep << prec << " activations";
      int64_t extra = fit.getExtraFlops();
      os << ": peak " << formatBytes(plan->peakBytes()) << ", extra FLOPs "
         << llvm::format("%.1f", 100.0 * double(extra) /
                                     double(std::max<int64_t>(
                                         1, fit.getStepFlops() - extra)))
         << "% of the step";
      return BudgetFit{std::move(m), std::move(*plan), note};
    }
  }
  if (!leastModule) {
    // Every candidate fitted the graph but not the backend's scratch on top.
    error = "the training step does not fit the memory budget of " +
            formatBytes(*budget) + " once the CPU backend's op scratch is "
            "added; give a larger budget";
    return std::nullopt;
  }
  // The least candidate (by tg-fit-budget's unfused graph peak) as it would
  // run: fused, with the CPU backend's op scratch. A budget takes both its
  // graph peak (to pass the ladder) and this peak (the check above); the
  // step as given competes with it, so the line never names a peak larger
  // than one the step already reaches.
  if (settings.fuse && failed(fuseStep(*leastModule, settings)))
    return std::nullopt;
  FailureOr<tg::MemoryPlan> plan = planTraining(*leastModule, settings);
  if (failed(plan))
    return std::nullopt;
  int64_t fixed = plan->bytesOf(tg::BufferKind::Param) +
                  plan->bytesOf(tg::BufferKind::Optimizer);
  int64_t reached = std::max(least.getPeak(), plan->peakBytes());
  int64_t level = least.getLevel(), micro = least.getMicroBatches();
  std::string leastPrecision = least.getPrecision().str();
  if (asGiven->peakBytes() <= reached) {
    reached = asGiven->peakBytes();
    level = 0;
    micro = 1;
    leastPrecision = precision ? precision.getValue().str() : "fp32";
  }
  llvm::raw_string_ostream os(error);
  os << "the training step does not fit the memory budget of "
     << formatBytes(*budget) << ": the least it reached is "
     << formatBytes(reached) << " (recomputation level " << level << " of 4, "
     << (batch ? "micro-batches of " + std::to_string(*batch / micro)
               : std::string("no 'batch' hyper-parameter to split"))
     << ", " << leastPrecision
     << "; parameters and optimizer state alone take " << formatBytes(fixed)
     << "); it would take a budget of at least " << formatBytesUp(reached)
     << ", or a smaller model";
  return std::nullopt;
}

std::optional<tgc::Targets> tgc::parseTargets(llvm::StringRef list,
                                              std::string &error) {
  Targets t;
  t.cpu = false;
  llvm::SmallVector<llvm::StringRef> names;
  list.split(names, ',');
  for (llvm::StringRef n : names) {
    n = n.trim();
    bool gpu = n == "sm_80" || n == "sm_90a";
    if (n != "cpu" && !gpu) {
      error = "unknown --target '" + n.str() +
              "' (supported: cpu, sm_80, sm_90a, as a comma-separated list)";
      return std::nullopt;
    }
    if ((n == "cpu" && t.cpu) || llvm::is_contained(t.gpus, n)) {
      error = "--target names '" + n.str() + "' twice";
      return std::nullopt;
    }
    if (gpu)
      t.gpus.push_back(n.str());
    else
      t.cpu = true;
  }
  return t;
}

bool tgc::writeArtifactFile(ModuleOp module, const tg::MemoryPlan &reported,
                            const std::string &path,
                            const tg::CpuObjectOptions &cpu,
                            const Targets &targets) {
  std::string error;
  auto fail = [&]() {
    if (!error.empty())
      llvm::errs() << "tgc: error: " << error << "\n";
    return false;
  };
  // The GPU step first: it works on its own copy of the training module
  // (fused, planned per entry), before the CPU backend plans in place.
  llvm::json::Object gpuManifest;
  std::vector<std::pair<std::string, std::string>> sections;
  if (!targets.gpus.empty() &&
      !buildGpuSections(module, targets.gpus, gpuManifest, sections, error))
    return fail();
  llvm::json::Object manifest;
  std::string cpuSo;
  if (targets.cpu) {
    FailureOr<tg::CpuArtifact> artifact =
        tg::buildCpuArtifact(module, cpu, &reported, error);
    if (failed(artifact))
      return fail();
    manifest = std::move(artifact->manifest);
    cpuSo = std::move(artifact->cpuSo);
  } else {
    // No CPU code: the interface alone (no CPU arena, nothing in place).
    llvm::json::Object memory = tg::memorySummaryJson(reported);
    FailureOr<llvm::json::Object> m = tg::buildManifest(module, &memory);
    if (failed(m))
      return fail();
    manifest = std::move(*m);
  }
  if (!targets.gpus.empty())
    manifest["gpu"] = std::move(gpuManifest);
  if (!tg::writeArtifact(manifest, cpuSo, sections, path, error))
    return fail();
  return true;
}
