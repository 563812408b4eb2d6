//===- AttentionToLoops.cpp - fused attention on the CPU --------*- C++ -*-===//
//
// tg.attention and tg.attention_grad lowered whole, as the FlashAttention-2
// loop nests of codegen/nvptx/AttentionSm80.cpp, so that no `Tq x Tk`
// tensor exists: the decomposition (passes/DecomposeComposites.cpp) has
// three of them per layer in the forward and five in the backward, which
// the CPU backend used to run.
//
// Each (batch, head) is one iteration of an scf.for; inside it, blocks of
// kBlock queries meet streamed blocks of kBlock keys and values. Every block
// is a static-shaped tile (rank-reduced slices of the operands), so the
// block temporaries are static allocations that tg-plan-scratch places in
// the arena, and the tile products are rank-2 mul-add contractions that
// are lowered like every other matmul (loops LLVM vectorises; cblas_sgemm
// calls with the pipeline's `blas` option). A sequence that
// is not a multiple of kBlock has its ragged last block emitted a second
// time with the tail's static size (forBlocks), instead of dynamic shapes
// that tg-plan-scratch could not place.
//
// - Forward: per query block, the running row max `m`, row sum `l` and
//   unnormalised output `acc` (online softmax, in the compute type: f32
//   for bf16/f16), rescaled by `exp(m_old - m_new)` per key block; then
//   `O = acc / l` and `lse = m + log(l)`.
// - Backward: per query block, `D = rowsum(dO * O) - dLSE`, and per key
//   block `P = exp(S - lse)` recomputed, `dV += P^T dO`,
//   `dS = scale * P * (dO V^T - D)`, `dQ += dS K`, `dK += dS^T Q`. The
//   CPU runs the blocks one after another, so dK and dV accumulate in one
//   `[Tk, d]` f32 tile per (batch, head) (O(T) scratch) and dQ in the query
//   block's: one pass, five products per block pair, no recomputation.
// - Causal: key blocks that start past a query block's last row are never
//   visited; the mask `key > query` is applied per element in the rest.
//   Key 0 is never masked and blocks run in order, so the running max is
//   finite after the first block and masked scores contribute exp(-inf) = 0.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cpu;

namespace {

/// Queries and keys per block: a 64 x 64 f32 score tile is 16 KiB, and
/// with the Q, K and V tiles of head dimension 64 stays in L1/L2.
constexpr int64_t kBlock = 64;

/// The body of one block: its first row, its static row count and the
/// loop-carried values; returns their next values.
using BlockFn = function_ref<SmallVector<Value>(OpBuilder &, Value start,
                                                int64_t size, ValueRange)>;

/// Runs `body` over rows [0, total) in blocks of `block` rows, carrying
/// `init`: an scf.for over the full blocks, then the ragged last block with
/// its own static size. With `limit`, only blocks that start before row
/// `limit` run (the causal bound). Returns the final carried values.
SmallVector<Value> forBlocks(OpBuilder &b, Location loc, int64_t total,
                             int64_t block, Value limit, ValueRange init,
                             BlockFn body) {
  int64_t full = total / block, rem = total % block;
  SmallVector<Value> state(init);
  if (full > 0) {
    Value upper = indexConstant(b, loc, full);
    if (limit) {
      Value needed = arith::CeilDivUIOp::create(
          b, loc, limit, indexConstant(b, loc, block));
      upper = arith::MinUIOp::create(b, loc, upper, needed);
    }
    auto loop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0), upper, indexConstant(b, loc, 1),
        state, [&](OpBuilder &nb, Location nloc, Value iv, ValueRange args) {
          Value start = arith::MulIOp::create(nb, nloc, iv,
                                              indexConstant(nb, nloc, block));
          scf::YieldOp::create(nb, nloc, body(nb, start, block, args));
        });
    state.assign(loop.getResults().begin(), loop.getResults().end());
  }
  if (rem == 0)
    return state;
  Value start = indexConstant(b, loc, full * block);
  if (!limit)
    return body(b, start, rem, state);
  Value needed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       start, limit);
  auto tail = scf::IfOp::create(
      b, loc, needed,
      [&](OpBuilder &nb, Location nloc) {
        scf::YieldOp::create(nb, nloc, body(nb, start, rem, state));
      },
      [&](OpBuilder &nb, Location nloc) {
        scf::YieldOp::create(nb, nloc, state);
      });
  return SmallVector<Value>(tail.getResults());
}

