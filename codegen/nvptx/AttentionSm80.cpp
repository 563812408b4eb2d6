//===- AttentionSm80.cpp - FlashAttention-2 with mma.sync -------*- C++ -*-===//
//
// Three kernels, each a CTA of four warps per (block of rows, batch x head)
// (blockIdx.x, blockIdx.y), each warp owning 16 rows of the CTA's block:
//
//  - forward: a block of 64 queries against the key/value blocks streamed
//    through a double-buffered shared-memory ring filled by 16-byte
//    cp.async copies (zero-filled past the sequence end). S = Q K^T and
//    O += P V are m16n8k16 mma.sync with f32 accumulators; the softmax is
//    online (running row max and sum in registers, FlashAttention-2), in
//    base 2 (ex2.approx) with the scale folded into log2(e). With `causal`
//    the key blocks above the diagonal are never loaded. Writes O and the
//    f32 log-sum-exp.
//  - dQ: the same loop over key blocks, recomputing P = exp(S - lse) from
//    the log-sum-exp, dP = dO V^T, dS = P (dP - D) and dQ += dS K.
//  - dK, dV: a block of 64 keys against streamed blocks of queries (and
//    their dO), computing the transposed scores S^T = K Q^T so that each
//    warp's rows are its own keys: dV += P^T dO, dK += dS^T Q.
//
// D = rowsum(dO * O) - dLSE is computed where it is needed (per query
// block, into shared memory) rather than by a preprocessing kernel: the
// kernel contract (KernelGen.h) gives a kernel no workspace, only its op's
// operands and results. For the same reason dQ is its own pass over the
// key blocks instead of f32 atomics from the dK/dV kernel (which would need
// an f32 dQ accumulator): two more matrix products per block pair (S and
// dP are recomputed), but deterministic, and no buffer beyond the results.
//
// Accumulator fragments of m16n8 tiles become the A operand of the next
// product in registers (P, dS: the C layout of two adjacent n-tiles is the
// A layout of one k16 step), as in FlashAttention-2. Every shared tile is
// rows x d 16-bit elements, row-major, 16-byte chunks XOR-swizzled by the
// row so that ldmatrix (and ldmatrix.trans for the operands read as [k][n])
// is conflict-free.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/AttentionSm80.h"
#include "codegen/nvptx/AttentionCommon.h"
#include "codegen/nvptx/AttentionSm90.h"
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/SimtKernels.h"
#include "codegen/nvptx/SimtScalar.h"

#include "dialects/TGOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <array>
#include <limits>

namespace tg::nvptx {

using namespace mlir;
using detail::AttnShape;
using detail::KernelBuilder;
using detail::Quad;
using mlir::tg::AttentionGradOp;
using mlir::tg::AttentionOp;

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
/// Rows of the block a CTA owns (queries, or keys for dK/dV): 16 per warp.
constexpr int kOwnRows = 16 * kWarps;
using detail::kLog2e;

/// Four 32-bit ldmatrix registers (or, for f16, four vector<2xf16>).
using Frag4 = std::array<Value, 4>;
using Frag2 = std::array<Value, 2>;

class AttnGen : public detail::AttnBase {
public:
  AttnGen(KernelBuilder &w, const AttnShape &s) : AttnBase(w, s) {
    accTy = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                             {w.f32, w.f32, w.f32, w.f32});
    cpr = static_cast<int>(s.d / 8);
  }

