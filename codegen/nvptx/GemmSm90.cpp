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

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <vector>

namespace tg::nvptx::detail {
namespace {

using namespace mlir;

class Sm90Gen {
public:
  Sm90Gen(const GemmProblem &p, const TileConfig &c, KernelBuilder &w,
          const KernelArgs &a)
      : p(p), c(c), w(w), b(w.b), loc(w.loc), a(a) {}
  void run();

private:
  enum class Bar { Full, Empty };
  Value barrier(Bar which, Value stage) {
    return w.gep(smem,
                 w.addi(w.muli(stage, 8), which == Bar::Full ? fullOff : emptyOff),
                 b.getI8Type());
  }
  /// Iteration bookkeeping shared by producer and consumers.
  void stagePhase(Value it, Value &stage, Value &phase) {
    stage = w.urem(it, w.i32c(c.stages));
    phase = w.andi(w.udiv(it, w.i32c(c.stages)), 1);
  }
  /// Opens the loop over this CTA's tiles; returns it with the tile origin
  /// and, for a batched problem, the tile's batch (null otherwise).
  scf::ForOp emitTileLoopHeader(Value &m0, Value &n0, Value &batch);
  void emitProducer();
  void emitConsumer();
  /// 64-bit wgmma shared-memory descriptor for byte offset `off`.
  Value descriptor(Value off, int lbo, int sbo);
  /// Waits (spinning in try_wait) for `bar` to complete phase `parity`.
  void waitParity(Value bar, Value parity) {
    NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parity, w.i32c(10000000));
  }
  void arrive(Value bar) {
    NVVM::MBarrierArriveOp::create(b, loc, Type{}, bar, Value{},
                                   NVVM::MemScopeKind::CTA, false);
  }

  const GemmProblem &p;
  const TileConfig &c;
  KernelBuilder &w;
  OpBuilder &b;
  Location loc;
  KernelArgs a;
  bool aKMajor = true, bKMajor = false;
  int aStage = 0, bStage = 0, fullOff = 0, emptyOff = 0;
  Value tid, smem, smemAddr, numK, myTiles, ctaid, nctaid, tilesPerBatch;
  Type accTy;
};

Value Sm90Gen::descriptor(Value off, int lbo, int sbo) {
  return wgmmaDescriptor(w, smemAddr, off, lbo, sbo);
}

scf::ForOp Sm90Gen::emitTileLoopHeader(Value &m0, Value &n0, Value &batch) {
  scf::ForOp loop = w.openFor(myTiles, {}, "ti");
  Value ti = loop.getInductionVar();
  Value tile = w.add(ctaid, w.mul(ti, nctaid));
  batch = Value();
  if (p.batch > 1) { // tiles of batch 0, then of batch 1, ...
    batch = w.udiv(tile, tilesPerBatch);
    tile = w.urem(tile, tilesPerBatch);
  }
  auto [tm, tn] = emitTileRaster(w, c, a, tile);
  m0 = w.muli(tm, c.bm);
  n0 = w.muli(tn, c.bn);
  return loop;
}

void Sm90Gen::emitProducer() {
  Value m0, n0, batch;
  scf::ForOp tiles = emitTileLoopHeader(m0, n0, batch);
  Value ti = tiles.getInductionVar();
  scf::ForOp kLoop = w.openFor(numK, {}, "kt");
  Value kt = kLoop.getInductionVar();
  Value it = w.add(w.mul(ti, numK), kt), stage, phase;
  stagePhase(it, stage, phase);
  // A fresh barrier counts as having completed the phase before phase 0,
  // so the first pass over the ring does not wait.
  Value emptyBar = barrier(Bar::Empty, stage);
  waitParity(emptyBar, w.xor_(phase, w.i32c(1)));
  Value fullBar = barrier(Bar::Full, stage);
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type{}, fullBar,
                                         w.i32c(aStage + bStage),
                                         NVVM::MemScopeKind::CTA, false, Value{});
  Value k0 = w.muli(kt, c.bk);
  // A batched operand's descriptor is 3-D (tmaTensor): the batch is the
  // outermost coordinate, so a box never reaches into the next matrix.
  auto tma = [&](Value desc, int dstOff, Value dyn, Value x, Value y,
                 bool batched) {
    Value dst = w.gep(smem, w.addi(dyn, dstOff), b.getI8Type());
    // The destination operand is a shared::cluster address; this CTA's
    // shared window is part of it.
    dst = LLVM::AddrSpaceCastOp::create(b, loc, w.ptr7, dst);
    SmallVector<Value, 3> coords = {x, y};
    if (batch && batched)
      coords.push_back(batch);
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, loc, dst, desc, coords, fullBar, ValueRange{}, Value{},
        Value{}, NVVM::TMALoadMode::TILE, false, NVVM::CTAGroupKindAttr{},
        Value{});
  };
  Value aSlot = w.muli(stage, aStage);
  Value bSlot = w.addi(w.muli(stage, bStage), c.stages * aStage);
  // Coordinates are innermost-first: (k, row) for K-major boxes.
  if (aKMajor)
    tma(a.a, 0, aSlot, k0, m0, p.batchA);
  else
    for (int i = 0; i < c.bm / 64; ++i)
      tma(a.a, i * c.bk * 128, aSlot, w.addi(m0, 64 * i), k0, p.batchA);
  if (bKMajor)
    tma(a.b, 0, bSlot, k0, n0, p.batchB);
  else
    for (int i = 0; i < c.bn / 64; ++i)
      tma(a.b, i * c.bk * 128, bSlot, w.addi(n0, 64 * i), k0, p.batchB);
  w.closeFor(kLoop);
  w.closeFor(tiles);
}