/// Emits the tile code of one op: slices of its `[B, H, T, ...]` operands
/// at the current (batch, head), and the few tile operations both
/// directions are made of, all computed in `ct`.
struct Tiles {
  OpBuilder &b;
  Location loc;
  Type ct;
  Value batch, head;

  MLIRContext *ctx() { return b.getContext(); }
  OpFoldResult fold(Value v) { return v; }
  OpFoldResult fold(int64_t v) { return b.getIndexAttr(v); }

  /// Rows [start, start + rows) of `t` (`[B, H, T, n]` or `[B, H, T]`) at
  /// this (batch, head), as `[rows, n]` or `[rows]`.
  Value rows(Value t, Value start, int64_t rows) {
    auto type = cast<RankedTensorType>(t.getType());
    SmallVector<OpFoldResult> offsets{batch, head, start};
    SmallVector<OpFoldResult> sizes{fold(1), fold(1), fold(rows)};
    SmallVector<int64_t> shape{rows};
    if (type.getRank() == 4) {
      offsets.push_back(fold(0));
      sizes.push_back(fold(type.getDimSize(3)));
      shape.push_back(type.getDimSize(3));
    }
    SmallVector<OpFoldResult> strides(sizes.size(), fold(1));
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), t, offsets,
        sizes, strides);
  }

  /// `tile` converted to `dest`'s element type and written at rows `start`
  /// of `dest` at this (batch, head).
  Value store(Value tile, Value dest, Value start) {
    auto type = cast<RankedTensorType>(dest.getType());
    Value v = convertTensor(b, loc, tile, type.getElementType());
    ArrayRef<int64_t> shape = shapeOf(tile);
    SmallVector<OpFoldResult> offsets{batch, head, start};
    SmallVector<OpFoldResult> sizes{fold(1), fold(1), fold(shape[0])};
    if (type.getRank() == 4) {
      offsets.push_back(fold(0));
      sizes.push_back(fold(shape[1]));
    }
    SmallVector<OpFoldResult> strides(sizes.size(), fold(1));
    return tensor::InsertSliceOp::create(b, loc, v, dest, offsets, sizes,
                                         strides);
  }

  /// Rows [start, start + rows) of a per-(batch, head) accumulator `acc`.
  Value part(Value acc, Value start, int64_t rows) {
    int64_t cols = shapeOf(acc)[1];
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({rows, cols}, ct), acc,
        ArrayRef<OpFoldResult>{start, fold(0)},
        ArrayRef<OpFoldResult>{fold(rows), fold(cols)},
        ArrayRef<OpFoldResult>{fold(1), fold(1)});
  }
  Value putPart(Value tile, Value acc, Value start) {
    return tensor::InsertSliceOp::create(
        b, loc, tile, acc, ArrayRef<OpFoldResult>{start, fold(0)},
        ArrayRef<OpFoldResult>{fold(shapeOf(tile)[0]), fold(shapeOf(tile)[1])},
        ArrayRef<OpFoldResult>{fold(1), fold(1)});
  }

  Value zeros(ArrayRef<int64_t> shape) {
    return filledTensor(b, loc, shape, ct, 0.0);
  }

  /// `acc + op(x) op(y)` with op a transpose where asked: a mul-add
  /// linalg.generic, the form of the backend's matmuls (tg-convert-matmul-
  /// to-blas takes it when every operand is f32). As in their lowering
  /// (ReductionsToLinalg.cpp), the innermost loop runs over n when y is
  /// stored [k, n] (an axpy) and over k when it is stored [n, k] (a dot
  /// product), and reassoc + contract let LLVM vectorise either.
  Value contract(Value x, Value y, Value acc, bool tx, bool ty) {
    AffineExpr m = getAffineDimExpr(0, ctx()),
               n = getAffineDimExpr(ty ? 1 : 2, ctx()),
               k = getAffineDimExpr(ty ? 2 : 1, ctx());
    auto map = [&](AffineExpr r, AffineExpr c) {
      return AffineMap::get(3, 0, {r, c}, ctx());
    };
    SmallVector<AffineMap> maps{tx ? map(k, m) : map(m, k),
                                ty ? map(n, k) : map(k, n), map(m, n)};
    SmallVector<utils::IteratorType> its = iterators(3);
    its[ty ? 2 : 1] = utils::IteratorType::reduction;
    auto fm = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
    return linalg::GenericOp::create(
               b, loc, TypeRange{acc.getType()}, ValueRange{x, y},
               ValueRange{acc}, maps, its,
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 Value p = arith::MulFOp::create(
                     nb, nloc, convertScalar(nb, nloc, args[0], ct),
                     convertScalar(nb, nloc, args[1], ct), fm);
                 linalg::YieldOp::create(
                     nb, nloc,
                     arith::AddFOp::create(nb, nloc, args[2], p, fm)
                         .getResult());
               })
        .getResult(0);
  }

  /// The indexing maps of `inputs` read by a tile of `shape`: each input
  /// whole (same shape) or per row (rank 1 against a rank-2 tile).
  SmallVector<AffineMap> inputMaps(ArrayRef<int64_t> shape,
                                   ValueRange inputs) {
    SmallVector<AffineMap> maps;
    for (Value in : inputs)
      maps.push_back(shapeOf(in).size() == shape.size()
                         ? b.getMultiDimIdentityMap(shape.size())
                         : AffineMap::get(shape.size(), 0,
                                          {getAffineDimExpr(0, ctx())}, ctx()));
    return maps;
  }

  /// An elementwise tile of `shape` from `inputs`, each read as inputMaps
  /// says.
  Value map(ArrayRef<int64_t> shape, ValueRange inputs, ScalarFn body) {
    SmallVector<AffineMap> maps = inputMaps(shape, inputs);
    return buildParallel(b, loc, RankedTensorType::get(shape, ct), inputs,
                         maps, body);
  }

  /// `dst` updated in place: `dst = body(inputs..., dst)` elementwise, each
  /// input read whole or per row as in map(). Writing the loop-carried
  /// tiles into themselves keeps a loop's yielded values equivalent to its
  /// iteration arguments, so bufferization reuses one buffer across the
  /// iterations instead of allocating fresh ones it must yield (heap
  /// allocations that no plan can place).
  Value update(Value dst, ValueRange inputs, ScalarFn body) {
    ArrayRef<int64_t> shape = shapeOf(dst);
    SmallVector<AffineMap> maps = inputMaps(shape, inputs);
    maps.push_back(b.getMultiDimIdentityMap(shape.size()));
    return linalg::GenericOp::create(
               b, loc, TypeRange{dst.getType()}, inputs, ValueRange{dst}, maps,
               iterators(shape.size()),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
               })
        .getResult(0);
  }

  /// `init[i] combine= x[i, j]` over the columns of `x`.
  Value rowReduce(Value x, Value init,
                  function_ref<Value(OpBuilder &, Location, Value, Value)>
                      combine) {
    SmallVector<AffineMap> maps{
        b.getMultiDimIdentityMap(2),
        AffineMap::get(2, 0, {getAffineDimExpr(0, ctx())}, ctx())};
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, ValueRange{x},
               ValueRange{init}, maps, iterators(1, 1),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 Value v = convertScalar(nb, nloc, args[0], ct);
                 linalg::YieldOp::create(nb, nloc,
                                         combine(nb, nloc, args[1], v));
               })
        .getResult(0);
  }

  /// `scale * q k^T` of a query block at `q0` and a key block at `k0`,
  /// `-inf` where `causal` masks it (key index above the query index).
  Value scores(Value q, Value k, Value q0, Value k0, double scale,
               bool causal) {
    int64_t br = shapeOf(q)[0], bc = shapeOf(k)[0];
    Value s = contract(q, k, zeros({br, bc}), false, true);
    return map({br, bc}, s, [&](OpBuilder &nb, Location nloc, ValueRange a) {
      Value v = arith::MulFOp::create(nb, nloc, a[0],
                                      scalarConstant(nb, nloc, ct, scale));
      if (!causal)
        return v;
      Value i = arith::AddIOp::create(nb, nloc, q0,
                                      linalg::IndexOp::create(nb, nloc, 0));
      Value j = arith::AddIOp::create(nb, nloc, k0,
                                      linalg::IndexOp::create(nb, nloc, 1));
      Value masked =
          arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::ugt, j, i);
      return arith::SelectOp::create(
                 nb, nloc, masked, scalarConstant(nb, nloc, ct, -INFINITY), v)
          .getResult();
    });
  }
};

