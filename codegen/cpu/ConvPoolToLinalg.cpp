//===- ConvPoolToLinalg.cpp - conv2d and pooling to linalg ------*- C++ -*-===//
//
// Convolutions become GEMMs over an im2col matrix, one image at a time
// (below, "Convolutions as GEMMs"), in the matmul's loop order. Groups
// are an explicit dimension of every product (channels C = G x Cg,
// O = G x Og), so every map is a plain affine function of the loops.
// Pooling is a direct loop nest over a padded input; the pooling gradients
// gather from the cotangent (tensor.extract at computed positions, guarded
// by a validity test), because linalg outputs cannot be written at strided
// positions. Pooling loops over the window through a shape-only [KH, KW]
// operand, as upstream's linalg.pooling_* ops do.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cpu;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The most slots (blocks of images) of a convolution. The thread count is
/// known only at run time (tg-run --threads), the scratch must be planned
/// at compile time, and the blocks (not the threads) decide the order of
/// the weight gradient's sums: a fixed count keeps a step bit-identical on
/// any number of threads and its arena independent of the machine that
/// built it. Each slot costs one image's scratch, which for the input
/// gradient is large (LeNet's conv2: 254 KB, its scattered dcol 25 taps
/// wide): with 8 slots it set the step's peak (+443 KB, unfused LeNet)
/// where recomputation cannot lower it, and the budget fitter lost its
/// recompute choices. 2: this machine's (and the benchmarks') cores, and
/// LeNet's planned peak unchanged (the second slots fit holes of the plan).
constexpr int64_t kScratchSlots = 2;

/// Affine helpers over a fixed number of loops.
struct Loops {
  MLIRContext *ctx;
  unsigned count;
  AffineExpr d(unsigned i) const { return getAffineDimExpr(i, ctx); }
  AffineMap map(ArrayRef<AffineExpr> exprs) const {
    return AffineMap::get(count, 0, exprs, ctx);
  }
};

/// `x` (its last two dimensions spatial) in its compute type, padded by
/// `pad` (h, w) on both sides with `value`: a filled tensor whose interior a
/// copy writes through an offset output map (vector rows after
/// tg-vectorize-elementwise), not tensor.pad, whose bufferized copy into
/// the interior is upstream's element-by-element memrefCopy (LeNet's
/// conv1, each image twice a step: 3.4% of the step).
Value padded(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> pad,
             double value) {
  Type acc = computeType(elementType(x));
  x = convertTensor(b, loc, x, acc);
  if (pad[0] == 0 && pad[1] == 0)
    return x;
  SmallVector<int64_t> shape(shapeOf(x));
  unsigned rank = shape.size();
  shape[rank - 2] += 2 * pad[0];
  shape[rank - 1] += 2 * pad[1];
  Loops L{b.getContext(), rank};
  SmallVector<AffineExpr> in, out;
  for (unsigned i = 0; i < rank; ++i)
    in.push_back(L.d(i));
  out = in;
  out[rank - 2] = L.d(rank - 2) + pad[0];
  out[rank - 1] = L.d(rank - 1) + pad[1];
  return linalg::GenericOp::create(
             b, loc, TypeRange{RankedTensorType::get(shape, acc)}, x,
             filledTensor(b, loc, shape, acc, value),
             ArrayRef<AffineMap>{L.map(in), L.map(out)}, iterators(rank),
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, a[0]);
             })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Convolutions as GEMMs over an im2col matrix, one image at a time.
//
// For image n, col[g, (ic, i, j), (y, x)] = xpad[n, g*Cg + ic, y*sh + i*dh,
// x*sw + j*dw] (K = Cg*KH*KW rows, P = OH*OW columns); then
//   forward:         y[n, g]  = W[g] (Og x K) . col (K x P)
//   weight gradient: dW[g]   += dy[n, g] (Og x P) . col^T (P x K)
//   input gradient:  dcol     = W[g]^T (K x Og) . dy[n, g] (Og x P), and dx
//                    sums dcol back over the taps (col2im).
// Each product is a linalg.generic whose loop order is the matmul's
// (ReductionsToLinalg.cpp): the innermost loop runs over P, contiguous in
// both operands and the result (an axpy, or a dot product for the weight
// gradient), and reassoc + contract let LLVM vectorise it with FMAs. The
// direct loop nests this replaces ran their innermost loop over a 5-wide
// window tap (LeNet: 123 ms a step, 88% in conv2's three nests).
//
// One image at a time (an scf.for over the batch) keeps the im2col matrix
// small and hot in the cache (LeNet's conv2: 60 KB, where the whole batch's
// would be 3.8 MB of op scratch), and each image's result is written in
// place in its slice of the output. The images go in kScratchSlots (2) blocks
// (a loop marked tg_cpu.slots around the per-image loop): tg-plan-scratch
// gives each block its own slot of the scratch and tg-parallelize-loops
// runs the blocks on threads, one fork per convolution. The weight
// gradient sums each block's images into the block's own partial dW and
// the partials in block order, so its result depends on the (fixed) blocks
// and never on the thread count.
//===----------------------------------------------------------------------===//