  void forward(Value q, Value k, Value v, Value o, Value lse);
  void gradQ(Value dO, Value dLse, Value q, Value k, Value v, Value o,
             Value lse, Value dq);
  void gradKV(Value dO, Value dLse, Value q, Value k, Value v, Value o,
              Value lse, Value dk, Value dv);

private:
  void begin();
  int tileBytes(int rows) const { return rows * static_cast<int>(s.d) * 2; }
  /// Byte offset of 16-byte chunk `ch` of row `r` in a tile.
  Value swizzled(Value r, Value ch) {
    Value sc = w.xor_(ch, w.andi(r, 7));
    return w.add(w.muli(r, cpr * 16), w.muli(sc, 16));
  }
  void loadTile(Value mat, int64_t rowBound, Value row0, int rows, Value dst);
  /// At the top of iteration `i` of `n` over streamed blocks: waits until
  /// block i's copies landed and every warp is done with the other ring
  /// slot, then has `loadNext(slot)` refill that slot with block i + 1
  /// (nothing in the last iteration). Returns block i's slot.
  Value advanceRing(Value i, Value n, llvm::function_ref<void(Value)> loadNext) {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    NVVM::Barrier0Op::create(b, loc);
    Value next = w.addi(i, 1);
    w.openIf(w.ult(next, n));
    loadNext(w.andi(next, 1));
    closeIf();
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    return w.andi(i, 1);
  }
  /// Key blocks of `bc` keys a CTA whose queries start at `row0` visits:
  /// all, or (causal) up to the one holding its last query.
  Value keyBlocks(Value row0, int bc) {
    Value n = w.i32c((s.tk + bc - 1) / bc);
    if (!s.causal)
      return n;
    return LLVM::UMinOp::create(
        b, loc, n, w.addi(w.udiv(w.addi(row0, kOwnRows - 1), w.i32c(bc)), 1));
  }
  Frag4 ldsm(Value byteOff, bool trans);
  Frag4 fragA(Value tile, Value rowBase, int kk);
  std::pair<Frag2, Frag2> fragBKMajor(Value tile, Value rowBase, int np, int kk);
  std::pair<Frag2, Frag2> fragBTrans(Value tile, int kk, int np);
  Value mma(Value acc, const Frag4 &a, const Frag2 &bf);
  /// acc[i] for the nTiles m16n8 tiles of (16 rows of `aTile` from aRow) x
  /// (rows of `bTile`)^T, both d columns wide.
  std::vector<Value> scores(Value aTile, Value aRow, Value bTile, int nTiles);
  /// acc += A x bTile, bTile read as [k][d] (rows = k), A given per k step.
  void accumulate(std::vector<Value> &acc, const std::vector<Frag4> &a,
                  Value bTile);
  /// The A fragments (one per k16 step) of a 16 x 8n f32 tile set.
  std::vector<Frag4> toA(const std::vector<Quad> &x);
  Value pack(Value lo, Value hi);
  Quad quad(Value acc) {
    return {w.extractvalue(acc, 0), w.extractvalue(acc, 1),
            w.extractvalue(acc, 2), w.extractvalue(acc, 3)};
  }
  Value loadShared(Value byteOff) {
    return LLVM::LoadOp::create(b, loc, w.f32, w.gep(smem, byteOff, b.getI8Type()));
  }
  /// Fills lse * log2(e) and D = rowsum(dO * O) - dLSE of query rows
  /// row0 .. row0 + rows into shared memory at `off` (rows f32 each), 0
  /// past the sequence end.
  void rowStats(Value off, Value gdO, Value gO, Value gLse, Value gDLse,
                Value row0, int rows);
  /// The quads of m16n8 accumulator structs.
  std::vector<Quad> quadsOf(ArrayRef<Value> acc) {
    std::vector<Quad> r;
    for (Value a : acc)
      r.push_back(quad(a));
    return r;
  }

  Type accTy;
  int cpr = 0;
  Value tid, warp, r8, jLo, jHi, smem, blk;
};

void AttnGen::begin() {
  tid = NVVM::ThreadIdXOp::create(b, loc, w.i32);
  lane = w.andi(tid, 31);
  warp = w.shri(tid, 5);
  g = w.shri(lane, 2);
  q2 = w.muli(w.andi(lane, 3), 2);
  // ldmatrix.x4: lane l gives the address of row l%8 of matrix l/8.
  Value j = w.shri(lane, 3);
  r8 = w.andi(lane, 7);
  jLo = w.andi(j, 1);
  jHi = w.shri(j, 1);
  smem = LLVM::AddressOfOp::create(b, loc, w.ptr3, "tg_smem");
  blk = NVVM::BlockIdXOp::create(b, loc, w.i32);
  bh = NVVM::BlockIdYOp::create(b, loc, w.i32);
}

void AttnGen::loadTile(Value mat, int64_t rowBound, Value row0, int rows,
                       Value dst) {
  int chunks = rows * cpr;
  for (int i = 0; i < chunks / kThreads; ++i) {
    Value idx = w.addi(tid, i * kThreads);
    Value r = w.shri(idx, detail::log2i(cpr));
    Value ch = w.andi(idx, cpr - 1);
    Value gr = w.add(row0, r);
    Value pred = w.ult(gr, w.i32c(rowBound));
    Value off = w.add(w.mul(w.zext64(gr), w.i64c(s.d)), w.zext64(w.muli(ch, 8)));
    // Past the end: a zero-byte copy (zero fill) from a valid address.
    Value src = w.select(pred, w.gep(mat, off, elt), mat);
    Value size = w.select(pred, w.i32c(16), w.i32c(0));
    Value to = w.gep(smem, w.add(dst, swizzled(r, ch)), b.getI8Type());
    NVVM::CpAsyncOp::create(b, loc, to, src, 16, NVVM::LoadCacheModifierKind::CG,
                            size);
  }
}