/// Shape of a 4-D operand.
ArrayRef<int64_t> dims(Value v) { return shapeOf(v); }

/// The loop over (batch, head) pairs of `like` (`[B, H, ...]`), carrying
/// the op's result tensors.
SmallVector<Value>
forHeads(OpBuilder &b, Location loc, Value like, ValueRange init,
         function_ref<SmallVector<Value>(OpBuilder &, Value, Value, ValueRange)>
             body) {
  int64_t heads = dims(like)[1];
  return forBlocks(b, loc, dims(like)[0] * heads, 1, nullptr, init,
                   [&](OpBuilder &nb, Value bh, int64_t, ValueRange state) {
                     Location l = loc;
                     Value h = indexConstant(nb, l, heads);
                     return body(nb, arith::DivUIOp::create(nb, l, bh, h),
                                 arith::RemUIOp::create(nb, l, bh, h), state);
                   });
}

/// The first row past a query block: the causal bound on its key blocks.
Value blockEnd(OpBuilder &b, Location loc, Value q0, int64_t rows) {
  return arith::AddIOp::create(b, loc, q0, indexConstant(b, loc, rows));
}

/// What both directions read from their op: q, k and v, the compute type,
/// `causal` and `scale`.
struct Attention {
  Location loc;
  Value q, k, v;
  Type ct;
  bool causal;
  double scale;
};

