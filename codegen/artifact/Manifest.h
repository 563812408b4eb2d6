//===- Manifest.h - the interface of a compiled model -----------*- C++ -*-===//
//
// Builds the `.tgx` manifest (docs/artifact.md) from a training module's
// entry points and writes the artifact. The CPU code arrives as bytes of a
// shared object from the CPU backend.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_ARTIFACT_MANIFEST_H
#define TGC_CODEGEN_ARTIFACT_MANIFEST_H

#include "codegen/artifact/CpuObject.h"
#include "passes/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::tg {

/// The entry points a manifest lists, when the module has them.
inline constexpr llvm::StringLiteral kEntryPoints[] = {"init", "train_step",
                                                       "eval", "forward_grad"};

/// The manifest's name of an element type ("f32", ...), or "" if the
/// runtime has none.
llvm::StringRef artifactDTypeName(Type t);

/// The manifest of `module` as the backend left it: every entry point of
/// kEntryPoints present, with its arguments and results (name, role, dtype,
/// shape) and its arena (the module's `tg.arena_bytes`, recorded by
/// buildCpuSharedObject), the model name and, when `memory` is given, the
/// planner's summary. Fails with a diagnostic on
/// a type the runtime cannot hold.
FailureOr<llvm::json::Object> buildManifest(ModuleOp module,
                                            const llvm::json::Object *memory);

/// A CPU artifact's two sections, built from a training module.
struct CpuArtifact {
  llvm::json::Object manifest;
  std::string cpuSo;
};

/// Builds the sections of a `.tgx` from `module` after the training pipeline
/// (the one path from IR to artifact: tgc writes the result to a file, the
/// JIT API loads it in-process). With `cpu.arena`, train_step and eval are
/// planned here (the same deterministic plan as the memory report's) and the
/// manifest's memory summary is train_step's plan with the scratch the
/// backend placed after it; otherwise `unplanned` is summarised (may be
/// null: no summary). On failure `error` has one line, or is empty where
/// the failure was diagnosed on the IR (to the context's handler).
FailureOr<CpuArtifact> buildCpuArtifact(ModuleOp module,
                                        const CpuObjectOptions &cpu,
                                        const MemoryPlan *unplanned,
                                        std::string &error);

/// Writes a `.tgx` file with the manifest, the CPU shared object (if
/// non-empty) and `sections` (name, bytes; the GPU backend's "gpu.fatbin"
/// and "gpu.sm_80.ptx"). `error` gets one line on failure.
bool writeArtifact(
    const llvm::json::Object &manifest, llvm::StringRef cpuSo,
    llvm::ArrayRef<std::pair<std::string, std::string>> sections,
    const std::string &path, std::string &error);

} // namespace mlir::tg

#endif // TGC_CODEGEN_ARTIFACT_MANIFEST_H