Frag4 AttnGen::ldsm(Value byteOff, bool trans) {
  MLIRContext *ctx = b.getContext();
  Type ldTy = LLVM::LLVMStructType::getLiteral(ctx, {w.i32, w.i32, w.i32, w.i32});
  Value ptr = w.gep(smem, byteOff, b.getI8Type());
  Value r = NVVM::LdMatrixOp::create(
      b, loc, ldTy, ptr, 4, trans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
      NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8), NVVM::LdStMatrixEltType::B16);
  Frag4 regs;
  for (int i = 0; i < 4; ++i) {
    regs[i] = w.extractvalue(r, i);
    if (!s.bf16) // f16 multiplicands are vector<2xf16>
      regs[i] = LLVM::BitcastOp::create(
          b, loc, VectorType::get({2}, b.getF16Type()), regs[i]);
  }
  return regs;
}

Frag4 AttnGen::fragA(Value tile, Value rowBase, int kk) {
  // Matrices (rows +0/+8) x (k +0/+8): a0..a3 of the m16k16 A fragment.
  Value row = w.add(rowBase, w.add(w.muli(jLo, 8), r8));
  Value ch = w.addi(jHi, kk * 2);
  return ldsm(w.add(tile, swizzled(row, ch)), false);
}

std::pair<Frag2, Frag2> AttnGen::fragBKMajor(Value tile, Value rowBase, int np,
                                             int kk) {
  // The tile is [n][k]: matrices (n +0/+8) x (k +0/+8), two n8 tiles.
  Value row = w.add(w.addi(rowBase, np * 16), w.add(w.muli(jHi, 8), r8));
  Value ch = w.addi(jLo, kk * 2);
  Frag4 r = ldsm(w.add(tile, swizzled(row, ch)), false);
  return {{r[0], r[1]}, {r[2], r[3]}};
}

std::pair<Frag2, Frag2> AttnGen::fragBTrans(Value tile, int kk, int np) {
  // The tile is [k][n], read transposed: matrices (k +0/+8) x (n +0/+8).
  Value row = w.add(w.i32c(kk * 16), w.add(w.muli(jLo, 8), r8));
  Value ch = w.addi(jHi, np * 2);
  Frag4 r = ldsm(w.add(tile, swizzled(row, ch)), true);
  return {{r[0], r[1]}, {r[2], r[3]}};
}

Value AttnGen::mma(Value acc, const Frag4 &a, const Frag2 &bf) {
  MLIRContext *ctx = b.getContext();
  auto mt = NVVM::MMATypesAttr::get(ctx, s.bf16 ? NVVM::MMATypes::bf16
                                                : NVVM::MMATypes::f16);
  Quad c = quad(acc);
  return NVVM::MmaOp::create(
      b, loc, accTy, NVVM::MMAShapeAttr::get(ctx, 16, 8, 16),
      NVVM::MMAB1OpAttr(), NVVM::MMAIntOverflowAttr(),
      NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
      NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col), mt, mt,
      ValueRange(a), ValueRange(bf), ValueRange(c));
}

std::vector<Value> AttnGen::scores(Value aTile, Value aRow, Value bTile,
                                   int nTiles) {
  std::vector<Value> acc(nTiles, w.zero(accTy));
  for (int kk = 0; kk < s.d / 16; ++kk) {
    Frag4 a = fragA(aTile, aRow, kk);
    for (int np = 0; np < nTiles / 2; ++np) {
      auto [b0, b1] = fragBKMajor(bTile, w.i32c(0), np, kk);
      acc[2 * np] = mma(acc[2 * np], a, b0);
      acc[2 * np + 1] = mma(acc[2 * np + 1], a, b1);
    }
  }
  return acc;
}

void AttnGen::accumulate(std::vector<Value> &acc, const std::vector<Frag4> &a,
                         Value bTile) {
  for (int kk = 0; kk < static_cast<int>(a.size()); ++kk)
    for (int np = 0; np < s.d / 16; ++np) {
      auto [b0, b1] = fragBTrans(bTile, kk, np);
      acc[2 * np] = mma(acc[2 * np], a[kk], b0);
      acc[2 * np + 1] = mma(acc[2 * np + 1], a[kk], b1);
    }
}

