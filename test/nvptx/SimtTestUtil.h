//===- SimtTestUtil.h - shared pieces of the SIMT generator tests -*- C++ -*-===//
//
// The context the SIMT generator tests build tg ops and kernels in, and the
// assembly check every kernel module must pass: sm_80/sm_90a PTX without
// calls, assembled by ptxas with no spills, no local memory and no
// performance warnings (SKIP with a warning without ptxas).
//
//===----------------------------------------------------------------------===//
#ifndef TG_TEST_NVPTX_SIMTTESTUTIL_H
#define TG_TEST_NVPTX_SIMTTESTUTIL_H

#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/Toolchain.h"
#include "codegen/registry/InitAll.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

#include <string>

namespace tgtest {

/// A context with TGC's dialects and the kernels' dialects, collecting
/// diagnostics in `diags`.
struct SimtContext {
  mlir::MLIRContext ctx;
  std::string diags;
  SimtContext() {
    mlir::DialectRegistry registry;
    mlir::tg::registerAllDialects(registry);
    registry.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect,
                    mlir::scf::SCFDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    ctx.getDiagEngine().registerHandler(
        [this](mlir::Diagnostic &d) { diags += d.str() + "\n"; });
  }
};

/// Compiles `kernels` for `t` and assembles it with ptxas -v.
inline void checkAssembles(mlir::ModuleOp kernels, tg::nvptx::Target t) {
  std::string text, ptx, err;
  llvm::raw_string_ostream os(text);
  kernels.print(os);
  bool ok = tg::nvptx::compileMLIRToPTX(text, t, ptx, err);
  INFO(err);
  REQUIRE(ok);
  CHECK(ptx.find("call.uni") == std::string::npos);
  if (!tg::nvptx::haveCudaTool("ptxas")) {
    WARN("SKIPPED: no ptxas at " << tg::nvptx::cudaHome()
                                  << "/bin; PTX not assembled");
    return;
  }
  tg::nvptx::PtxasReport r = tg::nvptx::assemblePtx(ptx, toString(t));
  INFO(r.log);
  REQUIRE(r.ok);
  CHECK(r.spillStores == 0);
  CHECK(r.spillLoads == 0);
  CHECK(r.stackFrame == 0);
  CHECK(r.perfWarnings.empty());
}

} // namespace tgtest

#endif // TG_TEST_NVPTX_SIMTTESTUTIL_H
