//===- ConvPool.cpp - conv2d and pooling ------------------------*- C++ -*-===//
//
// Direct loops over NCHW tensors: no im2col, no tiling, so the index
// arithmetic can be read against the op descriptions. Each forward op and
// its backward ops share one enumeration of the index relation (every
// (input, weight, output) tap of a convolution, every pooling window), so
// the backward ops are, by construction, the transposes of the forward.
// Zero padding for conv2d; padded positions never win a max and count in
// an average only with count_include_pad.
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

/// The geometry of a conv2d: input [N, C, H, W], weight [O, C/groups, KH,
/// KW], output [N, O, OH, OW].
struct ConvGeometry {
  int64_t n, c, h, w, o, cg, kh, kw, oh, ow, groups;
  ArrayRef<int64_t> stride, padding, dilation;

  /// Calls fn(inPos, weightPos, outPos) for every tap:
  ///   out[b, oc, y, x] += in[b, g * cg + ic, y*sh - ph + i*dh,
  ///                          x*sw - pw + j*dw] * weight[oc, ic, i, j]
  /// with g = oc / (O / groups). A tap in the padding has inPos = -1: it is
  /// a zero that is still multiplied (as in PyTorch and the CPU backend,
  /// which pad), so an inf weight over the padding gives NaN.
  template <typename Fn> void forEachTap(Fn fn) const {
    int64_t og = o / groups;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oc = 0; oc < o; ++oc)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x)
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  int64_t iy = y * stride[0] - padding[0] + i * dilation[0];
                  int64_t ix = x * stride[1] - padding[1] + j * dilation[1];
                  bool padded = iy < 0 || iy >= h || ix < 0 || ix >= w;
                  int64_t chan = (oc / og) * cg + ic;
                  fn(padded ? -1 : ((b * c + chan) * h + iy) * w + ix,
                     ((oc * cg + ic) * kh + i) * kw + j,
                     ((b * o + oc) * oh + y) * ow + x);
                }
  }
};

/// The input element at `pos`, or the padding's zero at -1.
double at(const Tensor &in, int64_t pos) { return pos < 0 ? 0.0 : in.data[pos]; }

/// The geometry from the shapes of input, weight and output and the op's
/// attributes (shared by conv2d and its two backward ops).
template <typename OpTy>
ConvGeometry convGeometry(OpTy op, ArrayRef<int64_t> in, ArrayRef<int64_t> wt,
                          ArrayRef<int64_t> out) {
  return {in[0],
          in[1],
          in[2],
          in[3],
          wt[0],
          wt[1],
          wt[2],
          wt[3],
          out[2],
          out[3],
          op.getGroupsAttr().getInt(),
          op.getStride(),
          op.getPadding(),
          op.getDilation()};
}

FailureOr<Tensor> conv2d(Conv2dOp op, const Tensor &in, const Tensor &w) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  convGeometry(op, in.shape, w.shape, out->shape)
      .forEachTap([&](int64_t ip, int64_t wp, int64_t yp) {
        out->data[yp] += at(in, ip) * w.data[wp];
      });
  return out;
}

FailureOr<Tensor> conv2dGradInput(Conv2dGradInputOp op, const Tensor &grad,
                                  const Tensor &w) {
  FailureOr<Tensor> dx = internal::resultLike(op);
  if (failed(dx))
    return failure();
  convGeometry(op, dx->shape, w.shape, grad.shape)
      .forEachTap([&](int64_t ip, int64_t wp, int64_t yp) {
        if (ip >= 0)
          dx->data[ip] += grad.data[yp] * w.data[wp];
      });
  return dx;
}

FailureOr<Tensor> conv2dGradWeight(Conv2dGradWeightOp op, const Tensor &in,
                                   const Tensor &grad) {
  FailureOr<Tensor> dw = internal::resultLike(op);
  if (failed(dw))
    return failure();
  convGeometry(op, in.shape, dw->shape, grad.shape)
      .forEachTap([&](int64_t ip, int64_t wp, int64_t yp) {
        dw->data[wp] += at(in, ip) * grad.data[yp];
      });
  return dw;
}

/// Calls fn(outPos, positions) for every pooling window of an input of
/// shape `in` and output of shape `out`, with the in-image positions of the
/// window in row-major order.
template <typename Fn>
void forEachWindow(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                   ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                   ArrayRef<int64_t> p, Fn fn) {
  int64_t planes = in[0] * in[1], h = in[2], w = in[3];
  int64_t oh = out[2], ow = out[3];
  SmallVector<int64_t, 16> positions;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        positions.clear();
        for (int64_t i = 0; i < k[0]; ++i)
          for (int64_t j = 0; j < k[1]; ++j) {
            int64_t iy = y * s[0] - p[0] + i, ix = x * s[1] - p[1] + j;
            if (iy >= 0 && iy < h && ix >= 0 && ix < w)
              positions.push_back((pl * h + iy) * w + ix);
          }
        fn((pl * oh + y) * ow + x, ArrayRef<int64_t>(positions));
      }
}

