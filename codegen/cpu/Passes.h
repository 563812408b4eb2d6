//===- Passes.h - CPU code generation passes and pipeline -------*- C++ -*-===//
//
// The passes of Passes.td, their pattern populators, and buildCpuPipeline:
// tg on tensors to the LLVM dialect, ready for mlir::ExecutionEngine or an
// object file.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_CPU_PASSES_H
#define TGC_CODEGEN_CPU_PASSES_H

#include "codegen/cpu/Registration.h"
#include "dialects/TGDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace mlir::tg::cpu {

#define GEN_PASS_DECL
#include "codegen/cpu/Passes.h.inc"

/// The argument attribute tg-bind-arena puts on the arena it appends
/// (declared in dialects/TGDialect.td).
inline constexpr llvm::StringLiteral kArenaArgAttr = attr::arena;
/// The module attribute where tg-plan-scratch records final arena sizes.
inline constexpr llvm::StringLiteral kArenaBytesAttr = attr::arenaBytes;
/// On a loop nest that the CPU lowering made one kernel (the row loop of a
/// row-reduction group, FusedToLoops.cpp): tg-outline-kernels outlines the
/// whole nest as one function, not each linalg op inside it. Made and read
/// by the CPU pipeline only, never on a tg op, so it is not one of the tg
/// dialect's attributes (TGDialect.td).
inline constexpr llvm::StringLiteral kKernelLoopAttr = "tg_cpu.kernel";
/// The attribute tg-parallelize-loops puts on each loop it keeps parallel
/// (`{iterations, work}`: its decision, for tg-opt and lit; nothing reads
/// it back, since convert-scf-to-openmp takes every scf.parallel left).
/// Spelled only here: not under `tg.`, whose names the dialect verifies
/// against TGDialect.td's list (moving it there rebuilds the whole tree).
inline constexpr llvm::StringLiteral kParallelAttr = "tg_cpu.parallel";
/// The attribute of a loop over blocks of a convolution's images (the
/// slot loop, ConvPoolToLinalg.cpp): its iterations are independent apart
/// from their scratch, which tg-plan-scratch gives one slot per iteration
/// (the buffer times the value of the attribute, the slot count; each
/// iteration's view at its slot), so tg-parallelize-loops may run it on
/// threads. Its value is the number of iterations (at most kScratchSlots,
/// ConvPoolToLinalg.cpp).
inline constexpr llvm::StringLiteral kSlotsAttr = "tg_cpu.slots";

/// The arena size of `function` in a module lowered with `arena` (the
/// plan's transient bytes plus its ops' scratch), or 0 if it has none.
int64_t loweredArenaBytes(ModuleOp lowered, StringRef function);

/// Where tg-plan-memory put an op's scratch: its arena offset and bytes
/// (tg.scratch_offset, tg.scratch).
struct ScratchPlace {
  int64_t offset = 0, bytes = 0;
};

/// `loc` carrying `place` as FusedLoc metadata: tg-bind-arena gives it to
/// an op with a tg.scratch_offset and to every op nested in it, so that
/// the buffers its lowering allocates (created at its location) tell
/// tg-plan-scratch where their op's scratch is.
Location withScratchPlace(Location loc, ScratchPlace place);
/// The place that withScratchPlace recorded in `loc` (or in a location
/// fused into it), if any.
std::optional<ScratchPlace> scratchPlaceOf(Location loc);

/// The work of tg-size-scratch (Passes.td): sets tg.scratch on every tg op
/// of `module`'s functions whose lowering alone needs scratch. Returns how
/// many ops it could not size (their scratch will be appended after the
/// plan), or failure if the isolated lowering failed (diagnosed).
FailureOr<int64_t> sizeOpScratch(ModuleOp module);

/// Conversion patterns of tg-convert-to-linalg, one populator per op family
/// (each in the .cpp named after it). Composite ops are not covered: run
/// tg::populateDecomposeCompositesPatterns first.
void populateElementwiseToLinalgPatterns(RewritePatternSet &patterns);
void populateReductionsToLinalgPatterns(RewritePatternSet &patterns);
void populateMovementToLinalgPatterns(RewritePatternSet &patterns);
void populateRandomToLinalgPatterns(RewritePatternSet &patterns);
void populateConvPoolToLinalgPatterns(RewritePatternSet &patterns);
/// tg.all_reduce to calls of the artifact's tgx_all_reduce_f32 (CommToCalls.cpp).
void populateCommToCallsPatterns(RewritePatternSet &patterns);
/// tg.attention and tg.attention_grad whole, as FlashAttention-2 loop nests
/// over blocks of queries and keys (AttentionToLoops.cpp): no Tq x Tk tensor.
void populateAttentionToLoopsPatterns(RewritePatternSet &patterns);
/// All of the above.
void populateConvertTGToLinalgPatterns(RewritePatternSet &patterns);

/// Fuses the linalg ops of each tg.fused group under `root` whose body
/// tg-convert-to-linalg has lowered (one loop nest per elementwise group,
/// the epilogue of a GEMM as one, reductions with their producers), then
/// replaces each group by its body (FusedToLoops.cpp).
LogicalResult fuseLoweredGroups(Operation *root);