/// The sizes of one convolution: input [N, C, H, W], weight [O, C/G, KH,
/// KW], output [N, O, OH, OW], and its stride, dilation and padding.
struct ConvShape {
  int64_t n, c, h, w, o, kh, kw, oh, ow, g;
  ArrayRef<int64_t> s, d, p;
  int64_t cg() const { return c / g; }
  int64_t og() const { return o / g; }
  /// Rows of one group's im2col matrix: (ic, i, j).
  int64_t k() const { return cg() * kh * kw; }
  /// Its columns: the output positions (y, x).
  int64_t pix() const { return oh * ow; }

  /// The shape of a convolution or of one of its gradients: the input
  /// `x`, weight `wt` and output `y` each either an operand or the result.
  static ConvShape of(Conv2dOp op, Conv2dOp::Adaptor a) {
    return of(op, shapeOf(a.getInput()), shapeOf(a.getWeight()),
              shapeOf(op.getResult()));
  }
  static ConvShape of(Conv2dGradWeightOp op, Conv2dGradWeightOp::Adaptor a) {
    return of(op, shapeOf(a.getInput()), shapeOf(op.getResult()),
              shapeOf(a.getGrad()));
  }
  static ConvShape of(Conv2dGradInputOp op, Conv2dGradInputOp::Adaptor a) {
    return of(op, shapeOf(op.getResult()), shapeOf(a.getWeight()),
              shapeOf(a.getGrad()));
  }
  template <typename OpTy>
  static ConvShape of(OpTy op, ArrayRef<int64_t> x, ArrayRef<int64_t> wt,
                      ArrayRef<int64_t> y) {
    return {x[0],
            x[1],
            x[2],
            x[3],
            wt[0],
            wt[2],
            wt[3],
            y[2],
            y[3],
            static_cast<int64_t>(op.getGroups()),
            op.getStride(),
            op.getDilation(),
            op.getPadding()};
  }
};

