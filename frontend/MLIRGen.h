//===- MLIRGen.h - lowering of forward graphs to the tg dialect -*- C++ -*-===//
//
// Turns a shape-checked tgc::Graph into a verified `tg` module with the
// model-function conventions of docs/dialect-plan.md.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_MLIRGEN_H
#define TGC_FRONTEND_MLIRGEN_H

#include "tgc/Builder.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace tgc {

/// Emits `graph` as a module holding `func.func @forward`. Returns null when
/// the module fails verification; the verifier's messages go to `errors`.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &ctx,
                                          const Graph &graph,
                                          std::vector<std::string> &errors);

} // namespace tgc

#endif // TGC_FRONTEND_MLIRGEN_H
