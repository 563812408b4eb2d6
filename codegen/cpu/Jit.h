//===- Jit.h - run tg functions on the CPU through the JIT ------*- C++ -*-===//
//
// Compiles a tg module with buildCpuPipeline and runs its functions on host
// buffers through mlir::ExecutionEngine: the in-process path that the tests
// (CPU against the reference evaluator) and the C++ JIT API use. A function
// is called through its C interface, with every argument and every result
// (an out-parameter after the pipeline) passed as a memref descriptor.
// Collectives (tg.all_reduce, tg.reduce_scatter, tg.all_gather, tg.shard)
// call the support functions an artifact's tgx_support.c provides; the JIT
// provides them for one process in which every rank holds the same values,
// the reference evaluator's convention (docs/data-parallel.md).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_CPU_JIT_H
#define TGC_CODEGEN_CPU_JIT_H

#include "codegen/cpu/Passes.h"
#include "tgc/HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace mlir {
class ExecutionEngine;
namespace tg::cpu {

/// Host buffers are the public API's (include/tgc/HostTensor.h).
using HostType = tgc::HostType;
using HostTensor = tgc::HostTensor;

/// The HostType of an MLIR element type, or failure.
FailureOr<HostType> hostTypeOf(Type elementType);

/// A module compiled for the host CPU.
class JitModule {
public:
  /// Lowers a copy of `module` (tg on tensors) with buildCpuPipeline and
  /// JIT-compiles it at optimisation level `optLevel`. Errors are reported
  /// through the module's context diagnostics and give failure.
  static FailureOr<std::unique_ptr<JitModule>>
  compile(ModuleOp module, const CpuPipelineOptions &options = {},
          unsigned optLevel = 2);

  ~JitModule();

  /// Calls `function` on `args` (checked against its signature) and returns
  /// its results. Arguments are copied, so the callee may update its
  /// buffers in place without touching the caller's. A planned function
  /// (compiled with options.arena) gets a fresh arena, filled with `poison`
  /// bytes so that a value read before it is written shows.
  FailureOr<std::vector<HostTensor>> run(StringRef function,
                                         ArrayRef<HostTensor> args,
                                         std::string *error = nullptr,
                                         uint8_t poison = 0xff);
  /// Bytes of `function`'s arena (0: it has none).
  int64_t arenaBytes(StringRef function) const;

private:
  struct Signature {
    std::vector<HostTensor> args, results; // shapes and types, no storage
    int64_t arenaBytes = 0; ///< planned functions (options.arena) take one
  };
  JitModule() = default;
  std::unique_ptr<ExecutionEngine> engine;
  /// The rank count of the module's collectives (1: none). The JIT runs
  /// one process holding every rank's values, as the reference evaluator.
  int64_t ranks = 1;
  llvm::StringMap<Signature> signatures;
};

} // namespace tg::cpu
} // namespace mlir

#endif // TGC_CODEGEN_CPU_JIT_H
