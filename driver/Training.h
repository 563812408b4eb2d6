//===- Training.h - the compile driver ---------------------------*- C++ -*-===//
//
// What tgc and the JIT API (include/tgc/Jit.h) both do between the frontend
// and the bytes they hand on: build the training step, plan its memory with
// the CPU backend's op scratch, fit a memory budget, and build the GPU part
// of an artifact. Tools parse arguments and print; the decisions are here
// and in the passes.
//
// The budget fit: tg-fit-budget chooses the rematerialisation (a pass: it
// rewrites the step); this driver recompiles the model at smaller batches
// (accumulated micro-batches) and then in bf16 when recomputation alone
// does not fit, because only the frontend can re-type the batch: shapes are
// static and computed from the model's hyper-parameters (a reshape to
// [batch, seq, heads, d] carries the batch in an attribute), so no pass can
// re-derive them (docs/architecture.md, "The compile driver").
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DRIVER_TRAINING_H
#define TGC_DRIVER_TRAINING_H

#include "frontend/Diagnostics.h"

#include "codegen/artifact/CpuObject.h"
#include "passes/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/JSON.h"

#include <functional>
#include <optional>
#include <string>

namespace tgc {

/// "16GiB", "512MiB", "1.5GB", "4096" (bytes) -> bytes; nullopt if malformed.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

/// `-D name=value` overrides of a model's hyper-parameters.
using Defines = std::vector<std::pair<std::string, std::string>>;

/// Compiles the model with extra `-D` overrides (empty: as given).
using CompileFn =
    std::function<mlir::OwningOpRef<mlir::ModuleOp>(const Defines &extra)>;

/// The frontend as a CompileFn: parses and elaborates `file` with `defines`
/// and then the extra ones, into `ctx`. The frontend's diagnostics and the
/// builder's errors go to `diagnostics` as `<tool>: error:` lines.
CompileFn frontendCompileFn(const SourceFile &file, Defines defines,
                            mlir::MLIRContext &ctx, llvm::StringRef tool,
                            llvm::raw_ostream &diagnostics);

/// How every training step of one compile is built: the plan, the budget
/// fit and the artifact must see the same step, so the caller makes one of
/// these and hands it to each call (no process-wide state: the JIT API
/// compiles several models in one process).
struct BuildSettings {
  /// Data-parallel over `ranks` processes with gradient buckets of
  /// `bucketBytes` (tg-data-parallel); the optimizer state sharded over
  /// the ranks when `zero` is 1 (ZeRO stage 1).
  int64_t ranks = 1;
  int64_t bucketBytes = 25 * 1024 * 1024;
  int64_t zero = 0;
  /// With `ranks` 1: keep the collectives all the same, over a
  /// communicator of one rank (tgc --keep-collectives), so that a job of
  /// one process measures what communicating costs.
  bool keepCollectives = false;
  /// The element type the f32 gradient buckets are communicated in
  /// (tgc --comm-dtype): "f32", or "bf16" / "f16", half the bytes.
  std::string commDtype = "f32";
  /// With `zero` 0, fitBudget may shard the state to meet a budget (and
  /// then sets `zero` to 1 for the builds that follow).
  bool mayShard = true;
  /// Leave tg.attention and tg.attention_grad whole: both backends run
  /// them as fused kernels (the CPU's loop nests, codegen/cpu/
  /// AttentionToLoops.cpp; the GPU's, which decompose what they refuse), so
  /// the plan keeps O and the log-sum-exp, never a Tq x Tk tensor.
  bool keepAttention = true;
  /// Group the step's ops into kernels (tg-fuse) before planning, so the
  /// plan, the budget fit and the artifact all see the fused step: values
  /// internal to a group get no arena slot. tgc sets it (unless
  /// --no-fuse); the JIT API builds the unfused step.
  bool fuse = false;
  /// With `fuse`, every parameter's update as one kernel (the GPU's
  /// multi-tensor update; the kernel report's optimizer row). tgc leaves it
  /// off for CPU-only artifacts (Training.cpp, addFusePass).
  bool optimizerGroup = true;
  /// Where the compile's time goes (tgc --time-phases): the training
  /// pipeline's passes and the memory planning as timers nested in this
  /// scope; null: not timed. Timing changes nothing that is compiled.
  mlir::TimingScope *timing = nullptr;
};

/// A timer `name` nested in `parent`, or an inactive one without a parent.
mlir::TimingScope nestTiming(mlir::TimingScope *parent, llvm::StringRef name);

/// Runs the training pipeline on `module` (in place), rematerializing
/// activations if `remat` and grouping kernels (tg-fuse) if
/// `settings.fuse`; false on error (diagnostics are printed).
bool buildTraining(mlir::ModuleOp module, const BuildSettings &settings,
                   bool remat = false);

/// Plans the memory of @train_step in a copy of `module`, with the CPU
/// backend's op scratch: each op's (tg-size-scratch) as a buffer of the
/// plan at the op's moment, and in MemoryPlan::scratchBytes what the arena
/// adds after the plan for ops that could not be sized alone.
mlir::FailureOr<mlir::tg::MemoryPlan>
planTraining(mlir::ModuleOp module, const BuildSettings &settings,
             bool remat = false);

/// The outcome of fitting a budget.
struct BudgetFit {
  /// The chosen model: with a budget that the step as given exceeds, its
  /// training step is built (and tg.budget_fit says how); without a budget
  /// or within it, the forward model only.
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::tg::MemoryPlan plan; ///< its plan
  std::string note;          ///< what was chosen and its cost
};

/// Compiles the model and, with a budget (`budget` or the train block's
/// memory_budget) that the step as given (fused, op scratch included)
/// exceeds, fits it by tg-fit-budget's rematerialisation ladder,
/// then the same at micro-batches of 1/2, 1/4, ... of the batch, then in
/// bf16 (fp32 models). nullopt on failure: `error` says the least peak
/// reached and what it would take (one line), or is empty where the
/// compile or a pass reported its own diagnostic.
std::optional<BudgetFit> fitBudget(const CompileFn &compile,
                                   std::optional<int64_t> budget,
                                   BuildSettings &settings,
                                   std::string &error);

/// What `--target` asks for: CPU code, and the GPU architectures.
struct Targets {
  bool cpu = true;
  std::vector<std::string> gpus; ///< "sm_80", "sm_90a"
};

/// Parses `--target=LIST` (comma-separated cpu, sm_80, sm_90a; each at most
/// once); nullopt and `error` set when malformed.
std::optional<Targets> parseTargets(llvm::StringRef list, std::string &error);

/// The GPU step of an artifact for the architectures `gpus`
/// (codegen/nvptx/Schedule.h): the manifest's "gpu" member and the sections
/// "gpu.fatbin", "gpu.sm_80.ptx" and "gpu.sm_90a.ptx". False with `error` set, or empty where
/// a located diagnostic was printed.
bool buildGpuSections(mlir::ModuleOp module,
                      const std::vector<std::string> &gpus,
                      llvm::json::Object &manifest,
                      std::vector<std::pair<std::string, std::string>> &sections,
                      std::string &error);

/// The kernels of the fused step as a GPU target runs them, for
/// `--report=kernels` with GPU targets: attention ops no fused GPU kernel
/// takes are decomposed (with a `tgc: note:` naming the first and why) and
/// the step fused again. False where a diagnostic was printed.
bool prepareGpuKernelReport(mlir::ModuleOp module);

/// The GPU plan of `module`'s train_step for the architectures `gpus`
/// (one plan serves them all: the GPU kernels' op scratch sized for the
/// largest), for `tgc --report=memory --target=sm_...`. Nothing where the
/// GPU backend's diagnostic was printed.
std::optional<mlir::tg::MemoryPlan>
planGpuStep(mlir::ModuleOp module, const std::vector<std::string> &gpus);

/// Compiles the training module for `targets` and writes the `.tgx`
/// artifact at `path`: the manifest with the memory plan, the CPU shared
/// object and, for GPU targets, the launch schedules (manifest "gpu"), the
/// fat binary and the sm_80 PTX (docs/artifact.md). Prints one
/// `tgc: error:` line (or the IR's located diagnostic) and returns false on
/// failure.
bool writeArtifactFile(mlir::ModuleOp module, const mlir::tg::MemoryPlan &plan,
                       const std::string &path,
                       const mlir::tg::CpuObjectOptions &cpu = {},
                       const Targets &targets = {});

} // namespace tgc

#endif // TGC_DRIVER_TRAINING_H
