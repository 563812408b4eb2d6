//===- CpuObject.h - the CPU code of an artifact ----------------*- C++ -*-===//
//
// Lowers a training module with the CPU pipeline, adds the `tgx_<entry>`
// wrappers of the artifact ABI (docs/artifact.md), compiles for the host and
// links a shared object that depends on libc and libm only.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_ARTIFACT_CPUOBJECT_H
#define TGC_CODEGEN_ARTIFACT_CPUOBJECT_H

#include <map>
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"

#include <string>

namespace mlir::tg {

/// The bytes of a shared object exporting `tgx_<name>` for every entry
/// point of kEntryPoints in `module` (a tg module on tensors). `error` gets
/// one line on failure (lowering diagnostics go to the context).
struct CpuObjectOptions {
  /// Planned entries (tg.memory) keep their values in one arena argument.
  bool arena = true;
  /// LLVM optimisation level of the generated code (0-3).
  unsigned optLevel = 3;
  /// Threads that run LLVM's optimisation and code generation, one
  /// partition of the module at a time (tgc --jobs); 0: the machine's
  /// cores. The code is the same bytes for every value.
  unsigned jobs = 0;
  /// Partitions the LLVM module is split into; 0: derived from the
  /// module's size (ParallelCodegen.h), the same on every machine.
  unsigned partitions = 0;
  /// The largest object code accepted (bytes): past it the model is
  /// refused before anything is written.
  uint64_t maxCodeBytes = uint64_t(2) << 30;
  /// Where the compile's time goes (tgc --time-phases): the lowering's
  /// passes, translation, LLVM's optimisation, code generation and the link
  /// as timers nested in this scope; null: not timed.
  TimingScope *timing = nullptr;
};
/// With `opts.arena`, each planned entry's arena size (the plan's transient
/// bytes plus the scratch the backend placed after them, tg-plan-scratch) is
/// recorded on `module` as `tg.arena_bytes` (by entry name), where
/// buildManifest reads it.
FailureOr<std::string> buildCpuSharedObject(ModuleOp module, std::string &error,
                                            const CpuObjectOptions &opts = {});

} // namespace mlir::tg

#endif // TGC_CODEGEN_ARTIFACT_CPUOBJECT_H
