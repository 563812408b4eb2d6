//===- Tensor.cpp - reference tensors, dtypes and rounding ------*- C++ -*-===//
//
// The value type of the reference evaluator and the one rounding function
// every op's result goes through. Rounding works on the float64 value
// directly (scale by the target ulp, round to nearest even, scale back), so
// there is no double rounding through an intermediate format.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/EvalInternal.h"
#include "tgc/Philox.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tg::ref;

FailureOr<DType> mlir::tg::ref::dtypeOf(Type t) {
  if (t.isF64())
    return DType::F64;
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isIndex())
    return DType::Index;
  if (t.isInteger(64))
    return DType::I64;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(1))
    return DType::I1;
  return failure();
}

Type mlir::tg::ref::mlirType(DType dtype, MLIRContext *ctx) {
  Builder b(ctx);
  switch (dtype) {
  case DType::F64:
    return b.getF64Type();
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::I64:
    return b.getI64Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I1:
    return b.getI1Type();
  case DType::Index:
    return b.getIndexType();
  }
  llvm_unreachable("unknown dtype");
}

StringRef mlir::tg::ref::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "f64";
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I1:
    return "i1";
  case DType::Index:
    return "index";
  }
  llvm_unreachable("unknown dtype");
}

bool mlir::tg::ref::isFloat(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 ||
         dtype == DType::BF16;
}