Value AttnGen::pack(Value lo, Value hi) {
  Value v = LLVM::UndefOp::create(b, loc, w.v2f32);
  v = LLVM::InsertElementOp::create(b, loc, v, lo, w.i32c(0));
  v = LLVM::InsertElementOp::create(b, loc, v, hi, w.i32c(1));
  Value n = LLVM::FPTruncOp::create(b, loc, VectorType::get({2}, elt), v);
  if (s.bf16) // bf16 multiplicands are i32 registers
    return LLVM::BitcastOp::create(b, loc, w.i32, n);
  return n;
}

std::vector<Frag4> AttnGen::toA(const std::vector<Quad> &x) {
  // Tiles 2k and 2k+1 (columns 16k .. 16k+15) hold rows g and g+8 at
  // columns q2, q2+1 and 8+q2, 8+q2+1: exactly a0..a3 of a k16 step.
  std::vector<Frag4> a;
  for (size_t t = 0; t + 1 < x.size(); t += 2)
    a.push_back({pack(x[t][0], x[t][1]), pack(x[t][2], x[t][3]),
                 pack(x[t + 1][0], x[t + 1][1]), pack(x[t + 1][2], x[t + 1][3])});
  return a;
}

void AttnGen::rowStats(Value off, Value gdO, Value gO, Value gLse, Value gDLse,
                       Value row0, int rows) {
  // threads / rows threads per row, each a contiguous run of columns read
  // as 16-byte vectors, summed across the row's threads by shuffles.
  int perRow = kThreads / rows;
  Value r = w.udiv(tid, w.i32c(perRow));
  Value part = w.urem(tid, w.i32c(perRow));
  Value gr = w.add(row0, r);
  Value valid = w.ult(gr, w.i32c(s.tq));
  Value safe = w.select(valid, gr, w.i32c(0));
  Value d = rowDot(gdO, gO, safe, part, perRow);
  Value l = LLVM::LoadOp::create(b, loc, w.f32, w.gep(gLse, w.zext64(safe), w.f32));
  Value dl = LLVM::LoadOp::create(b, loc, w.f32, w.gep(gDLse, w.zext64(safe), w.f32));
  Value zero = w.f32c(0);
  Value lse2 = w.select(valid, w.fmul(l, w.f32c(kLog2e)), zero);
  d = w.select(valid, fsub(d, dl), zero);
  w.openIf(w.icmp(LLVM::ICmpPredicate::eq, part, w.i32c(0)));
  Value at = w.add(off, w.muli(r, 4));
  LLVM::StoreOp::create(b, loc, lse2, w.gep(smem, at, b.getI8Type()));
  LLVM::StoreOp::create(b, loc, d, w.gep(smem, w.addi(at, rows * 4), b.getI8Type()));
  closeIf();
}