void Sm90Gen::emitConsumer() {
  MLIRContext *ctx = b.getContext();
  Value wg = w.addi(w.shri(tid, 7), -1); // consumer index 0..C-1
  Value t = w.andi(tid, 127);
  Value lane = w.andi(t, 31), warp = w.shri(t, 5);
  Value lane0 = w.icmp(LLVM::ICmpPredicate::eq, lane, w.i32c(0));
  // Descriptor offsets that do not change with the slot.
  Value aWg = aKMajor ? w.muli(wg, 64 * 128) : w.muli(wg, c.bk * 128);
  int aLbo = aKMajor ? 16 : c.bk * 128, bLbo = bKMajor ? 16 : c.bk * 128;
  Value zero = w.zero(accTy);

  Value m0, n0;
  scf::ForOp tiles = emitTileLoopHeader(m0, n0, a.batch);
  Value ti = tiles.getInductionVar();
  scf::ForOp kLoop = w.openFor(numK, ValueRange{zero}, "ckt");
  Value kt = kLoop.getInductionVar();
  Value it = w.add(w.mul(ti, numK), kt), stage, phase;
  stagePhase(it, stage, phase);
  waitParity(barrier(Bar::Full, stage), phase);
  Value aSlot = w.add(w.muli(stage, aStage), aWg);
  Value bSlot = w.addi(w.muli(stage, bStage), c.stages * aStage);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  Value d = kLoop.getRegionIterArgs()[0];
  auto ty = p.in == ElemType::BF16 ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  auto shape = NVVM::MMAShapeAttr::get(ctx, 64, c.bn, 16);
  auto tyAttr = NVVM::WGMMATypesAttr::get(ctx, ty);
  auto f32Attr = NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32);
  auto scaleOut = NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one);
  auto scaleIn = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
  auto layoutA = NVVM::MMALayoutAttr::get(
      ctx, aKMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col);
  auto layoutB = NVVM::MMALayoutAttr::get(
      ctx, bKMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row);
  for (int kk = 0; kk < c.bk / 16; ++kk) {
    // K-major: the next 16 elements of each 128-byte row (32 bytes on);
    // MN-major: the next 16 rows of 128 bytes.
    Value da = descriptor(w.addi(aSlot, aKMajor ? kk * 32 : kk * 2048), aLbo, 1024);
    Value db = descriptor(w.addi(bSlot, bKMajor ? kk * 32 : kk * 2048), bLbo, 1024);
    d = NVVM::WgmmaMmaAsyncOp::create(b, loc, accTy, d, da, db, shape, tyAttr,
                                      tyAttr, f32Attr, scaleOut, scaleIn,
                                      scaleIn, layoutA, layoutB,
                                      NVVM::MMAIntOverflowAttr{});
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // Keep this slot's group in flight; the previous one is done: free its slot.
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
  Value notFirst = w.icmp(LLVM::ICmpPredicate::ugt, kt, w.i32c(0));
  w.openIf(w.and_(notFirst, lane0));
  Value prevStage = w.urem(w.addi(it, -1), w.i32c(c.stages));
  arrive(barrier(Bar::Empty, prevStage));
  w.after(b.getInsertionBlock()->getParentOp());
  w.closeFor(kLoop, ValueRange{d});
  Value acc = kLoop.getResult(0);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  w.openIf(lane0);
  Value lastStage =
      w.urem(w.addi(w.add(w.mul(ti, numK), numK), -1), w.i32c(c.stages));
  arrive(barrier(Bar::Empty, lastStage));
  w.after(b.getInsertionBlock()->getParentOp());

  // Epilogue: wgmma's m64nN f32 fragment; 16 rows per warp, n8 blocks.
  Value row0 = w.add(w.add(m0, w.muli(wg, 64)),
                     w.add(w.muli(warp, 16), w.shri(lane, 2)));
  Value col0 = w.add(n0, w.muli(w.andi(lane, 3), 2));
  for (int i = 0; i < c.bn / 8; ++i)
    for (int h = 0; h < 2; ++h) {
      Value v0 = w.extractvalue(acc, 4 * i + 2 * h);
      Value v1 = w.extractvalue(acc, 4 * i + 2 * h + 1);
      emitEpiloguePair(w, p, a, w.addi(row0, 8 * h), w.addi(col0, 8 * i), v0, v1);
    }
  w.closeFor(tiles);
}

