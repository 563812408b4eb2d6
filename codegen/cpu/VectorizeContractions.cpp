//===- VectorizeContractions.cpp - register-blocked f32 GEMMs ---*- C++ -*-===//
//
// The tg-vectorize-contractions pass (see Passes.td): every f32 contraction
// on buffers (the matmul lowering's linalg.generic, 2-D or batched, and the
// convolutions' im2col products) becomes a cache-blocked loop nest around a
// register-blocked micro-kernel of vector FMAs, instead of the scalar loop
// nest that LLVM vectorised one inner loop of.
//
// Two micro-kernels cover every transpose form whose operands allow unit
// stride vector loads:
//
//  - outer product ("axpy", rhs and result contiguous along n: nn and tn):
//    an MR x NR block of the result lives in MR * NR / 16 vector registers
//    for a block of KC steps of k; each step loads NR elements of a rhs row
//    and broadcasts MR lhs elements. Each result element is still summed in
//    k order, one FMA per step: the order of the scalar loops;
//  - dot product (both operands contiguous along k: nt): an MR x NR block of
//    16-lane partial sums over the whole of k, reduced at the end; the sum
//    is reassociated, which the contraction's `reassoc` flag allows.
//
// Tails (M, N or K not multiples of the tile) use the same kernels with
// fewer rows and masked loads, so no shape falls back to scalar code. The
// other dimensions (batch, a second m or n dimension) are outer loops. The
// loops over batch dimensions and row tiles are `scf.parallel`
// (tg-parallelize-loops decides which run on threads); the result is never
// split over k between threads or calls, so the sums are the same from run
// to run and for any thread count. Nothing is allocated: no packing buffer.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoopIndices.h"
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_VECTORIZECONTRACTIONSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;
using mlir::tg::cpu::index;
using mlir::tg::cpu::indicesAt;

namespace {

/// f32 lanes of one vector: a zmm register under AVX-512; LLVM splits it
/// into two ymm (AVX2) or four xmm registers where the target has no
/// AVX-512, so the artifact runs on any x86-64 its target CPU names.
constexpr int64_t kLanes = 16;

/// Tile sizes of the outer-product kernel: 6 x 32 results are 12 zmm
/// accumulators (of 32), with 2 rhs vectors and a broadcast in flight; KC
/// rows of k keep a KC x NC block of the rhs (256 KiB) in L2 while the
/// rows of the lhs stream past it.
constexpr int64_t kAxpyRows = 6, kAxpyCols = 32, kAxpyK = 256,
                  kAxpyBlockCols = 256;
/// Tile sizes of the dot-product kernel: 4 x 4 partial sums (16 zmm) read
/// 4 + 4 vectors per 16 FMAs; NC rows of the rhs (64 x K) stay in L2.
constexpr int64_t kDotRows = 4, kDotCols = 4, kDotBlockCols = 64;

/// What one micro-kernel instance computes: rows [m0, m0 + mr) and columns
/// [n0, n0 + nr) of the result.
using TileFn = function_ref<void(OpBuilder &, Value m0, int64_t mr, Value n0,
                                 int64_t nr)>;

/// A contraction this pass rewrites: operands, their maps, and the loop
/// dimensions that the micro-kernel tiles (m, n, k); every other loop
/// dimension is parallel and becomes an outer loop.
struct Contraction {
  linalg::GenericOp op;
  Value lhs, rhs, out;
  AffineMap lhsMap, rhsMap, outMap;
  unsigned m = 0, n = 0, k = 0;
  SmallVector<int64_t> ranges;
  bool dotForm = false;
};

/// `%out + %x * %y` (either order) on f32 with `reassoc`: the matmul and
/// im2col lowerings' body. Reductions without `reassoc` (sum, the norms)
/// promised their order and are left alone.
bool isReassociableMulAdd(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3 || body.getOperations().size() != 3)
    return false;
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || !add.getType().isF32() ||
      !arith::bitEnumContainsAll(add.getFastmath(),
                                 arith::FastMathFlags::reassoc))
    return false;
  Value acc = body.getArgument(2);
  Value product = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul || (add.getLhs() != acc && add.getRhs() != acc))
    return false;
  Value x = body.getArgument(0), y = body.getArgument(1);
  return (mul.getLhs() == x && mul.getRhs() == y) ||
         (mul.getLhs() == y && mul.getRhs() == x);
}

