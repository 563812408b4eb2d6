//===- GemmSm80.cpp - mma.sync + ldmatrix + cp.async GEMM -------*- C++ -*-===//
//
// The sm_80 path. One CTA computes a bm×bn tile of C; its warps form a
// warpsM×warpsN grid, each warp a (bm/warpsM)×(bn/warpsN) tile made of
// m16n8k16 mma.sync instructions with f32 accumulators. Operands stream
// through a `stages`-deep ring in shared memory filled by 16-byte cp.async
// copies (zero-filled past the matrix edge, so edges need no other care);
// the ring keeps each operand in its global layout (K-major or MN-major) and
// XOR-swizzles 16-byte chunks so that ldmatrix (or ldmatrix.trans for
// MN-major operands) reads 8 rows without bank conflicts.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/Gemm.h"

#include <vector>

namespace tg::nvptx::detail {
namespace {

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
  Sm80Gen(const GemmProblem &p, const TileConfig &c) : p(p), c(c) {}
  std::string run();

private:
  /// Byte offset of chunk (r, c) inside a tile, swizzled.
  std::string swizzled(const SmemTile &t, const std::string &r,
                       const std::string &ch) {
    std::string x = w.andi(w.shri(r, log2i(t.rowsPerLine())), t.xorMask());
    std::string sc = w.bin("xor", ch, x);
    return w.add(w.muli(r, t.cpr * 16), w.muli(sc, 16));
  }
  void emitLoadOperand(bool isA, const std::string &kt, const std::string &slot);
  void emitLoadStage(const std::string &kt, const std::string &slot) {
    emitLoadOperand(true, kt, slot);
    emitLoadOperand(false, kt, slot);
    w.line("nvvm.cp.async.commit.group");
  }
  void precomputeFragmentOffsets();
  std::vector<std::string> emitCompute(const std::string &slot,
                                       const std::vector<std::string> &acc);