/// The head both directions share: reads `Attention` from the op, loops
/// over its (batch, head) pairs carrying the op's results (empty tensors at
/// first) and replaces the op with their final values. `Derived::lowerHead`
/// emits the code of one (batch, head) pair.
template <typename OpTy, typename Derived>
struct AttentionPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rw) const final {
    Location loc = op.getLoc();
    Value q = adaptor.getQuery();
    Attention attn{loc,
                   q,
                   adaptor.getKey(),
                   adaptor.getValue(),
                   computeType(elementType(q)),
                   op.getCausal(),
                   op.getScale().convertToDouble()};
    SmallVector<Value> init;
    for (Value r : op->getResults()) {
      auto type = cast<RankedTensorType>(r.getType());
      init.push_back(
          emptyTensor(rw, loc, type.getShape(), type.getElementType()));
    }
    rw.replaceOp(
        op, forHeads(rw, loc, q, init,
                     [&](OpBuilder &b, Value bi, Value hi, ValueRange outs) {
                       return Derived::lowerHead(attn, adaptor, b, bi, hi,
                                                 outs);
                     }));
    return success();
  }
};

struct AttentionLowering final
    : AttentionPattern<AttentionOp, AttentionLowering> {
  using AttentionPattern::AttentionPattern;

  /// The forward of one (batch, head): per query block, the online softmax
  /// over its key blocks, then O and lse.
  static SmallVector<Value> lowerHead(const Attention &attn, AttentionOp::Adaptor,
                                      OpBuilder &b, Value bi, Value hi,
                                      ValueRange outs) {
    Location loc = attn.loc;
    Value q = attn.q, k = attn.k, v = attn.v;
    Type ct = attn.ct;
    bool causal = attn.causal;
    double scale = attn.scale;
    int64_t tq = dims(q)[2], tk = dims(k)[2], dv = dims(v)[3];
    return forBlocks(
        b, loc, tq, kBlock, nullptr, outs,
        [&](OpBuilder &qb, Value q0, int64_t br, ValueRange outs) {
          Tiles t{qb, loc, ct, bi, hi};
          Value qt = t.rows(q, q0, br);
          Value m0 = filledTensor(qb, loc, {br}, ct, -INFINITY);
          SmallVector<Value> st = forBlocks(
              qb, loc, tk, kBlock, causal ? blockEnd(qb, loc, q0, br) : nullptr,
              {m0, t.zeros({br}), t.zeros({br, dv})},
              [&](OpBuilder &kb, Value k0, int64_t bc, ValueRange st) {
                Tiles t{kb, loc, ct, bi, hi};
                return step(t, qt, t.rows(k, k0, bc), t.rows(v, k0, bc), q0, k0,
                            scale, causal, st);
              });
          Value o = t.map(
              {br, dv}, {st[2], st[1]},
              [](OpBuilder &nb, Location l, ValueRange a) {
                return arith::DivFOp::create(nb, l, a[0], a[1]).getResult();
              });
          Value lse =
              t.map({br}, {st[0], st[1]},
                    [](OpBuilder &nb, Location l, ValueRange a) {
                      return arith::AddFOp::create(
                                 nb, l, a[0], math::LogOp::create(nb, l, a[1]))
                          .getResult();
                    });
          return SmallVector<Value>{t.store(o, outs[0], q0),
                                    t.store(lse, outs[1], q0)};
        });
  }

  /// One key block of the online softmax: the running max, sum and
  /// unnormalised output `st` of the query block `qt` updated with the
  /// keys `kt` and values `vt`, each in place (Tiles::update). The new
  /// max is also a block temporary, since the rescaling factor reads the
  /// old one; the block's row max `r` is reduced from -inf rather than from
  /// `m`, and `m` takes max(m, r) last: a plain copy would be an identity
  /// op that canonicalization folds away, leaving the reduction to write
  /// into `m` while it is still read (a copy per block, yielded).
  static SmallVector<Value> step(Tiles &t, Value qt, Value kt, Value vt,
                                 Value q0, Value k0, double scale, bool causal,
                                 ValueRange st) {
    Value m = st[0], l = st[1], acc = st[2];
    int64_t br = shapeOf(qt)[0], bc = shapeOf(kt)[0];
    Value s = t.scores(qt, kt, q0, k0, scale, causal);
    auto maxOf = [](OpBuilder &b, Location l, ValueRange a) {
      return arith::MaximumFOp::create(b, l, a[0], a[1]).getResult();
    };
    Value r =
        t.rowReduce(s, filledTensor(t.b, t.loc, {br}, t.ct, -INFINITY),
                    [](OpBuilder &b, Location l, Value x, Value y) {
                      return arith::MaximumFOp::create(b, l, x, y).getResult();
                    });
    Value mNew = t.map({br}, {m, r}, maxOf);
    auto expDiff = [](OpBuilder &b, Location l, ValueRange a) {
      return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a[0], a[1]))
          .getResult();
    };
    auto mul = [](OpBuilder &b, Location l, ValueRange a) {
      return arith::MulFOp::create(b, l, a[0], a[1]).getResult();
    };
    Value p = t.map({br, bc}, {s, mNew}, expDiff);
    Value alpha = t.map({br}, {m, mNew}, expDiff);
    Value lNew =
        t.rowReduce(p, t.update(l, alpha, mul),
                    [](OpBuilder &b, Location loc, Value x, Value y) {
                      return arith::AddFOp::create(b, loc, x, y).getResult();
                    });
    Value accNew = t.contract(p, vt, t.update(acc, alpha, mul), false, false);
    return {t.update(m, r, maxOf), lNew, accNew};
  }
};

