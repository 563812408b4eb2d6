//===- FuzzFrontend.cpp - libFuzzer entry for the .tg frontend -*- C++ -*-===//
//
// Feeds arbitrary bytes through lexer, parser, checker and Builder. Any input
// must end in a module or in diagnostics: never a crash, assert, sanitizer
// report or hang. Graph and step limits are lowered so each input is fast.
//
//===----------------------------------------------------------------------===//

#include "frontend/Sema.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *ctx = [] {
    auto *c = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    return c;
  }();
  tgc::SourceFile file("fuzz.tg",
                       std::string(reinterpret_cast<const char *>(data), size));
  tgc::DiagEngine diag(file);
  tgc::FrontendOptions opts;
  opts.maxNodes = 20000;
  opts.maxSteps = 100000;
  opts.context = ctx;
  std::unique_ptr<tgc::Builder> b = tgc::parseAndElaborate(file, diag, opts);
  std::string sink;
  llvm::raw_string_ostream os(sink);
  diag.print(os);
  if (b) {
    auto module = b->build();
    // Every op was verified as it was created; a module that fails to verify
    // now means the Builder assembled the function wrongly.
    if (!module)
      __builtin_trap();
    module->print(os);
  }
  return 0;
}
