//===- SimtConvPool.cpp - convolution and pooling GPU kernels ---*- C++ -*-===//
//
// LeNet-sized convolutions and max pooling (NCHW, OIHW, any stride,
// padding, dilation and groups) as direct SIMT kernels: one thread per
// element of the op's result, which loops over everything that element
// sums or compares. Every kernel is a gather, so no two threads write one
// element and no atomics are needed: the sums have a fixed order and are
// deterministic run to run.
//
//   conv2d              y[n,o,oy,ox]  = sum_{c,kh,kw} x[n,c,ih,iw] w[o,c,kh,kw]
//   conv2d_grad_input   dx[n,c,ih,iw] = sum over the (o, kh, kw) whose window
//                       reads (ih, iw): dy[n,o,oy,ox] w[o,c,kh,kw]
//   conv2d_grad_weight  dw[o,c,kh,kw] = sum_{n,oy,ox} dy[n,o,oy,ox] x[n,c,ih,iw]
//   max_pool2d          the window's maximum (a NaN wins, then the first
//                       maximum, tg.max_pool2d's rule)
//   max_pool2d_grad     dx[n,c,h,w] = the sum of dy over the windows whose
//                       maximum is at (h, w), windows in row-major order
//
// Products accumulate in f32 (bf16/f16 operands widen on load, the result
// rounds once on store). These are correct rather than fast kernels: an
// implicit-GEMM convolution is the next step for larger CNNs.
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/SimtKernels.h"
#include "codegen/nvptx/SimtScalar.h"

#include "dialects/TGOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace tg::nvptx::detail {

