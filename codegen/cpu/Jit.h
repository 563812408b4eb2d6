//===- Jit.h - run tg functions on the CPU through the JIT ------*- C++ -*-===//
//
// Compiles a tg module with buildCpuPipeline and runs its functions on host
// buffers through mlir::ExecutionEngine: the in-process path that the tests
// (CPU against the reference evaluator) and the C++ JIT API use. A function
// is called through its C interface, with every argument and every result
// (an out-parameter after the pipeline) passed as a memref descriptor.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_CPU_JIT_H
#define TGC_CODEGEN_CPU_JIT_H

#include "codegen/cpu/Passes.h"
#include "tgc/DType.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace mlir {
class ExecutionEngine;
namespace tg::cpu {

/// Element types a host buffer can hold: TGC's DType (include/tgc/DType.h;
/// tgc::dtypeSize gives bytes per element, i1 taking one).
using HostType = tgc::DType;

/// The HostType of an MLIR element type, or failure.
FailureOr<HostType> hostTypeOf(Type elementType);

/// A dense row-major tensor in host memory.
struct HostTensor {
  SmallVector<int64_t, 4> shape;
  HostType type = HostType::F32;
  std::vector<uint8_t> bytes;

  int64_t numElements() const;
  /// Zero-filled, with storage for every element.
  static HostTensor zeros(ArrayRef<int64_t> shape, HostType type);
  template <typename T> T *data() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *data() const {
    return reinterpret_cast<const T *>(bytes.data());
  }
  /// Element `i` widened to double (bf16/f16 decoded, integers exact).
  double get(int64_t i) const;
  /// Sets element `i` from a double (rounded to nearest even for bf16/f16).
  void set(int64_t i, double v);
};

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
  llvm::StringMap<Signature> signatures;
};

} // namespace tg::cpu
} // namespace mlir

#endif // TGC_CODEGEN_CPU_JIT_H
