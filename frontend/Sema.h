//===- Sema.h - checking and elaboration of .tg programs -------*- C++ -*-===//
//
// Evaluates a parsed program into a forward graph: hyper-parameters (with
// `-D` overrides) are folded, `for` loops are unrolled, `def` calls are
// inlined with their parameters named by the call site, and every op is
// shape-checked through tgc::Builder. Mistakes become diagnostics at the
// offending expression; evaluation continues past them where it can.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_SEMA_H
#define TGC_FRONTEND_SEMA_H

#include "frontend/AST.h"
#include "tgc/Builder.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

/// Knobs of the frontend that callers (tgc, tests, the fuzzer) set.
struct FrontendOptions {
  /// `-D name=value` overrides, in command-line order.
  std::vector<std::pair<std::string, std::string>> defines;
  /// Upper bound on ops in the graph.
  size_t maxNodes = size_t(1) << 20;
  /// Upper bound on statements executed while elaborating (unrolled loops).
  size_t maxSteps = size_t(1) << 22;
  /// The context to build the module in; null: the Builder's own.
  mlir::MLIRContext *context = nullptr;
};

/// Elaborates `prog` into a Builder. Returns null when errors were reported
/// to `diag` (the graph would be incomplete).
std::unique_ptr<Builder> elaborate(const Program &prog, const SourceFile &file,
                                   DiagEngine &diag, const FrontendOptions &opts);

/// Lex, parse and elaborate a source file in one call.
std::unique_ptr<Builder> parseAndElaborate(const SourceFile &file,
                                           DiagEngine &diag,
                                           const FrontendOptions &opts);

} // namespace tgc

#endif // TGC_FRONTEND_SEMA_H
