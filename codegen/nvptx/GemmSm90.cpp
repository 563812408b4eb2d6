//===- GemmSm90.cpp - wgmma + TMA + mbarrier GEMM (sm_90a) ------*- C++ -*-===//
//
// The sm_90a path: a persistent, warp-specialised kernel.
//
//   warpgroup 0 (producer, setmaxnreg 40): one thread walks this CTA's tiles
//     and K-steps, waits for a free ring slot (`empty` mbarrier), arms the
//     slot's `full` mbarrier with the byte count and issues TMA loads of the
//     A and B boxes (128-byte swizzle) into it.
//   warpgroups 1..C (consumers, setmaxnreg up): each owns 64 rows of the
//     bm×bn tile; per slot it waits on `full`, issues bk/16 wgmma m64nBNk16
//     straight from shared memory, keeps one wgmma group in flight and
//     releases the previous slot on `empty`, then runs the fused epilogue
//     from registers while the producer already fills the next tile.
//
// Tiles are visited in the grouped raster order, strided over CTAs (grid =
// min(tiles, SMs)). Slot and phase follow from a CTA-local iteration count,
// so producer and consumers agree without sharing any state but barriers.
// K-major operands use the canonical 128B-swizzle K-major layout (SBO 1024);
// MN-major operands (A of TN, B of NN) are loaded as 64-wide column boxes and
// described with the transpose bit, LBO = box bytes, SBO = 1024.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmCommon.h"

#include <vector>

namespace tg::nvptx::detail {
namespace {

class Sm90Gen {
public:
  Sm90Gen(const GemmProblem &p, const TileConfig &c) : p(p), c(c) {}
  std::string run();

private:
  std::string barrier(const std::string &base, const std::string &stage) {
    return w.gep(smem, w.addi(w.muli(stage, 8), base == "full" ? fullOff : emptyOff),
                 "!llvm.ptr<3>", "i32", "i8");
  }
  /// Iteration bookkeeping shared by producer and consumers.
  void stagePhase(const std::string &it, std::string &stage,
                  std::string &phase) {
    stage = w.bin("urem", it, w.i32(c.stages));
    phase = w.andi(w.bin("udiv", it, w.i32(c.stages)), 1);
  }
  void emitTileLoopHeader(std::string &ti, std::string &m0, std::string &n0);
  void emitProducer();
  void emitConsumer();
  /// 64-bit wgmma shared-memory descriptor for byte offset `off`.
  std::string descriptor(const std::string &off, int lbo, int sbo);

