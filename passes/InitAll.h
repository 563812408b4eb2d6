//===- InitAll.h - register everything TGC uses -----------------*- C++ -*-===//
//
// One registration function for dialects and one for passes, used by tg-opt,
// tgc and the tests alike, so all three see the same world.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_INITALL_H
#define TGC_PASSES_INITALL_H

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

#endif // TGC_PASSES_INITALL_H