void Sm90Gen::run() {
  aKMajor = p.form != Form::TN;
  bKMajor = p.form == Form::NT;
  accTy = accType(b.getContext(), c.bn);
  aStage = c.bm * c.bk * 2;
  bStage = c.bn * c.bk * 2;
  fullOff = c.stages * (aStage + bStage);
  emptyOff = fullOff + 8 * c.stages;
  int consumers = c.consumerWarpgroups();

  tid = NVVM::ThreadIdXOp::create(b, loc, w.i32);
  ctaid = NVVM::BlockIdXOp::create(b, loc, w.i32);
  nctaid = NVVM::GridDimXOp::create(b, loc, w.i32);
  smem = LLVM::AddressOfOp::create(b, loc, w.ptr3, "tg_smem");
  smemAddr = LLVM::PtrToIntOp::create(b, loc, w.i32, smem);
  numK = w.udiv(w.addi(a.k, c.bk - 1), w.i32c(c.bk));
  Value tiles = w.mul(w.udiv(w.addi(a.m, c.bm - 1), w.i32c(c.bm)),
                      w.udiv(w.addi(a.n, c.bn - 1), w.i32c(c.bn)));
  if (p.batch > 1) {
    tilesPerBatch = tiles;
    tiles = w.muli(tiles, p.batch);
  }
  // Tiles this CTA owns: ceil((tiles - ctaid) / nctaid) (grid ≤ tiles).
  myTiles = w.udiv(w.add(w.sub(tiles, ctaid), w.addi(nctaid, -1)), nctaid);

  Value isT0 = w.icmp(LLVM::ICmpPredicate::eq, tid, w.i32c(0));
  w.openIf(isT0);
  for (int s = 0; s < c.stages; ++s) {
    NVVM::MBarrierInitOp::create(b, loc, barrier(Bar::Full, w.i32c(s)),
                                 w.i32c(1), Value{});
    NVVM::MBarrierInitOp::create(b, loc, barrier(Bar::Empty, w.i32c(s)),
                                 w.i32c(4 * consumers), Value{});
  }
  NVVM::FenceMbarrierInitOp::create(b, loc);
  w.after(b.getInsertionBlock()->getParentOp());
  NVVM::Barrier0Op::create(b, loc);

  Value isProducer = w.ult(tid, w.i32c(128));
  Block *consumerBlock = nullptr;
  w.openIf(isProducer, &consumerBlock);
  Operation *roles = b.getInsertionBlock()->getParentOp();
  NVVM::SetMaxRegisterOp::create(b, loc, 40, NVVM::SetMaxRegisterAction::decrease);
  w.openIf(isT0);
  emitProducer();
  b.setInsertionPoint(consumerBlock->getTerminator());
  NVVM::SetMaxRegisterOp::create(b, loc, consumers == 1 ? 240 : 232,
                                 NVVM::SetMaxRegisterAction::increase);
  emitConsumer();
  w.after(roles);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

} // namespace

void emitSm90Gemm(KernelBuilder &w, const GemmProblem &p, const TileConfig &c,
                  const KernelArgs &a) {
  Sm90Gen(p, c, w, a).run();
}

void buildSm90Gemm(ModuleOp module, const GemmProblem &p, const TileConfig &c) {
  KernelArgs a;
  LLVM::LLVMFuncOp fn = createKernel(
      module, p, c, LLVM::LLVMPointerType::get(module.getContext()), a);
  KernelBuilder w(&fn.getBody().front(), module.getLoc());
  emitSm90Gemm(w, p, c, a);
}

} // namespace tg::nvptx::detail
