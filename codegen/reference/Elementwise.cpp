//===- Elementwise.cpp - elementwise tg ops ---------------------*- C++ -*-===//
//
// Binary ops with NumPy broadcasting, comparisons and select, the unary
// math ops, cast, constant, causal_mask and dropout. Each formula is the
// textbook one, computed in float64; the driver rounds the result.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/EvalInternal.h"
#include "dialects/TGOps.h"
#include "tgc/Philox.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::ref;
using internal::FamilyResult;

namespace {

/// `fn` applied to the broadcast operands of `op`, elementwise.
template <typename Fn>
FailureOr<Tensor> broadcastMap(Operation *op, ArrayRef<Tensor> in, Fn fn) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  SmallVector<std::vector<int64_t>> idx;
  for (const Tensor &t : in)
    idx.push_back(internal::broadcastIndices(t.shape, out->shape));
  SmallVector<double, 3> args(in.size());
  for (int64_t i = 0, e = out->numElements(); i < e; ++i) {
    for (size_t k = 0; k < in.size(); ++k)
      args[k] = in[k].data[idx[k][i]];
    out->data[i] = fn(ArrayRef<double>(args));
  }
  return out;
}

template <typename Fn>
FailureOr<Tensor> binary(Operation *op, ArrayRef<Tensor> in, Fn fn) {
  return broadcastMap(op, in.take_front(2),
                      [&](ArrayRef<double> a) { return fn(a[0], a[1]); });
}

template <typename Fn>
FailureOr<Tensor> unary(Operation *op, ArrayRef<Tensor> in, Fn fn) {
  return broadcastMap(op, in.take_front(1),
                      [&](ArrayRef<double> a) { return fn(a[0]); });
}

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

/// NaN-propagating maximum and minimum (as in PyTorch's maximum/minimum).
double maximum(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? nan : std::max(a, b);
}
double minimum(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? nan : std::min(a, b);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double gelu(double x, GeluApproximation approx) {
  if (approx == GeluApproximation::tanh)
    return 0.5 * x *
           (1.0 +
            std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
}

bool compare(CmpPredicate pred, double a, double b) {
  switch (pred) {
  case CmpPredicate::eq:
    return a == b;
  case CmpPredicate::ne:
    return a != b;
  case CmpPredicate::lt:
    return a < b;
  case CmpPredicate::le:
    return a <= b;
  case CmpPredicate::gt:
    return a > b;
  case CmpPredicate::ge:
    return a >= b;
  }
  llvm_unreachable("unknown predicate");
}

/// result[..., i, j] = j > i ? value : input[..., i, j].
FailureOr<Tensor> causalMask(CausalMaskOp op, const Tensor &in) {
  Tensor out = in;
  int64_t rows = in.shape[in.rank() - 2], cols = in.shape[in.rank() - 1];
  double value = op.getValue().convertToDouble();
  for (int64_t i = 0, e = out.numElements(); i < e; ++i)
    if (i % cols > (i / cols) % rows)
      out.data[i] = value;
  return out;
}

/// Inverted dropout with the mask of tgc/Philox.h. The input is multiplied
/// by the mask, as in PyTorch, so a dropped inf or NaN gives NaN.
FailureOr<Tensor> dropout(DropoutOp op, const Tensor &in, const Tensor &seed) {
  Tensor out = in;
  double p = op.getP().convertToDouble();
  auto seedBits = static_cast<uint64_t>(static_cast<int64_t>(seed.data[0]));
  auto stream = static_cast<uint64_t>(op.getStreamAttr().getInt());
  double scale = 1.0 / (1.0 - p);
  for (int64_t i = 0, e = out.numElements(); i < e; ++i)
    out.data[i] =
        in.data[i] * (tgc::dropoutKeep(seedBits, stream, i, p) ? scale : 0.0);
  return out;
}

/// tg.random with the Philox mapping of tgc/Philox.h.
FailureOr<Tensor> random(RandomOp op, const Tensor &seed) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  auto seedBits = static_cast<uint64_t>(static_cast<int64_t>(seed.data[0]));
  auto stream = static_cast<uint64_t>(op.getStreamAttr().getInt());
  double a = op.getA().convertToDouble(), b = op.getB().convertToDouble();
  bool normal = op.getDistribution() == RandomDistribution::normal;
  for (int64_t i = 0, e = out->numElements(); i < e; ++i)
    out->data[i] = normal
                       ? a + b * tgc::philoxNormal(seedBits, stream, i)
                       : a + (b - a) * tgc::philoxUniform(seedBits, stream, i);
  return out;
}

} // namespace