/// A static f32 buffer; with `unitInner`, one whose last dimension is
/// contiguous (what vector.load needs).
bool isF32Buffer(Value v, bool unitInner) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isF32() ||
      type.getRank() == 0)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return !unitInner || (succeeded(type.getStridesAndOffset(strides, offset)) &&
                        strides.back() == 1);
}

/// The loop dimension of `map`'s result `i` (from the end), if it is one.
std::optional<unsigned> dimFromEnd(AffineMap map, unsigned i) {
  if (map.getNumResults() <= i)
    return std::nullopt;
  if (auto d = dyn_cast<AffineDimExpr>(
          map.getResult(map.getNumResults() - 1 - i)))
    return d.getPosition();
  return std::nullopt;
}

/// Recognises a contraction this pass handles and chooses its kernel.
std::optional<Contraction> match(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !isReassociableMulAdd(op))
    return std::nullopt;
  Contraction c;
  c.op = op;
  c.lhs = op.getDpsInputs()[0];
  c.rhs = op.getDpsInputs()[1];
  c.out = op.getDpsInits()[0];
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  c.lhsMap = maps[0];
  c.rhsMap = maps[1];
  c.outMap = maps[2];
  // Indices are loop dimensions or constants (a broadcast batch reads 0).
  for (AffineMap map : maps)
    if (!llvm::all_of(map.getResults(), [](AffineExpr e) {
          return isa<AffineDimExpr, AffineConstantExpr>(e);
        }))
      return std::nullopt;
  if (!c.outMap.isProjectedPermutation(/*allowZeroInResults=*/false))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->k.size() != 1 || dims->m.empty() ||
      dims->n.empty())
    return std::nullopt;
  c.k = dims->k[0];
  c.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(c.ranges, ShapedType::isDynamic))
    return std::nullopt;
  // The tiled m and n: the result's two innermost dimensions where they
  // are m and n, so the result tile is rows of contiguous elements.
  auto pick = [&](ArrayRef<unsigned> set, unsigned fromEnd) {
    std::optional<unsigned> d = dimFromEnd(c.outMap, fromEnd);
    return d && llvm::is_contained(set, *d) ? *d : set.back();
  };
  c.n = pick(dims->n, 0);
  c.m = pick(dims->m, 1);
  bool lhsF = isF32Buffer(c.lhs, false), rhsF = isF32Buffer(c.rhs, true),
       outF = isF32Buffer(c.out, false);
  if (!lhsF || !rhsF || !outF)
    return std::nullopt;
  if (dimFromEnd(c.rhsMap, 0) == c.n && dimFromEnd(c.outMap, 0) == c.n &&
      isF32Buffer(c.out, true))
    return c;
  if (dimFromEnd(c.lhsMap, 0) == c.k && dimFromEnd(c.rhsMap, 0) == c.k &&
      isF32Buffer(c.lhs, true)) {
    c.dotForm = true;
    return c;
  }
  return std::nullopt; // both operands transposed (tt): scalar loops
}

Value plus(OpBuilder &b, Location loc, Value v, int64_t c) {
  return c == 0 ? v : arith::AddIOp::create(b, loc, v, index(b, loc, c));
}

/// `for (iv = lb; iv < ub; iv += step) body(iv)` without loop-carried values.
void forLoop(OpBuilder &b, Location loc, Value lb, Value ub, int64_t step,
             function_ref<void(OpBuilder &, Value)> body) {
  scf::ForOp::create(b, loc, lb, ub, index(b, loc, step), ValueRange{},
                     [&](OpBuilder &nb, Location l, Value iv, ValueRange) {
                       body(nb, iv);
                       scf::YieldOp::create(nb, l);
                     });
}

