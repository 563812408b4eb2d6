//===- FitBudget.cpp - fit the training step into a budget ------*- C++ -*-===//
//
// Builds a model's training step with the cheapest means (ZeRO-1 sharding of
// the optimizer state for a data-parallel step, then rematerialisation
// levels) whose planned peak fits a memory budget, and records the choice on
// the module as #tg.budget_fit. Each candidate is the training pipeline run on
// a copy of the model in a nested module (a dynamic pipeline), planned, and
// kept or dropped; the chosen copy's body replaces the model's. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "passes/TrainConfig.h"

namespace mlir::tg {
#define GEN_PASS_DEF_FITBUDGETPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// One candidate's result.
struct Candidate {
  ModuleOp module;
  int64_t level = 0, zero = 0, peak = 0, extraFlops = 0, stepFlops = 0;
};

struct FitBudgetPass final : tg::impl::FitBudgetPassBase<FitBudgetPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto train = module->getAttrOfType<DictionaryAttr>(attr::train);
    int64_t limit = budget;
    if (limit <= 0)
      if (auto b = train ? train.getAs<IntegerAttr>("memory_budget")
                         : IntegerAttr())
        limit = b.getInt();
    if (limit <= 0) {
      module.emitError("tg-fit-budget: no budget: give budget=BYTES or "
                       "memory_budget in the train block");
      return signalPassFailure();
    }
    std::string prec = precision;
    if (prec.empty())
      if (auto p = train ? train.getAs<StringAttr>("precision") : StringAttr())
        prec = p.str();
    if (prec.empty())
      prec = "fp32";

    // The model's ops, cloned into each candidate.
    SmallVector<Operation *> model;
    for (Operation &op : module.getBody()->getOperations())
      model.push_back(&op);

    // The candidates, cheapest first. Sharding the optimizer state (ZeRO
    // stage 1) comes before any recomputation: its reduce-scatter and
    // all-gather move the bytes of the all_reduce they replace, and it
    // recomputes nothing, so once the plain step does not fit, every
    // rematerialisation level is tried sharded.
    SmallVector<std::pair<int64_t, int64_t>> ladder; // (level, zero)
    bool tryShard = shard && ranks > 1 && zero == 0 && shardable(module);
    for (int64_t level = 0; level <= 4; ++level) {
      if (!tryShard || level == 0)
        ladder.push_back({level, zero});
      if (tryShard)
        ladder.push_back({level, 1});
    }

    std::optional<Candidate> best, chosen;
    int64_t unconstrained = 0;
    for (auto [level, stage] : ladder) {
      if (chosen)
        break;
      FailureOr<Candidate> c = tryLevel(module, model, level, stage);
      if (failed(c))
        return signalPassFailure();
      if (level == 0 && stage == zero)
        unconstrained = c->peak;
      bool fits = c->peak <= limit;
      if (!best || c->peak < best->peak) {
        if (best)
          best->module.erase();
        best = *c;
      } else {
        c->module.erase();
      }
      if (fits)
        chosen = best;
    }

    // The kept candidate's body becomes the module's, and so do the
    // attributes its pipeline set on its module (tg-data-parallel's
    // tg.ranks: without it the artifact of a --ranks 2 job with a memory
    // budget said it was for 1 process and tg-run refused the job).
    for (Operation *op : model)
      op->erase();
    for (NamedAttribute a : best->module->getAttrs())
      if (a.getName() != SymbolTable::getSymbolAttrName())
        module->setAttr(a.getName(), a.getValue());
    Block *body = module.getBody();
    body->getOperations().splice(body->end(),
                                 best->module.getBody()->getOperations());
    best->module.erase();

