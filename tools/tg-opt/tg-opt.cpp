//===- tg-opt.cpp - mlir-opt for the tg dialect ---------------*- C++ -*-===//
//
// Parses, verifies, transforms and prints tg IR. Every dialect and pass that
// TGC uses is registered by the one function the tests and tgc also call.
//
//===----------------------------------------------------------------------===//

#include "codegen/registry/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::tg::registerAllDialects(registry);
  mlir::tg::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "TGC optimizer driver\n", registry));
}
