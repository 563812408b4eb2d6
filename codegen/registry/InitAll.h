//===- InitAll.h - register everything TGC uses -----------------*- C++ -*-===//
//
// One registration function for dialects and one for passes, used by tg-opt,
// tgc, tg-eval, the JIT API and the tests alike, so all of them see the same
// world. It lives above every backend (passes/ knows none of them): the
// tools depend on it, it depends on passes/ and on each codegen/ target.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_REGISTRY_INITALL_H
#define TGC_CODEGEN_REGISTRY_INITALL_H

namespace mlir {
class DialectRegistry;
namespace tg {

/// Registers the tg dialect and the upstream dialects TGC's IR uses.
void registerAllDialects(DialectRegistry &registry);

/// Registers TGC's passes and pipelines, plus the upstream passes that are
/// useful on tg IR (canonicalize, cse, ...).
void registerAllPasses();

} // namespace tg
} // namespace mlir

#endif // TGC_CODEGEN_REGISTRY_INITALL_H
