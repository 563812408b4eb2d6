//===- GemmCommon.h - IR pieces shared by the sm_80 and sm_90a paths -*- C++ -*-===//
//
// The kernel builder both generators use, the tile raster (grouped along M
// for L2 reuse), the kernel signature, and the fused epilogue that turns a
// pair of f32 accumulators into stored output. Both code paths hold
// accumulators in the same m16n8 fragment layout (mma.sync's C fragment and
// wgmma's D fragment agree), so they share it.
//
// Kernels are built with the MLIR op builders (OpTy::create), not written as
// text and parsed back: a wrong operand or attribute is a C++ compile error
// at the line that makes it, and the verifier still checks the whole module.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_GEMMCOMMON_H
#define TG_CODEGEN_NVPTX_GEMMCOMMON_H

#include "codegen/nvptx/GemmConfig.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace tg::nvptx::detail {

/// The MLIR element type of `t` (bf16, f16, f32).
mlir::Type mlirType(mlir::MLIRContext *ctx, ElemType t);

/// Builds one kernel body with llvm-dialect arithmetic. Constants (and other
/// value-independent definitions) are hoisted into the entry block, in the
/// order first asked for, and shared, so they dominate every nested region.
class KernelBuilder {
public:
  /// `entry` is the kernel's entry block; ops are appended at its end.
  KernelBuilder(mlir::Block *entry, mlir::Location loc);

  mlir::OpBuilder b;
  mlir::Location loc;
  mlir::Type i1, i32, i64, f32, v2f32;
  mlir::Type ptr0, ptr1, ptr3, ptr7; ///< pointers in address spaces 0/1/3/7

  mlir::Value i32c(int64_t v);
  mlir::Value i64c(int64_t v);
  mlir::Value f32c(double v);
  /// `llvm.mlir.zero : t`, hoisted.
  mlir::Value zero(mlir::Type t);

  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value udiv(mlir::Value x, mlir::Value y);
  mlir::Value urem(mlir::Value x, mlir::Value y);
  mlir::Value lshr(mlir::Value x, mlir::Value y);
  mlir::Value and_(mlir::Value x, mlir::Value y);
  mlir::Value or_(mlir::Value x, mlir::Value y);
  mlir::Value xor_(mlir::Value x, mlir::Value y);
  /// i32 arithmetic with an immediate; the identity adds no op.
  mlir::Value addi(mlir::Value x, int64_t v) { return v == 0 ? x : add(x, i32c(v)); }
  mlir::Value muli(mlir::Value x, int64_t v) { return v == 1 ? x : mul(x, i32c(v)); }
  mlir::Value shri(mlir::Value x, int64_t v) { return v == 0 ? x : lshr(x, i32c(v)); }
  mlir::Value andi(mlir::Value x, int64_t v) { return and_(x, i32c(v)); }
  mlir::Value icmp(mlir::LLVM::ICmpPredicate p, mlir::Value x, mlir::Value y);
  mlir::Value ult(mlir::Value x, mlir::Value y) {
    return icmp(mlir::LLVM::ICmpPredicate::ult, x, y);
  }
  mlir::Value select(mlir::Value p, mlir::Value x, mlir::Value y);
  mlir::Value zext64(mlir::Value x);
  /// `&base[off]` with element type `elt`, in base's address space.
  mlir::Value gep(mlir::Value base, mlir::Value off, mlir::Type elt);
  mlir::Value fadd(mlir::Value x, mlir::Value y);
  mlir::Value fmul(mlir::Value x, mlir::Value y);
  mlir::Value extractvalue(mlir::Value agg, int64_t i);

  /// `scf.if cond` without results; the builder moves into the then block
  /// (and `elseBlock`, when asked for, receives the else block).
  void openIf(mlir::Value cond, mlir::Block **elseBlock = nullptr);
  /// `scf.for iv = 0 to ub step 1` (i32) carrying `inits`; the builder moves
  /// into the body. Close it with closeFor.
  mlir::scf::ForOp openFor(mlir::Value ub, mlir::ValueRange inits = {},
                           llvm::StringRef ivName = "");
  /// Yields `results` (if the loop carries values) and leaves the loop body.
  void closeFor(mlir::scf::ForOp loop, mlir::ValueRange results = {});
  /// Moves the builder to just after `op` (leaving a region).
  void after(mlir::Operation *op) { b.setInsertionPointAfter(op); }

private:
  mlir::Value hoisted(const std::string &key,
                      llvm::function_ref<mlir::Value(mlir::OpBuilder &)> make);
  mlir::Block *entry;
  mlir::Operation *lastHoisted = nullptr;
  std::map<std::string, mlir::Value> consts;
};

