//===- GemmSm80.cpp - mma.sync + ldmatrix + cp.async GEMM -------*- C++ -*-===//
//
// The sm_80 path. One CTA computes a bm×bn tile of C; its warps form a
// warpsM×warpsN grid, each warp a (bm/warpsM)×(bn/warpsN) tile made of
// m16n8k16 mma.sync instructions with f32 accumulators. Operands stream
// through a `stages`-deep ring in shared memory filled by 16-byte cp.async
// copies (zero-filled past the matrix edge, so edges need no other care;
// rows not 16-byte aligned take smaller copies, see emitLoadOperand);
// the ring keeps each operand in its global layout (K-major or MN-major) and
// XOR-swizzles 16-byte chunks so that ldmatrix (or ldmatrix.trans for
// MN-major operands) reads 8 rows without bank conflicts.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmCommon.h"

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
  void emitLoadOperand(bool isA, Value kt, Value slot);
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
  SmemTile ta{0, 0}, tb{0, 0};
  int threads = 0, wm = 0, wn = 0, mTiles = 0, nTiles = 0;
  Value tid, lane, warpM, warpN, m0, n0, smem;
  // [mi][kk] and [np][kk] lane byte offsets within a stage.
  std::vector<std::vector<Value>> offA, offB;
  Type accTy;
};

void Sm80Gen::emitLoadOperand(bool isA, Value kt, Value slot) {
  bool kMajor = isA ? aKMajor : bKMajor;
  const SmemTile &t = isA ? ta : tb;
  // Tile rows/cols in global coordinates: a K-major operand is [MN][K].
  Value mnOrigin = isA ? m0 : n0, mnBound = isA ? a.m : a.n;
  Value kOrigin = w.muli(kt, c.bk);
  Value rowOrigin = kMajor ? mnOrigin : kOrigin;
  Value colOrigin = kMajor ? kOrigin : mnOrigin;
  Value rowBound = kMajor ? mnBound : a.k;
  Value colBound = kMajor ? a.k : mnBound;
  Value ld = kMajor ? a.k : mnBound;
  Value base = isA ? a.a : a.b;
  int stageBase = isA ? 0 : c.stages * ta.bytes();
  Value slotOff = w.addi(w.muli(slot, t.bytes()), stageBase);
  int chunks = t.rows * t.cpr;
  Value ldw = w.zext64(ld);
  Type elt = mlirType(b.getContext(), p.in);
  // A 16-byte chunk is copied in the largest pieces the row pitch keeps
  // aligned: one 16-byte cp.async when rows are 16-byte aligned, else two
  // of 8 or four of 4 bytes, and for an odd pitch (rows 2-byte aligned,
  // under cp.async's minimum) eight synchronous 2-byte loads stored to the
  // slot. A piece never straddles a row's end (the pitch is a multiple of
  // it), so it is all in the matrix or all zero-filled.
  int64_t pitch = kMajor ? p.k : isA ? p.m : p.n;
  int pieceElems = pitch % 8 == 0 ? 8 : pitch % 4 == 0 ? 4 : pitch % 2 == 0 ? 2 : 1;
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
      if (pieceElems == 1) {
        Value v = LLVM::LoadOp::create(b, loc, elt, src, /*alignment=*/2);
        v = w.select(pred, v, w.zero(elt));
        LLVM::StoreOp::create(b, loc, v, dst, /*alignment=*/2);
        continue;
      }
      Value size = w.select(pred, w.i32c(pieceBytes), w.i32c(0));
      NVVM::CpAsyncOp::create(b, loc, dst, src, pieceBytes,
                              pieceBytes == 16 ? NVVM::LoadCacheModifierKind::CG
                                               : NVVM::LoadCacheModifierKind::CA,
                              size);
    }
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
  Value aBase = w.muli(slot, ta.bytes());
  Value bBase = w.addi(w.muli(slot, tb.bytes()), c.stages * ta.bytes());
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
