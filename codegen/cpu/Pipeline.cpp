//===- Pipeline.cpp - the CPU lowering pipeline -----------------*- C++ -*-===//
//
// buildCpuPipeline and the registration of the CPU passes. The pass order
// follows upstream's own lowering of linalg on tensors to LLVM
// (test-lower-to-llvm, the sparse-compiler pipeline): bufferize once, with
// function boundaries; turn returned buffers into caller-provided out
// parameters so that no entry point returns memory the caller must free;
// free every intermediate; then lower loops, math and memrefs.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

void mlir::tg::cpu::buildCpuPipeline(OpPassManager &pm,
                                     const CpuPipelineOptions &options) {
  // Planned group results get their arena slots first; the conversion then
  // lowers each tg.fused group to as few loop nests as linalg fusion allows
  // (FusedToLoops.cpp), whose outputs empty-tensor elimination puts there.
  if (options.arena)
    pm.addPass(createBindArenaPass());
  ConvertTGToLinalgPassOptions convert;
  convert.fuseGroups = options.fuseGroups;
  pm.addPass(createConvertTGToLinalgPass(convert));
  // Before kernels are outlined the step is one function of tens of
  // thousands of ops in single-block regions: the canonicalizer's region
  // simplification (dead-value and block passes over the whole function,
  // repeated each iteration) finds nothing there that the rewrites and
  // their dead-op erasure do not.
  GreedyRewriteConfig wholeStep;
  wholeStep.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  pm.addPass(createCanonicalizerPass(wholeStep));
  // After canonicalization has uniqued the constants: a splat read by every
  // op of the step made the bufferization passes below quadratic in its
  // length (InlineSplatOperands.cpp).
  pm.addPass(createInlineSplatOperandsPass());
  // Producers of planned values write into their arena slots directly.
  if (options.arena)
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
  // Before CSE: merged tensor.empty ops would give one alias set shared by
  // every op's destination, which makes the bufferization analysis
  // quadratic (GPT-2: 100 s of 132 s of the pipeline). alloc_tensor has an
  // allocation effect and is never merged.
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  // Not with an arena: two slots at one offset (used at different times)
  // would merge into one tensor written twice, which bufferization then
  // resolves with copies into fresh allocations.
  if (!options.arena)
    pm.addPass(createCSEPass());
  MarkEntryPointsPassOptions mark;
  mark.functions.assign(options.entryPoints.begin(), options.entryPoints.end());
  pm.addPass(createMarkEntryPointsPass(mark));

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // The micro-batch loop of train_step yields freshly computed sums; the
  // deallocation pipeline frees the buffers of earlier iterations.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.unknownTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass(wholeStep));
  if (options.arena)
    pm.addPass(createPlanScratchPass());
  if (options.arena && options.stopAfterScratch)
    return;
  if (options.deallocate)
    pm.addPass(createDeallocateBuffersPass());
  if (options.blas)
    pm.addPass(createConvertMatmulToBlasPass());
  if (options.outline)
    pm.addPass(createOutlineKernelsPass());
  // After outlining, so kernels are still told apart by their linalg form.
  if (options.vectorGemm)
    pm.addPass(createVectorizeContractionsPass());
  // What the GEMM kernels left: elementwise loop nests and the maps of row
  // reductions, W lanes at a time (the widths are chosen, and testable,
  // apart from the lowering that honours them).
  if (options.vectorElementwise) {
    SelectVectorWidthsPassOptions widths;
    widths.lanes = options.vectorLanes > 0 ? options.vectorLanes
                                           : hostVectorLanes();
    pm.addPass(createSelectVectorWidthsPass(widths));
    pm.addPass(createVectorizeElementwisePass());
  }
  // tanh/exp/log/erf as inline polynomials, which the vector loops above
  // (and LLVM's loop vectoriser) run lanes at a time; libm's tanhf and
  // expm1f were 27% of the 2-layer GPT's step (docs/cpu-backend.md).
  if (options.approximateMath)
    pm.addPass(createApproximateMathPass());

  // With `parallel`, the parallel iterators of every linalg op become
  // scf.parallel loops (the order of the loops is the same as
  // convert-linalg-to-loops'), tg-parallelize-loops keeps those worth a
  // fork and join (one dimension each) and makes the others sequential, and
  // OpenMP runs the rest on the threads the runtime sets (tgx_set_threads).
  if (options.parallel)
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  else
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createCanonicalizerPass(wholeStep));
  if (options.parallel) {
    pm.addPass(createParallelizeLoopsPass());
    pm.addPass(createConvertSCFToOpenMPPass());
    // Inlines the memref.alloca_scope that convert-scf-to-openmp wraps
    // each body in (its bodies hold no alloca, tg-parallelize-loops sees
    // to it): scf-to-cf would give it several blocks, which it may not have.
    pm.addPass(createCanonicalizerPass(wholeStep));
  }
  // Last, so the passes above see kernel arguments as memrefs: calls pass
  // one pointer per buffer of static layout, not a descriptor of 3 + 2 x
  // rank values (GPT-2 small's glue was half of its code).
  PassBarePointersPassOptions bare;
  bare.entryPoints = options.barePointerEntryPoints;
  pm.addPass(createPassBarePointersPass(bare));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  // f32 -> bf16 by integer arithmetic (round to nearest even on the bits):
  // LLVM's x86 lowering of fptrunc to bfloat flushes f32 subnormals to
  // zero, where GPUs and the reference evaluator round them
  // (test/cpu/EdgeCaseTest.cpp "[rounding]").
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = options.genericAllocations;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  // The OpenMP regions' block arguments and operands (index, memrefs).
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

