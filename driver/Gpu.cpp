//===- Gpu.cpp - tgc's GPU targets ------------------------------*- C++ -*-===//
//
// `tgc --target=sm_80,sm_90a`: the artifact's GPU part, from the GPU
// backend (codegen/nvptx/Schedule.h). Apart from Training.cpp because the
// backend's namespace (tg::nvptx) and the dialect's (mlir::tg) meet there.
//
//===----------------------------------------------------------------------===//

#include "codegen/artifact/Manifest.h"
#include "codegen/nvptx/Schedule.h"
#include "passes/MemoryPlan.h"
#include "driver/Training.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

/// Prints the GPU backend's diagnostics as tgc's one-line errors and notes
/// (`tgc: note: mlp.tg:16:9: ...`) while it lives.
static mlir::ScopedDiagnosticHandler tgcDiagnostics(mlir::MLIRContext *ctx) {
  return mlir::ScopedDiagnosticHandler(ctx, [](mlir::Diagnostic &d) {
    std::string where = mlir::tg::locString(d.getLocation());
    llvm::errs() << "tgc: "
                 << (d.getSeverity() == mlir::DiagnosticSeverity::Error
                         ? "error: "
                         : "note: ")
                 << (where.empty() ? "" : where + ": ") << d << "\n";
    return mlir::success();
  });
}

bool tgc::prepareGpuKernelReport(mlir::ModuleOp module) {
  mlir::ScopedDiagnosticHandler handler = tgcDiagnostics(module.getContext());
  return mlir::succeeded(tg::nvptx::prepareGpuReport(module));
}

std::optional<mlir::tg::MemoryPlan>
tgc::planGpuStep(mlir::ModuleOp module, const std::vector<std::string> &gpus) {
  llvm::SmallVector<tg::nvptx::Target> archs;
  for (const std::string &g : gpus)
    archs.push_back(g == "sm_80" ? tg::nvptx::Target::SM80
                                 : tg::nvptx::Target::SM90a);
  mlir::ScopedDiagnosticHandler handler = tgcDiagnostics(module.getContext());
  mlir::FailureOr<mlir::tg::MemoryPlan> plan =
      tg::nvptx::planGpuEntry(module, archs, "train_step");
  if (mlir::failed(plan))
    return std::nullopt;
  return std::move(*plan);
}

bool tgc::buildGpuSections(
    mlir::ModuleOp module, const std::vector<std::string> &gpus,
    llvm::json::Object &manifest,
    std::vector<std::pair<std::string, std::string>> &sections,
    std::string &error) {
  llvm::SmallVector<tg::nvptx::Target> archs;
  for (const std::string &g : gpus)
    archs.push_back(g == "sm_80" ? tg::nvptx::Target::SM80
                                 : tg::nvptx::Target::SM90a);
  llvm::SmallVector<llvm::StringRef> entries(std::begin(mlir::tg::kEntryPoints),
                                             std::end(mlir::tg::kEntryPoints));
  // An op no generator takes is the user's to see as one line with the
  // model's file:line:col, like every other tgc error.
  mlir::ScopedDiagnosticHandler handler = tgcDiagnostics(module.getContext());
  mlir::FailureOr<tg::nvptx::GpuArtifact> gpu =
      tg::nvptx::buildGpuArtifact(module, archs, entries, error);
  if (mlir::failed(gpu))
    return false;
  manifest = std::move(gpu->manifest);
  sections.push_back({"gpu.fatbin", std::move(gpu->fatbin)});
  if (!gpu->ptxSm80.empty())
    sections.push_back({"gpu.sm_80.ptx", std::move(gpu->ptxSm80)});
  if (!gpu->ptxSm90a.empty())
    sections.push_back({"gpu.sm_90a.ptx", std::move(gpu->ptxSm90a)});
  return true;
}