  const GemmProblem &p;
  const TileConfig &c;
  MlirWriter w;
  KernelArgs a;
  bool aKMajor = true, bKMajor = false;
  int aStage = 0, bStage = 0, fullOff = 0, emptyOff = 0;
  std::string tid, smem, smemAddr, numK, myTiles, ctaid, nctaid;
  std::string accTy;
};

std::string Sm90Gen::descriptor(const std::string &off, int lbo, int sbo) {
  // bits 0-13 start>>4, 16-29 LBO>>4, 32-45 SBO>>4, 62-63 swizzle (1=128B).
  uint64_t fixed = (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32) |
                   (uint64_t(1) << 62);
  std::string addr = w.shri(w.add(smemAddr, off), 4);
  std::string lo = w.zext64(w.andi(addr, 0x3FFF));
  return w.bin("or", lo, w.i64(static_cast<int64_t>(fixed)), "i64");
}

void Sm90Gen::emitTileLoopHeader(std::string &ti, std::string &m0,
                                 std::string &n0) {
  ti = w.fresh("ti");
  w.open("scf.for " + ti + " = " + w.i32(0) + " to " + myTiles + " step " +
         w.i32(1) + " : i32 {");
  std::string tile = w.add(ctaid, w.mul(ti, nctaid));
  std::string tm, tn;
  emitTileRaster(w, c, a, tile, tm, tn);
  m0 = w.muli(tm, c.bm);
  n0 = w.muli(tn, c.bn);
}

void Sm90Gen::emitProducer() {
  std::string ti, m0, n0;
  emitTileLoopHeader(ti, m0, n0);
  std::string kt = w.fresh("kt");
  w.open("scf.for " + kt + " = " + w.i32(0) + " to " + numK + " step " +
         w.i32(1) + " : i32 {");
  std::string it = w.add(w.mul(ti, numK), kt), stage, phase;
  stagePhase(it, stage, phase);
  // A fresh barrier counts as having completed the phase before phase 0,
  // so the first pass over the ring does not wait.
  std::string emptyBar = barrier("empty", stage);
  w.line("nvvm.mbarrier.try_wait.parity " + emptyBar + ", " +
         w.bin("xor", phase, w.i32(1)) + ", " + w.i32(10000000) +
         " : !llvm.ptr<3>, i32, i32");
  std::string fullBar = barrier("full", stage);
  w.line("nvvm.mbarrier.arrive.expect_tx " + fullBar + ", " +
         w.i32(aStage + bStage) + " : !llvm.ptr<3>, i32");
  std::string k0 = w.muli(kt, c.bk);
  auto tma = [&](const std::string &desc, int dstOff, const std::string &dyn,
                 const std::string &x, const std::string &y) {
    std::string dst = w.gep(smem, w.addi(dyn, dstOff), "!llvm.ptr<3>", "i32", "i8");
    // The destination operand is a shared::cluster address; this CTA's
    // shared window is part of it.
    dst = w.def("llvm.addrspacecast " + dst + " : !llvm.ptr<3> to !llvm.ptr<7>");
    w.line("nvvm.cp.async.bulk.tensor.shared.cluster.global " + dst + ", " +
           desc + ", " + fullBar + ", box[" + x + ", " + y +
           "] : !llvm.ptr<7>, !llvm.ptr");
  };
  std::string aSlot = w.muli(stage, aStage);
  std::string bSlot = w.addi(w.muli(stage, bStage), c.stages * aStage);
  // Coordinates are innermost-first: (k, row) for K-major boxes.
  if (aKMajor)
    tma(a.a, 0, aSlot, k0, m0);
  else
    for (int i = 0; i < c.bm / 64; ++i)
      tma(a.a, i * c.bk * 128, aSlot, w.addi(m0, 64 * i), k0);
  if (bKMajor)
    tma(a.b, 0, bSlot, k0, n0);
  else
    for (int i = 0; i < c.bn / 64; ++i)
      tma(a.b, i * c.bk * 128, bSlot, w.addi(n0, 64 * i), k0);
  w.close();
  w.close();
}

void Sm90Gen::emitConsumer() {
  std::string wg = w.addi(w.shri(tid, 7), -1); // consumer index 0..C-1
  std::string t = w.andi(tid, 127);
  std::string lane = w.andi(t, 31), warp = w.shri(t, 5);
  std::string lane0 = w.def("llvm.icmp \"eq\" " + lane + ", " + w.i32(0) + " : i32");
  // Descriptor offsets that do not change with the slot.
  std::string aWg = aKMajor ? w.muli(wg, 64 * 128) : w.muli(wg, c.bk * 128);
  int aLbo = aKMajor ? 16 : c.bk * 128, bLbo = bKMajor ? 16 : c.bk * 128;
  std::string zero = w.hoist("llvm.mlir.zero : " + accTy);

  std::string ti, m0, n0;
  emitTileLoopHeader(ti, m0, n0);
  std::string kt = "%ckt";
  std::string acc = w.fresh("acc");
  w.open(acc + " = scf.for " + kt + " = " + w.i32(0) + " to " + numK +
         " step " + w.i32(1) + " iter_args(%acc_in = " + zero + ") -> (" +
         accTy + ") : i32 {");
  std::string it = w.add(w.mul(ti, numK), kt), stage, phase;
  stagePhase(it, stage, phase);
  w.line("nvvm.mbarrier.try_wait.parity " + barrier("full", stage) + ", " +
         phase + ", " + w.i32(10000000) + " : !llvm.ptr<3>, i32, i32");
  std::string aSlot = w.add(w.muli(stage, aStage), aWg);
  std::string bSlot = w.addi(w.muli(stage, bStage), c.stages * aStage);
  w.line("nvvm.wgmma.fence.aligned");
  std::string d = "%acc_in";
  std::string ty = p.in == ElemType::BF16 ? "bf16" : "f16";
  for (int kk = 0; kk < c.bk / 16; ++kk) {
    // K-major: the next 16 elements of each 128-byte row (32 bytes on);
    // MN-major: the next 16 rows of 128 bytes.
    std::string da = descriptor(w.addi(aSlot, aKMajor ? kk * 32 : kk * 2048), aLbo, 1024);
    std::string db = descriptor(w.addi(bSlot, bKMajor ? kk * 32 : kk * 2048), bLbo, 1024);
    d = w.def("nvvm.wgmma.mma_async " + da + ", " + db + ", " + d +
              ", #nvvm.shape<m = 64, n = " + std::to_string(c.bn) +
              ", k = 16>, D [<f32>, #nvvm.wgmma_scale_out<one>], A [<" + ty +
              ">, #nvvm.wgmma_scale_in<one>, <" + (aKMajor ? "row" : "col") +
              ">], B [<" + ty + ">, #nvvm.wgmma_scale_in<one>, <" +
              (bKMajor ? "col" : "row") + ">] : " + accTy + " -> " + accTy,
              "acc");
  }
  w.line("nvvm.wgmma.commit.group.sync.aligned");
  // Keep this slot's group in flight; the previous one is done: free its slot.
  w.line("nvvm.wgmma.wait.group.sync.aligned 1");
  std::string notFirst = w.def("llvm.icmp \"ugt\" " + kt + ", " + w.i32(0) + " : i32");
  w.open("scf.if " + w.bin("and", notFirst, lane0, "i1") + " {");
  std::string prevStage = w.bin("urem", w.addi(it, -1), w.i32(c.stages));
  w.line("nvvm.mbarrier.arrive " + barrier("empty", prevStage) + " : !llvm.ptr<3>");
  w.close();
  w.line("scf.yield " + d + " : " + accTy);
  w.close();
  w.line("nvvm.wgmma.wait.group.sync.aligned 0");
  w.open("scf.if " + lane0 + " {");
  std::string lastStage =
      w.bin("urem", w.addi(w.add(w.mul(ti, numK), numK), -1), w.i32(c.stages));
  w.line("nvvm.mbarrier.arrive " + barrier("empty", lastStage) + " : !llvm.ptr<3>");
  w.close();

  // Epilogue: wgmma's m64nN f32 fragment; 16 rows per warp, n8 blocks.
  std::string row0 = w.add(w.add(m0, w.muli(wg, 64)),
                           w.add(w.muli(warp, 16), w.shri(lane, 2)));
  std::string col0 = w.add(n0, w.muli(w.andi(lane, 3), 2));
  for (int i = 0; i < c.bn / 8; ++i)
    for (int h = 0; h < 2; ++h) {
      std::string v0 = w.def("llvm.extractvalue " + acc + "[" +
                             std::to_string(4 * i + 2 * h) + "] : " + accTy);
      std::string v1 = w.def("llvm.extractvalue " + acc + "[" +
                             std::to_string(4 * i + 2 * h + 1) + "] : " + accTy);
      emitEpiloguePair(w, p, a, w.addi(row0, 8 * h), w.addi(col0, 8 * i), v0, v1);
    }
  w.close(); // tile loop
}

std::string Sm90Gen::run() {
  aKMajor = p.form != Form::TN;
  bKMajor = p.form == Form::NT;
  accTy = accAliasName(c.bn);
  aStage = c.bm * c.bk * 2;
  bStage = c.bn * c.bk * 2;
  fullOff = c.stages * (aStage + bStage);
  emptyOff = fullOff + 8 * c.stages;
  int consumers = c.consumerWarpgroups();

  tid = w.sreg("tid.x");
  ctaid = w.sreg("ctaid.x");
  nctaid = w.sreg("nctaid.x");
  smem = w.def("llvm.mlir.addressof @tg_smem : !llvm.ptr<3>");
  smemAddr = w.def("llvm.ptrtoint " + smem + " : !llvm.ptr<3> to i32");
  numK = w.bin("udiv", w.addi(a.k, c.bk - 1), w.i32(c.bk));
  std::string tiles =
      w.mul(w.bin("udiv", w.addi(a.m, c.bm - 1), w.i32(c.bm)),
            w.bin("udiv", w.addi(a.n, c.bn - 1), w.i32(c.bn)));
  // Tiles this CTA owns: ceil((tiles - ctaid) / nctaid) (grid ≤ tiles).
  myTiles = w.bin("udiv", w.add(w.bin("sub", tiles, ctaid), w.addi(nctaid, -1)), nctaid);

  std::string isT0 = w.def("llvm.icmp \"eq\" " + tid + ", " + w.i32(0) + " : i32");
  w.open("scf.if " + isT0 + " {");
  for (int s = 0; s < c.stages; ++s) {
    w.line("nvvm.mbarrier.init " + barrier("full", w.i32(s)) + ", " + w.i32(1) +
           " : !llvm.ptr<3>, i32");
    w.line("nvvm.mbarrier.init " + barrier("empty", w.i32(s)) + ", " +
           w.i32(4 * consumers) + " : !llvm.ptr<3>, i32");
  }
  w.line("nvvm.fence.mbarrier.init");
  w.close();
  w.line("nvvm.barrier0");

  std::string isProducer = w.def("llvm.icmp \"ult\" " + tid + ", " + w.i32(128) + " : i32");
  w.open("scf.if " + isProducer + " {");
  w.line("nvvm.setmaxregister decrease 40");
  w.open("scf.if " + isT0 + " {");
  emitProducer();
  w.close();
  w.close("} else {");
  w.depth++;
  w.line("nvvm.setmaxregister increase " + std::string(consumers == 1 ? "240" : "232"));
  emitConsumer();
  w.close();

  return functionHeader(p, c, "!llvm.ptr") + w.text() + functionFooter();
}

} // namespace

/// The kernel function (without its module) for `p` with `c`; it uses the
/// accumulator alias accAliasName(c.bn).
std::string generateSm90Gemm(const GemmProblem &p, const TileConfig &c) {
  return Sm90Gen(p, c).run();
}

} // namespace tg::nvptx::detail
