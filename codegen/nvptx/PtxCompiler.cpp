//===- PtxCompiler.cpp - MLIR kernel → LLVM IR → NVPTX → PTX ----*- C++ -*-===//
//
// Builds the kernel module (or parses MLIR text) and verifies it, lowers its
// structured control flow (scf → cf → llvm), translates llvm+nvvm to LLVM
// IR, runs the O3 pipeline with the NVPTX target machine attached (so
// address-space inference and NVPTX's own IR passes run), and prints PTX.
// PTX ISA 8.0 is the floor: sm_90a's wgmma/TMA/setmaxnreg need it and ptxas
// 12+ reads it.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/Toolchain.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include "mlir/IR/Verifier.h"

#include <memory>
#include <mutex>
#include <set>

namespace tg::nvptx {

namespace {

/// A context with the dialects and translations the kernels use, collecting
/// diagnostics for error messages.
struct KernelContext {
  KernelContext() : ctx(makeRegistry()), diagOS(diags) {
    ctx.loadAllAvailableDialects();
    handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
        &ctx, [this](mlir::Diagnostic &d) {
          diagOS << d.getLocation() << ": " << d << "\n";
          return mlir::success();
        });
  }
  static mlir::DialectRegistry makeRegistry() {
    mlir::DialectRegistry registry;
    registry.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect,
                    mlir::scf::SCFDialect, mlir::cf::ControlFlowDialect,
                    mlir::arith::ArithDialect>();
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    mlir::registerNVVMDialectTranslation(registry);
    return registry;
  }
  mlir::MLIRContext ctx;
  std::string diags;
  llvm::raw_string_ostream diagOS;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

/// Builds the module holding `kernels` (all for one target; duplicate
/// symbols are built once).
mlir::OwningOpRef<mlir::ModuleOp>
buildGemmModule(mlir::MLIRContext &ctx,
                const std::vector<GemmKernelSpec> &kernels) {
  mlir::Location loc = mlir::FileLineColLoc::get(&ctx, "tg_gemm", 0, 0);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  mlir::OpBuilder b = mlir::OpBuilder::atBlockEnd(module->getBody());
  if (!kernels.empty())
    (*module)->setAttr("tg.target",
                       b.getStringAttr(toString(kernels.front().problem.target)));
  // All kernels share the dynamic shared-memory symbol; each sizes it at launch.
  mlir::LLVM::GlobalOp::create(
      b, loc, mlir::LLVM::LLVMArrayType::get(b.getI8Type(), 0),
      /*isConstant=*/false, mlir::LLVM::Linkage::External, "tg_smem",
      mlir::Attribute(), /*alignment=*/1024, /*addrSpace=*/3);
  std::set<std::string> seen;
  for (const GemmKernelSpec &k : kernels) {
    if (!seen.insert(kernelName(k.problem, k.config)).second)
      continue; // one definition per symbol
    if (k.problem.target == Target::SM80)
      detail::buildSm80Gemm(*module, k.problem, k.config);
    else
      detail::buildSm90Gemm(*module, k.problem, k.config);
  }
  return module;
}

bool compileModuleToPTX(mlir::ModuleOp module, Target t, std::string &ptx,
                        std::string &error, const std::string &diags);
bool compileModuleToPTX(KernelContext &kc, mlir::ModuleOp module, Target t,
                        std::string &ptx, std::string &error) {
  return compileModuleToPTX(module, t, ptx, error, kc.diags);
}

} // namespace

std::string generateGemmModuleMLIR(const std::vector<GemmKernelSpec> &kernels) {
  KernelContext kc;
  mlir::OwningOpRef<mlir::ModuleOp> module = buildGemmModule(kc.ctx, kernels);
  std::string text;
  llvm::raw_string_ostream os(text);
  // Name locations print as SSA names: %A, %kt, ... instead of %arg0, %arg9.
  module->print(os, mlir::OpPrintingFlags().printNameLocAsPrefix());
  return text;
}

std::string generateGemmMLIR(const GemmProblem &p, const TileConfig &c) {
  return generateGemmModuleMLIR({{p, c}});
}

bool buildGemmFatbin(const std::vector<GemmProblem> &problems,
                     std::string &fatbin, std::vector<GemmKernelSpec> &kernels,
                     std::string &error) {
  kernels.clear();
  std::vector<std::pair<std::string, std::string>> archPtx;
  for (Target t : {Target::SM80, Target::SM90a}) {
    std::vector<GemmKernelSpec> group;
    for (const GemmProblem &p : problems) {
      if (p.target != t)
        continue;
      if (auto why = checkProblem(p)) {
        error = *why;
        return false;
      }
      group.push_back({p, chooseTileConfig(p)});
    }
    if (group.empty())
      continue;
    std::string ptx;
    KernelContext kc;
    if (!compileModuleToPTX(kc, *buildGemmModule(kc.ctx, group), t, ptx, error))
      return false;
    archPtx.push_back({toString(t), ptx});
    kernels.insert(kernels.end(), group.begin(), group.end());
  }
  if (archPtx.empty()) {
    error = "no GEMM problems";
    return false;
  }
  return buildFatbinFromPtx(archPtx, fatbin, error);
}

static void initNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

bool compileMLIRToPTX(const std::string &text, Target t, std::string &ptx,
                      std::string &error) {
  KernelContext kc;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &kc.ctx, "gemm.mlir");
  if (!module) {
    error = "kernel IR does not parse/verify: " + kc.diags;
    return false;
  }
  return compileModuleToPTX(kc, *module, t, ptx, error);
}