/// `parallel for (iv = lb; iv < ub; iv += step) body(iv)`: a loop whose
/// iterations write disjoint parts of the result, as an `scf.parallel` that
/// tg-parallelize-loops may run on several threads (or make sequential).
void parallelLoop(OpBuilder &b, Location loc, Value lb, Value ub, int64_t step,
                  function_ref<void(OpBuilder &, Value)> body) {
  scf::ParallelOp::create(
      b, loc, ValueRange{lb}, ValueRange{ub}, ValueRange{index(b, loc, step)},
      [&](OpBuilder &nb, Location, ValueRange ivs) { body(nb, ivs[0]); });
}

/// Covers rows [0, M) and columns [0, N) with `tile`: full MR x NR tiles,
/// NC columns at a time (the rhs block that stays in cache while every row
/// tile passes), then the last rows and columns as smaller tiles. The loops
/// over row tiles (and the last row's column tiles) are parallel: each
/// iteration owns its rows of the result, and every result element is still
/// summed by one iteration, in the same order, whatever runs it.
void forEachTile(OpBuilder &b, Location loc, int64_t rows, int64_t cols,
                 int64_t mr, int64_t nr, int64_t nc, TileFn tile) {
  int64_t fullRows = rows / mr * mr, fullCols = cols / nr * nr;
  Value zero = index(b, loc, 0);
  auto rowTiles = [&](OpBuilder &b, Value n0, int64_t width) {
    parallelLoop(b, loc, zero, index(b, loc, fullRows), mr,
                 [&](OpBuilder &b, Value m0) { tile(b, m0, mr, n0, width); });
  };
  if (fullRows > 0 && fullCols > 0) {
    auto block = [&](OpBuilder &b, Value lo, Value hi) {
      parallelLoop(b, loc, zero, index(b, loc, fullRows), mr,
                   [&](OpBuilder &b, Value m0) {
                forLoop(b, loc, lo, hi, nr, [&](OpBuilder &b, Value n0) {
                  tile(b, m0, mr, n0, nr);
                });
              });
    };
    if (fullCols <= nc) {
      block(b, zero, index(b, loc, fullCols));
    } else {
      forLoop(b, loc, zero, index(b, loc, fullCols), nc,
              [&](OpBuilder &b, Value lo) {
                Value hi = arith::MinSIOp::create(b, loc, plus(b, loc, lo, nc),
                                                  index(b, loc, fullCols));
                block(b, lo, hi);
              });
    }
  }
  if (fullCols < cols && fullRows > 0)
    rowTiles(b, index(b, loc, fullCols), cols - fullCols);
  if (fullRows < rows && fullCols > 0)
    parallelLoop(b, loc, zero, index(b, loc, fullCols), nr,
                 [&](OpBuilder &b, Value n0) {
                   tile(b, index(b, loc, fullRows), rows - fullRows, n0, nr);
                 });
  if (fullRows < rows && fullCols < cols)
    tile(b, index(b, loc, fullRows), rows - fullRows, index(b, loc, fullCols),
         cols - fullCols);
}

/// Emits the kernels of one contraction in place of its generic.
class Emitter {
public:
  Emitter(Contraction c)
      : c(c), loc(c.op.getLoc()),
        vecType(VectorType::get({kLanes}, Float32Type::get(c.op.getContext()))),
        maskType(VectorType::get({kLanes},
                                 IntegerType::get(c.op.getContext(), 1))) {}

  void emit(OpBuilder &b) {
    point.assign(c.ranges.size(), Value());
    SmallVector<unsigned> outer;
    for (unsigned d = 0; d < c.ranges.size(); ++d)
      if (d != c.m && d != c.n && d != c.k)
        outer.push_back(d);
    emitOuter(b, outer);
  }

private:
  Contraction c;
  Location loc;
  VectorType vecType, maskType;
  /// The current loop point, by loop dimension.
  SmallVector<Value> point;