/// The first of `positions` holding the maximum of `in` over them, or the
/// last NaN if there is one (PyTorch's scan: a NaN always replaces the
/// running maximum), or -1 for an empty window.
int64_t argmax(const Tensor &in, ArrayRef<int64_t> positions) {
  int64_t best = -1;
  for (int64_t pos : positions) {
    double v = in.data[pos];
    if (best < 0 || std::isnan(v) || v > in.data[best])
      best = pos;
  }
  return best;
}

/// The divisor of an average-pooling window with `unpadded` positions: the
/// whole window with count_include_pad (PyTorch's default), else the
/// unpadded positions (at least 1, so an all-padding window gives 0).
double avgDivisor(ArrayRef<int64_t> kernel, bool countIncludePad,
                  size_t unpadded) {
  return countIncludePad ? double(kernel[0] * kernel[1])
                         : double(std::max<size_t>(unpadded, 1));
}

/// max_pool2d: a window entirely in the padding gives -inf.
FailureOr<Tensor> maxPool(MaxPool2dOp op, const Tensor &in) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  forEachWindow(in.shape, out->shape, op.getKernel(), op.getStride(),
                op.getPadding(), [&](int64_t o, ArrayRef<int64_t> window) {
                  int64_t best = argmax(in, window);
                  out->data[o] = best < 0
                                     ? -std::numeric_limits<double>::infinity()
                                     : in.data[best];
                });
  return out;
}

/// avg_pool2d: a window entirely in the padding gives 0.
FailureOr<Tensor> avgPool(AvgPool2dOp op, const Tensor &in) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  forEachWindow(in.shape, out->shape, op.getKernel(), op.getStride(),
                op.getPadding(), [&](int64_t o, ArrayRef<int64_t> window) {
                  double sum = 0;
                  for (int64_t pos : window)
                    sum += in.data[pos];
                  out->data[o] = sum / avgDivisor(op.getKernel(),
                                                  op.getCountIncludePad(),
                                                  window.size());
                });
  return out;
}

/// max_pool2d_grad: each window's cotangent goes to its argmax.
FailureOr<Tensor> maxPoolGrad(MaxPool2dGradOp op, const Tensor &grad,
                              const Tensor &in) {
  FailureOr<Tensor> dx = internal::resultLike(op);
  if (failed(dx))
    return failure();
  forEachWindow(in.shape, grad.shape, op.getKernel(), op.getStride(),
                op.getPadding(), [&](int64_t o, ArrayRef<int64_t> window) {
                  int64_t best = argmax(in, window);
                  if (best >= 0)
                    dx->data[best] += grad.data[o];
                });
  return dx;
}

/// avg_pool2d_grad: each window's cotangent is shared by its positions.
FailureOr<Tensor> avgPoolGrad(AvgPool2dGradOp op, const Tensor &grad) {
  FailureOr<Tensor> dx = internal::resultLike(op);
  if (failed(dx))
    return failure();
  forEachWindow(dx->shape, grad.shape, op.getKernel(), op.getStride(),
                op.getPadding(), [&](int64_t o, ArrayRef<int64_t> window) {
                  double n = avgDivisor(op.getKernel(),
                                        op.getCountIncludePad(), window.size());
                  for (int64_t pos : window)
                    dx->data[pos] += grad.data[o] / n;
                });
  return dx;
}

} // namespace

FamilyResult mlir::tg::ref::internal::evalConvPool(Operation *op,
                                                   ArrayRef<Tensor> in) {
  using R = FamilyResult;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](Conv2dOp c) -> R { return conv2d(c, in[0], in[1]); })
      .Case([&](Conv2dGradInputOp c) -> R {
        return conv2dGradInput(c, in[0], in[1]);
      })
      .Case([&](Conv2dGradWeightOp c) -> R {
        return conv2dGradWeight(c, in[0], in[1]);
      })
      .Case([&](MaxPool2dOp m) -> R { return maxPool(m, in[0]); })
      .Case([&](AvgPool2dOp a) -> R { return avgPool(a, in[0]); })
      .Case(
          [&](MaxPool2dGradOp m) -> R { return maxPoolGrad(m, in[0], in[1]); })
      .Case([&](AvgPool2dGradOp a) -> R { return avgPoolGrad(a, in[0]); })
      .Default([](Operation *) -> R { return std::nullopt; });
}