/// Per-element code a kernel runs on its f32 accumulators in place of the
/// fixed epilogue of GemmProblem::epilogue: the GEMM lowering generates it
/// from a fusion group's body, so a group's every op and every result it
/// yields (the pre-activation value beside the activation, say) are stored
/// by the GEMM kernel itself.
class ElementEpilogue {
public:
  virtual ~ElementEpilogue() = default;
  /// Emits, at w's insertion point, the code that finishes output element
  /// (batch, row, col) from its accumulator `acc` (f32) and stores every
  /// result. The caller has checked row < M and col < N; `batch` is the
  /// i32 batch index, or null for an unbatched kernel.
  virtual void emit(KernelBuilder &w, mlir::Value batch, mlir::Value row,
                    mlir::Value col, mlir::Value acc) const = 0;
};

/// The kernel's arguments, in the order fixed by the ABI in GemmConfig.h.
/// A kernel generated from the pipeline has only pointer parameters: there
/// m, n, k (and alpha) are constants, c/bias/res are unused and `epilogue`
/// stores the results.
struct KernelArgs {
  mlir::Value a, b, c, bias, res, m, n, k, alpha;
  const ElementEpilogue *epilogue = nullptr;
  /// Set by the generators for a batched problem: this CTA's batch (i32).
  mlir::Value batch;
};

/// Creates the kernel function (signature and attributes) at the end of
/// `module`, with an entry block; `abPtr` is the type of the first two
/// arguments. Fills `args`.
mlir::LLVM::LLVMFuncOp createKernel(mlir::ModuleOp module, const GemmProblem &p,
                                    const TileConfig &c, mlir::Type abPtr,
                                    KernelArgs &args);
/// The wgmma m64nN f32 accumulator type (N/2 f32s in a literal struct).
mlir::Type accType(mlir::MLIRContext *ctx, int n);

/// The 64-bit wgmma shared-memory matrix descriptor of a 128B-swizzled
/// operand at byte offset `off` from `smemAddr` (the i32 shared address of
/// @tg_smem): bits 0-13 start >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4,
/// 62-63 the swizzle mode (1 = 128B).
mlir::Value wgmmaDescriptor(KernelBuilder &w, mlir::Value smemAddr,
                            mlir::Value off, int lbo, int sbo);

/// Maps a linear tile id to (tileM, tileN), grouped by c.groupM along M.
std::pair<mlir::Value, mlir::Value> emitTileRaster(KernelBuilder &w,
                                                   const TileConfig &c,
                                                   const KernelArgs &a,
                                                   mlir::Value tile);

/// Emits the epilogue for two adjacent outputs (row, col) and (row, col+1):
/// scale, bias, activation, residual, cast, predicated store.
void emitEpiloguePair(KernelBuilder &w, const GemmProblem &p,
                      const KernelArgs &a, mlir::Value row, mlir::Value col,
                      mlir::Value v0, mlir::Value v1);

/// log2 of a power of two.
inline int log2i(int64_t v) {
  int l = 0;
  while ((int64_t(1) << l) < v)
    ++l;
  return l;
}

/// The kernel functions, appended to `module` (which must hold @tg_smem).
void buildSm80Gemm(mlir::ModuleOp module, const GemmProblem &p,
                   const TileConfig &c);
void buildSm90Gemm(mlir::ModuleOp module, const GemmProblem &p,
                   const TileConfig &c);
/// The bodies alone, into a kernel whose entry block `w` builds and whose
/// operands `a` names (the pipeline's kernels have their own signature).
void emitSm80Gemm(KernelBuilder &w, const GemmProblem &p, const TileConfig &c,
                  const KernelArgs &a);
void emitSm90Gemm(KernelBuilder &w, const GemmProblem &p, const TileConfig &c,
                  const KernelArgs &a);
/// Declares the shared dynamic shared-memory array @tg_smem in `module`
/// unless it is there.
void declareSharedMemory(mlir::ModuleOp module);

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_GEMMCOMMON_H