/// The vector width tg-select-vector-widths chose for a linalg.generic on
/// buffers (an i64: lanes along its innermost loop), which
/// tg-vectorize-elementwise honours. It lives only between those two passes
/// of the CPU lowering, on upstream ops, so it is named here rather than
/// among the tg dialect's attributes (which reject unknown tg.* names).
inline constexpr llvm::StringLiteral kVectorWidthAttr = "tg_cpu.vector_width";

/// Whether tg-vectorize-elementwise can vectorise `op` along its innermost
/// loop. On success, the widest scalar its body computes with, in bits (at
/// least 32: what decides how many lanes fit a register); on failure, `why`
/// (if given) says what stops it (VectorizeElementwise.cpp).
FailureOr<unsigned> vectorizableElementBits(linalg::GenericOp op,
                                            std::string *why = nullptr);

/// f32 lanes of the host's widest vector register: 16 with AVX-512, 8 with
/// AVX, 4 otherwise (the artifact and the JIT target the host CPU).
int64_t hostVectorLanes();

/// Options of the CPU pipeline.
struct CpuPipelineOptions {
  /// Functions that get a C interface (`_mlir_ciface_<name>`, memref
  /// descriptors passed by pointer). Empty: every public function.
  std::vector<std::string> entryPoints;
  /// Free every intermediate buffer (ownership-based deallocation). Off
  /// only to inspect the IR without the deallocation bookkeeping.
  bool deallocate = true;
  /// f32 matrix products call cblas_sgemm (tg-convert-matmul-to-blas); the
  /// code then needs OpenBLAS at link or load time. Off by default: on the
  /// 2-core build machine the vectorised loops were faster than OpenBLAS
  /// with its own core detection (bench/cpu_jit_mlp.sh, docs/cpu-backend.md).
  bool blas = false;
  /// Planned functions (tg.memory, from tg-plan-memory) take one arena
  /// argument after their own and keep every planned value in it
  /// (tg-bind-arena); the rest of the code still allocates.
  bool arena = false;
  /// The entry points take one pointer per buffer (tg-pass-bare-pointers),
  /// with no C interface: what the artifact's `tgx_<entry>` calls. Off: a
  /// `_mlir_ciface_<entry>` taking descriptors (the JIT's ExecutionEngine).
  /// The functions the module calls take pointers either way.
  bool barePointerEntryPoints = false;
  /// Allocations call _mlir_memref_to_llvm_alloc/_aligned_alloc/_free (the
  /// artifact's support code counts them) instead of malloc and free.
  bool genericAllocations = false;
  /// Stop after tg-plan-scratch (with `arena`): enough to learn each
  /// planned function's final arena size (module attribute
  /// tg.arena_bytes) without lowering to LLVM.
  bool stopAfterScratch = false;
  /// Each linalg op becomes a call of a deduplicated kernel function
  /// (tg-outline-kernels), so lowering and LLVM scale with the step's
  /// length. Off only to inspect or compare the single-function code.
  bool outline = true;
  /// Each tg.fused group becomes as few loop nests as linalg's elementwise
  /// fusion allows (one per elementwise group). Off: each op of a group is
  /// its own loop nest, as in unfused IR (to compare).
  bool fuseGroups = true;
  /// f32 contractions become cache- and register-blocked vector kernels
  /// (tg-vectorize-contractions). Off: LLVM vectorises the scalar loops'
  /// innermost loop only (to compare speed and numerics).
  bool vectorGemm = true;
  /// Elementwise loop nests and the maps of row reductions run vector
  /// lanes at a time (tg-select-vector-widths, tg-vectorize-elementwise).
  /// Off: LLVM's loop vectoriser alone, as before (to compare).
  bool vectorElementwise = true;
  /// f32 lanes of one vector register; 0: the host's (hostVectorLanes).
  int64_t vectorLanes = 0;
  /// f32 tanh, exp, log and erf as inline polynomials that vectorise
  /// (tg-approximate-math) instead of libm calls. Off: libm, as before.
  bool approximateMath = true;
  /// Loops with enough work run on several threads: tg-parallelize-loops
  /// chooses them, convert-scf-to-openmp makes them OpenMP worksharing
  /// loops, and the code then needs the LLVM OpenMP runtime (libomp.so.5)
  /// at load time. Off: every loop runs on the calling thread.
  bool parallel = true;
};

/// tg on tensors → LLVM dialect: decompose, convert to linalg, canonicalize,
/// one-shot bufferize (function boundaries, identity layouts), results to
/// out-parameters, deallocation, f32 matmuls to BLAS, linalg to loops, math expansion, and the
/// conversions of scf/cf/arith/math/memref/func/index to LLVM. See
/// docs/cpu-backend.md for the ABI of the entry points.
void buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

#define GEN_PASS_REGISTRATION
#include "codegen/cpu/Passes.h.inc"

} // namespace mlir::tg::cpu

#endif // TGC_CODEGEN_CPU_PASSES_H
