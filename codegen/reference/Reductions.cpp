//===- Reductions.cpp - reference semantics of reducing tg ops --*- C++ -*-===//
//
// sum/mean/max, softmax/log_softmax, the losses, the normalisations and
// matmul: every op that combines many input elements into one output
// element. Accumulation is in float64, in row-major order, with the
// formulas of tg-decompose so that decomposing an op leaves its value
// unchanged up to float64 rounding.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/EvalInternal.h"
#include "dialects/TGOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::ref;
using internal::FamilyResult;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

double maxOf(double a, double b) {
  return std::isnan(a) || std::isnan(b)
             ? std::numeric_limits<double>::quiet_NaN()
             : std::max(a, b);
}

enum class Reduce { Sum, Mean, Max };

FailureOr<Tensor> reduce(Operation *op, const Tensor &in,
                         ArrayRef<int64_t> axes, Reduce kind) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  // Positions in the keepdims shape linearise like the result, whether or
  // not the result keeps the reduced dimensions.
  SmallVector<int64_t> keepShape(in.shape.begin(), in.shape.end());
  int64_t count = 1;
  for (int64_t a : axes) {
    count *= in.shape[a];
    keepShape[a] = 1;
  }
  std::vector<int64_t> outOf = internal::broadcastIndices(keepShape, in.shape);
  if (kind == Reduce::Max)
    std::fill(out->data.begin(), out->data.end(), -inf);
  for (int64_t i = 0, e = in.numElements(); i < e; ++i) {
    double &acc = out->data[outOf[i]];
    acc = kind == Reduce::Max ? maxOf(acc, in.data[i]) : acc + in.data[i];
  }
  if (kind == Reduce::Mean)
    for (double &v : out->data)
      v /= count;
  return out;
}

/// Calls fn(base, stride, n) for every line of `shape` along `axis`: the
/// elements base + k * stride, k < n.
template <typename Fn>
void forEachLine(ArrayRef<int64_t> shape, int64_t axis, Fn fn) {
  int64_t n = shape[axis],
          inner = internal::numElements(shape.drop_front(axis + 1));
  int64_t outer = internal::numElements(shape.take_front(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      fn(o * n * inner + i, inner, n);
}

/// softmax (log = false) or log_softmax (log = true) along `axis`.
Tensor softmax(const Tensor &in, int64_t axis, bool log) {
  if (axis < 0)
    axis += in.rank();
  Tensor out = in;
  forEachLine(in.shape, axis, [&](int64_t base, int64_t stride, int64_t n) {
    double m = -inf;
    for (int64_t k = 0; k < n; ++k)
      m = maxOf(m, in.data[base + k * stride]);
    double sum = 0;
    for (int64_t k = 0; k < n; ++k)
      sum += std::exp(in.data[base + k * stride] - m);
    for (int64_t k = 0; k < n; ++k) {
      double shifted = in.data[base + k * stride] - m;
      out.data[base + k * stride] =
          log ? shifted - std::log(sum) : std::exp(shifted) / sum;
    }
  });
  return out;
}

/// Mean over non-ignored positions of -log_softmax(logits)[label]. A label
/// outside [0, C) that is not ignore_index counts as a position with loss 0
/// (what one_hot makes of it in the decomposition).
FailureOr<Tensor> crossEntropy(CrossEntropyOp op, const Tensor &logits,
                               const Tensor &labels) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  Tensor logp = softmax(logits, logits.rank() - 1, /*log=*/true);
  int64_t classes = logits.shape.back();
  double ignore = static_cast<double>(op.getIgnoreIndexAttr().getInt());
  double total = 0, count = 0;
  for (int64_t r = 0, e = labels.numElements(); r < e; ++r) {
    double label = labels.data[r];
    if (label == ignore)
      continue;
    count += 1;
    if (label >= 0 && label < classes)
      total += -logp.data[r * classes + static_cast<int64_t>(label)];
  }
  out->data[0] = total / std::max(count, 1.0);
  return out;
}

FailureOr<Tensor> mseLoss(Operation *op, const Tensor &a, const Tensor &b) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  double sum = 0;
  for (int64_t i = 0, e = a.numElements(); i < e; ++i)
    sum += (a.data[i] - b.data[i]) * (a.data[i] - b.data[i]);
  out->data[0] = sum / a.numElements();
  return out;
}