/// Image `i` of the NCHW tensor `t`: its [C, H, W] slice.
Value image(OpBuilder &b, Location loc, Value t, Value i) {
  ArrayRef<int64_t> s = shapeOf(t);
  SmallVector<OpFoldResult> offsets(s.size(), b.getIndexAttr(0)),
      strides(s.size(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  for (int64_t d : s.drop_front())
    sizes.push_back(b.getIndexAttr(d));
  offsets[0] = i;
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(s.drop_front(), elementType(t)), t, offsets,
      sizes, strides);
}

/// `t` with image `i` replaced by `v` (its [C, H, W] slice).
Value withImage(OpBuilder &b, Location loc, Value v, Value t, Value i) {
  ArrayRef<int64_t> s = shapeOf(t);
  SmallVector<OpFoldResult> offsets(s.size(), b.getIndexAttr(0)),
      strides(s.size(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  for (int64_t d : s.drop_front())
    sizes.push_back(b.getIndexAttr(d));
  offsets[0] = i;
  return tensor::InsertSliceOp::create(b, loc, v, t, offsets, sizes, strides);
}

/// `v` reshaped (row-major) to `shape`, in its element type.
Value reshaped(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  return reshapeTensor(b, loc, v,
                       RankedTensorType::get(shape, elementType(v)));
}

/// Image `i` of `t` in compute type `acc` as a [G, rows, P] tensor.
Value groupRows(OpBuilder &b, Location loc, Value t, Value i, int64_t g,
                Type acc) {
  ArrayRef<int64_t> s = shapeOf(t);
  return reshaped(b, loc, convertTensor(b, loc, image(b, loc, t, i), acc),
                  {g, s[1] / g, s[2] * s[3]});
}

/// A zero-filled tensor of `shape` computed into `slice`'s storage: the
/// destination of a product that accumulates.
Value zeroed(OpBuilder &b, Location loc, Value slice) {
  Value zero = scalarConstant(b, loc, elementType(slice), 0);
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{slice})
      .getResult(0);
}

/// The im2col matrix [G, K, P] of image `i` of `x`, in compute type.
Value im2col(OpBuilder &b, Location loc, Value x, Value i, const ConvShape &c) {
  Value xp = padded(b, loc, image(b, loc, x, i), c.p, 0);
  ArrayRef<int64_t> ps = shapeOf(xp);
  xp = reshaped(b, loc, xp, {c.g, c.cg(), ps[1], ps[2]});
  // Loops: g ic i j y x, all parallel; the innermost runs along a row.
  Loops L{b.getContext(), 6};
  SmallVector<AffineMap> maps = {
      L.map({L.d(0), L.d(1), L.d(4) * c.s[0] + L.d(2) * c.d[0],
             L.d(5) * c.s[1] + L.d(3) * c.d[1]}),
      L.map({L.d(0), L.d(1), L.d(2), L.d(3), L.d(4), L.d(5)})};
  SmallVector<int64_t> shape = {c.g, c.cg(), c.kh, c.kw, c.oh, c.ow};
  Type acc = elementType(xp);
  Value col =
      linalg::GenericOp::create(
          b, loc, TypeRange{RankedTensorType::get(shape, acc)}, xp,
          emptyTensor(b, loc, shape, acc), maps, iterators(6),
          [](OpBuilder &nb, Location l, ValueRange a) {
            linalg::YieldOp::create(nb, l, a[0]);
          })
          .getResult(0);
  return reshaped(b, loc, col, {c.g, c.k(), c.pix()});
}

/// `out += lhs * rhs` over the loops of `maps` (lhs, rhs, out) in their
/// order, summed in any order (reassoc) with FMAs (contract), as the
/// matmul's lowering does.
Value contract(OpBuilder &b, Location loc, Value lhs, Value rhs, Value out,
               ArrayRef<AffineMap> maps,
               ArrayRef<utils::IteratorType> loops) {
  return linalg::GenericOp::create(
             b, loc, TypeRange{out.getType()}, ValueRange{lhs, rhs}, out, maps,
             loops,
             [](OpBuilder &nb, Location l, ValueRange a) {
               auto fm = arith::FastMathFlags::reassoc |
                         arith::FastMathFlags::contract;
               Value prod = arith::MulFOp::create(nb, l, a[0], a[1], fm);
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{arith::AddFOp::create(nb, l, a[2], prod, fm)});
             })
      .getResult(0);
}

/// How `n` images go in at most kScratchSlots blocks of consecutive images.
struct Blocks {
  int64_t slots, size; // blocks, images per block (the last may have fewer)
  static Blocks of(int64_t n) {
    int64_t size = (n + kScratchSlots - 1) / kScratchSlots;
    return {size ? (n + size - 1) / size : 0, size};
  }
};

/// The images in blocks: an scf.for over the blocks of consecutive images
/// (marked tg_cpu.slots, so that its iterations may run on threads, each
/// with its own slot of the op's scratch) around an scf.for over each
/// block's images. The outer loop carries `inits`; `block` makes, per block,
/// values that only the inner loop carries (a block's own zeroed buffer);
/// `body` gets the image index, the block index and the carried values
/// (`inits`' then `block`'s) and returns their next values. Returns the
/// final values of `inits`.
ValueRange overImages(
    OpBuilder &b, Location loc, int64_t n, ValueRange inits,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> block,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, Value,
                                    ValueRange)>
        body) {
  Blocks k = Blocks::of(n);
  unsigned outer = inits.size();
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, k.slots),
      indexConstant(b, loc, 1), inits,
      [&](OpBuilder &ob, Location l, Value s, ValueRange carried) {
        Value size = indexConstant(ob, l, k.size);
        Value first = arith::MulIOp::create(ob, l, s, size);
        Value last = arith::MinSIOp::create(
            ob, l, arith::AddIOp::create(ob, l, first, size),
            indexConstant(ob, l, n));
        SmallVector<Value> all(carried);
        if (block)
          llvm::append_range(all, block(ob, l, s));
        auto images = scf::ForOp::create(
            ob, l, first, last, indexConstant(ob, l, 1), all,
            [&](OpBuilder &nb, Location il, Value i, ValueRange c) {
              scf::YieldOp::create(nb, il, body(nb, il, i, s, c));
            });
        scf::YieldOp::create(ob, l,
                             images.getResults().take_front(outer));
      });
  loop->setAttr(kSlotsAttr, b.getI64IntegerAttr(k.slots));
  return loop.getResults();
}

/// The weight [O, Cg, KH, KW] as [G, Og, K] in compute type `acc`.
Value weightRows(OpBuilder &b, Location loc, Value w, const ConvShape &c,
                 Type acc) {
  return reshaped(b, loc, convertTensor(b, loc, w, acc), {c.g, c.og(), c.k()});
}

/// The maps of a product over the loops (g, l1, l2, l3) of one group's
/// matrices: lhs, rhs and out are each [G, rows, cols], read at (g, l[r],
/// l[c]) for the pair (r, c) of loop numbers (1 to 3) given for each.
SmallVector<AffineMap> groupMaps(MLIRContext *ctx,
                                 ArrayRef<std::pair<unsigned, unsigned>> dims) {
  Loops L{ctx, 4};
  SmallVector<AffineMap> maps;
  for (auto [r, c] : dims)
    maps.push_back(L.map({L.d(0), L.d(r), L.d(c)}));
  return maps;
}

/// The loops of a group product whose third loop is the reduction: the
/// matmul's order, with the contiguous P innermost.
SmallVector<utils::IteratorType> gemmLoops() {
  auto loops = iterators(4);
  loops[2] = utils::IteratorType::reduction;
  return loops;
}

/// What the three convolution patterns share: the result's compute type,
/// the ConvShape of the op, and the result computed in that type
/// (`Derived::lower`) converted to the op's element type.
template <typename OpTy, typename Derived>
struct ConvPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rw) const final {
    Type acc = computeType(elementType(op.getResult()));
    return replaceWithConverted(
        rw, op,
        Derived::lower(rw, op.getLoc(), adaptor, ConvShape::of(op, adaptor),
                       acc));
  }
};