namespace {

constexpr int kThreads = 256;

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
Type elemOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// The window geometry shared by the ops: input [N, C, H, W], output
/// [N, O, OH, OW], kernel KH x KW, stride, padding, dilation.
struct Window {
  int64_t n, c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  int64_t groups = 1;
};

Window windowOf(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                ArrayRef<int64_t> padding) {
  return Window{in[0],     in[1],     in[2],      in[3],     out[1],
                out[2],    out[3],    kernel[0],  kernel[1], stride[0],
                stride[1], padding[0], padding[1]};
}

/// Element `off` of `base` (compute type of `elem`) when `ok`, else 0; the
/// address is clamped to element 0 so that it stays inside the buffer.
Value loadOrZero(KernelBuilder &w, Value base, Value off, Value ok, Type elem) {
  Value v = loadElement(w, base, w.select(ok, off, w.i32c(0)), elem);
  return w.select(ok, v, scalarConstant(w, elem, 0.0));
}

/// ((a * sb + b) * sc + c) * sd + d: the row-major offset of a 4-D index.
Value offset4(KernelBuilder &w, Value a, Value b, Value c, Value d,
              int64_t sb, int64_t sc, int64_t sd) {
  return w.add(w.muli(w.add(w.muli(w.add(w.muli(a, sb), b), sc), c), sd), d);
}

/// The output position of tap `k` (stride s, padding p, dilation d) that
/// reads input position `i`, and whether it exists in [0, size): i + p - k*d
/// must be a non-negative multiple of s. Negative values wrap to large
/// unsigned ones, which the bound check rejects.
std::pair<Value, Value> tapSource(KernelBuilder &w, Value i, Value k,
                                  int64_t s, int64_t p, int64_t d,
                                  int64_t size) {
  Value t = w.sub(w.addi(i, p), w.muli(k, d));
  Value q = w.udiv(t, w.i32c(s));
  Value ok = w.and_(w.icmp(LLVM::ICmpPredicate::eq, w.urem(t, w.i32c(s)),
                           w.i32c(0)),
                    w.ult(q, w.i32c(size)));
  return {q, ok};
}

/// The f32 sum, over the box [0, bounds) in row-major order, of the terms
/// `step` adds to the running sum given the loop indices.
Value sumOverBox(KernelBuilder &w, ArrayRef<int64_t> bounds,
                 llvm::function_ref<Value(ArrayRef<Value>, Value)> step) {
  SmallVector<scf::ForOp> loops;
  SmallVector<Value> ivs;
  Value acc = w.f32c(0.0);
  for (int64_t b : bounds) {
    loops.push_back(w.openFor(w.i32c(b), ValueRange{acc}));
    acc = loops.back().getRegionIterArgs()[0];
    ivs.push_back(loops.back().getInductionVar());
  }
  acc = step(ivs, acc);
  for (scf::ForOp loop : llvm::reverse(loops)) {
    w.closeFor(loop, acc);
    acc = loop.getResult(0);
  }
  return acc;
}

void buildConv(mlir::tg::Conv2dOp op, const Window &g, SimtKernel &k,
               ModuleOp kernels, StringRef sym) {
  Type xe = elemOf(op.getInput()), we = elemOf(op.getWeight());
  SmallVector<Value> idx = beginElementKernel(k, kernels, sym, 3,
                                              shapeOf(op.getResult()), op.getLoc());
  KernelBuilder &w = *k.w;
  int64_t cg = g.c / g.groups, og = g.o / g.groups;
  Value n = idx[0], o = idx[1], oy = idx[2], ox = idx[3];
  Value c0 = w.muli(w.udiv(o, w.i32c(og)), cg);
  Value y = sumOverBox(w, {cg, g.kh, g.kw}, [&](ArrayRef<Value> iv, Value acc) {
    Value c = iv[0], kh = iv[1], kw = iv[2];
    Value ih = w.add(w.addi(w.muli(oy, g.sh), -g.ph), w.muli(kh, g.dh));
    Value iw = w.add(w.addi(w.muli(ox, g.sw), -g.pw), w.muli(kw, g.dw));
    Value ok = w.and_(w.ult(ih, w.i32c(g.h)), w.ult(iw, w.i32c(g.w)));
    Value x = loadOrZero(w, k.params[0],
                         offset4(w, n, w.add(c0, c), ih, iw, g.c, g.h, g.w), ok, xe);
    Value wt = loadElement(w, k.params[1],
                           offset4(w, o, c, kh, kw, cg, g.kh, g.kw), we);
    return LLVM::FMAOp::create(w.b, w.loc, x, wt, acc).getResult();
  });
  storeElement(w, k.params[2], idx[4], elemOf(op.getResult()), y);
}

void buildConvGradInput(mlir::tg::Conv2dGradInputOp op, const Window &g,
                        SimtKernel &k, ModuleOp kernels, StringRef sym) {
  Type ge = elemOf(op.getGrad()), we = elemOf(op.getWeight());
  SmallVector<Value> idx = beginElementKernel(k, kernels, sym, 3,
                                              shapeOf(op.getResult()), op.getLoc());
  KernelBuilder &w = *k.w;
  int64_t cg = g.c / g.groups, og = g.o / g.groups;
  Value n = idx[0], c = idx[1], ih = idx[2], iw = idx[3];
  Value o0 = w.muli(w.udiv(c, w.i32c(cg)), og);
  Value cl = w.urem(c, w.i32c(cg));
  Value dx = sumOverBox(w, {og, g.kh, g.kw}, [&](ArrayRef<Value> iv, Value acc) {
    Value o = w.add(o0, iv[0]), kh = iv[1], kw = iv[2];
    auto [oy, oky] = tapSource(w, ih, kh, g.sh, g.ph, g.dh, g.oh);
    auto [ox, okx] = tapSource(w, iw, kw, g.sw, g.pw, g.dw, g.ow);
    Value dy = loadOrZero(w, k.params[0],
                          offset4(w, n, o, oy, ox, g.o, g.oh, g.ow),
                          w.and_(oky, okx), ge);
    Value wt = loadElement(w, k.params[1],
                           offset4(w, o, cl, kh, kw, cg, g.kh, g.kw), we);
    return LLVM::FMAOp::create(w.b, w.loc, dy, wt, acc).getResult();
  });
  storeElement(w, k.params[2], idx[4], elemOf(op.getResult()), dx);
}

void buildConvGradWeight(mlir::tg::Conv2dGradWeightOp op, const Window &g,
                         SimtKernel &k, ModuleOp kernels, StringRef sym) {
  Type xe = elemOf(op.getInput()), ge = elemOf(op.getGrad());
  SmallVector<Value> idx = beginElementKernel(k, kernels, sym, 3,
                                              shapeOf(op.getResult()), op.getLoc());
  KernelBuilder &w = *k.w;
  int64_t cg = g.c / g.groups, og = g.o / g.groups;
  Value o = idx[0], cl = idx[1], kh = idx[2], kw = idx[3];
  Value c = w.add(w.muli(w.udiv(o, w.i32c(og)), cg), cl);
  Value dw = sumOverBox(w, {g.n, g.oh, g.ow}, [&](ArrayRef<Value> iv, Value acc) {
    Value n = iv[0], oy = iv[1], ox = iv[2];
    Value ih = w.add(w.addi(w.muli(oy, g.sh), -g.ph), w.muli(kh, g.dh));
    Value iw = w.add(w.addi(w.muli(ox, g.sw), -g.pw), w.muli(kw, g.dw));
    Value ok = w.and_(w.ult(ih, w.i32c(g.h)), w.ult(iw, w.i32c(g.w)));
    Value x = loadOrZero(w, k.params[0], offset4(w, n, c, ih, iw, g.c, g.h, g.w),
                         ok, xe);
    Value dy = loadElement(w, k.params[1],
                           offset4(w, n, o, oy, ox, g.o, g.oh, g.ow), ge);
    return LLVM::FMAOp::create(w.b, w.loc, x, dy, acc).getResult();
  });
  storeElement(w, k.params[2], idx[4], elemOf(op.getResult()), dw);
}

/// The maximum of window (oy, ox) of plane `plane` (element offset of
/// [n, c, 0, 0]) and its position h * W + w in the plane (-1 if the window
/// is all padding), by tg.max_pool2d's rule.
std::pair<Value, Value> windowMax(KernelBuilder &w, Value in, Type elem,
                                  Value plane, Value oy, Value ox,
                                  const Window &g) {
  scf::ForOp lh = w.openFor(w.i32c(g.kh), {w.f32c(-INFINITY), w.i32c(-1)});
  scf::ForOp lw = w.openFor(w.i32c(g.kw), lh.getRegionIterArgs());
  Value ih = w.add(w.addi(w.muli(oy, g.sh), -g.ph), lh.getInductionVar());
  Value iw = w.add(w.addi(w.muli(ox, g.sw), -g.pw), lw.getInductionVar());
  Value ok = w.and_(w.ult(ih, w.i32c(g.h)), w.ult(iw, w.i32c(g.w)));
  Value pos = w.add(w.muli(ih, g.w), iw);
  Value v = loadOrZero(w, in, w.add(plane, pos), ok, elem);
  Value best = lw.getRegionIterArgs()[0], at = lw.getRegionIterArgs()[1];
  // A NaN replaces the running maximum; a number only when greater (or
  // when it is the first position read).
  Value isNan = LLVM::FCmpOp::create(w.b, w.loc, LLVM::FCmpPredicate::uno, v, v);
  Value greater = LLVM::FCmpOp::create(w.b, w.loc, LLVM::FCmpPredicate::ogt, v, best);
  Value first = w.icmp(LLVM::ICmpPredicate::slt, at, w.i32c(0));
  Value take = w.and_(ok, w.or_(w.or_(isNan, greater), first));
  w.closeFor(lw, {w.select(take, v, best), w.select(take, pos, at)});
  w.closeFor(lh, lw.getResults());
  return {lh.getResult(0), lh.getResult(1)};
}

void buildMaxPool(mlir::tg::MaxPool2dOp op, const Window &g, SimtKernel &k,
                  ModuleOp kernels, StringRef sym) {
  Type e = elemOf(op.getInput());
  SmallVector<Value> idx = beginElementKernel(k, kernels, sym, 2,
                                              shapeOf(op.getResult()), op.getLoc());
  KernelBuilder &w = *k.w;
  Value plane = w.muli(w.add(w.muli(idx[0], g.c), idx[1]), g.h * g.w);
  auto [best, at] = windowMax(w, k.params[0], e, plane, idx[2], idx[3], g);
  (void)at;
  storeElement(w, k.params[1], idx[4], elemOf(op.getResult()), best);
}

void buildMaxPoolGrad(mlir::tg::MaxPool2dGradOp op, const Window &g,
                      SimtKernel &k, ModuleOp kernels, StringRef sym) {
  Type ge = elemOf(op.getGrad()), xe = elemOf(op.getInput());
  SmallVector<Value> idx = beginElementKernel(k, kernels, sym, 3,
                                              shapeOf(op.getResult()), op.getLoc());
  KernelBuilder &w = *k.w;
  Value n = idx[0], c = idx[1], h = idx[2], x = idx[3];
  Value plane = w.muli(w.add(w.muli(n, g.c), c), g.h * g.w);
  Value here = w.add(w.muli(h, g.w), x);
  // Taps in descending order visit the windows holding (h, x) in ascending
  // (row-major) order, the reference's summation order.
  Value dx = sumOverBox(w, {g.kh, g.kw}, [&](ArrayRef<Value> iv, Value acc) {
    Value kh = w.sub(w.i32c(g.kh - 1), iv[0]);
    Value kw = w.sub(w.i32c(g.kw - 1), iv[1]);
    auto [oy, oky] = tapSource(w, h, kh, g.sh, g.ph, 1, g.oh);
    auto [ox, okx] = tapSource(w, x, kw, g.sw, g.pw, 1, g.ow);
    Value inWindow = w.and_(oky, okx);
    // Out-of-range windows are computed at (0, 0) and dropped.
    Value wy = w.select(inWindow, oy, w.i32c(0));
    Value wx = w.select(inWindow, ox, w.i32c(0));
    Value at = windowMax(w, k.params[1], xe, plane, wy, wx, g).second;
    Value mine = w.and_(inWindow, w.icmp(LLVM::ICmpPredicate::eq, at, here));
    return w.fadd(acc, loadOrZero(w, k.params[0],
                                  offset4(w, n, c, wy, wx, g.c, g.oh, g.ow),
                                  mine, ge));
  });
  storeElement(w, k.params[2], idx[4], elemOf(op.getResult()), dx);
}

} // namespace