/// layer_norm (centre = true) or rms_norm over the last dimension.
Tensor normalise(const Tensor &in, const Tensor *scale, const Tensor *bias,
                 double eps, bool centre) {
  Tensor out = in;
  int64_t d = in.shape.back();
  for (int64_t base = 0, e = in.numElements(); base < e; base += d) {
    double mean = 0;
    if (centre) {
      for (int64_t k = 0; k < d; ++k)
        mean += in.data[base + k];
      mean /= d;
    }
    double sq = 0;
    for (int64_t k = 0; k < d; ++k)
      sq += (in.data[base + k] - mean) * (in.data[base + k] - mean);
    double rstd = 1.0 / std::sqrt(sq / d + eps);
    for (int64_t k = 0; k < d; ++k) {
      double y = (in.data[base + k] - mean) * rstd;
      if (scale)
        y *= scale->data[k];
      if (bias)
        y += bias->data[k];
      out.data[base + k] = y;
    }
  }
  return out;
}

/// op(lhs) @ op(rhs) over broadcast batch dimensions.
FailureOr<Tensor> matmul(MatmulOp op, const Tensor &lhs, const Tensor &rhs) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs();
  int64_t r = out->rank();
  int64_t m = out->shape[r - 2], n = out->shape[r - 1];
  int64_t k = tl ? lhs.shape[lhs.rank() - 2] : lhs.shape.back();
  ArrayRef<int64_t> batch = ArrayRef<int64_t>(out->shape).drop_back(2);
  std::vector<int64_t> lb = internal::broadcastIndices(
      ArrayRef<int64_t>(lhs.shape).drop_back(2), batch);
  std::vector<int64_t> rb = internal::broadcastIndices(
      ArrayRef<int64_t>(rhs.shape).drop_back(2), batch);
  for (size_t b = 0; b < lb.size(); ++b) {
    const double *a = lhs.data.data() + lb[b] * m * k;
    const double *w = rhs.data.data() + rb[b] * k * n;
    double *c = out->data.data() + b * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (tl ? a[p * m + i] : a[i * k + p]) *
                 (tr ? w[j * k + p] : w[p * n + j]);
        c[i * n + j] = acc;
      }
  }
  return out;
}

} // namespace

FamilyResult mlir::tg::ref::internal::evalReduction(Operation *op,
                                                    ArrayRef<Tensor> in) {
  using R = FamilyResult;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](SumOp s) -> R {
        return reduce(op, in[0], s.getAxes(), Reduce::Sum);
      })
      .Case([&](MeanOp s) -> R {
        return reduce(op, in[0], s.getAxes(), Reduce::Mean);
      })
      .Case([&](MaxOp s) -> R {
        return reduce(op, in[0], s.getAxes(), Reduce::Max);
      })
      .Case([&](SoftmaxOp s) -> R {
        return softmax(in[0], s.getAxisAttr().getInt(), false);
      })
      .Case([&](LogSoftmaxOp s) -> R {
        return softmax(in[0], s.getAxisAttr().getInt(), true);
      })
      .Case(
          [&](CrossEntropyOp c) -> R { return crossEntropy(c, in[0], in[1]); })
      .Case([&](MseLossOp) -> R { return mseLoss(op, in[0], in[1]); })
      .Case([&](LayerNormOp l) -> R {
        unsigned next = 1;
        const Tensor *scale = l.getScale() ? &in[next++] : nullptr;
        const Tensor *bias = l.getBias() ? &in[next] : nullptr;
        return normalise(in[0], scale, bias, l.getEps().convertToDouble(),
                         true);
      })
      .Case([&](RmsNormOp l) -> R {
        const Tensor *scale = l.getScale() ? &in[1] : nullptr;
        return normalise(in[0], scale, nullptr, l.getEps().convertToDouble(),
                         false);
      })
      .Case([&](MatmulOp m) -> R { return matmul(m, in[0], in[1]); })
      .Default([](Operation *) -> R { return std::nullopt; });
}