/// y[n, g, og, p] = sum over k of W[g, og, k] * col[g, k, p]; loops
/// (g, og, k | p).
struct Conv2dLowering final : ConvPattern<Conv2dOp, Conv2dLowering> {
  using ConvPattern::ConvPattern;
  static Value lower(OpBuilder &rw, Location loc, Conv2dOp::Adaptor adaptor,
                     const ConvShape &c, Type acc) {
    Value w = weightRows(rw, loc, adaptor.getWeight(), c, acc);
    SmallVector<AffineMap> maps =
        groupMaps(rw.getContext(), {{1, 2}, {2, 3}, {1, 3}});
    return overImages(
        rw, loc, c.n, emptyTensor(rw, loc, {c.n, c.o, c.oh, c.ow}, acc), {},
        [&](OpBuilder &b, Location l, Value i, Value, ValueRange out) {
          Value col = im2col(b, l, adaptor.getInput(), i, c);
          Value y = zeroed(b, l, groupRows(b, l, out[0], i, c.g, acc));
          y = contract(b, l, w, col, y, maps, gemmLoops());
          y = reshaped(b, l, y, {c.o, c.oh, c.ow});
          return SmallVector<Value>{withImage(b, l, y, out[0], i)};
        })[0];
  }
};

/// dW[g, og, k] = sum over the images of sum over p of dy[n, g, og, p] *
/// col[g, k, p]; loops (g, og, k | p), a dot product innermost.
struct Conv2dGradWeightLowering final
    : ConvPattern<Conv2dGradWeightOp, Conv2dGradWeightLowering> {
  using ConvPattern::ConvPattern;
  static Value lower(OpBuilder &rw, Location loc,
                     Conv2dGradWeightOp::Adaptor adaptor, const ConvShape &c,
                     Type acc) {
    SmallVector<AffineMap> maps =
        groupMaps(rw.getContext(), {{1, 3}, {2, 3}, {1, 2}});
    // Each block of images sums into its own partial dW[s], and the
    // partials are summed in block order after the loop: blocks may run
    // on any thread, and the sums' order is the blocks', not the threads'.
    int64_t slots = Blocks::of(c.n).slots;
    SmallVector<int64_t> one = {c.g, c.og(), c.k()};
    auto dwType = RankedTensorType::get(one, acc);
    auto sliceOf = [&](OpBuilder &b, Value s) {
      SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0)),
          sizes = {b.getIndexAttr(1)}, strides(4, b.getIndexAttr(1));
      offsets[0] = s;
      for (int64_t d : one)
        sizes.push_back(b.getIndexAttr(d));
      return std::make_tuple(offsets, sizes, strides);
    };
    Value partial = overImages(
        rw, loc, c.n,
        filledTensor(rw, loc, {slots, c.g, c.og(), c.k()}, acc, 0), {},
        [&](OpBuilder &b, Location l, Value i, Value s, ValueRange p) {
          Value col = im2col(b, l, adaptor.getInput(), i, c);
          Value dy = groupRows(b, l, adaptor.getGrad(), i, c.g, acc);
          auto [offsets, sizes, strides] = sliceOf(b, s);
          Value dw = tensor::ExtractSliceOp::create(b, l, dwType, p[0],
                                                    offsets, sizes, strides);
          dw = contract(b, l, dy, col, dw, maps, iterators(3, 1));
          return SmallVector<Value>{tensor::InsertSliceOp::create(
              b, l, dw, p[0], offsets, sizes, strides)};
        })[0];
    // dW = partial[0] + partial[1] + ..., per element in block order.
    Loops L{rw.getContext(), 4};
    Value r = linalg::GenericOp::create(
                  rw, loc, TypeRange{dwType}, partial,
                  filledTensor(rw, loc, one, acc, 0),
                  ArrayRef<AffineMap>{L.map({L.d(3), L.d(0), L.d(1), L.d(2)}),
                                      L.map({L.d(0), L.d(1), L.d(2)})},
                  iterators(3, 1),
                  [](OpBuilder &nb, Location nl, ValueRange a) {
                    linalg::YieldOp::create(
                        nb, nl,
                        ValueRange{arith::AddFOp::create(nb, nl, a[1], a[0])});
                  })
                  .getResult(0);
    return reshaped(rw, loc, r, {c.o, c.cg(), c.kh, c.kw});
  }
};