void AttnGen::forward(Value q, Value k, Value v, Value o, Value lse) {
  begin();
  const int bc = s.streamed;
  const int qBytes = tileBytes(kOwnRows), kvBytes = tileBytes(bc);
  auto kTile = [&](Value slot) { return w.addi(w.muli(slot, 2 * kvBytes), qBytes); };
  auto vTile = [&](Value slot) { return w.addi(kTile(slot), kvBytes); };
  Value gQ = matrix(q, s.tq, s.d, elt), gK = matrix(k, s.tk, s.d, elt),
        gV = matrix(v, s.tk, s.d, elt);
  Value row0 = w.muli(blk, kOwnRows);
  loadTile(gQ, s.tq, row0, kOwnRows, w.i32c(0));
  loadTile(gK, s.tk, w.i32c(0), bc, kTile(w.i32c(0)));
  loadTile(gV, s.tk, w.i32c(0), bc, vTile(w.i32c(0)));
  NVVM::CpAsyncCommitGroupOp::create(b, loc);

  // Blocks above the diagonal are never loaded.
  Value nKB = keyBlocks(row0, bc);
  Value negInf = w.f32c(-std::numeric_limits<double>::infinity());
  int nd = static_cast<int>(s.d / 8);
  SmallVector<Value> init = {negInf, negInf, w.f32c(0), w.f32c(0)};
  init.append(nd, w.zero(accTy));
  Value rowG = w.add(w.add(row0, w.muli(warp, 16)), g);
  scf::ForOp loop = w.openFor(nKB, init, "kb");
  Value kb = loop.getInductionVar();
  auto it = loop.getRegionIterArgs();
  Value mOld[2] = {it[0], it[1]}, lOld[2] = {it[2], it[3]};
  std::vector<Value> acc(it.begin() + 4, it.end());
  Value nextKey = w.muli(w.addi(kb, 1), bc);
  Value cur = advanceRing(kb, nKB, [&](Value slot) {
    loadTile(gK, s.tk, nextKey, bc, kTile(slot));
    loadTile(gV, s.tk, nextKey, bc, vTile(slot));
  });
  std::vector<Value> sAcc = scores(w.i32c(0), w.muli(warp, 16), kTile(cur), bc / 8);
  std::vector<Quad> x = quadsOf(sAcc);
  Value m[2] = {mOld[0], mOld[1]}, l[2] = {lOld[0], lOld[1]}, alpha[2];
  onlineSoftmax(x, rowG, w.add(w.muli(kb, bc), q2), m, l, alpha);
  std::vector<Quad> o4 = quadsOf(acc);
  rescale(o4, alpha);
  for (size_t t = 0; t < acc.size(); ++t)
    acc[t] = fromQuads(accTy, {o4[t]});
  accumulate(acc, toA(x), vTile(cur));
  SmallVector<Value> yield = {m[0], m[1], l[0], l[1]};
  yield.append(acc.begin(), acc.end());
  w.closeFor(loop, yield);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);

  std::vector<Value> out(loop.getResults().begin() + 4, loop.getResults().end());
  Value mEnd[2] = {loop.getResult(0), loop.getResult(1)};
  Value lEnd[2] = {loop.getResult(2), loop.getResult(3)};
  storeOutput(o, lse, rowG, quadsOf(out), mEnd, lEnd);
}

void AttnGen::gradQ(Value dO, Value dLse, Value q, Value k, Value v, Value o,
                    Value lse, Value dq) {
  begin();
  const int bc = s.streamed;
  const int qBytes = tileBytes(kOwnRows), kvBytes = tileBytes(bc);
  const int statsOff = 2 * qBytes; // lse2[64] then D[64], f32
  const int ringOff = statsOff + 2 * kOwnRows * 4;
  auto kTile = [&](Value slot) { return w.addi(w.muli(slot, 2 * kvBytes), ringOff); };
  auto vTile = [&](Value slot) { return w.addi(kTile(slot), kvBytes); };
  Value gQ = matrix(q, s.tq, s.d, elt), gDO = matrix(dO, s.tq, s.d, elt),
        gK = matrix(k, s.tk, s.d, elt), gV = matrix(v, s.tk, s.d, elt);
  Value row0 = w.muli(blk, kOwnRows);
  loadTile(gQ, s.tq, row0, kOwnRows, w.i32c(0));
  loadTile(gDO, s.tq, row0, kOwnRows, w.i32c(qBytes));
  loadTile(gK, s.tk, w.i32c(0), bc, kTile(w.i32c(0)));
  loadTile(gV, s.tk, w.i32c(0), bc, vTile(w.i32c(0)));
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  rowStats(w.i32c(statsOff), gDO, matrix(o, s.tq, s.d, elt),
           matrix(lse, s.tq, 1, w.f32), matrix(dLse, s.tq, 1, w.f32), row0,
           kOwnRows);
  NVVM::Barrier0Op::create(b, loc);
  Value rowL = w.add(w.muli(warp, 16), g); // within the block
  Value lse2[2], dRow[2];
  for (int h = 0; h < 2; ++h) {
    Value r4 = w.muli(w.addi(rowL, h * 8), 4);
    lse2[h] = loadShared(w.addi(r4, statsOff));
    dRow[h] = loadShared(w.addi(r4, statsOff + kOwnRows * 4));
  }

  Value nKB = keyBlocks(row0, bc);
  int nd = static_cast<int>(s.d / 8);
  SmallVector<Value> init(nd, w.zero(accTy));
  scf::ForOp loop = w.openFor(nKB, init, "kb");
  Value kb = loop.getInductionVar();
  std::vector<Value> acc(loop.getRegionIterArgs().begin(),
                         loop.getRegionIterArgs().end());
  Value nextKey = w.muli(w.addi(kb, 1), bc);
  Value cur = advanceRing(kb, nKB, [&](Value slot) {
    loadTile(gK, s.tk, nextKey, bc, kTile(slot));
    loadTile(gV, s.tk, nextKey, bc, vTile(slot));
  });
  Value aRow = w.muli(warp, 16);
  std::vector<Value> sAcc = scores(w.i32c(0), aRow, kTile(cur), bc / 8);
  std::vector<Value> dpAcc = scores(w.i32c(qBytes), aRow, vTile(cur), bc / 8);
  Value rowW = w.add(row0, rowL);
  Value col0 = w.add(w.muli(kb, bc), q2);
  std::vector<Quad> ds(sAcc.size());
  for (size_t t = 0; t < sAcc.size(); ++t) {
    Quad sv = quad(sAcc[t]), dp = quad(dpAcc[t]);
    for (int e = 0; e < 4; ++e) {
      Value row = w.addi(rowW, e >= 2 ? 8 : 0);
      Value col = w.addi(col0, static_cast<int64_t>(t) * 8 + (e & 1));
      Value p = ex2(fsub(w.fmul(sv[e], w.f32c(c2)), lse2[e / 2]));
      p = w.select(validKey(row, col), p, w.f32c(0));
      ds[t][e] = w.fmul(p, fsub(dp[e], dRow[e / 2]));
    }
  }
  accumulate(acc, toA(ds), kTile(cur));
  w.closeFor(loop, acc);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  std::vector<Value> out(loop.getResults().begin(), loop.getResults().end());
  Value sc = w.f32c(s.scale);
  storeRows(matrix(dq, s.tq, s.d, elt), s.tq, w.add(row0, rowL), quadsOf(out), sc, sc);
}

