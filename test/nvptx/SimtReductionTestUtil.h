//===- SimtReductionTestUtil.h - helpers of the reduction kernel tests -*- C++ -*-===//
//
// A context with the tg, llvm, nvvm and scf dialects, an example model's
// planned step, an empty kernel module, the PTX of a kernel module, and the
// tg IR of test groups.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TEST_NVPTX_SIMTREDUCTIONTESTUTIL_H
#define TGC_TEST_NVPTX_SIMTREDUCTIONTESTUTIL_H

#include "test/reference/EvalTestUtil.h"

#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/KernelGen.h"
#include "codegen/nvptx/SimtReduction.h"
#include "frontend/Sema.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

#include <string>

namespace simtred {

inline void addKernelDialects(mlir::DialectRegistry &r) {
  r.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect,
           mlir::scf::SCFDialect>();
}

/// A tg harness that can also hold kernel modules.
struct Harness : tgtest::Harness {
  Harness() : tgtest::Harness(addKernelDialects) {}
};

/// An empty module for generated kernels.
inline mlir::OwningOpRef<mlir::ModuleOp> newKernelModule(Harness &h) {
  return mlir::ModuleOp::create(mlir::UnknownLoc::get(&h.ctx));
}

/// The PTX of `kernels` for `t` (fails the test if it does not compile).
inline std::string compileKernels(mlir::ModuleOp kernels, tg::nvptx::Target t) {
  std::string text, ptx, err;
  llvm::raw_string_ostream os(text);
  kernels.print(os);
  bool ok = tg::nvptx::compileMLIRToPTX(text, t, ptx, err);
  INFO(err);
  REQUIRE(ok);
  return ptx;
}

/// The first op of @f.
inline mlir::Operation *firstOp(Harness &h) {
  auto fn = h.module->lookupSymbol<mlir::func::FuncOp>("f");
  REQUIRE(fn);
  return &fn.getBody().front().front();
}

/// Lowers the first op of @f.
inline std::vector<tg::nvptx::KernelLaunch>
lowerSingle(Harness &h, tg::nvptx::Target t, mlir::ModuleOp kernels) {
  auto r = tg::nvptx::lowerOpToKernels(firstOp(h), t, kernels);
  INFO(h.diagnostics);
  REQUIRE(mlir::succeeded(r));
  return *r;
}

/// Compiles examples/<name>.tg with `defines` into h.module and runs the
/// training pipeline (fused, decomposed, planned) with `precision`.
inline void buildExample(Harness &h, const std::string &name,
                  std::vector<std::pair<std::string, std::string>> defines,
                  const std::string &precision) {
  const char *src = std::getenv("TGC_SOURCE_DIR");
  REQUIRE(src);
  std::string path = std::string(src) + "/examples/" + name + ".tg";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  REQUIRE(buffer);
  tgc::SourceFile file(path, (*buffer)->getBuffer().str());
  tgc::DiagEngine diag(file);
  tgc::FrontendOptions opts;
  opts.defines = std::move(defines);
  opts.context = &h.ctx;
  auto builder = tgc::parseAndElaborate(file, diag, opts);
  std::string errors;
  llvm::raw_string_ostream es(errors);
  diag.print(es);
  INFO(errors);
  REQUIRE(builder);
  h.module = builder->build();
  REQUIRE(h.module);
  mlir::PassManager pm(&h.ctx);
  mlir::tg::TrainingPipelineOptions po;
  po.fuse = true;
  po.decompose = true;
  po.planMemory = true;
  po.precision = precision;
  mlir::tg::buildTrainingPipeline(pm, po);
  INFO(h.diagnostics);
  REQUIRE(mlir::succeeded(pm.run(*h.module)));
}

/// Cross-entropy forward and backward over rows of `classes` logits
/// (`elem`: f32 or bf16), the row_reduction group tg-fuse forms after
/// tg-decompose: per-row loss and count, the logits gradient.
inline std::string crossEntropyGroup(int64_t rows, int64_t classes,
                                     const std::string &elem) {
  std::string r = std::to_string(rows), c = std::to_string(classes);
  std::string x = "tensor<" + r + "x" + c + "x" + elem + ">";
  std::string xf = "tensor<" + r + "x" + c + "xf32>";
  std::string row1 = "tensor<" + r + "x1xf32>", row = "tensor<" + r + "xf32>";
  std::string lab = "tensor<" + r + "xi64>";
  std::string cast = elem == "f32"
                         ? "    %xf = tg.add %x, %zero : " + x + ", tensor<f32> -> " + xf + "\n"
                         : "    %xf = tg.cast %x : " + x + " to " + xf + "\n";
  return "func.func @f(%arg0: " + x + ", %arg1: " + lab + ") -> (" + row +
         ", " + row + ", " + x + ") {\n"
         "  %0:3 = tg.fused <row_reduction> ins(%arg0, %arg1 : " + x + ", " + lab + ") {\n"
         "  ^bb0(%x: " + x + ", %l: " + lab + "):\n"
         "    %zero = tg.constant dense<0.0> : tensor<f32>\n"
         "    %one = tg.constant dense<1.0> : tensor<f32>\n"
         "    %ign = tg.constant dense<-100> : tensor<i64>\n" + cast +
         "    %m = tg.max %xf axes = [1] keepdims : " + xf + " -> " + row1 + "\n"
         "    %s = tg.sub %xf, %m : " + xf + ", " + row1 + " -> " + xf + "\n"
         "    %e = tg.exp %s : " + xf + "\n"
         "    %z = tg.sum %e axes = [1] keepdims : " + xf + " -> " + row1 + "\n"
         "    %lz = tg.log %z : " + row1 + "\n"
         "    %lp = tg.sub %s, %lz : " + xf + ", " + row1 + " -> " + xf + "\n"
         "    %oh = tg.one_hot %l : " + lab + " -> " + xf + "\n"
         "    %hit = tg.cmp ne %oh, %zero : " + xf + ", tensor<f32> -> tensor<" + r + "x" + c + "xi1>\n"
         "    %pick = tg.select %hit, %lp, %zero : tensor<" + r + "x" + c + "xi1>, " + xf + ", tensor<f32> -> " + xf + "\n"
         "    %nll = tg.sum %pick axes = [1] : " + xf + " -> " + row + "\n"
         "    %valid = tg.cmp ne %l, %ign : " + lab + ", tensor<i64> -> tensor<" + r + "xi1>\n"
         "    %neg = tg.neg %nll : " + row + "\n"
         "    %loss = tg.select %valid, %neg, %zero : tensor<" + r + "xi1>, " + row + ", tensor<f32> -> " + row + "\n"
         "    %cnt = tg.select %valid, %one, %zero : tensor<" + r + "xi1>, tensor<f32>, tensor<f32> -> " + row + "\n"
         "    %p = tg.div %e, %z : " + xf + ", " + row1 + " -> " + xf + "\n"
         "    %g = tg.sub %p, %oh : " + xf + ", " + xf + " -> " + xf + "\n" +
         (elem == "f32"
              ? "    %gc = tg.add %g, %zero : " + xf + ", tensor<f32> -> " + x + "\n"
              : "    %gc = tg.cast %g : " + xf + " to " + x + "\n") +
         "    tg.yield %loss, %cnt, %gc : " + row + ", " + row + ", " + x + "\n"
         "  } -> " + row + ", " + row + ", " + x + "\n"
         "  return %0#0, %0#1, %0#2 : " + row + ", " + row + ", " + x + "\n"
         "}\n";
}

} // namespace simtred

#endif // TGC_TEST_NVPTX_SIMTREDUCTIONTESTUTIL_H