/// dcol[g, k, p] = sum over og of W[g, og, k] * dy[n, g, og, p] (loops
/// g, k, og | p), then col2im: dx[n, g, ic, iy, ix] sums dcol[g, (ic, i, j),
/// (y, x)] over the taps (i, j) with iy = y*sh - ph + i*dh (x likewise).
/// To make that sum a plain affine read, dcol is scattered once per image
/// (written at y*sh + lo through the output map) into a zero tensor `z` padded
/// by `lo` = max(0, (KH-1)*dh - ph) in front: z[.., i, j, t + lo] is
/// dcol[.., i, j, t / sh] where sh divides t, else 0, and dx reads it at
/// t = iy + ph - i*dh. Only the positions written change, so `z` is
/// zeroed once per block of images (carried by the block's loop: each block
/// has its own, in its slot of the op's scratch).
struct Conv2dGradInputLowering final
    : ConvPattern<Conv2dGradInputOp, Conv2dGradInputLowering> {
  using ConvPattern::ConvPattern;
  static Value lower(OpBuilder &rw, Location loc,
                     Conv2dGradInputOp::Adaptor adaptor, const ConvShape &c,
                     Type acc) {
    Value w = weightRows(rw, loc, adaptor.getWeight(), c, acc);
    SmallVector<AffineMap> gemm =
        groupMaps(rw.getContext(), {{2, 1}, {2, 3}, {1, 3}});

    // The padded, scattered dcol: spatial extent covers every t + lo.
    int64_t loY = std::max<int64_t>(0, (c.kh - 1) * c.d[0] - c.p[0]);
    int64_t loX = std::max<int64_t>(0, (c.kw - 1) * c.d[1] - c.p[1]);
    int64_t hz = loY + std::max(c.h - 1 + c.p[0], (c.oh - 1) * c.s[0]) + 1;
    int64_t wz = loX + std::max(c.w - 1 + c.p[1], (c.ow - 1) * c.s[1]) + 1;
    SmallVector<int64_t> zShape = {c.g, c.cg(), c.kh, c.kw, hz, wz};
    // Scatter loops: g ic i j y x. col2im loops: g ic iy i j ix, the taps
    // (i, j) reduced between the row and its elements, so that each row of
    // dx is summed over the taps where it stays in registers (vector loops
    // along ix, tg-vectorize-elementwise). With the taps outside the rows,
    // every tap reloaded each row just stored, through a masked store
    // (LeNet's rows of 14) that cannot forward to the load: 10% of the
    // step scalar, 14% vectorised.
    Loops S{rw.getContext(), 6};
    // The scatter writes z through a strided map instead of a strided
    // tensor.insert_slice, whose bufferized copy is upstream's generic
    // element-by-element memrefCopy (8% of LeNet's step).
    SmallVector<AffineMap> scatter = {
        S.map({S.d(0), S.d(1), S.d(2), S.d(3), S.d(4), S.d(5)}),
        S.map({S.d(0), S.d(1), S.d(2), S.d(3), S.d(4) * c.s[0] + loY,
               S.d(5) * c.s[1] + loX})};
    SmallVector<AffineMap> sum = {
        S.map({S.d(0), S.d(1), S.d(3), S.d(4),
               S.d(2) + (c.p[0] + loY) - S.d(3) * c.d[0],
               S.d(5) + (c.p[1] + loX) - S.d(4) * c.d[1]}),
        S.map({S.d(0), S.d(1), S.d(2), S.d(5)})};
    auto sumLoops = iterators(6);
    sumLoops[3] = sumLoops[4] = utils::IteratorType::reduction;

    ValueRange r = overImages(
        rw, loc, c.n,
        emptyTensor(rw, loc, {c.n, c.c, c.h, c.w}, acc),
        [&](OpBuilder &b, Location l, Value) {
          return SmallVector<Value>{filledTensor(b, l, zShape, acc, 0)};
        },
        [&](OpBuilder &b, Location l, Value i, Value, ValueRange carried) {
          Value dy = groupRows(b, l, adaptor.getGrad(), i, c.g, acc);
          Value dcol = contract(
              b, l, w, dy,
              zeroed(b, l, emptyTensor(b, l, {c.g, c.k(), c.pix()}, acc)),
              gemm, gemmLoops());
          dcol = reshaped(b, l, dcol, {c.g, c.cg(), c.kh, c.kw, c.oh, c.ow});
          Value z = linalg::GenericOp::create(
                        b, l, TypeRange{carried[1].getType()}, dcol,
                        carried[1], scatter, iterators(6),
                        [](OpBuilder &nb, Location nl, ValueRange a) {
                          linalg::YieldOp::create(nb, nl, a[0]);
                        })
                        .getResult(0);
          Value dx = zeroed(
              b, l,
              reshaped(b, l, image(b, l, carried[0], i), {c.g, c.cg(), c.h, c.w}));
          dx = linalg::GenericOp::create(
                   b, l, TypeRange{dx.getType()}, z, dx, sum, sumLoops,
                   [](OpBuilder &nb, Location nl, ValueRange a) {
                     linalg::YieldOp::create(
                         nb, nl,
                         ValueRange{arith::AddFOp::create(nb, nl, a[1], a[0])});
                   })
                   .getResult(0);
          dx = reshaped(b, l, dx, {c.c, c.h, c.w});
          return SmallVector<Value>{withImage(b, l, dx, carried[0], i), z};
        });
    return r[0];
  }
};

