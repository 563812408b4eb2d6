//===- KernelGen.h - planned tg ops as GPU kernels --------------*- C++ -*-===//
//
// The contract between the GPU backend's kernel generators and the schedule
// builder (tgc --target=sm_80,...): each top-level op of a planned entry
// function (a `tg.fused` group or a single tg op) becomes one or more kernel
// launches. Every kernel parameter is a 64-bit global pointer to one of the
// op's operands or results (dense, row-major, the planned buffer); shapes
// are static and baked into the code, so no other parameter exists. The
// schedule builder maps operands and results to buffers (function argument,
// arena offset) and writes the launch list into the artifact's manifest; the
// runtime (CUDA or the emulator) decides nothing.
//
// Aliasing: the memory planner may give a result the buffer of an operand
// that dies at the op (elementwise in-place reuse, in-place optimizer
// updates). A generator must therefore be correct when any result aliases
// any operand of the same byte size: every element is read before the same
// thread overwrites it, and no thread reads an element another thread may
// already have overwritten. A kernel kind that cannot guarantee that (a
// GEMM writing over its own input) refuses with an error; the planner never
// asks for it today.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_KERNELGEN_H
#define TG_CODEGEN_NVPTX_KERNELGEN_H

#include "codegen/nvptx/GemmConfig.h"
#include "runtime/cuda/TensorMap.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tg::nvptx {

/// A TMA descriptor parameter (sm_90a GEMMs, attention): the kernel
/// receives a generic pointer to a 128-byte CUtensorMap in device memory
/// over an operand's buffer, read as `batches` dense row-major rows x cols
/// matrices of 16-bit elements one after the other (a 3-D map when batches
/// > 1, batch outermost), loaded in boxRows x boxCols (x 1) boxes. The
/// swizzle, L2 promotion and out-of-bounds fill are the generator's
/// choices that its code depends on (cuda.h's values; the generators'
/// shared-memory layouts assume the 128-byte swizzle and zeros out of
/// bounds). The schedule writes the map in full (driverArgs()) and the
/// runtime encodes exactly that once per buffer (docs/artifact.md, "Tensor
/// maps").
///
/// A staged map (`staged`; sm_90a GEMMs whose operand rows are not 16-byte
/// aligned, kernel = "wgmma_staged") describes instead the realigned copy
/// of the operand that an earlier launch of the same op wrote into the
/// op's scratch: `scratchOffset` bytes into it (256-byte aligned), rows
/// `pitch` elements apart (cols rounded up to a multiple of 8, so every
/// row starts 16-byte aligned as TMA requires), batches rows x pitch
/// apart. stagedBytes() is the copy's size.
struct TensorMapParam {
  bool bf16 = true;
  uint64_t rows = 0, cols = 0, batches = 1;
  uint32_t boxRows = 0, boxCols = 0;
  int swizzle = ::tg::rt::cuda::CU_TENSOR_MAP_SWIZZLE_128B;
  int l2Promotion = ::tg::rt::cuda::CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  int oobFill = ::tg::rt::cuda::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  /// Row stride in elements (0: cols, the operand's dense rows).
  uint64_t pitch = 0;
  /// Over the launch's scratch at scratchOffset, not the operand's buffer.
  bool staged = false;
  uint64_t scratchOffset = 0;
  uint64_t rowPitch() const { return pitch ? pitch : cols; }
  /// Bytes from the map's address to the end of its last row's pitch.
  uint64_t stagedBytes() const { return batches * rows * rowPitch() * 2; }
  /// The arguments of cuTensorMapEncodeTiled besides the address.
  ::tg::rt::cuda::TensorMapArgs driverArgs() const {
    return ::tg::rt::cuda::tiledMatrixMap(bf16, rows, cols, boxRows, boxCols,
                                        batches, swizzle, l2Promotion, oobFill,
                                        pitch);
  }
};

/// A pointer parameter of a generated kernel: the operand or result of the
/// lowered op (top-level in its entry function) whose buffer it receives,
/// (Kind::TensorMap) a TMA descriptor over operand `index`'s buffer (or,
/// when map.staged, over that operand's realigned copy in the scratch), or
/// (Kind::Scratch; `index` unused) the launch's scratch: scratchBytes of
/// the arena that live only while the op's launches run, the same bytes
/// for every launch of the op (a split reduction's partials pass from its
/// first launch to its second there), contents undefined at the first.
struct KernelParam {
  enum class Kind { Operand, Result, TensorMap, Scratch };
  using TensorMap = TensorMapParam;
  KernelParam(Kind kind = Kind::Operand, unsigned index = 0,
              TensorMap map = {})
      : kind(kind), index(index), map(map) {}
  Kind kind;
  unsigned index;
  /// Kind::TensorMap only.
  TensorMap map;
};

/// One launch of a generated kernel. Launches of one op run in order, each
/// after the previous has finished (same stream).
struct KernelLaunch {
  /// The kernel's symbol: an `llvm.func` with `nvvm.kernel` in the module.
  std::string symbol;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  /// Dynamic shared memory bytes (the kernel declares an extern array).
  uint32_t dynamicSharedBytes = 0;
  /// Bytes of the Kind::Scratch parameter (0 when it has none).
  uint64_t scratchBytes = 0;
  /// One entry per kernel parameter, in order; all are pointers.
  std::vector<KernelParam> params;
};

/// Lowers `op`, a top-level op of a planned entry function (after tg-fuse,
/// tg-decompose and tg-plan-memory), to kernels for target `t`: appends the
/// kernel functions to `kernels` (a module of `llvm.func`s that is lowered
/// to one PTX module per target) and returns the launches that compute
/// every result of `op` from its operands. Ops that move no data (a
/// reshape whose result shares its operand's buffer, constants folded into
/// kernels) return no launch. On failure an error is emitted at `op`'s
/// location naming the op (and, for a group, the inner op) that the GPU
/// path cannot compile yet.
mlir::FailureOr<std::vector<KernelLaunch>>
lowerOpToKernels(mlir::Operation *op, Target t, mlir::ModuleOp kernels);

/// A symbol for a kernel generated from `op` with `prefix` (e.g.
/// "tg_ew"): the prefix, the target and a 64-bit xxh3 hash (stable across runs) of the op's printed
/// form (generic syntax, without locations and discardable planner
/// attributes). Two ops that print alike get the same symbol, so a
/// generator that finds the symbol already in `kernels` reuses that kernel
/// instead of emitting a copy (kernel deduplication).
std::string kernelSymbol(mlir::Operation *op, llvm::StringRef prefix, Target t);

/// True when `kernels` already holds a function named `symbol`.
bool hasKernel(mlir::ModuleOp kernels, llvm::StringRef symbol);

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_KERNELGEN_H