void AttnGen::gradKV(Value dO, Value dLse, Value q, Value k, Value v, Value o,
                     Value lse, Value dk, Value dv) {
  begin();
  const int br = s.streamed;
  const int kvBytes = tileBytes(kOwnRows), qBytes = tileBytes(br);
  const int ringOff = 2 * kvBytes; // per slot: Q then dO
  const int statsOff = ringOff + 4 * qBytes;
  auto qTile = [&](Value slot) { return w.addi(w.muli(slot, 2 * qBytes), ringOff); };
  auto doTile = [&](Value slot) { return w.addi(qTile(slot), qBytes); };
  Value gQ = matrix(q, s.tq, s.d, elt), gDO = matrix(dO, s.tq, s.d, elt),
        gK = matrix(k, s.tk, s.d, elt), gV = matrix(v, s.tk, s.d, elt);
  Value gO = matrix(o, s.tq, s.d, elt), gL = matrix(lse, s.tq, 1, w.f32),
        gDL = matrix(dLse, s.tq, 1, w.f32);
  Value key0 = w.muli(blk, kOwnRows);
  Value aRow = w.muli(warp, 16); // this warp's 16 keys of the block
  // Causal: queries before the block's first key see none of its keys.
  Value nQB = w.i32c((s.tq + br - 1) / br);
  Value first = s.causal ? w.udiv(key0, w.i32c(br)) : w.i32c(0);
  first = LLVM::UMinOp::create(b, loc, first, nQB);
  loadTile(gK, s.tk, key0, kOwnRows, w.i32c(0));
  loadTile(gV, s.tk, key0, kOwnRows, w.i32c(kvBytes));
  Value q0 = w.muli(first, br);
  loadTile(gQ, s.tq, q0, br, qTile(w.i32c(0)));
  loadTile(gDO, s.tq, q0, br, doTile(w.i32c(0)));
  NVVM::CpAsyncCommitGroupOp::create(b, loc);

  int nd = static_cast<int>(s.d / 8);
  SmallVector<Value> init(2 * nd, w.zero(accTy));
  Value trips = w.sub(nQB, first);
  scf::ForOp loop = w.openFor(trips, init, "qb");
  Value i = loop.getInductionVar();
  std::vector<Value> dkAcc(loop.getRegionIterArgs().begin(),
                           loop.getRegionIterArgs().begin() + nd);
  std::vector<Value> dvAcc(loop.getRegionIterArgs().begin() + nd,
                           loop.getRegionIterArgs().end());
  Value qb = w.add(first, i);
  Value nextRow = w.muli(w.addi(qb, 1), br);
  Value cur = advanceRing(i, trips, [&](Value slot) {
    loadTile(gQ, s.tq, nextRow, br, qTile(slot));
    loadTile(gDO, s.tq, nextRow, br, doTile(slot));
  });
  Value qRow0 = w.muli(qb, br);
  rowStats(w.i32c(statsOff), gDO, gO, gL, gDL, qRow0, br);
  NVVM::Barrier0Op::create(b, loc);
  // Transposed scores: this warp's 16 keys x the block's queries.
  std::vector<Value> sT = scores(w.i32c(0), aRow, qTile(cur), br / 8);
  std::vector<Value> dpT = scores(w.i32c(kvBytes), aRow, doTile(cur), br / 8);
  Value keyW = w.add(w.add(key0, aRow), g);
  std::vector<Quad> p(sT.size()), ds(sT.size());
  for (size_t t = 0; t < sT.size(); ++t) {
    Quad sv = quad(sT[t]), dp = quad(dpT[t]);
    for (int e = 0; e < 4; ++e) {
      Value key = w.addi(keyW, e >= 2 ? 8 : 0);
      Value qLocal = w.addi(q2, static_cast<int64_t>(t) * 8 + (e & 1));
      Value query = w.add(qRow0, qLocal);
      Value q4 = w.muli(qLocal, 4);
      Value l2 = loadShared(w.addi(q4, statsOff));
      Value dRow = loadShared(w.addi(q4, statsOff + br * 4));
      Value pv = ex2(fsub(w.fmul(sv[e], w.f32c(c2)), l2));
      p[t][e] = w.select(validKey(query, key), pv, w.f32c(0));
      ds[t][e] = w.fmul(p[t][e], fsub(dp[e], dRow));
    }
  }
  accumulate(dvAcc, toA(p), doTile(cur));
  accumulate(dkAcc, toA(ds), qTile(cur));
  SmallVector<Value> yield(dkAcc.begin(), dkAcc.end());
  yield.append(dvAcc.begin(), dvAcc.end());
  w.closeFor(loop, yield);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  std::vector<Value> dkOut(loop.getResults().begin(), loop.getResults().begin() + nd);
  std::vector<Value> dvOut(loop.getResults().begin() + nd, loop.getResults().end());
  Value keyG = w.add(w.add(key0, aRow), g);
  Value sc = w.f32c(s.scale), one = w.f32c(1);
  storeRows(matrix(dk, s.tk, s.d, elt), s.tk, keyG, quadsOf(dkOut), sc, sc);
  storeRows(matrix(dv, s.tk, s.d, elt), s.tk, keyG, quadsOf(dvOut), one, one);
}