/// Scalar index arithmetic inside a generic body.
struct Idx {
  OpBuilder &b;
  Location l;
  Value c(int64_t v) { return indexConstant(b, l, v); }
  Value loop(unsigned d) { return linalg::IndexOp::create(b, l, d); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, l, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, l, x, y); }
  Value mul(Value x, int64_t k) { return arith::MulIOp::create(b, l, x, c(k)); }
  Value div(Value x, int64_t k) { return arith::DivSIOp::create(b, l, x, c(k)); }
  Value rem(Value x, int64_t k) { return arith::RemSIOp::create(b, l, x, c(k)); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, l, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, l, x, y); }
  Value pick(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, l, cond, x, y);
  }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, l, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, l, x, y); }

  /// For an input position `pos` and window tap `tap`: the output position
  /// `(pos + pad - tap * dil) / stride` and whether it exists (divisible,
  /// in [0, size)). The returned position is 0 when it does not.
  std::pair<Value, Value> source(Value pos, Value tap, int64_t pad,
                                 int64_t dil, int64_t stride, int64_t size) {
    Value t = sub(add(pos, c(pad)), mul(tap, dil));
    Value q = div(t, stride);
    Value ok = both(both(cmp(arith::CmpIPredicate::sge, t, c(0)),
                         cmp(arith::CmpIPredicate::eq, rem(t, stride), c(0))),
                    cmp(arith::CmpIPredicate::slt, q, c(size)));
    return {pick(ok, q, c(0)), ok};
  }

  /// The number of unpadded positions of pooling window `o` along one axis.
  Value windowCount(Value o, int64_t stride, int64_t pad, int64_t k,
                    int64_t size) {
    Value start = sub(mul(o, stride), c(pad));
    return sub(min(add(start, c(k)), c(size)), max(start, c(0)));
  }

  /// The divisor, as a float of type `t`, of average-pooling window (y, x)
  /// over an input of spatial size `in`: the whole window with
  /// count_include_pad (PyTorch's default), else its unpadded positions (at
  /// least 1, so that an all-padding window averages to 0). Shared by the
  /// forward and the gradient so that they cannot disagree.
  Value avgDivisor(Type t, Value y, Value x, ArrayRef<int64_t> k,
                   ArrayRef<int64_t> s, ArrayRef<int64_t> p,
                   ArrayRef<int64_t> in, bool countIncludePad) {
    Value n = c(k[0] * k[1]);
    if (!countIncludePad)
      n = max(arith::MulIOp::create(b, l, windowCount(y, s[0], p[0], k[0], in[0]),
                                    windowCount(x, s[1], p[1], k[1], in[1])),
              c(1));
    return arith::SIToFPOp::create(
        b, l, t, arith::IndexCastOp::create(b, l, b.getI64Type(), n));
  }
};

/// A [KH, KW] tensor whose only use is to give the window loops their
/// extent.
Value windowShape(OpBuilder &b, Location loc, ArrayRef<int64_t> kernel) {
  // A constant, not an empty tensor: it becomes a read-only global instead
  // of an allocation per call.
  auto type = RankedTensorType::get({kernel[0], kernel[1]}, b.getF32Type());
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
}

/// Whether a pooling op divides by the whole window; only avg_pool2d divides.
bool countIncludePad(AvgPool2dOp op) { return op.getCountIncludePad(); }
bool countIncludePad(MaxPool2dOp) { return false; }

/// Pooling forward: loops (n, c, y, x | i, j) over the padded input.
template <typename OpTy, bool isMax>
struct PoolLowering final : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = computeType(type.getElementType());
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStride(),
                      p = op.getPadding();
    ArrayRef<int64_t> in = shapeOf(adaptor.getInput());
    Value x = padded(rw, loc, adaptor.getInput(), p, isMax ? kNegInf : 0.0);
    Loops L{rw.getContext(), 6};
    SmallVector<AffineMap> maps = {
        L.map({L.d(0), L.d(1), L.d(2) * s[0] + L.d(4), L.d(3) * s[1] + L.d(5)}),
        L.map({L.d(4), L.d(5)}), L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
    Value init =
        filledTensor(rw, loc, type.getShape(), acc, isMax ? kNegInf : 0.0);
    auto accType = RankedTensorType::get(type.getShape(), acc);
    Value r = linalg::GenericOp::create(
                  rw, loc, TypeRange{accType},
                  ValueRange{x, windowShape(rw, loc, k)}, init, maps,
                  iterators(4, 2),
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value v = isMax ? Value(arith::MaximumFOp::create(
                                          b, l, a[2], a[0]))
                                    : Value(arith::AddFOp::create(b, l, a[2],
                                                                  a[0]));
                    linalg::YieldOp::create(b, l, v);
                  })
                  .getResult(0);
    if (isMax)
      return replaceWithConverted(rw, op, r);
    // Divide each window's sum by its count (see Idx::avgDivisor).
    r = buildElementwise(
        rw, loc, type, r, [&](OpBuilder &b, Location l, ValueRange a) {
          Value n = Idx{b, l}.avgDivisor(a[0].getType(), linalg::IndexOp::create(b, l, 2),
                                         linalg::IndexOp::create(b, l, 3), k, s, p,
                                         in.drop_front(2), countIncludePad(op));
          return arith::DivFOp::create(b, l, a[0], n);
        });
    rw.replaceOp(op, r);
    return success();
  }
};

