//===- ConvPool.cpp - reference semantics of conv2d and pooling -*- C++ -*-===//
//
// Direct loops over NCHW tensors: no im2col, no tiling, so the index
// arithmetic can be read against the op descriptions. Zero padding for
// conv2d; padded positions never win a max and are not counted in an
// average.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/EvalInternal.h"
#include "dialects/TGOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::ref;
using internal::FamilyResult;

namespace {

/// out[n, o, y, x] = sum over c, kh, kw of
///   in[n, g * C/groups + c, y*sh - ph + kh*dh, x*sw - pw + kw*dw] * w[o, c, kh, kw]
/// where g = o / (O / groups); out-of-range input positions are zeros.
FailureOr<Tensor> conv2d(Conv2dOp op, const Tensor &in, const Tensor &w) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  ArrayRef<int64_t> s = op.getStride(), p = op.getPadding(),
                    d = op.getDilation();
  int64_t groups = op.getGroups();
  int64_t n = in.shape[0], c = in.shape[1], h = in.shape[2], wd = in.shape[3];
  int64_t o = w.shape[0], cg = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  int64_t oh = out->shape[2], ow = out->shape[3];
  int64_t og = o / groups;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double acc = 0;
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t iy = y * s[0] - p[0] + i * d[0];
                int64_t ix = x * s[1] - p[1] + j * d[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                  continue;
                int64_t chan = (oc / og) * cg + ic;
                acc += in.data[((b * c + chan) * h + iy) * wd + ix] *
                       w.data[((oc * cg + ic) * kh + i) * kw + j];
              }
          out->data[((b * o + oc) * oh + y) * ow + x] = acc;
        }
  return out;
}

/// Max (isMax) or average pooling over the in-range part of each window.
/// A window entirely in the padding gives -inf (max) or 0 (average).
FailureOr<Tensor> pool(Operation *op, const Tensor &in, ArrayRef<int64_t> k,
                       ArrayRef<int64_t> s, ArrayRef<int64_t> p, bool isMax) {
  FailureOr<Tensor> out = internal::resultLike(op);
  if (failed(out))
    return failure();
  int64_t planes = in.shape[0] * in.shape[1], h = in.shape[2],
          w = in.shape[3];
  int64_t oh = out->shape[2], ow = out->shape[3];
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        double acc = isMax ? -std::numeric_limits<double>::infinity() : 0;
        int64_t count = 0;
        for (int64_t i = 0; i < k[0]; ++i)
          for (int64_t j = 0; j < k[1]; ++j) {
            int64_t iy = y * s[0] - p[0] + i, ix = x * s[1] - p[1] + j;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w)
              continue;
            double v = in.data[(pl * h + iy) * w + ix];
            acc = !isMax ? acc + v
                  : std::isnan(v) || std::isnan(acc) ? std::nan("")
                                                     : std::max(acc, v);
            ++count;
          }
        out->data[(pl * oh + y) * ow + x] =
            isMax ? acc : acc / std::max<int64_t>(count, 1);
      }
  return out;
}

} // namespace

FamilyResult mlir::tg::ref::internal::evalConvPool(Operation *op,
                                                 ArrayRef<Tensor> in) {
  using R = FamilyResult;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](Conv2dOp c) -> R { return conv2d(c, in[0], in[1]); })
      .Case([&](MaxPool2dOp m) -> R {
        return pool(op, in[0], m.getKernel(), m.getStride(), m.getPadding(),
                    true);
      })
      .Case([&](AvgPool2dOp a) -> R {
        return pool(op, in[0], a.getKernel(), a.getStride(), a.getPadding(),
                    false);
      })
      .Default([](Operation *) -> R { return std::nullopt; });
}