/// Shared-memory bytes of each kernel (see the layouts in forward, gradQ
/// and gradKV).
int forwardSmem(const AttnShape &s) {
  return static_cast<int>((kOwnRows + 4 * s.streamed) * s.d * 2);
}
int gradQSmem(const AttnShape &s) {
  return static_cast<int>((2 * kOwnRows + 4 * s.streamed) * s.d * 2 +
                          2 * kOwnRows * 4);
}
int gradKVSmem(const AttnShape &s) {
  return static_cast<int>((2 * kOwnRows + 4 * s.streamed) * s.d * 2 +
                          2 * s.streamed * 4);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

} // namespace

bool isAttentionOp(Operation *op) {
  return isa<AttentionOp, AttentionGradOp>(op);
}

std::optional<std::string> attentionKernelRefusal(Operation *op) {
  if (!isAttentionOp(op))
    return std::string("it is not an attention op");
  Value q = op->getOperand(isa<AttentionOp>(op) ? 0 : 2);
  Value k = op->getOperand(isa<AttentionOp>(op) ? 1 : 3);
  Value v = op->getOperand(isa<AttentionOp>(op) ? 2 : 4);
  Type e = getElementTypeOrSelf(q.getType());
  if (!e.isBF16() && !e.isF16())
    return "its inputs are " + [&] {
      std::string str;
      llvm::raw_string_ostream os(str);
      os << e;
      return str;
    }() + " (the fused kernels take bf16 or f16)";
  for (Value x : op->getOperands()) {
    Type xe = getElementTypeOrSelf(x.getType());
    bool statistic = shapeOf(x).size() == 3; // lse and its cotangent
    if (statistic ? !xe.isF32() : xe != e)
      return std::string("its operands mix element types");
  }
  int64_t d = shapeOf(q).back(), dv = shapeOf(v).back();
  if (d != dv)
    return "its value head dimension (" + std::to_string(dv) +
           ") differs from the query's (" + std::to_string(d) + ")";
  if (d != 64 && d != 128)
    return "its head dimension is " + std::to_string(d) +
           " (the fused kernels take 64 or 128)";
  (void)k;
  int64_t bhCount = shapeOf(q)[0] * shapeOf(q)[1];
  if (bhCount > 65535)
    return "batch x heads = " + std::to_string(bhCount) +
           " exceeds the grid's 65535 y blocks";
  for (Type t : op->getOperandTypes())
    if (cast<RankedTensorType>(t).getNumElements() >=
        std::numeric_limits<int32_t>::max())
      return std::string("a tensor has 2^31 elements or more");
  return std::nullopt;
}