/// max_pool2d_grad in two steps: the in-plane position (iy * W + ix) of the
/// first maximum of every window (or its last NaN, as in the reference), then a
/// gather: dx[iy, ix] sums grad[y, x] over the windows whose argmax it is.
struct MaxPoolGradLowering final : OpConversionPattern<MaxPool2dGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MaxPool2dGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = computeType(type.getElementType());
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStride(),
                      p = op.getPadding();
    Value input = adaptor.getInput(), grad = adaptor.getGrad();
    ArrayRef<int64_t> in = shapeOf(input), gs = shapeOf(grad);
    Type posType = rw.getI64Type();

    Loops L{rw.getContext(), 6};
    // Without padding every window lies inside the input (floor mode), so
    // the input is an operand read through an affine map (vectorisable)
    // instead of a bounds-checked tensor.extract (13% of LeNet's step).
    // Loops (n, c, i, j, y, x), the taps reduced: each window still scans
    // its taps in row-major order, and the innermost loop runs along a row
    // of windows, which LLVM vectorises with compares and selects.
    bool unpadded = p[0] == 0 && p[1] == 0;
    SmallVector<Value> ins = {windowShape(rw, loc, k)};
    SmallVector<AffineMap> argMaps = {L.map({L.d(2), L.d(3)})};
    if (unpadded) {
      ins.push_back(input);
      argMaps.push_back(L.map({L.d(0), L.d(1), L.d(4) * s[0] + L.d(2),
                               L.d(5) * s[1] + L.d(3)}));
    }
    argMaps.append({L.map({L.d(0), L.d(1), L.d(4), L.d(5)}),
                    L.map({L.d(0), L.d(1), L.d(4), L.d(5)})});
    auto argLoops = iterators(6);
    argLoops[2] = argLoops[3] = utils::IteratorType::reduction;
    Value best = filledTensor(rw, loc, gs, acc, 0);
    Value where = filledTensor(rw, loc, gs, posType, -1);
    auto arg = linalg::GenericOp::create(
        rw, loc,
        TypeRange{RankedTensorType::get(gs, acc), RankedTensorType::get(gs, posType)},
        ins, ValueRange{best, where}, argMaps, argLoops,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Idx I{b, l};
          Value iy = I.add(I.sub(I.mul(I.loop(4), s[0]), I.c(p[0])), I.loop(2));
          Value ix = I.add(I.sub(I.mul(I.loop(5), s[1]), I.c(p[1])), I.loop(3));
          using P = arith::CmpIPredicate;
          Value inside, v, cy = iy, cx = ix;
          if (unpadded) {
            inside = arith::ConstantOp::create(b, l, b.getBoolAttr(true));
            v = convertScalar(b, l, a[1], acc);
          } else {
            inside = I.both(
                I.both(I.cmp(P::sge, iy, I.c(0)), I.cmp(P::slt, iy, I.c(in[2]))),
                I.both(I.cmp(P::sge, ix, I.c(0)), I.cmp(P::slt, ix, I.c(in[3]))));
            cy = I.pick(inside, iy, I.c(0));
            cx = I.pick(inside, ix, I.c(0));
            v = convertScalar(
                b, l,
                tensor::ExtractOp::create(b, l, input,
                                          ValueRange{I.loop(0), I.loop(1), cy, cx}),
                acc);
          }
          Value bestV = a[a.size() - 2], whereV = a[a.size() - 1];
          using F = arith::CmpFPredicate;
          Value none = arith::CmpIOp::create(
              b, l, P::eq, whereV, scalarConstant(b, l, posType, -1));
          // PyTorch's scan: a NaN always takes over (so the last NaN wins),
          // a number only when it is greater (so the first maximum wins).
          Value vNaN = arith::CmpFOp::create(b, l, F::UNO, v, v);
          Value greater = arith::CmpFOp::create(b, l, F::OGT, v, bestV);
          Value take = arith::AndIOp::create(
              b, l, inside,
              arith::OrIOp::create(
                  b, l, none, arith::OrIOp::create(b, l, vNaN, greater)));
          Value pos = arith::IndexCastOp::create(
              b, l, posType, I.add(I.mul(cy, in[3]), cx));
          linalg::YieldOp::create(
              b, l,
              ValueRange{I.pick(take, v, bestV), I.pick(take, pos, whereV)});
        });
    Value argmax = arg.getResult(1);

    SmallVector<AffineMap> maps = {L.map({L.d(4), L.d(5)}),
                                   L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
    Value init = filledTensor(rw, loc, in, acc, 0);
    if (p[0] == 0 && p[1] == 0 && s[0] >= k[0] && s[1] >= k[1]) {
      // Windows that neither overlap nor leave the input (LeNet's 2x2,
      // stride 2): each position is in at most one window, so each window
      // writes its own taps through a strided output map, instead of each
      // position gathering from every window that might hold it (2.5x
      // faster on LeNet's pools; 15% of its step before).
      SmallVector<AffineMap> scatter = {
          L.map({L.d(4), L.d(5)}), L.map({L.d(0), L.d(1), L.d(2), L.d(3)}),
          L.map({L.d(0), L.d(1), L.d(2), L.d(3)}),
          L.map({L.d(0), L.d(1), L.d(2) * s[0] + L.d(4),
                 L.d(3) * s[1] + L.d(5)})};
      Value r =
          linalg::GenericOp::create(
              rw, loc, TypeRange{RankedTensorType::get(in, acc)},
              ValueRange{windowShape(rw, loc, k), argmax, grad}, init, scatter,
              iterators(6), [&](OpBuilder &b, Location l, ValueRange a) {
                Idx I{b, l};
                Value iy = I.add(I.mul(I.loop(2), s[0]), I.loop(4));
                Value ix = I.add(I.mul(I.loop(3), s[1]), I.loop(5));
                Value here = arith::IndexCastOp::create(
                    b, l, posType, I.add(I.mul(iy, in[3]), ix));
                Value hit = arith::CmpIOp::create(
                    b, l, arith::CmpIPredicate::eq, a[1], here);
                // The zero init is read where the tap is not the argmax, so
                // the output stays an in-place update of the filled tensor.
                linalg::YieldOp::create(
                    b, l,
                    ValueRange{I.pick(hit, convertScalar(b, l, a[2], acc), a[3])});
              })
              .getResult(0);
      return replaceWithConverted(rw, op, r);
    }
    Value r =
        linalg::GenericOp::create(
            rw, loc, TypeRange{RankedTensorType::get(in, acc)},
            windowShape(rw, loc, k), init, maps, iterators(4, 2),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Idx I{b, l};
              auto [y, okY] = I.source(I.loop(2), I.loop(4), p[0], 1, s[0], gs[2]);
              auto [x, okX] = I.source(I.loop(3), I.loop(5), p[1], 1, s[1], gs[3]);
              Value here = arith::IndexCastOp::create(
                  b, l, posType, I.add(I.mul(I.loop(2), in[3]), I.loop(3)));
              Value hit = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::eq,
                  tensor::ExtractOp::create(b, l, argmax,
                                            ValueRange{I.loop(0), I.loop(1), y, x}),
                  here);
              Value gv = convertScalar(
                  b, l,
                  tensor::ExtractOp::create(b, l, grad,
                                            ValueRange{I.loop(0), I.loop(1), y, x}),
                  acc);
              Value add = arith::AddFOp::create(b, l, a[1], gv);
              Value ok = I.both(I.both(okY, okX), hit);
              linalg::YieldOp::create(b, l, ValueRange{I.pick(ok, add, a[1])});
            })
            .getResult(0);
    return replaceWithConverted(rw, op, r);
  }
};

