//===- GemmSm80.cpp - mma.sync + ldmatrix + cp.async GEMM -------*- C++ -*-===//
//
// The sm_80 path. One CTA computes a bm×bn tile of C; its warps form a
// warpsM×warpsN grid, each warp a (bm/warpsM)×(bn/warpsN) tile made of
// m16n8k16 mma.sync instructions with f32 accumulators. Operands stream
// through a `stages`-deep ring in shared memory filled by 16-byte cp.async
// copies (zero-filled past the matrix edge, so edges need no other care;
// rows 4 or 8-byte aligned take smaller copies, odd rows go through aligned
// windows, see emitLoadOperand and emitRealign);
// the ring keeps each operand in its global layout (K-major or MN-major) and
// XOR-swizzles 16-byte chunks so that ldmatrix (or ldmatrix.trans for
// MN-major operands) reads 8 rows without bank conflicts.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/GemmSm80Smem.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <vector>

namespace tg::nvptx::detail {
namespace {

using namespace mlir;

/// One operand's shared-memory tile: `rows` rows of `cpr` 16-byte chunks.
struct SmemTile {
  int rows, cpr;
  /// XOR swizzle of chunk index c in row r: rows that share a 128-byte bank
  /// line get different chunk permutations.
  int rowsPerLine() const { return cpr >= 8 ? 1 : 8 / cpr; }
  int xorMask() const { return (cpr >= 8 ? 8 : cpr) - 1; }
  int bytes() const { return rows * cpr * 16; }
};

class Sm80Gen {
public:
  Sm80Gen(const GemmProblem &p, const TileConfig &c, KernelBuilder &w,
          const KernelArgs &a)
      : p(p), c(c), w(w), b(w.b), loc(w.loc), a(a) {}
  void run();

private:
  /// Byte offset of chunk (r, c) inside a tile, swizzled.
  Value swizzled(const SmemTile &t, Value r, Value ch) {
    Value x = w.andi(w.shri(r, log2i(t.rowsPerLine())), t.xorMask());
    Value sc = w.xor_(ch, x);
    return w.add(w.muli(r, t.cpr * 16), w.muli(sc, 16));
  }
  /// Operand `isA`'s tile of K step `kt` in global coordinates: its first
  /// row and column, the matrix's row and column counts, its row pitch and
  /// base pointer. A K-major operand is [MN][K], an MN-major one [K][MN].
  struct GlobalTile {
    bool kMajor;
    Value rowOrigin, colOrigin, rowBound, colBound, ld, base;
  };
  GlobalTile globalTile(bool isA, Value kt) {
    bool kMajor = isA ? aKMajor : bKMajor;
    Value mnOrigin = isA ? m0 : n0, mnBound = isA ? a.m : a.n;
    Value kOrigin = w.muli(kt, c.bk);
    if (kMajor)
      return {kMajor, mnOrigin, kOrigin, mnBound, a.k, a.k, isA ? a.a : a.b};
    return {kMajor, kOrigin, mnOrigin, a.k, mnBound, mnBound, isA ? a.a : a.b};
  }
  void emitLoadOperand(bool isA, Value kt, Value slot);
  void emitLoadWindows(bool isA, Value kt, Value slot);
  void emitRealign(bool isA, Value kt, Value slot);
  /// The operand tile of stage `slot` that ldmatrix reads: a ring slot, or
  /// the one realigned tile of an operand with odd rows.
  Value tileBase(bool isA, Value slot) {
    const SmemTile &t = isA ? ta : tb;
    int region = isA ? 0 : sm80OperandSmemBytes(p, c, true);
    if (isA ? oddA : oddB)
      return w.i32c(region);
    return w.addi(w.muli(slot, t.bytes()), region);
  }
  /// Row `gr` of operand `isA` starts `s` elements past a 16-byte boundary
  /// (0..7): the global address's bits, since colOrigin is a multiple of 8.
  Value rowSkew(bool isA, Value gr, Value ld) {
    Value base = LLVM::PtrToIntOp::create(b, loc, w.i32, isA ? a.a : a.b);
    return w.andi(w.add(w.shri(base, 1), w.mul(gr, ld)), 7);
  }
  void emitLoadStage(Value kt, Value slot) {
    emitLoadOperand(true, kt, slot);
    emitLoadOperand(false, kt, slot);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  void precomputeFragmentOffsets();
  std::vector<Value> emitCompute(Value slot, const std::vector<Value> &acc);

  const GemmProblem &p;
  const TileConfig &c;
  KernelBuilder &w;
  OpBuilder &b;
  Location loc;
  KernelArgs a;
  bool aKMajor = true, bKMajor = false;
  // Operands whose row pitch is odd: copied through 16-byte aligned
  // windows into a staging ring, realigned into one tile per K step.
  bool oddA = false, oddB = false;
  SmemTile ta{0, 0}, tb{0, 0};
  int threads = 0, wm = 0, wn = 0, mTiles = 0, nTiles = 0;
  Value tid, lane, warpM, warpN, m0, n0, smem;
  // [mi][kk] and [np][kk] lane byte offsets within a stage.
  std::vector<std::vector<Value>> offA, offB;
  Type accTy;
};

void Sm80Gen::emitLoadOperand(bool isA, Value kt, Value slot) {
  if (isA ? oddA : oddB)
    return emitLoadWindows(isA, kt, slot);
  const SmemTile &t = isA ? ta : tb;
  auto [kMajor, rowOrigin, colOrigin, rowBound, colBound, ld, base] =
      globalTile(isA, kt);
  Value slotOff = tileBase(isA, slot);
  int chunks = t.rows * t.cpr;
  Value ldw = w.zext64(ld);
  Type elt = mlirType(b.getContext(), p.in);
  // A 16-byte chunk is copied in the largest pieces the row pitch keeps
  // aligned: one 16-byte cp.async when rows are 16-byte aligned, else two
  // of 8 or four of 4 bytes (an odd pitch, under cp.async's 4-byte
  // minimum, takes emitLoadWindows). A piece never straddles a row's end
  // (the pitch is a multiple of it), so it is all in the matrix or all
  // zero-filled.
  int64_t pitch = kMajor ? p.k : isA ? p.m : p.n;
  int pieceElems = pitch % 8 == 0 ? 8 : pitch % 4 == 0 ? 4 : 2;
  int pieceBytes = 2 * pieceElems;
  for (int i = 0; i < chunks / threads; ++i) {
    Value idx = w.addi(tid, i * threads);
    Value r = w.shri(idx, log2i(t.cpr));
    Value ch = w.andi(idx, t.cpr - 1);
    Value gr = w.add(rowOrigin, r);
    Value gc0 = w.add(colOrigin, w.muli(ch, 8));
    Value rowIn = w.ult(gr, rowBound);
    Value dOff = w.add(slotOff, swizzled(t, r, ch));
    for (int q = 0; q < 8 / pieceElems; ++q) {
      Value gc = w.addi(gc0, q * pieceElems);
      Value pred = w.and_(rowIn, w.ult(gc, colBound));
      Value off = w.add(w.mul(w.zext64(gr), ldw), w.zext64(gc));
      Value src = w.select(pred, w.gep(base, off, elt), base);
      Value dst = w.gep(smem, w.addi(dOff, q * pieceBytes), b.getI8Type());
      Value size = w.select(pred, w.i32c(pieceBytes), w.i32c(0));
      NVVM::CpAsyncOp::create(b, loc, dst, src, pieceBytes,
                              pieceBytes == 16 ? NVVM::LoadCacheModifierKind::CG
                                               : NVVM::LoadCacheModifierKind::CA,
                              size);
    }
  }
}

void Sm80Gen::emitLoadWindows(bool isA, Value kt, Value slot) {
  // A row of the tile is `t.cpr` chunks of 8 elements from (gr, colOrigin);
  // with an odd pitch it starts s = rowSkew elements past a 16-byte
  // boundary, so the 16-byte cp.async copies the window of cpr + 1 chunks
  // from that boundary into the staging ring, and emitRealign shifts it
  // into place. Each copy's src-size stops at the row's last element and
  // is 0 for rows or K steps past the matrix, so the realigned tile holds
  // zeros outside the matrix as the aligned path's does; the s elements
  // before the row (the previous row's tail, or up to 14 bytes of the
  // operand's 16-byte aligned buffer) are copied and never read.
  const SmemTile &t = isA ? ta : tb;
  auto [kMajor, rowOrigin, colOrigin, rowBound, colBound, ld, base] =
      globalTile(isA, kt);
  Type elt = mlirType(b.getContext(), p.in);
  int winBytes = t.rows * (t.cpr + 1) * 16;
  Value ringOff = w.addi(w.muli(slot, winBytes), t.bytes());
  ringOff = w.add(ringOff, tileBase(isA, slot));
  // An empty copy reads nothing, but its source must still be 16-byte
  // aligned: the boundary at or below the operand's first element.
  Value baseSkew = rowSkew(isA, w.i32c(0), ld);
  Value empty = w.gep(base, w.sub(w.i32c(0), baseSkew), elt);
  int windows = t.rows * (t.cpr + 1);
  for (int i = 0; i * threads < windows; ++i) {
    Value idx = w.addi(tid, i * threads);
    Value r = w.udiv(idx, w.i32c(t.cpr + 1));
    Value ch = w.urem(idx, w.i32c(t.cpr + 1));
    Value gr = w.add(rowOrigin, r);
    Value s = rowSkew(isA, gr, ld);
    // The chunk holds elements of the row when it starts before the row's
    // end (column colOrigin + 8ch - s < colBound); then `bytes` of it do.
    Value chunkCol = w.add(colOrigin, w.muli(ch, 8));
    Value live = w.and_(w.ult(gr, rowBound), w.ult(chunkCol, w.add(colBound, s)));
    Value bytes = w.muli(w.sub(w.add(colBound, s), chunkCol), 2);
    bytes = w.select(w.ult(bytes, w.i32c(16)), bytes, w.i32c(16));
    bytes = w.select(live, bytes, w.i32c(0));
    Value off = w.sub(w.add(w.mul(w.zext64(gr), w.zext64(ld)), w.zext64(chunkCol)),
                      w.zext64(s));
    Value src = w.select(live, w.gep(base, off, elt), empty);
    Value dst = w.gep(smem, w.add(ringOff, w.muli(idx, 16)), b.getI8Type());
    auto copy = [&] {
      NVVM::CpAsyncOp::create(b, loc, dst, src, 16,
                              NVVM::LoadCacheModifierKind::CG, bytes);
    };
    if ((i + 1) * threads <= windows) {
      copy();
      continue;
    }
    // The last round has fewer windows than threads.
    w.openIf(w.ult(idx, w.i32c(windows)));
    Operation *guard = b.getInsertionBlock()->getParentOp();
    copy();
    w.after(guard);
  }
}

void Sm80Gen::emitRealign(bool isA, Value kt, Value slot) {
  // Chunk (r, ch) of the tile is the 16 bytes at 2s + 16ch of row r's
  // window: eight 2-byte shared loads (the window is only 2-byte aligned
  // there), one 16-byte store into the swizzled tile.
  bool kMajor = isA ? aKMajor : bKMajor;
  const SmemTile &t = isA ? ta : tb;
  Value rowOrigin = kMajor ? (isA ? m0 : n0) : w.muli(kt, c.bk);
  Value ld = kMajor ? a.k : isA ? a.m : a.n;
  Type elt = mlirType(b.getContext(), p.in);
  Type vec = VectorType::get({8}, elt);
  int winBytes = t.rows * (t.cpr + 1) * 16;
  Value tile = tileBase(isA, slot);
  Value ring = w.add(w.addi(w.muli(slot, winBytes), t.bytes()), tile);
  for (int i = 0; i < t.rows * t.cpr / threads; ++i) {
    Value idx = w.addi(tid, i * threads);
    Value r = w.shri(idx, log2i(t.cpr));
    Value ch = w.andi(idx, t.cpr - 1);
    Value s = rowSkew(isA, w.add(rowOrigin, r), ld);
    Value from = w.add(w.add(ring, w.muli(r, (t.cpr + 1) * 16)),
                       w.add(w.muli(s, 2), w.muli(ch, 16)));
    Value v = LLVM::UndefOp::create(b, loc, vec);
    for (int e = 0; e < 8; ++e) {
      Value x = LLVM::LoadOp::create(
          b, loc, elt, w.gep(smem, w.addi(from, 2 * e), b.getI8Type()), 2);
      v = LLVM::InsertElementOp::create(b, loc, v, x, w.i32c(e));
    }
    Value to = w.add(tile, swizzled(t, r, ch));
    LLVM::StoreOp::create(b, loc, v, w.gep(smem, to, b.getI8Type()), 16);
  }
}

void Sm80Gen::precomputeFragmentOffsets() {
  // ldmatrix.x4: lane l supplies the row address of matrix j = l/8, row l%8.
  Value j = w.shri(lane, 3), r8 = w.andi(lane, 7);
  Value jLo = w.andi(j, 1), jHi = w.shri(j, 1);
  int ksteps = c.bk / 16;
  offA.assign(mTiles, {});
  for (int mi = 0; mi < mTiles; ++mi)
    for (int kk = 0; kk < ksteps; ++kk) {
      Value row, ch;
      if (aKMajor) { // [bm][bk]: matrices (rows +0/+8) × (k +0/+8)
        row = w.add(w.addi(w.muli(warpM, wm), mi * 16),
                    w.add(w.muli(jLo, 8), r8));
        ch = w.addi(jHi, kk * 2);
      } else { // [bk][bm], read transposed
        row = w.add(w.i32c(kk * 16), w.add(w.muli(jHi, 8), r8));
        ch = w.add(w.addi(w.muli(warpM, wm / 8), mi * 2), jLo);
      }
      offA[mi].push_back(swizzled(ta, row, ch));
    }
  offB.assign(nTiles / 2, {});
  for (int np = 0; np < nTiles / 2; ++np)
    for (int kk = 0; kk < ksteps; ++kk) {
      Value row, ch;
      if (bKMajor) { // [bn][bk]: matrices (n +0/+8) × (k +0/+8)
        row = w.add(w.addi(w.muli(warpN, wn), np * 16),
                    w.add(w.muli(jHi, 8), r8));
        ch = w.addi(jLo, kk * 2);
      } else { // [bk][bn], read transposed
        row = w.add(w.i32c(kk * 16), w.add(w.muli(jLo, 8), r8));
        ch = w.add(w.addi(w.muli(warpN, wn / 8), np * 2), jHi);
      }
      offB[np].push_back(swizzled(tb, row, ch));
    }
}

std::vector<Value> Sm80Gen::emitCompute(Value slot,
                                        const std::vector<Value> &accIn) {
  std::vector<Value> acc = accIn;
  Value aBase = tileBase(true, slot);
  Value bBase = tileBase(false, slot);
  MLIRContext *ctx = b.getContext();
  Type ldTy = LLVM::LLVMStructType::getLiteral(ctx, {w.i32, w.i32, w.i32, w.i32});
  Type f16x2 = VectorType::get({2}, b.getF16Type());
  auto mt = p.in == ElemType::BF16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  auto ldmatrix = [&](Value base, Value off, bool trans) {
    Value ptr = w.gep(smem, w.add(base, off), b.getI8Type());
    Value r = NVVM::LdMatrixOp::create(
        b, loc, ldTy, ptr, 4, trans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8), NVVM::LdStMatrixEltType::B16);
    std::vector<Value> regs;
    for (int i = 0; i < 4; ++i) {
      Value x = w.extractvalue(r, i);
      if (p.in == ElemType::F16) // f16 multiplicands are vector<2xf16>
        x = LLVM::BitcastOp::create(b, loc, f16x2, x);
      regs.push_back(x);
    }
    return regs;
  };
  auto shape = NVVM::MMAShapeAttr::get(ctx, 16, 8, 16);
  auto row = NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row);
  auto col = NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col);
  auto mtAttr = NVVM::MMATypesAttr::get(ctx, mt);
  for (int kk = 0; kk < c.bk / 16; ++kk) {
    std::vector<std::vector<Value>> af, bf(nTiles);
    for (int mi = 0; mi < mTiles; ++mi)
      af.push_back(ldmatrix(aBase, offA[mi][kk], !aKMajor));
    for (int np = 0; np < nTiles / 2; ++np) {
      auto r = ldmatrix(bBase, offB[np][kk], !bKMajor);
      bf[2 * np] = {r[0], r[1]};
      bf[2 * np + 1] = {r[2], r[3]};
    }
    for (int mi = 0; mi < mTiles; ++mi)
      for (int ni = 0; ni < nTiles; ++ni) {
        Value &d = acc[mi * nTiles + ni];
        Value cs[4];
        for (int i = 0; i < 4; ++i)
          cs[i] = w.extractvalue(d, i);
        d = NVVM::MmaOp::create(b, loc, accTy, shape, NVVM::MMAB1OpAttr(),
                                NVVM::MMAIntOverflowAttr(), row, col, mtAttr,
                                mtAttr, ValueRange(af[mi]), ValueRange(bf[ni]),
                                ValueRange(cs));
      }
  }
  return acc;
}

