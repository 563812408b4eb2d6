//===- Evaluator.h - reference interpreter of tg IR -------------*- C++ -*-===//
//
// A plain, obviously-correct interpreter of tg IR: the oracle that every
// backend and every transformation (decomposition, fusion, precision,
// memory planning, rematerialisation, autodiff) is checked against. Values
// are held as float64 whatever their type; with EvalOptions::roundToDtype
// each op's results are rounded to the op's element type, so a bf16 graph
// gives the answers a faithful bf16 execution (computing each op exactly,
// then rounding once) would give. See docs/reference-evaluator.md.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_REFERENCE_EVALUATOR_H
#define TGC_CODEGEN_REFERENCE_EVALUATOR_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tg::ref {

/// Element types the evaluator knows. `Index` is the scalar index of scf.for
/// bounds and induction variables.
enum class DType { F64, F32, F16, BF16, I64, I32, I1, Index };

/// The DType of an MLIR element type, or failure for any other type.
FailureOr<DType> dtypeOf(Type elementType);
/// The MLIR element type of `dtype` in `ctx`.
Type mlirType(DType dtype, MLIRContext *ctx);
/// "f32", "bf16", "i64", ...
StringRef dtypeName(DType dtype);
bool isFloat(DType dtype);

/// `v` rounded to `dtype`: floats round to nearest even (overflow to inf,
/// gradual underflow), integers truncate toward zero and wrap to their
/// width, i1 is `v != 0`. F64 and Index leave `v` unchanged (Index
/// truncates).
double roundTo(DType dtype, double v);

/// A dense, row-major tensor value whose elements are held as float64.
struct Tensor {
  SmallVector<int64_t, 4> shape;
  DType dtype = DType::F32;
  std::vector<double> data;

  int64_t numElements() const { return static_cast<int64_t>(data.size()); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// The element at a multi-index (no bounds checks beyond assertions).
  double at(ArrayRef<int64_t> index) const;
  /// "tensor<2x3xf32>".
  std::string typeString() const;

  /// Every element equal to `value` (rounded to `dtype`).
  static Tensor filled(ArrayRef<int64_t> shape, DType dtype, double value);
  /// Elements from `values` (row-major, rounded to `dtype`); asserts that the
  /// count matches the shape.
  static Tensor fromValues(ArrayRef<int64_t> shape, DType dtype,
                           ArrayRef<double> values);
  /// Deterministic pseudo-random elements from Philox(seed, stream): floats
  /// uniform in [lo, hi) rounded to `dtype`; integers uniform in
  /// [ceil(lo), ceil(hi)); i1 uniform in {0, 1}.
  static Tensor random(ArrayRef<int64_t> shape, DType dtype, uint64_t seed,
                       uint64_t stream = 0, double lo = -1, double hi = 1);
  /// Zeros with the shape and element type of `type`, or failure if the
  /// element type is not one the evaluator knows.
  static FailureOr<Tensor> zeros(RankedTensorType type);
};

/// How to evaluate.
struct EvalOptions {
  /// Round every op's results to the op's element type (bf16/f16/f32 to
  /// nearest even, integers truncate). Off: every float value stays float64,
  /// the mode for finite differences and for comparing rewrites exactly.
  bool roundToDtype = true;
  /// Nesting limit for func.call, so that a recursive module is an error
  /// rather than a stack overflow.
  unsigned maxCallDepth = 64;
  /// Ops (and loop iterations) executed before evaluation stops with an
  /// error: a loop of 2^63 iterations is a located error, not a hang.
  uint64_t maxSteps = uint64_t(1) << 24;
  /// Element operations (an estimate from each op's types, made before the
  /// op runs: the elements it reads and writes, times the reduction length
  /// of a contraction or attention) one evaluation may perform before it
  /// stops with an error. The step limit counts ops, so without this a few
  /// ops on 10^8-element tensors or one 4096^3 matmul ran for minutes.
  /// 2^26 is about a second of the evaluator's float64 loops.
  uint64_t maxWork = uint64_t(1) << 26;
  /// Largest tensor (elements) a value may have; 0: a quarter of this
  /// machine's memory in float64 values. Checked for every value's type
  /// before evaluation starts.
  uint64_t maxElements = 0;
};

/// Checks that every value in `scope` has a type the evaluator can hold (a
/// static shape within opts.maxElements); a located error otherwise.
LogicalResult checkEvaluable(Operation *scope, const EvalOptions &opts = {});

/// Evaluates `fn` on `args` and returns its results. Arguments must match the
/// function's types (shape and element type; they are rounded to the
/// element type when opts.roundToDtype). Unsupported ops and bad arguments
/// are reported through MLIR diagnostics at the op's (or function's)
/// location and give failure; so are values the evaluator cannot hold
/// (dynamic or unranked shapes, element counts past opts.maxElements) and
/// evaluations past opts.maxSteps or opts.maxWork.
FailureOr<SmallVector<Tensor>> evaluate(func::FuncOp fn, ArrayRef<Tensor> args,
                                        const EvalOptions &opts = {});

} // namespace mlir::tg::ref

#endif // TGC_CODEGEN_REFERENCE_EVALUATOR_H
