//===- Attention.cpp - reference tg.attention and its gradient --*- C++ -*-===//
//
// tg.attention and tg.attention_grad evaluated directly from their
// definitions, row by row in float64: an oracle independent of the
// decomposition in tg-decompose, against which that and every kernel is
// checked.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/EvalInternal.h"
#include "dialects/TGOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::ref;

namespace {

/// The shapes of one attention: q [B, H, Tq, d], k [B, H, Tk, d],
/// v [B, H, Tk, dv].
struct Dims {
  int64_t heads, tq, tk, d, dv;
  int64_t qRow(int64_t bh, int64_t i) const { return (bh * tq + i) * d; }
  int64_t kRow(int64_t bh, int64_t j) const { return (bh * tk + j) * d; }
  int64_t vRow(int64_t bh, int64_t j) const { return (bh * tk + j) * dv; }
  int64_t oRow(int64_t bh, int64_t i) const { return (bh * tq + i) * dv; }
};

Dims dimsOf(const Tensor &q, const Tensor &v) {
  return {q.shape[0] * q.shape[1], q.shape[2], v.shape[2], q.shape[3],
          v.shape[3]};
}

/// Row i of the probabilities P = softmax(scale q k^T) (masked where j > i
/// when causal), from the log-sum-exp `lse` of that row.
void probabilities(const Tensor &q, const Tensor &k, const Dims &n, int64_t bh,
                   int64_t i, bool causal, double scale, double lse,
                   std::vector<double> &p) {
  for (int64_t j = 0; j < n.tk; ++j) {
    if (causal && j > i) {
      p[j] = 0;
      continue;
    }
    double s = 0;
    for (int64_t c = 0; c < n.d; ++c)
      s += q.data[n.qRow(bh, i) + c] * k.data[n.kRow(bh, j) + c];
    p[j] = std::exp(scale * s - lse);
  }
}

/// The log-sum-exp of row i of the scores.
double logSumExp(const Tensor &q, const Tensor &k, const Dims &n, int64_t bh,
                 int64_t i, bool causal, double scale) {
  std::vector<double> s(n.tk, -std::numeric_limits<double>::infinity());
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n.tk && !(causal && j > i); ++j) {
    double dot = 0;
    for (int64_t c = 0; c < n.d; ++c)
      dot += q.data[n.qRow(bh, i) + c] * k.data[n.kRow(bh, j) + c];
    s[j] = scale * dot;
    m = std::max(m, s[j]);
  }
  double sum = 0;
  for (double x : s)
    sum += std::exp(x - m);
  return m + std::log(sum);
}

FailureOr<SmallVector<Tensor>> forward(AttentionOp op, ArrayRef<Tensor> in) {
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  FailureOr<Tensor> out = internal::resultLike(op, 0);
  FailureOr<Tensor> lse = internal::resultLike(op, 1);
  if (failed(out) || failed(lse))
    return failure();
  Dims n = dimsOf(q, v);
  bool causal = op.getCausal();
  double scale = op.getScale().convertToDouble();
  std::vector<double> p(n.tk);
  for (int64_t bh = 0; bh < n.heads; ++bh)
    for (int64_t i = 0; i < n.tq; ++i) {
      double l = logSumExp(q, k, n, bh, i, causal, scale);
      lse->data[bh * n.tq + i] = l;
      probabilities(q, k, n, bh, i, causal, scale, l, p);
      for (int64_t j = 0; j < n.tk; ++j)
        for (int64_t c = 0; c < n.dv; ++c)
          out->data[n.oRow(bh, i) + c] += p[j] * v.data[n.vRow(bh, j) + c];
    }
  return SmallVector<Tensor>{std::move(*out), std::move(*lse)};
}

FailureOr<SmallVector<Tensor>> backward(AttentionGradOp op,
                                        ArrayRef<Tensor> in) {
  const Tensor &dout = in[0], &dlse = in[1], &q = in[2], &k = in[3],
               &v = in[4], &o = in[5], &lse = in[6];
  SmallVector<Tensor> grads;
  for (unsigned r = 0; r < 3; ++r) {
    FailureOr<Tensor> g = internal::resultLike(op, r);
    if (failed(g))
      return failure();
    grads.push_back(std::move(*g));
  }
  Tensor &dq = grads[0], &dk = grads[1], &dv = grads[2];
  Dims n = dimsOf(q, v);
  bool causal = op.getCausal();
  double scale = op.getScale().convertToDouble();
  std::vector<double> p(n.tk);
  for (int64_t bh = 0; bh < n.heads; ++bh)
    for (int64_t i = 0; i < n.tq; ++i) {
      int64_t row = bh * n.tq + i;
      probabilities(q, k, n, bh, i, causal, scale, lse.data[row], p);
      // d lse_i / d s_ij = P_ij, so the log-sum-exp's cotangent joins the
      // row's dot product.
      double rowDot = -dlse.data[row];
      for (int64_t c = 0; c < n.dv; ++c)
        rowDot += dout.data[n.oRow(bh, i) + c] * o.data[n.oRow(bh, i) + c];
      for (int64_t j = 0; j < n.tk; ++j) {
        if (p[j] == 0)
          continue;
        double dp = 0;
        for (int64_t c = 0; c < n.dv; ++c) {
          dp += dout.data[n.oRow(bh, i) + c] * v.data[n.vRow(bh, j) + c];
          dv.data[n.vRow(bh, j) + c] += p[j] * dout.data[n.oRow(bh, i) + c];
        }
        double ds = scale * p[j] * (dp - rowDot);
        for (int64_t c = 0; c < n.d; ++c) {
          dq.data[n.qRow(bh, i) + c] += ds * k.data[n.kRow(bh, j) + c];
          dk.data[n.kRow(bh, j) + c] += ds * q.data[n.qRow(bh, i) + c];
        }
      }
    }
  return grads;
}

} // namespace

internal::MultiResult internal::evalAttention(Operation *op,
                                              ArrayRef<Tensor> operands) {
  if (auto a = dyn_cast<AttentionOp>(op))
    return forward(a, operands);
  if (auto g = dyn_cast<AttentionGradOp>(op))
    return backward(g, operands);
  return std::nullopt;
}