void Sm80Gen::run() {
  aKMajor = p.form != Form::TN;
  bKMajor = p.form == Form::NT;
  ta = aKMajor ? SmemTile{c.bm, c.bk / 8} : SmemTile{c.bk, c.bm / 8};
  tb = bKMajor ? SmemTile{c.bn, c.bk / 8} : SmemTile{c.bk, c.bn / 8};
  oddA = rowsOdd(p, true);
  oddB = rowsOdd(p, false);
  threads = c.threads(Target::SM80);
  wm = c.bm / c.warpsM;
  wn = c.bn / c.warpsN;
  mTiles = wm / 16;
  nTiles = wn / 8;
  accTy = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                           {w.f32, w.f32, w.f32, w.f32});

  tid = NVVM::ThreadIdXOp::create(b, loc, w.i32);
  lane = w.andi(tid, 31);
  Value warp = w.shri(tid, 5);
  warpM = w.urem(warp, w.i32c(c.warpsM));
  warpN = w.udiv(warp, w.i32c(c.warpsM));
  auto [tileM, tileN] =
      emitTileRaster(w, c, a, NVVM::BlockIdXOp::create(b, loc, w.i32));
  m0 = w.muli(tileM, c.bm);
  n0 = w.muli(tileN, c.bn);
  smem = LLVM::AddressOfOp::create(b, loc, w.ptr3, "tg_smem");
  if (p.batch > 1) {
    // Batch b = ctaid.y: step the batched operands to their b-th matrix.
    a.batch = NVVM::BlockIdYOp::create(b, loc, w.i32);
    Type elt = mlirType(b.getContext(), p.in);
    Value bi = w.zext64(a.batch), k64 = w.zext64(a.k);
    if (p.batchA)
      a.a = w.gep(a.a, w.mul(bi, w.mul(w.zext64(a.m), k64)), elt);
    if (p.batchB)
      a.b = w.gep(a.b, w.mul(bi, w.mul(w.zext64(a.n), k64)), elt);
  }
  Value numK = w.udiv(w.addi(a.k, c.bk - 1), w.i32c(c.bk));

  precomputeFragmentOffsets();
  // Prologue: fill stages-1 slots.
  for (int s = 0; s < c.stages - 1; ++s)
    emitLoadStage(w.i32c(s), w.i32c(s));

  int nAcc = mTiles * nTiles;
  Value zero = w.zero(accTy);
  std::vector<Value> init(nAcc, zero);
  scf::ForOp loop = w.openFor(numK, init, "kt");
  Value kt = loop.getInductionVar();
  std::vector<Value> iter(loop.getRegionIterArgs().begin(),
                          loop.getRegionIterArgs().end());
  // Slot kt%stages has landed once at most stages-2 groups are pending; the
  // barrier also retires every warp's reads of the slot refilled below.
  NVVM::CpAsyncWaitGroupOp::create(b, loc, c.stages - 2);
  NVVM::Barrier0Op::create(b, loc);
  if (oddA || oddB) {
    // Realign this step's windows into the tiles ldmatrix reads; the
    // barrier above retired the previous step's reads of those tiles.
    Value slot = w.urem(kt, w.i32c(c.stages));
    if (oddA)
      emitRealign(true, kt, slot);
    if (oddB)
      emitRealign(false, kt, slot);
    NVVM::Barrier0Op::create(b, loc);
  }
  Value ktNext = w.addi(kt, c.stages - 1);
  emitLoadStage(ktNext, w.urem(ktNext, w.i32c(c.stages)));
  std::vector<Value> acc = emitCompute(w.urem(kt, w.i32c(c.stages)), iter);
  w.closeFor(loop, acc);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);

  // Epilogue straight from the accumulator fragments.
  Value g = w.shri(lane, 2), q2 = w.muli(w.andi(lane, 3), 2);
  Value rowW = w.add(m0, w.muli(warpM, wm));
  Value colW = w.add(n0, w.muli(warpN, wn));
  for (int mi = 0; mi < mTiles; ++mi)
    for (int ni = 0; ni < nTiles; ++ni) {
      Value d = loop.getResult(mi * nTiles + ni);
      Value col = w.add(w.addi(colW, ni * 8), q2);
      for (int h = 0; h < 2; ++h) {
        Value row = w.add(w.addi(rowW, mi * 16 + h * 8), g);
        Value v0 = w.extractvalue(d, 2 * h);
        Value v1 = w.extractvalue(d, 2 * h + 1);
        emitEpiloguePair(w, p, a, row, col, v0, v1);
      }
    }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

} // namespace

void emitSm80Gemm(KernelBuilder &w, const GemmProblem &p, const TileConfig &c,
                  const KernelArgs &a) {
  Sm80Gen(p, c, w, a).run();
}

void buildSm80Gemm(ModuleOp module, const GemmProblem &p, const TileConfig &c) {
  KernelArgs a;
  LLVM::LLVMFuncOp fn =
      createKernel(module, p, c, LLVM::LLVMPointerType::get(module.getContext(), 1), a);
  KernelBuilder w(&fn.getBody().front(), module.getLoc());
  emitSm80Gemm(w, p, c, a);
}

} // namespace tg::nvptx::detail