/// Rounds `x` to nearest even in a binary format with `precision`
/// significand bits, whose smallest normal number is 0.5 * 2^`minExp` (the
/// frexp exponent) and whose largest finite value is `maxFinite`.
static double roundToFormat(double x, int precision, int minExp,
                            double maxFinite) {
  if (!std::isfinite(x) || x == 0)
    return x;
  int exp;
  std::frexp(x, &exp);
  // Below the normal range the ulp stops shrinking: gradual underflow.
  int ulpExp = std::max(exp, minExp) - precision;
  // Scaling by a power of two is exact, so only nearbyint rounds (to
  // nearest even, the default and only rounding mode TGC runs under).
  double r = std::ldexp(std::nearbyint(std::ldexp(x, -ulpExp)), ulpExp);
  if (std::fabs(r) > maxFinite)
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

double mlir::tg::ref::roundTo(DType dtype, double v) {
  switch (dtype) {
  case DType::F64:
    return v;
  case DType::F32:
    return roundToFormat(v, 24, -125, std::numeric_limits<float>::max());
  case DType::F16:
    return roundToFormat(v, 11, -13, 65504.0);
  case DType::BF16:
    return roundToFormat(v, 8, -125, 0x1.fep127);
  case DType::I1:
    return v != 0 ? 1 : 0;
  case DType::I64:
  case DType::Index:
    return std::trunc(v);
  case DType::I32: {
    if (!std::isfinite(v))
      return v;
    double w = std::fmod(std::trunc(v), 0x1p32); // two's-complement wrap
    if (w >= 0x1p31)
      w -= 0x1p32;
    else if (w < -0x1p31)
      w += 0x1p32;
    return w;
  }
  }
  llvm_unreachable("unknown dtype");
}

double Tensor::at(ArrayRef<int64_t> index) const {
  assert(index.size() == shape.size() && "index rank mismatch");
  int64_t linear = 0;
  for (auto [i, d] : llvm::zip(index, shape)) {
    assert(i >= 0 && i < d && "index out of bounds");
    linear = linear * d + i;
  }
  return data[linear];
}

std::string Tensor::typeString() const {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + dtypeName(dtype).str() + ">";
}

Tensor Tensor::filled(ArrayRef<int64_t> shape, DType dtype, double value) {
  Tensor t;
  t.shape.assign(shape.begin(), shape.end());
  t.dtype = dtype;
  t.data.assign(internal::numElements(shape), roundTo(dtype, value));
  return t;
}

Tensor Tensor::fromValues(ArrayRef<int64_t> shape, DType dtype,
                          ArrayRef<double> values) {
  assert(static_cast<int64_t>(values.size()) == internal::numElements(shape) &&
         "value count does not match the shape");
  Tensor t = filled(shape, dtype, 0);
  for (auto [out, v] : llvm::zip(t.data, values))
    out = roundTo(dtype, v);
  return t;
}

Tensor Tensor::random(ArrayRef<int64_t> shape, DType dtype, uint64_t seed,
                      uint64_t stream, double lo, double hi) {
  Tensor t = filled(shape, dtype, 0);
  double ilo = std::ceil(lo), ihi = std::ceil(hi);
  for (int64_t i = 0, e = t.numElements(); i < e; ++i) {
    uint32_t word = tgc::philoxWord(seed, stream, i);
    double u = word * 0x1p-32;
    double v;
    if (dtype == DType::I1)
      v = word & 1;
    else if (isFloat(dtype))
      v = lo + (hi - lo) * u;
    else
      v = ilo + std::floor(u * std::max(ihi - ilo, 1.0));
    t.data[i] = roundTo(dtype, v);
  }
  return t;
}

FailureOr<Tensor> Tensor::zeros(RankedTensorType type) {
  FailureOr<DType> dtype = dtypeOf(type.getElementType());
  if (failed(dtype) || !type.hasStaticShape())
    return failure();
  return filled(type.getShape(), *dtype, 0);
}

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

int64_t mlir::tg::ref::internal::numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

SmallVector<int64_t>
mlir::tg::ref::internal::stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

SmallVector<int64_t> mlir::tg::ref::internal::unravel(int64_t linear,
                                                      ArrayRef<int64_t> shape) {
  SmallVector<int64_t> index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

std::vector<int64_t>
mlir::tg::ref::internal::broadcastIndices(ArrayRef<int64_t> in,
                                          ArrayRef<int64_t> out) {
  assert(in.size() <= out.size() && "broadcast cannot drop dimensions");
  size_t lead = out.size() - in.size();
  SmallVector<int64_t> inStrides = stridesOf(in);
  std::vector<int64_t> result(numElements(out));
  for (size_t i = 0; i < result.size(); ++i) {
    SmallVector<int64_t> idx = unravel(i, out);
    int64_t pos = 0;
    for (size_t d = 0; d < in.size(); ++d)
      pos += (in[d] == 1 ? 0 : idx[d + lead]) * inStrides[d];
    result[i] = pos;
  }
  return result;
}

FailureOr<Tensor> mlir::tg::ref::internal::resultLike(Operation *op,
                                                      unsigned i) {
  // Scalars (index arithmetic) are rank-0 tensors.
  Type type = op->getResult(i).getType();
  auto shaped = dyn_cast<RankedTensorType>(type);
  FailureOr<DType> dtype = dtypeOf(shaped ? shaped.getElementType() : type);
  if (failed(dtype) || (shaped && !shaped.hasStaticShape()))
    return op->emitError("reference evaluator: unsupported result type ")
           << type;
  return Tensor::filled(shaped ? shaped.getShape() : ArrayRef<int64_t>(),
                        *dtype, 0);
}

FailureOr<Tensor> mlir::tg::ref::internal::fromAttr(Operation *op,
                                                    Attribute attr) {
  auto typed = dyn_cast<TypedAttr>(attr);
  if (!typed)
    return op->emitError("reference evaluator: unsupported constant ") << attr;
  Type type = typed.getType();
  auto shaped = dyn_cast<RankedTensorType>(type);
  FailureOr<DType> dtype = dtypeOf(shaped ? shaped.getElementType() : type);
  if (failed(dtype))
    return op->emitError("reference evaluator: unsupported constant type ")
           << type;
  ArrayRef<int64_t> shape = shaped ? shaped.getShape() : ArrayRef<int64_t>();
  Tensor t = Tensor::filled(shape, *dtype, 0);
  auto intValue = [&](const APInt &v) {
    return *dtype == DType::I1 ? double(v.getZExtValue())
                               : double(v.getSExtValue());
  };
  if (auto f = dyn_cast<FloatAttr>(attr)) {
    t.data[0] = f.getValueAsDouble();
  } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
    t.data[0] = intValue(i.getValue());
  } else if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    size_t k = 0;
    // A splat is one value: a fill, not an APFloat per element.
    if (dense.isSplat())
      std::fill(t.data.begin(), t.data.end(),
                isFloat(*dtype)
                    ? dense.getSplatValue<APFloat>().convertToDouble()
                    : intValue(dense.getSplatValue<APInt>()));
    else if (isFloat(*dtype))
      for (const APFloat &v : dense.getValues<APFloat>())
        t.data[k++] = v.convertToDouble();
    else
      for (const APInt &v : dense.getValues<APInt>())
        t.data[k++] = intValue(v);
  } else {
    return op->emitError("reference evaluator: unsupported constant "
                         "attribute (only dense elements are read): ")
           << attr;
  }
  return t;
}
