//===- Build.cpp - a training module to the sections of a .tgx --*- C++ -*-===//
//
// See Manifest.h (buildCpuArtifact): the one path from a planned training
// module to an artifact, shared by tgc and the JIT API.
//
//===----------------------------------------------------------------------===//

#include "codegen/artifact/Manifest.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

FailureOr<tg::CpuArtifact>
mlir::tg::buildCpuArtifact(ModuleOp module, const CpuObjectOptions &cpu,
                           const MemoryPlan *unplanned, std::string &error) {
  // The code follows the plan: train_step, eval and forward_grad are
  // planned in place and the CPU backend puts every planned value at its
  // offset in one arena per call (the runtime gives each entry the largest).
  // An unplanned entry allocates every value on the heap with a dealloc of
  // its own, and upstream's deallocation simplification is superlinear in
  // their number: an unfused (--no-fuse) forward_grad of 2,000 ops took
  // more CPU time than the rest of the compile (docs/hardening.md).
  std::optional<MemoryPlan> plan;
  if (unplanned)
    plan = *unplanned;
  // Each op's CPU scratch (tg.scratch) first, so that the plan places it at
  // the op's moment inside the arena instead of after it.
  TimingScope timing =
      cpu.timing ? cpu.timing->nest("memory plan") : TimingScope();
  TimingScope sizing = timing.nest("op scratch (tg-size-scratch)");
  if (cpu.arena && failed(cpu::sizeOpScratch(module))) {
    error = "measuring the ops' CPU scratch failed (see the diagnostics above)";
    return failure();
  }
  sizing.stop();
  TimingScope planning = timing.nest("plan");
  for (StringRef entry : {"train_step", "eval", "forward_grad"})
    if (auto fn = cpu.arena ? module.lookupSymbol<func::FuncOp>(entry)
                            : func::FuncOp()) {
      FailureOr<MemoryPlan> p = planMemory(fn, {});
      if (failed(p))
        return failure(); // diagnosed on the function
      if (entry == "train_step")
        plan = std::move(*p);
    }
  planning.stop();
  timing.stop();
  // Code first: the backend records each arena with the ops' scratch added
  // (tg.arena_bytes), and the manifest is built once from that module.
  FailureOr<std::string> so = buildCpuSharedObject(module, error, cpu);
  if (failed(so))
    return failure();
  std::optional<llvm::json::Object> memory;
  if (plan) {
    if (auto arenas = module->getAttrOfType<DictionaryAttr>(attr::arenaBytes))
      if (auto step = arenas.getAs<IntegerAttr>("train_step"))
        plan->scratchBytes = step.getInt() - plan->transientBytes;
    memory = memorySummaryJson(*plan);
  }
  FailureOr<llvm::json::Object> manifest =
      buildManifest(module, memory ? &*memory : nullptr);
  if (failed(manifest))
    return failure(); // diagnosed on the entry point
  return CpuArtifact{std::move(*manifest), std::move(*so)};
}