    std::string choice = best->level > 0              ? "recompute"
                         : best->zero != int64_t(zero) ? "shard"
                                                       : "none";
    if (microBatches > 1)
      choice = "micro-batch";
    if (!precision.empty() && train && train.getAs<StringAttr>("precision") &&
        train.getAs<StringAttr>("precision").getValue() != prec)
      choice = "precision";
    auto fit = BudgetFitAttr::get(
        &getContext(), choice, best->level, microBatches, best->zero, prec,
        limit,
        best->peak, unconstrained, best->extraFlops, best->stepFlops,
        bool(chosen));
    dialect(&getContext()).getBudgetFitAttrHelper().setAttr(module, fit);
    if (!chosen && mustFit) {
      module.emitError() << "tg-fit-budget: the training step does not fit "
                            "the budget of "
                         << formatBytes(limit)
                         << ": the least peak reached is "
                         << formatBytes(best->peak)
                         << " (rematerialisation level " << best->level
                         << " of 4"
                         << (best->zero ? ", optimizer state sharded" : "")
                         << ")";
      return signalPassFailure();
    }
  }

  /// Whether ZeRO-1 can shrink the step of `module` (a model): its
  /// optimizer keeps state (plain SGD has none to shard) and its
  /// parameters are f32, the collectives' type (tg-data-parallel refuses
  /// others with zero = 1).
  bool shardable(ModuleOp module) {
    // Without a train block the candidates' pipeline says so, once.
    if (!module->hasAttr(attr::train))
      return false;
    FailureOr<TrainConfig> cfg = TrainConfig::read(module);
    auto fn = module.lookupSymbol<func::FuncOp>(funcName);
    if (failed(cfg) || cfg->stateSlots().empty() || !fn)
      return false;
    for (BlockArgument a : fn.getArguments()) {
      auto role = fn.getArgAttrOfType<RoleAttr>(a.getArgNumber(), attr::role);
      auto type = dyn_cast<RankedTensorType>(a.getType());
      if (role && role.getValue() == Role::param &&
          (!type || !type.getElementType().isF32()))
        return false;
    }
    return true;
  }

  /// Builds and plans the training step of a copy of `model` (the ops of
  /// `module`) at rematerialisation `level` and ZeRO stage `stage`, in a
  /// module nested in `module`.
  FailureOr<Candidate> tryLevel(ModuleOp module, ArrayRef<Operation *> model,
                                int64_t level, int64_t stage) {
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto copy = ModuleOp::create(b, module.getLoc());
    for (NamedAttribute a : module->getAttrs())
      if (a.getName() != SymbolTable::getSymbolAttrName())
        copy->setAttr(a.getName(), a.getValue());
    b.setInsertionPointToEnd(copy.getBody());
    for (Operation *op : model)
      b.clone(*op);

    OpPassManager pm(ModuleOp::getOperationName());
    TrainingPipelineOptions options;
    options.forward = funcName;
    options.precision = precision;
    options.rematLevel = level;
    options.decompose = decompose;
    options.keepAttention = keepAttention;
    options.ranks = ranks;
    options.bucketBytes = bucketBytes;
    options.zero = stage;
    options.keepCollectives = keepCollectives;
    options.commDtype = commDtype;
    buildTrainingPipeline(pm, options);
    if (failed(runPipeline(pm, copy)))
      return failure();
    // Planned on a copy: planning rewrites the step in place (offsets,
    // schedule), and the driver plans the kept candidate again.
    OwningOpRef<ModuleOp> planned(cast<ModuleOp>(copy->clone()));
    auto step = planned->lookupSymbol<func::FuncOp>("train_step");
    // The gradient function the step runs (with shared compute copies, the
    // micro-batch clone): its replays are the step's.
    SmallVector<func::FuncOp, 2> grads =
        gradientFunctions(copy, funcName + "_grad");
    func::FuncOp grad = grads.empty() ? func::FuncOp() : grads.back();
    FailureOr<MemoryPlan> plan =
        step ? planMemory(step, {}) : FailureOr<MemoryPlan>(failure());
    if (failed(plan) || !grad) {
      copy.emitError("tg-fit-budget: the training step could not be planned");
      return failure();
    }
    Candidate c;
    c.module = copy;
    c.level = level;
    c.zero = stage;
    c.peak = plan->peakBytes();
    c.stepFlops = functionFlops(grad);
    if (auto remat = dialect(&getContext()).getRematAttrHelper().getAttr(grad))
      c.extraFlops = remat.getFlops();
    // A step is the gradient function plus an optimizer update that is
    // the same for every candidate; the share is of the gradient's work.
    return c;
  }
};

} // namespace
