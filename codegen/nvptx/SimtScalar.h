//===- SimtScalar.h - one element of a tg elementwise op on the GPU -*- C++ -*-===//
//
// The scalar arithmetic every SIMT generator shares (elementwise and
// optimizer kernels, reduction prologues and epilogues, GEMM epilogues):
// loads and stores of each element type, constants, and the value of one
// element of any elementwise tg op given the values of its operands.
//
// Values are computed in a "compute type": f32 for f32, bf16 and f16
// tensors (16-bit floats are widened on load and rounded on store), f64
// for f64, and the integer types themselves (i1 stays i1; it is stored as a
// byte). A float op whose result type is bf16 or f16 rounds its f32 value to
// that type (and widens it back), so a chain of ops rounds where the tg
// program says it does, as the reference evaluator and the CPU backend do.
//
// NVPTX has no libm, so the transcendental functions are built here from
// PTX's approximate instructions and polynomials (accuracy in f32,
// measured in test/nvptx/SimtScalarTest.cpp):
//   exp   ex2.approx(r·log2 e)·2^t after reducing x = t·ln 2 + r (fma),
//         within 2 ulp + the ulp of the result's exponent range.
//   log   x = 2^e·m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh((m-1)/(m+1))
//         by its series (7 terms): a few ulp everywhere, also near x = 1
//         where lg2.approx alone has only an absolute error of 2^-22.
//   tanh  odd Taylor polynomial (9 terms, |x| < 0.55) and 1 - 2/(e^2|x| + 1)
//         beyond: relative error of the formula below 5e-9, a few ulp in f32.
//   erf   Taylor series (12 terms, |x| < 1) and Numerical Recipes' erfcc
//         Chebyshev fit (fractional error below 1.2e-7 of erfc) beyond:
//         absolute error of the formulas below 6e-9, below 3e-7 in f32.
//   sin/cos  Cody-Waite reduction to [-pi, pi] then sin/cos.approx
//         (absolute error below 2^-20 for |x| < 2^16).
//   pow   exp(y·log|x|) with the sign and the special cases of C's powf.
//
// Random numbers (tg.dropout here, tg.random in the movement generator)
// are Philox-4x32-10 with the exact mapping of include/tgc/Philox.h, so the
// GPU draws the bits the CPU backend and the reference evaluator draw.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_SIMTSCALAR_H
#define TG_CODEGEN_NVPTX_SIMTSCALAR_H

#include "codegen/nvptx/GemmCommon.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <array>
#include <cstdint>

namespace tg::nvptx::detail {

/// The type a value of element type `elem` is computed in (see the file
/// comment): f32 for f32/bf16/f16, otherwise `elem` itself.
mlir::Type computeType(mlir::Type elem);

/// The type `elem` has in memory: i8 for i1, otherwise `elem`.
mlir::Type storageType(mlir::Type elem);

/// Converts `stored`, a value (or vector of values) as loaded from memory
/// with element type `elem`, to the compute type.
mlir::Value toCompute(KernelBuilder &w, mlir::Value stored, mlir::Type elem);

/// Converts `v`, in the compute type of `elem` (or a vector of it), to what
/// is stored for `elem` (rounding to nearest even for 16-bit floats).
mlir::Value toStorage(KernelBuilder &w, mlir::Value v, mlir::Type elem);

/// Loads element `index` (an i32 or i64 element offset) of the global
/// buffer `base` of element type `elem`, in the compute type.
mlir::Value loadElement(KernelBuilder &w, mlir::Value base, mlir::Value index,
                        mlir::Type elem);

/// Stores `v` (in the compute type of `elem`) as element `index` of `base`.
void storeElement(KernelBuilder &w, mlir::Value base, mlir::Value index,
                  mlir::Type elem, mlir::Value v);

/// A constant of the compute type of `elem` (for i1: v != 0).
mlir::Value scalarConstant(KernelBuilder &w, mlir::Type elem, double v);

/// The value of a splat `tg.constant` (any element type) as a compute-type
/// scalar; an error at the op for a constant that is not a splat.
mlir::FailureOr<mlir::Value> emitSplatConstant(KernelBuilder &w,
                                               mlir::Operation *constantOp);

/// The position of the element an op computes, for the ops whose value
/// depends on it (tg.causal_mask, tg.one_hot, tg.dropout).
struct ElementPosition {
  /// Row-major linear index (i32 or i64) of the element in the op's result.
  mlir::Value linear;
};

/// Emits one element of the elementwise tg op `op` (anything tg-fuse puts in
/// a group, and tg.constant as a splat) from `operands`, one compute-type
/// scalar per operand of `op` in order (the caller has already applied
/// broadcasting; tg.one_hot's operand is the index of the result's row).
/// Returns the result in the compute type of the result's element type.
/// `pos` is required by position-dependent ops. An op or type the GPU path
/// cannot compute is an error at `op`.
mlir::FailureOr<mlir::Value> emitScalarOp(KernelBuilder &w, mlir::Operation *op,
                                          mlir::ArrayRef<mlir::Value> operands,
                                          const ElementPosition *pos = nullptr);

/// True when emitScalarOp computes `op` (without emitting anything).
bool isScalarOp(mlir::Operation *op);

/// The four 32-bit words of philox4x32_10(counter, key) (all i32).
std::array<mlir::Value, 4> emitPhiloxBlock(KernelBuilder &w,
                                           std::array<mlir::Value, 4> counter,
                                           std::array<mlir::Value, 2> key);

/// The i32 random word of element `index` (i64) of `stream` under `seed`
/// (i64): tgc::philoxWord, bit for bit.
mlir::Value emitPhiloxWord(KernelBuilder &w, mlir::Value seed, uint64_t stream,
                           mlir::Value index);

/// f32 math without libm (accuracy in the file comment).
mlir::Value emitExp(KernelBuilder &w, mlir::Value x);
mlir::Value emitLog(KernelBuilder &w, mlir::Value x);
mlir::Value emitTanh(KernelBuilder &w, mlir::Value x);
mlir::Value emitErf(KernelBuilder &w, mlir::Value x);
mlir::Value emitSigmoid(KernelBuilder &w, mlir::Value x);

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_SIMTSCALAR_H