FailureOr<std::vector<KernelLaunch>>
lowerAttentionToKernels(Operation *op, Target t, ModuleOp kernels) {
  if (std::optional<std::string> why = attentionKernelRefusal(op))
    return op->emitOpError() << "has no fused GPU kernel: " << *why;
  // KernelGen.h's aliasing rule: CTAs read rows other CTAs write, so no
  // result may live in an operand's buffer (the planner gives attention's
  // results their own buffers; this guards against a plan that does not).
  for (OpResult r : op->getResults())
    if (detail::resultSharesOperandBuffer(op, r))
      return op->emitOpError() << "has no fused GPU kernel: the memory plan "
                                  "puts result #"
                               << r.getResultNumber()
                               << " in the buffer of an operand it still reads";
  bool forward = isa<AttentionOp>(op);
  // sm_90a: the wgmma + TMA kernels (AttentionSm90.cpp).
  if (t == Target::SM90a)
    return forward ? detail::lowerAttentionForwardSm90(op, kernels)
                   : detail::lowerAttentionBackwardSm90(op, kernels);
  AttnShape s = detail::attentionShape(op);

  MLIRContext *ctx = kernels.getContext();
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  ctx->getOrLoadDialect<NVVM::NVVMDialect>();
  ctx->getOrLoadDialect<scf::SCFDialect>();
  detail::declareSharedMemory(kernels);
  auto param = [](KernelParam::Kind kind, unsigned i) {
    return KernelParam(kind, i);
  };
  using K = KernelParam::Kind;
  auto grid = [&](int64_t rows) {
    return std::array<uint32_t, 3>{
        static_cast<uint32_t>((rows + kOwnRows - 1) / kOwnRows),
        static_cast<uint32_t>(s.bh), 1};
  };
  std::vector<KernelLaunch> launches;
  auto emit = [&](StringRef prefix, int smemBytes, int64_t rows,
                  std::vector<KernelParam> params,
                  llvm::function_ref<void(AttnGen &, ArrayRef<Value>)> body) {
    KernelLaunch l;
    l.symbol = kernelSymbol(op, prefix, t);
    l.grid = grid(rows);
    l.block = {kThreads, 1, 1};
    l.dynamicSharedBytes = static_cast<uint32_t>(smemBytes);
    l.params = std::move(params);
    if (!hasKernel(kernels, l.symbol)) {
      detail::SimtKernel kern = detail::beginSimtKernel(
          kernels, l.symbol, l.params.size(), kThreads, op->getLoc());
      AttnGen gen(*kern.w, s);
      body(gen, kern.params);
      detail::endSimtKernel(kern);
    }
    launches.push_back(std::move(l));
  };
  if (forward) {
    s.streamed = 64;
    emit("tg_attn_fwd", forwardSmem(s), s.tq,
         {param(K::Operand, 0), param(K::Operand, 1), param(K::Operand, 2),
          param(K::Result, 0), param(K::Result, 1)},
         [](AttnGen &g, ArrayRef<Value> p) { g.forward(p[0], p[1], p[2], p[3], p[4]); });
    return launches;
  }
  // Operands: dO, dLSE, Q, K, V, O, LSE; results dQ, dK, dV.
  std::vector<KernelParam> ins;
  for (unsigned i = 0; i < 7; ++i)
    ins.push_back(param(K::Operand, i));
  s.streamed = 64;
  std::vector<KernelParam> pq = ins;
  pq.push_back(param(K::Result, 0));
  emit("tg_attn_dq", gradQSmem(s), s.tq, pq, [](AttnGen &g, ArrayRef<Value> p) {
    g.gradQ(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
  });
  // d = 128: 32-query blocks keep the dK and dV accumulators (128 f32
  // registers) and the two score tiles within the register file.
  s.streamed = s.d > 64 ? 32 : 64;
  std::vector<KernelParam> pkv = ins;
  pkv.push_back(param(K::Result, 1));
  pkv.push_back(param(K::Result, 2));
  emit("tg_attn_dkv", gradKVSmem(s), s.tk, pkv, [](AttnGen &g, ArrayRef<Value> p) {
    g.gradKV(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
  });
  return launches;
}

} // namespace tg::nvptx
