//===- InitAll.cpp - register everything TGC uses ---------------*- C++ -*-===//
//
// See InitAll.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/registry/InitAll.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#ifdef TGC_HAVE_CPU
#include "codegen/cpu/Registration.h"
#endif
#ifdef TGC_HAVE_NVPTX
#include "codegen/nvptx/Registration.h"
#endif

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::tg::registerAllDialects(DialectRegistry &registry) {
  registry.insert<TGDialect, func::FuncDialect, arith::ArithDialect,
                  scf::SCFDialect, tensor::TensorDialect>();
#ifdef TGC_HAVE_CPU
  cpu::registerCpuDialects(registry);
#endif
}

void mlir::tg::registerAllPasses() {
  registerTGPasses();
  registerPipelines();
#ifdef TGC_HAVE_CPU
  cpu::registerCpuPasses();
#endif
#ifdef TGC_HAVE_NVPTX
  ::tg::nvptx::registerNvptxPasses();
#endif
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