std::optional<FailureOr<std::vector<KernelLaunch>>>
lowerConvPoolOp(Operation *op, Target t, ModuleOp kernels) {
  using R = std::optional<FailureOr<std::vector<KernelLaunch>>>;
  if (!isa<mlir::tg::Conv2dOp, mlir::tg::Conv2dGradInputOp,
           mlir::tg::Conv2dGradWeightOp, mlir::tg::MaxPool2dOp,
           mlir::tg::MaxPool2dGradOp>(op))
    return std::nullopt;
  if (failed(checkI32Indexable(op)))
    return R(failure());
  Value res = op->getResult(0);
  if (resultSharesOperandBuffer(op, res))
    return R(op->emitOpError()
             << "the memory plan gives the result an operand's buffer; the "
                "GPU kernel for this op cannot run in place");
  for (Type ty : op->getOperandTypes())
    if (!computeType(cast<RankedTensorType>(ty).getElementType()).isF32())
      return R(op->emitOpError()
               << "the GPU backend computes convolutions and pooling on "
                  "f32, bf16 and f16 tensors only");
  int64_t n = cast<RankedTensorType>(res.getType()).getNumElements();
  if (n == 0)
    return R(std::vector<KernelLaunch>{});
  std::string sym = kernelSymbol(op, "tg_convpool", t);
  bool have = hasKernel(kernels, sym);
  SimtKernel k;
  auto conv = [&](auto c, ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                  ArrayRef<int64_t> weight) {
    Window g = windowOf(in, out, weight.drop_front(2), c.getStride(),
                        c.getPadding());
    g.dh = c.getDilation()[0];
    g.dw = c.getDilation()[1];
    g.groups = c.getGroups();
    return g;
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](mlir::tg::Conv2dOp c) {
        Window g = conv(c, shapeOf(c.getInput()), shapeOf(c.getResult()),
                        shapeOf(c.getWeight()));
        if (!have)
          buildConv(c, g, k, kernels, sym);
      })
      .Case([&](mlir::tg::Conv2dGradInputOp c) {
        Window g = conv(c, shapeOf(c.getResult()), shapeOf(c.getGrad()),
                        shapeOf(c.getWeight()));
        if (!have)
          buildConvGradInput(c, g, k, kernels, sym);
      })
      .Case([&](mlir::tg::Conv2dGradWeightOp c) {
        Window g = conv(c, shapeOf(c.getInput()), shapeOf(c.getGrad()),
                        shapeOf(c.getResult()));
        if (!have)
          buildConvGradWeight(c, g, k, kernels, sym);
      })
      .Case([&](mlir::tg::MaxPool2dOp p) {
        Window g = windowOf(shapeOf(p.getInput()), shapeOf(p.getResult()),
                            p.getKernel(), p.getStride(), p.getPadding());
        g.o = g.c;
        if (!have)
          buildMaxPool(p, g, k, kernels, sym);
      })
      .Case([&](mlir::tg::MaxPool2dGradOp p) {
        Window g = windowOf(shapeOf(p.getInput()), shapeOf(p.getGrad()),
                            p.getKernel(), p.getStride(), p.getPadding());
        g.o = g.c;
        if (!have)
          buildMaxPoolGrad(p, g, k, kernels, sym);
      });
  if (!have)
    endSimtKernel(k);
  std::vector<KernelParam> params;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    params.push_back({KernelParam::Kind::Operand, i});
  params.push_back({KernelParam::Kind::Result, 0});
  return R(std::vector<KernelLaunch>{launchFor(sym, n, kThreads, params)});
}

} // namespace tg::nvptx::detail