  /// One loop per batch (or second m/n) dimension, then the tiles. These
  /// dimensions are parallel iterators: each iteration owns its results.
  void emitOuter(OpBuilder &b, ArrayRef<unsigned> outer) {
    if (!outer.empty()) {
      parallelLoop(b, loc, index(b, loc, 0),
                   index(b, loc, c.ranges[outer[0]]), 1,
                   [&](OpBuilder &b, Value iv) {
                     point[outer[0]] = iv;
                     emitOuter(b, outer.drop_front());
                   });
      return;
    }
    int64_t rows = c.ranges[c.m], cols = c.ranges[c.n], depth = c.ranges[c.k];
    if (c.dotForm) {
      forEachTile(b, loc, rows, cols, kDotRows, kDotCols, kDotBlockCols,
                  [&](OpBuilder &b, Value m0, int64_t mr, Value n0,
                      int64_t nr) { dotTile(b, m0, mr, n0, nr); });
      return;
    }
    // k blocks outermost: each result tile is loaded and stored once per
    // block, and summed in k order as before.
    auto kBlock = [&](OpBuilder &b, Value k0, Value k1) {
      forEachTile(b, loc, rows, cols, kAxpyRows, kAxpyCols, kAxpyBlockCols,
                  [&](OpBuilder &b, Value m0, int64_t mr, Value n0,
                      int64_t nr) { axpyTile(b, m0, mr, n0, nr, k0, k1); });
    };
    if (depth <= kAxpyK) {
      kBlock(b, index(b, loc, 0), index(b, loc, depth));
      return;
    }
    forLoop(b, loc, index(b, loc, 0), index(b, loc, depth), kAxpyK,
            [&](OpBuilder &b, Value k0) {
              Value k1 = arith::MinSIOp::create(
                  b, loc, plus(b, loc, k0, kAxpyK), index(b, loc, depth));
              kBlock(b, k0, k1);
            });
  }

  /// A mask of the first `lanes` lanes, or null for a full vector.
  Value maskOf(OpBuilder &b, int64_t lanes) {
    if (lanes >= kLanes)
      return Value();
    return vector::ConstantMaskOp::create(b, loc, maskType,
                                          ArrayRef<int64_t>{lanes});
  }

  Value zeros(OpBuilder &b) {
    return arith::ConstantOp::create(b, loc,
                                     cast<TypedAttr>(b.getZeroAttr(vecType)));
  }

  /// A vector from `buffer` at `idx`; masked lanes read as 0.
  Value load(OpBuilder &b, Value buffer, ValueRange idx, Value mask) {
    if (!mask)
      return vector::LoadOp::create(b, loc, vecType, buffer, idx);
    return vector::MaskedLoadOp::create(b, loc, vecType, buffer, idx, mask,
                                        zeros(b));
  }

  void store(OpBuilder &b, Value v, Value buffer, ValueRange idx, Value mask) {
    if (!mask)
      vector::StoreOp::create(b, loc, v, buffer, idx);
    else
      vector::MaskedStoreOp::create(b, loc, buffer, idx, mask, v);
  }

  /// result[m0 + i, n0 + j] += sum over k in [k0, k1) of lhs * rhs, for
  /// i < mr, j < nr: mr x ceil(nr / 16) accumulators, one rhs row and mr
  /// broadcast lhs elements per step of k.
  void axpyTile(OpBuilder &b, Value m0, int64_t mr, Value n0, int64_t nr,
                Value k0, Value k1) {
    int64_t nv = (nr + kLanes - 1) / kLanes;
    Value lastMask = maskOf(b, nr - (nv - 1) * kLanes);
    auto maskAt = [&](int64_t j) { return j == nv - 1 ? lastMask : Value(); };
    auto outIdx = [&](OpBuilder &b, int64_t i, int64_t j) {
      point[c.m] = plus(b, loc, m0, i);
      point[c.n] = plus(b, loc, n0, j * kLanes);
      return indicesAt(b, loc, c.outMap, point);
    };
    SmallVector<Value> acc;
    for (int64_t i = 0; i < mr; ++i)
      for (int64_t j = 0; j < nv; ++j)
        acc.push_back(load(b, c.out, outIdx(b, i, j), maskAt(j)));
    auto loop = scf::ForOp::create(
        b, loc, k0, k1, index(b, loc, 1), acc,
        [&](OpBuilder &b, Location, Value k, ValueRange sums) {
          point[c.k] = k;
          SmallVector<Value> rhs;
          for (int64_t j = 0; j < nv; ++j) {
            point[c.n] = plus(b, loc, n0, j * kLanes);
            rhs.push_back(load(b, c.rhs, indicesAt(b, loc, c.rhsMap, point),
                               maskAt(j)));
          }
          SmallVector<Value> next;
          for (int64_t i = 0; i < mr; ++i) {
            point[c.m] = plus(b, loc, m0, i);
            Value a = memref::LoadOp::create(
                b, loc, c.lhs, indicesAt(b, loc, c.lhsMap, point));
            Value splat = vector::BroadcastOp::create(b, loc, vecType, a);
            for (int64_t j = 0; j < nv; ++j)
              next.push_back(vector::FMAOp::create(b, loc, splat, rhs[j],
                                                   sums[i * nv + j]));
          }
          scf::YieldOp::create(b, loc, next);
        });
    for (int64_t i = 0; i < mr; ++i)
      for (int64_t j = 0; j < nv; ++j)
        store(b, loop.getResult(i * nv + j), c.out, outIdx(b, i, j),
              maskAt(j));
  }

