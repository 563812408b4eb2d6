//===- PrecisionReport.h - what tg-assign-precision chose -------*- C++ -*-===//
//
// `tgc --report=precision`: every parameter, compute copy, activation class,
// gradient and optimizer-state tensor of a training module with its element
// type and the rule that chose it, read back from the IR (tg.precision,
// tg.acc, the roles of the entry points).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_PRECISIONREPORT_H
#define TGC_PASSES_PRECISIONREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tg {

/// Prints the precision table of `module` (built by the training pipeline
/// from forward function `forward`).
void printPrecisionTable(ModuleOp module, StringRef forward,
                         llvm::raw_ostream &os);
/// The same as one JSON object.
void printPrecisionJson(ModuleOp module, StringRef forward,
                        llvm::raw_ostream &os);

} // namespace mlir::tg

#endif // TGC_PASSES_PRECISIONREPORT_H