FamilyResult mlir::tg::ref::internal::evalElementwise(Operation *op,
                                                      ArrayRef<Tensor> in) {
  using R = FamilyResult;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](AddOp) { return binary(op, in, std::plus<double>()); })
      .Case([&](SubOp) { return binary(op, in, std::minus<double>()); })
      .Case([&](MulOp) { return binary(op, in, std::multiplies<double>()); })
      .Case([&](DivOp) { return binary(op, in, std::divides<double>()); })
      .Case([&](PowOp) {
        return binary(op, in,
                      [](double a, double b) { return std::pow(a, b); });
      })
      .Case([&](MaximumOp) { return binary(op, in, maximum); })
      .Case([&](MinimumOp) { return binary(op, in, minimum); })
      .Case([&](CmpOp c) {
        CmpPredicate pred = c.getPredicate();
        return binary(op, in, [&](double a, double b) {
          return compare(pred, a, b) ? 1.0 : 0.0;
        });
      })
      .Case([&](SelectOp) {
        return broadcastMap(
            op, in, [](ArrayRef<double> a) { return a[0] ? a[1] : a[2]; });
      })
      .Case([&](NegOp) { return unary(op, in, [](double x) { return -x; }); })
      .Case([&](AbsOp) {
        return unary(op, in, [](double x) { return std::fabs(x); });
      })
      .Case([&](ExpOp) {
        return unary(op, in, [](double x) { return std::exp(x); });
      })
      .Case([&](LogOp) {
        return unary(op, in, [](double x) { return std::log(x); });
      })
      .Case([&](SqrtOp) {
        return unary(op, in, [](double x) { return std::sqrt(x); });
      })
      .Case([&](RsqrtOp) {
        return unary(op, in, [](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case([&](TanhOp) {
        return unary(op, in, [](double x) { return std::tanh(x); });
      })
      .Case([&](CosOp) {
        return unary(op, in, [](double x) { return std::cos(x); });
      })
      .Case([&](SinOp) {
        return unary(op, in, [](double x) { return std::sin(x); });
      })
      .Case([&](ErfOp) {
        return unary(op, in, [](double x) { return std::erf(x); });
      })
      .Case([&](SigmoidOp) { return unary(op, in, sigmoid); })
      .Case([&](ReluOp) {
        // NaN stays NaN, as in PyTorch.
        return unary(op, in, [](double x) { return x < 0 ? 0.0 : x; });
      })
      .Case([&](SiluOp) {
        return unary(op, in, [](double x) { return x * sigmoid(x); });
      })
      .Case([&](GeluOp g) {
        GeluApproximation approx = g.getApproximate();
        return unary(op, in, [&](double x) { return gelu(x, approx); });
      })
      // The driver rounds (floats) or truncates (integers) to the result type.
      .Case([&](CastOp) { return unary(op, in, [](double x) { return x; }); })
      .Case([&](ConstantOp c) -> R { return fromAttr(op, c.getValue()); })
      .Case([&](CausalMaskOp c) -> R { return causalMask(c, in[0]); })
      .Case([&](DropoutOp d) -> R { return dropout(d, in[0], in[1]); })
      .Case([&](RandomOp r) -> R { return random(r, in[0]); })
      // Integer arithmetic of scf.for bounds and micro-batch offsets.
      .Case([&](arith::AddIOp) { return binary(op, in, std::plus<double>()); })
      .Case([&](arith::SubIOp) { return binary(op, in, std::minus<double>()); })
      .Case([&](arith::MulIOp) {
        return binary(op, in, std::multiplies<double>());
      })
      .Case([&](arith::DivSIOp) {
        return binary(op, in, std::divides<double>());
      })
      .Case([&](arith::RemSIOp) {
        return binary(op, in,
                      [](double a, double b) { return std::fmod(a, b); });
      })
      .Case([&](arith::IndexCastOp) {
        return unary(op, in, [](double x) { return x; });
      })
      .Default([](Operation *) -> R { return std::nullopt; });
}