  /// result[m0 + i, n0 + j] += dot(lhs row, rhs row) over the whole of k,
  /// for i < mr, j < nr: 16-lane partial sums, the last (partial) vector of
  /// k masked, each reduced once at the end.
  void dotTile(OpBuilder &b, Value m0, int64_t mr, Value n0, int64_t nr) {
    int64_t depth = c.ranges[c.k], fullK = depth / kLanes * kLanes;
    auto step = [&](OpBuilder &b, Value k, ValueRange sums, Value mask) {
      point[c.k] = k;
      SmallVector<Value> lhs, rhs, next;
      for (int64_t i = 0; i < mr; ++i) {
        point[c.m] = plus(b, loc, m0, i);
        lhs.push_back(
            load(b, c.lhs, indicesAt(b, loc, c.lhsMap, point), mask));
      }
      for (int64_t j = 0; j < nr; ++j) {
        point[c.n] = plus(b, loc, n0, j);
        rhs.push_back(
            load(b, c.rhs, indicesAt(b, loc, c.rhsMap, point), mask));
      }
      for (int64_t i = 0; i < mr; ++i)
        for (int64_t j = 0; j < nr; ++j)
          next.push_back(
              vector::FMAOp::create(b, loc, lhs[i], rhs[j], sums[i * nr + j]));
      return next;
    };
    SmallVector<Value> sums(mr * nr, zeros(b));
    if (fullK > 0) {
      auto loop = scf::ForOp::create(
          b, loc, index(b, loc, 0), index(b, loc, fullK),
          index(b, loc, kLanes), sums,
          [&](OpBuilder &b, Location, Value k, ValueRange s) {
            scf::YieldOp::create(b, loc, step(b, k, s, Value()));
          });
      sums.assign(loop.getResults().begin(), loop.getResults().end());
    }
    if (fullK < depth)
      sums = step(b, index(b, loc, fullK), sums, maskOf(b, depth - fullK));
    for (int64_t i = 0; i < mr; ++i)
      for (int64_t j = 0; j < nr; ++j) {
        point[c.m] = plus(b, loc, m0, i);
        point[c.n] = plus(b, loc, n0, j);
        SmallVector<Value> idx = indicesAt(b, loc, c.outMap, point);
        Value old = memref::LoadOp::create(b, loc, c.out, idx);
        Value sum = vector::ReductionOp::create(
            b, loc, vector::CombiningKind::ADD, sums[i * nr + j], old,
            arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
        memref::StoreOp::create(b, loc, sum, c.out, idx);
      }
  }
};

struct VectorizeContractionsPass final
    : tg::cpu::impl::VectorizeContractionsPassBase<VectorizeContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Contraction> found;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (std::optional<Contraction> c = match(op))
        found.push_back(*c);
    });
    for (Contraction &c : found) {
      OpBuilder b(c.op);
      Emitter(c).emit(b);
      c.op.erase();
    }
  }
};

} // namespace