/// dx[iy, ix] = sum over the windows (y, x) that contain it of grad[y, x] /
/// (the number of unpadded positions of that window).
struct AvgPoolGradLowering final : OpConversionPattern<AvgPool2dGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AvgPool2dGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = computeType(type.getElementType());
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStride(),
                      p = op.getPadding();
    Value grad = adaptor.getGrad();
    ArrayRef<int64_t> in = type.getShape(), gs = shapeOf(grad);
    Loops L{rw.getContext(), 6};
    SmallVector<AffineMap> maps = {L.map({L.d(4), L.d(5)}),
                                   L.map({L.d(0), L.d(1), L.d(2), L.d(3)})};
    Value init = filledTensor(rw, loc, in, acc, 0);
    Value r =
        linalg::GenericOp::create(
            rw, loc, TypeRange{RankedTensorType::get(in, acc)},
            windowShape(rw, loc, k), init, maps, iterators(4, 2),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Idx I{b, l};
              auto [y, okY] = I.source(I.loop(2), I.loop(4), p[0], 1, s[0], gs[2]);
              auto [x, okX] = I.source(I.loop(3), I.loop(5), p[1], 1, s[1], gs[3]);
              Value nf = I.avgDivisor(acc, y, x, k, s, p, in.drop_front(2),
                                      op.getCountIncludePad());
              Value gv = convertScalar(
                  b, l,
                  tensor::ExtractOp::create(b, l, grad,
                                            ValueRange{I.loop(0), I.loop(1), y, x}),
                  acc);
              Value add = arith::AddFOp::create(
                  b, l, a[1], arith::DivFOp::create(b, l, gv, nf));
              linalg::YieldOp::create(
                  b, l, ValueRange{I.pick(I.both(okY, okX), add, a[1])});
            })
            .getResult(0);
    return replaceWithConverted(rw, op, r);
  }
};

} // namespace

void mlir::tg::cpu::populateConvPoolToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<Conv2dLowering, Conv2dGradWeightLowering,
               Conv2dGradInputLowering, PoolLowering<MaxPool2dOp, true>,
               PoolLowering<AvgPool2dOp, false>, MaxPoolGradLowering,
               AvgPoolGradLowering>(patterns.getContext());
}