namespace {

bool compileModuleToPTX(mlir::ModuleOp module, Target t, std::string &ptx,
                        std::string &error, const std::string &diags) {
  // The builders check each op's operands and attributes as it is made; the
  // verifier checks what they cannot (dominance, region terminators, ...).
  if (mlir::failed(mlir::verify(module))) {
    error = "generated kernel IR does not verify: " + diags;
    return false;
  }
  mlir::PassManager pm(module.getContext());
  pm.addPass(mlir::createSCFToControlFlowPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  // PTX-builder NVVM ops (wgmma, mbarrier waits, TMA) become inline PTX.
  pm.addPass(mlir::createConvertNVVMToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  if (mlir::failed(pm.run(module))) {
    error = "lowering the kernel to the llvm dialect failed: " + diags;
    return false;
  }

  initNVPTX();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string lookupErr;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupErr);
  if (!target) {
    error = "NVPTX target unavailable: " + lookupErr;
    return false;
  }
  std::string cpu = t == Target::SM80 ? "sm_80" : "sm_90a";
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, "+ptx80", llvm::TargetOptions(), std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm) {
    error = "cannot create the NVPTX target machine for " + cpu;
    return false;
  }

  llvm::LLVMContext llctx;
  std::unique_ptr<llvm::Module> llmod =
      mlir::translateModuleToLLVMIR(module, llctx, "tg_gemm");
  if (!llmod) {
    error = "translation to LLVM IR failed: " + diags;
    return false;
  }
  llmod->setTargetTriple(triple);
  llmod->setDataLayout(tm->createDataLayout());

  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm =
        pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(*llmod, mam);
  }

  llvm::SmallString<0> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, os, nullptr,
                              llvm::CodeGenFileType::AssemblyFile)) {
    error = "the NVPTX target cannot emit assembly";
    return false;
  }
  codegen.run(*llmod);
  ptx = std::string(out.str());
  return true;
}

} // namespace

bool generateGemmPTX(const GemmProblem &p, const TileConfig &c,
                     std::string &ptx, std::string &error) {
  if (auto why = checkProblem(p)) {
    error = *why;
    return false;
  }
  KernelContext kc;
  return compileModuleToPTX(kc, *buildGemmModule(kc.ctx, {{p, c}}), p.target,
                            ptx, error);
}

bool compileKernelsToPTX(mlir::ModuleOp kernels, Target t, std::string &ptx,
                         std::string &error) {
  // The kernels live in the model's context (the schedule builder's): give
  // it the translations to LLVM IR and collect its diagnostics meanwhile.
  mlir::MLIRContext *ctx = kernels.getContext();
  ctx->appendDialectRegistry(KernelContext::makeRegistry());
  std::string diags;
  llvm::raw_string_ostream os(diags);
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  return compileModuleToPTX(kernels, t, ptx, error, diags);
}

} // namespace tg::nvptx