int64_t mlir::tg::cpu::hostVectorLanes() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (features.lookup("avx512f"))
    return 16;
  if (features.lookup("avx"))
    return 8;
  return 4;
}

void mlir::tg::cpu::registerCpuDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                  linalg::LinalgDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, omp::OpenMPDialect, scf::SCFDialect,
                  tensor::TensorDialect, vector::VectorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  // Row tiling of row-reduction groups (FusedToLoops.cpp).
  linalg::registerTilingInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
}

namespace {
/// Command-line form of CpuPipelineOptions for tg-opt.
struct CpuPipelineCLOptions
    : public PassPipelineOptions<CpuPipelineCLOptions> {
  ListOption<std::string> entryPoints{
      *this, "entry-points",
      llvm::cl::desc("Functions with a C interface (default: all public)")};
  Option<bool> deallocate{*this, "deallocate",
                          llvm::cl::desc("Free intermediate buffers"),
                          llvm::cl::init(true)};
  Option<bool> blas{*this, "blas",
                    llvm::cl::desc("Call cblas_sgemm for f32 matmuls"),
                    llvm::cl::init(false)};
  Option<bool> arena{*this, "arena",
                     llvm::cl::desc("Planned functions use one arena "
                                    "argument (tg-bind-arena)"),
                     llvm::cl::init(false)};
  Option<bool> outline{*this, "outline",
                       llvm::cl::desc("Each linalg op becomes a call of a "
                                      "deduplicated kernel function"),
                       llvm::cl::init(true)};
  Option<bool> fuseGroups{*this, "fuse-groups",
                          llvm::cl::desc("Each tg.fused group as few loop "
                                         "nests as linalg fusion allows"),
                          llvm::cl::init(true)};
  Option<bool> stopAfterScratch{
      *this, "stop-after-scratch",
      llvm::cl::desc("With arena: stop after tg-plan-scratch (buffers, "
                     "each function's arena size in tg.arena_bytes)"),
      llvm::cl::init(false)};
  Option<bool> vectorGemm{*this, "vector-gemm",
                          llvm::cl::desc("f32 contractions as register-"
                                         "blocked vector kernels"),
                          llvm::cl::init(true)};
  Option<bool> vectorElementwise{
      *this, "vector-elementwise",
      llvm::cl::desc("Elementwise loop nests and row-reduction maps as "
                     "vector loops"),
      llvm::cl::init(true)};
  Option<int64_t> vectorLanes{
      *this, "vector-lanes",
      llvm::cl::desc("f32 lanes of a vector register (0: the host's)"),
      llvm::cl::init(0)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("f32 tanh/exp/log/erf as inline polynomials"),
      llvm::cl::init(true)};
  Option<bool> barePointerEntryPoints{
      *this, "bare-pointer-entry-points",
      llvm::cl::desc("Entry points take one pointer per buffer and have no "
                     "C interface"),
      llvm::cl::init(false)};
  Option<bool> parallel{*this, "parallel",
                        llvm::cl::desc("Loops with enough work run on "
                                       "several threads (OpenMP)"),
                        llvm::cl::init(true)};
};
} // namespace

void mlir::tg::cpu::registerCpuPasses() {
  registerTGCpuPasses();
  // The lowering of the loops tg-parallelize-loops keeps, for tg-opt.
  registerConvertSCFToOpenMPPass();
  PassPipelineRegistration<CpuPipelineCLOptions>(
      "tg-cpu-pipeline", "Lower tg to the LLVM dialect for the CPU",
      [](OpPassManager &pm, const CpuPipelineCLOptions &cl) {
        CpuPipelineOptions options;
        options.entryPoints.assign(cl.entryPoints.begin(),
                                   cl.entryPoints.end());
        options.deallocate = cl.deallocate;
        options.blas = cl.blas;
        options.arena = cl.arena;
        options.outline = cl.outline;
        options.fuseGroups = cl.fuseGroups;
        options.vectorGemm = cl.vectorGemm;
        options.vectorElementwise = cl.vectorElementwise;
        options.vectorLanes = cl.vectorLanes;
        options.approximateMath = cl.approximateMath;
        options.stopAfterScratch = cl.stopAfterScratch;
        options.parallel = cl.parallel;
        options.barePointerEntryPoints = cl.barePointerEntryPoints;
        buildCpuPipeline(pm, options);
      });
}
