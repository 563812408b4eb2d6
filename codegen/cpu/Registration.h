//===- Registration.h - register the CPU backend's passes -------*- C++ -*-===//
//
// A header free of generated code, so that codegen/registry can register
// the CPU passes and pipeline without depending on codegen/cpu's tablegen.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_CPU_REGISTRATION_H
#define TGC_CODEGEN_CPU_REGISTRATION_H

namespace mlir {
class DialectRegistry;
namespace tg::cpu {

/// Registers tg-convert-to-linalg and the tg-cpu-pipeline pipeline.
void registerCpuPasses();

/// Registers the dialects and external models (bufferization, LLVM
/// translation) that the CPU pipeline needs in a context.
void registerCpuDialects(DialectRegistry &registry);

} // namespace tg::cpu
} // namespace mlir

#endif // TGC_CODEGEN_CPU_REGISTRATION_H