struct AttentionGradLowering final
    : AttentionPattern<AttentionGradOp, AttentionGradLowering> {
  using AttentionPattern::AttentionPattern;

  /// The backward of one (batch, head): dQ per query block, dK and dV
  /// accumulated over all of them.
  static SmallVector<Value> lowerHead(const Attention &attn,
                                      AttentionGradOp::Adaptor adaptor,
                                      OpBuilder &b, Value bi, Value hi,
                                      ValueRange outs) {
    Location loc = attn.loc;
    Value q = attn.q, k = attn.k, v = attn.v;
    Value dout = adaptor.getGradOutput(), o = adaptor.getOutput();
    Value lse = adaptor.getLse(), dlse = adaptor.getGradLse();
    Type ct = attn.ct;
    bool causal = attn.causal;
    double scale = attn.scale;
    int64_t tq = dims(q)[2], tk = dims(k)[2], d = dims(q)[3], dv = dims(v)[3];
    Tiles t{b, loc, ct, bi, hi};
    // dQ's rows are final per query block; dK and dV accumulate over
    // all of them in f32.
    SmallVector<Value> acc = forBlocks(
        b, loc, tq, kBlock, nullptr,
        {outs[0], t.zeros({tk, d}), t.zeros({tk, dv})},
        [&](OpBuilder &qb, Value q0, int64_t br, ValueRange st) {
          Tiles t{qb, loc, ct, bi, hi};
          Value qt = t.rows(q, q0, br), dot = t.rows(dout, q0, br);
          Value lt = t.rows(lse, q0, br);
          Value negDl =
              t.map({br}, t.rows(dlse, q0, br),
                    [](OpBuilder &nb, Location l, ValueRange a) {
                      return arith::NegFOp::create(nb, l, a[0]).getResult();
                    });
          Value dO = t.map(
              {br, dv}, {dot, t.rows(o, q0, br)},
              [](OpBuilder &nb, Location l, ValueRange a) {
                return arith::MulFOp::create(nb, l, a[0], a[1]).getResult();
              });
          Value delta = t.rowReduce(
              dO, negDl, [](OpBuilder &nb, Location l, Value x, Value y) {
                return arith::AddFOp::create(nb, l, x, y).getResult();
              });
          SmallVector<Value> inner = forBlocks(
              qb, loc, tk, kBlock, causal ? blockEnd(qb, loc, q0, br) : nullptr,
              {t.zeros({br, d}), st[1], st[2]},
              [&](OpBuilder &kb, Value k0, int64_t bc, ValueRange st) {
                Tiles t{kb, loc, ct, bi, hi};
                return step(t, qt, dot, lt, delta, t.rows(k, k0, bc),
                            t.rows(v, k0, bc), q0, k0, scale, causal, st);
              });
          return SmallVector<Value>{t.store(inner[0], st[0], q0), inner[1],
                                    inner[2]};
        });
    Value zero = indexConstant(b, loc, 0);
    return SmallVector<Value>{acc[0], t.store(acc[1], outs[1], zero),
                              t.store(acc[2], outs[2], zero)};
  }

  /// One (query block, key block) pair of FlashAttention-2's backward:
  /// `st` is the query block's dQ and the (batch, head)'s dK and dV
  /// accumulators, updated.
  static SmallVector<Value> step(Tiles &t, Value qt, Value dot, Value lt,
                                 Value delta, Value kt, Value vt, Value q0,
                                 Value k0, double scale, bool causal,
                                 ValueRange st) {
    int64_t br = shapeOf(qt)[0], bc = shapeOf(kt)[0];
    Value s = t.scores(qt, kt, q0, k0, scale, causal);
    // Masked scores are -inf, so their probabilities are exactly 0.
    Value p = t.map({br, bc}, {s, lt},
                    [](OpBuilder &b, Location l, ValueRange a) {
                      return math::ExpOp::create(
                                 b, l, arith::SubFOp::create(b, l, a[0], a[1]))
                          .getResult();
                    });
    Value dv = t.putPart(t.contract(p, dot, t.part(st[2], k0, bc), true, false),
                         st[2], k0);
    Value dp = t.contract(dot, vt, t.zeros({br, bc}), false, true);
    Value ds = t.map({br, bc}, {p, dp, delta},
                     [&](OpBuilder &b, Location l, ValueRange a) {
                       Value diff = arith::SubFOp::create(b, l, a[1], a[2]);
                       Value g = arith::MulFOp::create(b, l, a[0], diff);
                       return arith::MulFOp::create(
                                  b, l, g, scalarConstant(b, l, t.ct, scale))
                           .getResult();
                     });
    Value dq = t.contract(ds, kt, st[0], false, false);
    Value dk = t.putPart(t.contract(ds, qt, t.part(st[1], k0, bc), true, false),
                         st[1], k0);
    return {dq, dk, dv};
  }
};

} // namespace

void mlir::tg::cpu::populateAttentionToLoopsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, AttentionGradLowering>(
      patterns.getContext());
}