  const GemmProblem &p;
  const TileConfig &c;
  MlirWriter w;
  KernelArgs a;
  bool aKMajor = true, bKMajor = false;
  SmemTile ta{0, 0}, tb{0, 0};
  int threads = 0, wm = 0, wn = 0, mTiles = 0, nTiles = 0;
  std::string tid, lane, warpM, warpN, m0, n0, smem;
  // [mi][kk] and [np][kk] lane byte offsets within a stage.
  std::vector<std::vector<std::string>> offA, offB;
  const std::string accTy = "!llvm.struct<(f32, f32, f32, f32)>";
};

void Sm80Gen::emitLoadOperand(bool isA, const std::string &kt,
                              const std::string &slot) {
  bool kMajor = isA ? aKMajor : bKMajor;
  const SmemTile &t = isA ? ta : tb;
  // Tile rows/cols in global coordinates: a K-major operand is [MN][K].
  std::string mnOrigin = isA ? m0 : n0, mnBound = isA ? a.m : a.n;
  std::string kOrigin = w.muli(kt, c.bk);
  std::string rowOrigin = kMajor ? mnOrigin : kOrigin;
  std::string colOrigin = kMajor ? kOrigin : mnOrigin;
  std::string rowBound = kMajor ? mnBound : a.k;
  std::string colBound = kMajor ? a.k : mnBound;
  std::string ld = kMajor ? a.k : mnBound;
  std::string base = isA ? a.a : a.b;
  int stageBase = isA ? 0 : c.stages * ta.bytes();
  std::string slotOff =
      w.addi(w.muli(slot, t.bytes()), stageBase);
  int chunks = t.rows * t.cpr;
  std::string ldw = w.zext64(ld);
  for (int i = 0; i < chunks / threads; ++i) {
    std::string idx = w.addi(tid, i * threads);
    std::string r = w.shri(idx, log2i(t.cpr));
    std::string ch = w.andi(idx, t.cpr - 1);
    std::string gr = w.add(rowOrigin, r);
    std::string gc = w.add(colOrigin, w.muli(ch, 8));
    std::string pred = w.bin("and", w.ult(gr, rowBound), w.ult(gc, colBound), "i1");
    std::string off = w.add(w.mul(w.zext64(gr), ldw, "i64"), w.zext64(gc), "i64");
    std::string src = w.gep(base, off, "!llvm.ptr<1>", "i64", mlirType(p.in));
    src = w.select(pred, src, base, "!llvm.ptr<1>");
    std::string size = w.select(pred, w.i32(16), w.i32(0), "i32");
    std::string dOff = w.add(slotOff, swizzled(t, r, ch));
    std::string dst = w.gep(smem, dOff, "!llvm.ptr<3>", "i32", "i8");
    w.line("nvvm.cp.async.shared.global " + dst + ", " + src +
           ", 16, cache = cg, " + size +
           " : !llvm.ptr<3>, !llvm.ptr<1>, i32");
  }
}

void Sm80Gen::precomputeFragmentOffsets() {
  // ldmatrix.x4: lane l supplies the row address of matrix j = l/8, row l%8.
  std::string j = w.shri(lane, 3), r8 = w.andi(lane, 7);
  std::string jLo = w.andi(j, 1), jHi = w.shri(j, 1);
  int ksteps = c.bk / 16;
  offA.assign(mTiles, {});
  for (int mi = 0; mi < mTiles; ++mi)
    for (int kk = 0; kk < ksteps; ++kk) {
      std::string row, ch;
      if (aKMajor) { // [bm][bk]: matrices (rows +0/+8) × (k +0/+8)
        row = w.add(w.addi(w.muli(warpM, wm), mi * 16),
                    w.add(w.muli(jLo, 8), r8));
        ch = w.addi(jHi, kk * 2);
      } else { // [bk][bm], read transposed
        row = w.add(w.i32(kk * 16), w.add(w.muli(jHi, 8), r8));
        ch = w.add(w.addi(w.muli(warpM, wm / 8), mi * 2), jLo);
      }
      offA[mi].push_back(swizzled(ta, row, ch));
    }
  offB.assign(nTiles / 2, {});
  for (int np = 0; np < nTiles / 2; ++np)
    for (int kk = 0; kk < ksteps; ++kk) {
      std::string row, ch;
      if (bKMajor) { // [bn][bk]: matrices (n +0/+8) × (k +0/+8)
        row = w.add(w.addi(w.muli(warpN, wn), np * 16),
                    w.add(w.muli(jHi, 8), r8));
        ch = w.addi(jLo, kk * 2);
      } else { // [bk][bn], read transposed
        row = w.add(w.i32(kk * 16), w.add(w.muli(jLo, 8), r8));
        ch = w.add(w.addi(w.muli(warpN, wn / 8), np * 2), jHi);
      }
      offB[np].push_back(swizzled(tb, row, ch));
    }
}

std::vector<std::string>
Sm80Gen::emitCompute(const std::string &slot,
                     const std::vector<std::string> &accIn) {
  std::vector<std::string> acc = accIn;
  std::string aBase = w.muli(slot, ta.bytes());
  std::string bBase = w.addi(w.muli(slot, tb.bytes()), c.stages * ta.bytes());
  const std::string ldTy = "!llvm.struct<(i32, i32, i32, i32)>";
  std::string mt = p.in == ElemType::BF16 ? "bf16" : "f16";
  auto ldmatrix = [&](const std::string &base, const std::string &off,
                      bool trans) {
    std::string ptr = w.gep(smem, w.add(base, off), "!llvm.ptr<3>", "i32", "i8");
    std::string r = w.def(
        "nvvm.ldmatrix " + ptr +
        " {num = 4 : i32, layout = #nvvm.mma_layout<" +
        (trans ? "col" : "row") +
        ">, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = "
        "#nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> " + ldTy);
    std::vector<std::string> regs;
    for (int i = 0; i < 4; ++i) {
      std::string x = w.def("llvm.extractvalue " + r + "[" + std::to_string(i) +
                            "] : " + ldTy);
      if (p.in == ElemType::F16) // f16 multiplicands are vector<2xf16>
        x = w.def("llvm.bitcast " + x + " : i32 to vector<2xf16>");
      regs.push_back(x);
    }
    return regs;
  };
  std::string opTy = p.in == ElemType::F16 ? "vector<2xf16>" : "i32";
  for (int kk = 0; kk < c.bk / 16; ++kk) {
    std::vector<std::vector<std::string>> af, bf(nTiles);
    for (int mi = 0; mi < mTiles; ++mi)
      af.push_back(ldmatrix(aBase, offA[mi][kk], !aKMajor));
    for (int np = 0; np < nTiles / 2; ++np) {
      auto r = ldmatrix(bBase, offB[np][kk], !bKMajor);
      bf[2 * np] = {r[0], r[1]};
      bf[2 * np + 1] = {r[2], r[3]};
    }
    for (int mi = 0; mi < mTiles; ++mi)
      for (int ni = 0; ni < nTiles; ++ni) {
        std::string &d = acc[mi * nTiles + ni];
        std::string cs[4];
        for (int i = 0; i < 4; ++i)
          cs[i] = w.def("llvm.extractvalue " + d + "[" + std::to_string(i) +
                        "] : " + accTy);
        d = w.def("nvvm.mma.sync A[" + af[mi][0] + ", " + af[mi][1] + ", " +
                  af[mi][2] + ", " + af[mi][3] + "] B[" + bf[ni][0] + ", " +
                  bf[ni][1] + "] C[" + cs[0] + ", " + cs[1] + ", " + cs[2] +
                  ", " + cs[3] +
                  "] {layoutA = #nvvm.mma_layout<row>, layoutB = "
                  "#nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, "
                  "k = 16>, multiplicandAPtxType = #nvvm.mma_type<" + mt +
                  ">, multiplicandBPtxType = #nvvm.mma_type<" + mt + ">} : (" +
                  opTy + ", " + opTy + ", f32) -> " + accTy, "acc");
      }
  }
  return acc;
}

std::string Sm80Gen::run() {
  aKMajor = p.form != Form::TN;
  bKMajor = p.form == Form::NT;
  ta = aKMajor ? SmemTile{c.bm, c.bk / 8} : SmemTile{c.bk, c.bm / 8};
  tb = bKMajor ? SmemTile{c.bn, c.bk / 8} : SmemTile{c.bk, c.bn / 8};
  threads = c.threads(Target::SM80);
  wm = c.bm / c.warpsM;
  wn = c.bn / c.warpsN;
  mTiles = wm / 16;
  nTiles = wn / 8;

  tid = w.sreg("tid.x");
  lane = w.andi(tid, 31);
  std::string warp = w.shri(tid, 5);
  warpM = w.bin("urem", warp, w.i32(c.warpsM));
  warpN = w.bin("udiv", warp, w.i32(c.warpsM));
  std::string tileM, tileN;
  emitTileRaster(w, c, a, w.sreg("ctaid.x"), tileM, tileN);
  m0 = w.muli(tileM, c.bm);
  n0 = w.muli(tileN, c.bn);
  smem = w.def("llvm.mlir.addressof @tg_smem : !llvm.ptr<3>");
  std::string numK = w.bin("udiv", w.addi(a.k, c.bk - 1), w.i32(c.bk));

  precomputeFragmentOffsets();
  // Prologue: fill stages-1 slots.
  for (int s = 0; s < c.stages - 1; ++s)
    emitLoadStage(w.i32(s), w.i32(s));

  int nAcc = mTiles * nTiles;
  std::string zero = w.hoist("llvm.mlir.zero : " + accTy);
  std::vector<std::string> iter, init;
  std::string iterText, typesText;
  for (int i = 0; i < nAcc; ++i) {
    iter.push_back("%acc_in" + std::to_string(i));
    iterText += (i ? ", " : "") + iter.back() + " = " + zero;
    typesText += (i ? ", " : "") + accTy;
  }
  std::string res = w.fresh("res");
  w.open(res + ":" + std::to_string(nAcc) + " = scf.for %kt = " + w.i32(0) +
         " to " + numK + " step " + w.i32(1) + " iter_args(" + iterText +
         ") -> (" + typesText + ") : i32 {");
  // Slot kt%stages has landed once at most stages-2 groups are pending; the
  // barrier also retires every warp's reads of the slot refilled below.
  w.line("nvvm.cp.async.wait.group " + std::to_string(c.stages - 2));
  w.line("nvvm.barrier0");
  std::string ktNext = w.addi("%kt", c.stages - 1);
  emitLoadStage(ktNext, w.bin("urem", ktNext, w.i32(c.stages)));
  std::vector<std::string> acc =
      emitCompute(w.bin("urem", "%kt", w.i32(c.stages)), iter);
  std::string yield;
  for (int i = 0; i < nAcc; ++i)
    yield += (i ? ", " : "") + acc[i];
  w.line("scf.yield " + yield + " : " + typesText);
  w.close();
  w.line("nvvm.cp.async.wait.group 0");

  // Epilogue straight from the accumulator fragments.
  std::string g = w.shri(lane, 2), q2 = w.muli(w.andi(lane, 3), 2);
  std::string rowW = w.add(m0, w.muli(warpM, wm));
  std::string colW = w.add(n0, w.muli(warpN, wn));
  for (int mi = 0; mi < mTiles; ++mi)
    for (int ni = 0; ni < nTiles; ++ni) {
      std::string d = res + "#" + std::to_string(mi * nTiles + ni);
      std::string col = w.add(w.addi(colW, ni * 8), q2);
      for (int h = 0; h < 2; ++h) {
        std::string row = w.add(w.addi(rowW, mi * 16 + h * 8), g);
        std::string v0 = w.def("llvm.extractvalue " + d + "[" +
                               std::to_string(2 * h) + "] : " + accTy);
        std::string v1 = w.def("llvm.extractvalue " + d + "[" +
                               std::to_string(2 * h + 1) + "] : " + accTy);
        emitEpiloguePair(w, p, a, row, col, v0, v1);
      }
    }
  return functionHeader(p, c, "!llvm.ptr<1>") + w.text() + functionFooter();
}

} // namespace

/// The kernel function (without its module) for `p` with `c`.
std::string generateSm80Gemm(const GemmProblem &p, const TileConfig &c) {
  return Sm80Gen(p, c).run();
}

} // namespace tg::nvptx::detail
