//===- ParallelCodegen.h - LLVM code generation on all cores ----*- C++ -*-===//
//
// Splits the translated LLVM module of an artifact into partitions that are
// optimised and compiled to object files on a pool of threads, one object
// per partition. The partitions depend on the module only (never on the
// thread count), so the objects, and the shared object linked from them,
// are the same bytes whatever the number of threads.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_ARTIFACT_PARALLELCODEGEN_H
#define TGC_CODEGEN_ARTIFACT_PARALLELCODEGEN_H

#include "mlir/Support/LLVM.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CodeGen.h"

#include <functional>
#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir::tg {

struct ParallelCodegenOptions {
  /// LLVM optimisation level (0-3).
  unsigned optLevel = 3;
  /// Threads that optimise and compile partitions; 0: the machine's cores.
  unsigned jobs = 0;
  /// Partitions; 0: derived from the module's size.
  unsigned partitions = 0;
  /// A new target machine for the host at a code generation level, called
  /// on the worker threads (a TargetMachine is not shared between threads).
  std::function<std::unique_ptr<llvm::TargetMachine>(llvm::CodeGenOptLevel)>
      makeMachine;
  /// The scope the phase timers nest in; null: not timed.
  TimingScope *timing = nullptr;
};

/// The objects of `module`, one per partition, in partition order.
/// `module` is consumed (split, or compiled whole when one partition).
/// `error` gets one line on failure, also when a worker thread fails.
FailureOr<SmallVector<SmallVector<char, 0>>>
emitObjectsInParallel(std::unique_ptr<llvm::Module> module,
                      const ParallelCodegenOptions &opts, std::string &error);

} // namespace mlir::tg

#endif // TGC_CODEGEN_ARTIFACT_PARALLELCODEGEN_H
