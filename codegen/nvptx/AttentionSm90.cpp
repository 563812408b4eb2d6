//===- AttentionSm90.cpp - FlashAttention with wgmma + TMA ------*- C++ -*-===//
//
// The sm_90a attention kernels, warp-specialised like the sm_90a GEMMs: a
// CTA of three warpgroups, one producer and two consumers.
//
//   warpgroup 0 (producer, setmaxnreg 40): one thread loads the CTA's own
//     tiles by TMA (arming the `ownFull` mbarrier), then streams blocks:
//     per block it waits for a free ring slot (`empty`), arms the slot's
//     `full` mbarrier with the bytes of its two tiles and issues their TMA
//     loads. Rows past the sequence end arrive zero-filled (TMA's out of
//     bounds fill), so the last block may be ragged.
//   warpgroups 1 and 2 (consumers, setmaxnreg 232): each owns 64 rows of
//     the CTA's 128 and computes with wgmma straight from the TMA tiles.
//     Where a product's A operand is computed (P, dS), the consumer rounds
//     it to the input type and stores it to its own shared tile in wgmma's
//     K-major 128B-swizzle layout (wgmma reads A from shared memory or
//     registers, and MLIR's nvvm.wgmma.mma_async takes descriptors only).
//
// Forward (tg_attn_fwd_wgmma): own Q (128 queries), streams 128-key blocks
// of K and V. S = Q K^T as wgmma m64n128k16, the online softmax of
// AttentionCommon in registers (wgmma's accumulator fragment is mma.sync's,
// per warp), P to shared memory, O += P V as wgmma m64n{d}k16 with V read
// MN-major (the transpose bit).
//
// Backward, three launches (FlashAttention-2's algorithm):
//  - tg_attn_delta: D = rowsum(dO * O) - dLSE per query row, into the
//    buffer of the result dQ (read as f32), which is free until the dQ pass
//    writes it: the kernel contract (KernelGen.h) gives a kernel no
//    workspace, and D is needed per streamed query block by every CTA of
//    the dK/dV pass.
//  - tg_attn_dkv_wgmma: own K and V (128 keys; 64 and one consumer
//    warpgroup at d = 128, for registers), streams 64-query blocks of
//    Q and dO. S^T = K Q^T and dP^T = V dO^T (m64n64k16), P^T = exp(S^T -
//    lse), dS^T = P^T (dP^T - D), both to shared memory, dV += P^T dO and
//    dK += dS^T Q (m64n{d}k16, dO and Q read MN-major).
//  - tg_attn_dq_wgmma: own Q and dO (128 queries), streams 64-key blocks of
//    K and V: S = Q K^T, dP = dO V^T, dS = P (dP - D) to shared memory,
//    dQ += dS K. Its D (for its own rows) it computes in its prologue, since
//    other CTAs overwrite the dQ buffer that holds the delta kernel's.
//    A pass of its own rather than f32 atomics from dK/dV: deterministic,
//    and the result dQ is bf16/f16, no f32 accumulator to add into.
//
// With `causal` the blocks above the diagonal are never loaded: the forward
// and dQ kernels stop at the key block holding the CTA's last query, the
// dK/dV kernel starts at the query block holding its first key.
//
// Shared memory (bytes): the own tiles (128 x d x 2 each), two ring slots of
// two streamed tiles, the consumers' A tiles (64 rows x 128 bytes per 64
// columns), five mbarriers. Forward: 112 KiB for d = 64, 192 KiB for d =
// 128; dK/dV 96 / 112 KiB; dQ 80 / 144 KiB. Every tile is stored as
// 64-column boxes (128-byte rows, the 128B swizzle's atom), so d = 128 is
// two boxes.
//
// Each wgmma group is waited for before its accumulator is read or its
// operands reused (wait_group 0): the structure is FlashAttention-3's
// without its inter-warpgroup ping-pong and intra-warpgroup overlap of
// softmax with the next S, which are the next step for speed.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/AttentionSm90.h"
#include "codegen/nvptx/AttentionCommon.h"
#include "codegen/nvptx/SimtKernels.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

namespace tg::nvptx::detail {

using namespace mlir;

namespace {

/// Keys per streamed block of the forward; rows per streamed block of the
/// backward kernels (keys for dQ, queries for dK/dV).
constexpr int kBcFwd = 128, kBlockBwd = 64;
constexpr int kStages = 2;
/// Bytes of one 128B-swizzle row: 64 16-bit elements.
constexpr int kRow = 128;
/// Rows per CTA of the delta kernel: four threads per row.
constexpr int kDeltaRows = 32;

/// Byte offsets of the shared-memory regions of one kernel: `own` tiles of
/// ownRows() rows, a ring of kStages slots of two tiles of `streamed` rows,
/// and per consumer warpgroup (`consumers` of them, each owning 64 rows)
/// `aTiles` A-operand tiles of 64 rows x `aCols` columns.
struct Sm90Layout {
  int d, own, streamed, aTiles, aCols;
  int consumers = 2;
  int threads() const { return 128 * (1 + consumers); }
  int ownRows() const { return 64 * consumers; }
  int ownBytes() const { return ownRows() * d * 2; }
  int ownOff(int i) const { return i * ownBytes(); }
  int tileBytes() const { return streamed * d * 2; }
  int ringOff() const { return own * ownBytes(); }
  int slotBytes() const { return 2 * tileBytes(); }
  int aBytes() const { return 64 * aCols * 2; }
  int aOff() const { return ringOff() + kStages * slotBytes(); }
  int barOff() const { return aOff() + consumers * aTiles * aBytes(); }
  int total() const { return barOff() + 8 * (1 + 2 * kStages); }
};

Sm90Layout forwardLayout(int d) { return {d, 1, kBcFwd, 1, kBcFwd}; }
Sm90Layout backwardLayout(int d, bool kv) {
  // ptxas allocates registers for the CTA's threads at launch (setmaxnreg
  // does not raise its budget): 168 per thread for three warpgroups. The
  // dK/dV consumer at d = 128 holds two m64n128 accumulators (128
  // registers) beside the m64n64 score tiles, so that kernel has one
  // consumer warpgroup (64 keys per CTA; two warpgroups, 255 registers).
  return {d, 2, kBlockBwd, kv ? 2 : 1, kBlockBwd, kv && d > 64 ? 1 : 2};
}

/// The TMA, mbarrier and wgmma plumbing of the sm_90a kernels and their
/// split into producer and consumer warpgroups.
class Sm90Base : public AttnBase {
public:
  Sm90Base(KernelBuilder &w, const AttnShape &s, Sm90Layout l)
      : AttnBase(w, s), l(l) {}

protected:
  Value ownFull() { return bar(w.i32c(0)); }
  Value full(Value stage) { return bar(w.addi(stage, 1)); }
  Value empty(Value stage) { return bar(w.addi(stage, 1 + kStages)); }
  Value bar(Value index) {
    return w.gep(smem, w.addi(w.muli(index, 8), l.barOff()), b.getI8Type());
  }
  void waitParity(Value barrier, Value parity) {
    NVVM::MBarrierTryWaitParityOp::create(b, loc, barrier, parity,
                                          w.i32c(10000000));
  }
  void expectBytes(Value barrier, int bytes) {
    NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type{}, barrier,
                                           w.i32c(bytes),
                                           NVVM::MemScopeKind::CTA, false, Value{});
  }
  /// A TMA load of the box at (col, row) of this CTA's matrix into shared
  /// byte offset `dst`, completing bytes on `barrier`.
  void tma(Value map, Value dst, Value col, Value row, Value barrier);
  /// The TMA loads of a tile of `rows` rows from `row` (d / 64 boxes of
  /// rows x 64, one after the other) to `dst`.
  void tmaTile(Value map, Value dst, Value row, int rows, Value barrier) {
    for (int c = 0; c < s.d / 64; ++c)
      tma(map, w.addi(dst, c * rows * kRow), w.i32c(64 * c), row, barrier);
  }
  Value desc(Value off, int lbo) {
    return wgmmaDescriptor(w, descAddr ? descAddr : smemAddr, off, lbo, 1024);
  }
  /// At the top of a consumer loop's body: the descriptors below are
  /// computed from an opaque copy of the shared address, so that LLVM does
  /// not hoist the loop-invariant ones (the own tiles', the A tiles') out of
  /// the loop, where at d = 128 they would hold some 48 registers for the
  /// whole loop; recomputing one is an add and an and.
  void refreshDescriptorBase() {
    descAddr = LLVM::InlineAsmOp::create(
                   b, loc, w.i32, ValueRange{smemAddr}, "mov.b32 $0, $1;",
                   "=r,r", /*has_side_effects=*/true, /*is_align_stack=*/false,
                   LLVM::tailcallkind::TailCallKind::None,
                   LLVM::AsmDialectAttr(), ArrayAttr())
                   .getResult(0);
  }
  /// acc = wgmma m64nNk16 over the descriptors, one per k16 step; waits for
  /// the group to complete.
  Value wgmmaChain(Value acc, int n, bool bKMajor,
                   llvm::function_ref<std::pair<Value, Value>(int)> descs,
                   int steps);
  /// acc += A B^T for this warpgroup's 64 rows of the tile at `aTile`
  /// (`aRows` rows, K-major: d contiguous) and the `bRows` rows of the tile
  /// at `bTile` (K-major): the scores' form, S = Q K^T.
  Value productKMajor(Value acc, Value aTile, int aRows, Value bTile, int bRows);
  /// acc += A B with A this warpgroup's K-major tile at `aTile` (64 rows,
  /// `k` columns) and B the MN-major tile at `bTile` ([k][d], `bRows` rows
  /// per box): the form of O += P V.
  Value productMNMajor(Value acc, Value aTile, int k, Value bTile, int bRows);
  /// Stores `x` (this warpgroup's 64 rows, 8 columns per quad) rounded to
  /// the input type as a K-major wgmma A tile at `base` (boxes of 64
  /// columns, row r's 16-byte chunk c at chunk c ^ (r % 8): the 128B
  /// swizzle; r % 8 is g for both of a thread's rows; 4-byte stores are
  /// conflict-free).
  void storeATile(const std::vector<Quad> &x, Value base);
  /// Makes this warpgroup's generic-proxy stores of A tiles visible to its
  /// wgmma (the async proxy): fence, then the warpgroup's named barrier so
  /// that all 128 threads' rows are in.
  void publishATiles();
  /// Releases ring slot `stage` (one arrival per consumer warp).
  void release(Value stage);
  /// The kernel's body: barriers initialised, then the producer's first
  /// thread runs `loadOwn` and streams the `trips` blocks (`loadBlock(i,
  /// slot offset, barrier)` issues block i's TMA loads), and the consumers
  /// run `consumer`, after lane, g, q2, wg and rowInWg are set.
  void runRoles(llvm::function_ref<void()> loadOwn,
                llvm::function_ref<void(Value, Value, Value)> loadBlock,
                llvm::function_ref<void()> consumer);
  /// Block i into its ring slot: waits for the slot to be free, arms its
  /// `full` barrier with both tiles' bytes and issues the loads.
  void produceOne(Value i);
  /// `lse` of `row` scaled to base 2 (0 past the sequence end).
  Value lse2(Value lse, Value row);
  /// D = rowsum(dO * O) - dLSE of `row` (clamped to the sequence by the
  /// caller) of the matrices gdO and gO: the four threads of a quad (lanes
  /// 4k .. 4k + 3, `part` = lane % 4) each sum a quarter of the row, then
  /// shuffle.
  Value rowDelta(Value gdO, Value gO, Value gDLse, Value row, Value part);
  /// Sets own0 (the CTA's first own row), `first` and `trips`: the first
  /// streamed block of `blockRows` rows (of `streamedLen`) and how many
  /// this CTA visits. Causal: from the query block holding its first key
  /// when the own rows are keys (`ownKeys`), else up to the key block
  /// holding its last query.
  void blockRange(int64_t streamedLen, int blockRows, bool ownKeys);

  Sm90Layout l;
  Value tid, smem, smemAddr, descAddr, wg, rowInWg, own0, first, trips;
  llvm::function_ref<void(Value, Value, Value)> loadBlock;
};

void Sm90Base::tma(Value map, Value dst, Value col, Value row, Value barrier) {
  // The destination is a shared::cluster address; this CTA's shared
  // window is part of it.
  Value to = LLVM::AddrSpaceCastOp::create(
      b, loc, w.ptr7, w.gep(smem, dst, b.getI8Type()));
  SmallVector<Value, 3> coords = {col, row};
  if (s.bh > 1) // a 3-D map: (batch x head) outermost
    coords.push_back(bh);
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, to, map, coords, barrier, ValueRange{}, Value{}, Value{},
      NVVM::TMALoadMode::TILE, false, NVVM::CTAGroupKindAttr{}, Value{});
}

Value Sm90Base::wgmmaChain(
    Value acc, int n, bool bKMajor,
    llvm::function_ref<std::pair<Value, Value>(int)> descs, int steps) {
  MLIRContext *ctx = b.getContext();
  auto ty = NVVM::WGMMATypesAttr::get(
      ctx, s.bf16 ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16);
  auto f32Ty = NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32);
  auto one = NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one);
  auto in = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
  auto row = NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row);
  auto layoutB = NVVM::MMALayoutAttr::get(
      ctx, bKMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (int kk = 0; kk < steps; ++kk) {
    auto [da, db] = descs(kk);
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, acc.getType(), acc, da, db, NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
        ty, ty, f32Ty, one, in, in, row, layoutB, NVVM::MMAIntOverflowAttr{});
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  return acc;
}

Value Sm90Base::productKMajor(Value acc, Value aTile, int aRows, Value bTile,
                              int bRows) {
  // Both K-major (d contiguous): k16 step kk is 32 bytes into the rows of
  // box kk / 4; this warpgroup's rows start 64 rows into A's boxes.
  Value aBase = w.add(aTile, w.muli(wg, 64 * kRow));
  return wgmmaChain(acc, bRows, /*bKMajor=*/true, [&](int kk) {
    int inBox = (kk % 4) * 32;
    Value da = desc(w.addi(aBase, (kk / 4) * aRows * kRow + inBox), 16);
    Value db = desc(w.addi(bTile, (kk / 4) * bRows * kRow + inBox), 16);
    return std::make_pair(da, db);
  }, static_cast<int>(s.d / 16));
}

Value Sm90Base::productMNMajor(Value acc, Value aTile, int k, Value bTile,
                               int bRows) {
  // A K-major (its k contiguous, 64 per box); B MN-major ([k][d]: 16 k are
  // 16 rows of 128 bytes; the next 64 columns of d are the next box).
  return wgmmaChain(acc, static_cast<int>(s.d), /*bKMajor=*/false, [&](int kk) {
    Value da = desc(w.addi(aTile, (kk / 4) * 64 * kRow + (kk % 4) * 32), 16);
    Value db = desc(w.addi(bTile, kk * 16 * kRow), bRows * kRow);
    return std::make_pair(da, db);
  }, k / 16);
}

void Sm90Base::storeATile(const std::vector<Quad> &x, Value base) {
  Type v2 = VectorType::get({2}, elt);
  for (size_t tile = 0; tile < x.size(); ++tile)
    for (int h = 0; h < 2; ++h) {
      Value v = LLVM::UndefOp::create(b, loc, w.v2f32);
      for (int e = 0; e < 2; ++e)
        v = LLVM::InsertElementOp::create(b, loc, v, x[tile][2 * h + e], w.i32c(e));
      Value r = w.addi(rowInWg, 8 * h);
      int box = static_cast<int>(tile / 8), chunk = static_cast<int>(tile % 8);
      Value off = w.add(w.muli(r, kRow),
                        w.add(w.muli(w.xor_(g, w.i32c(chunk)), 16), w.muli(q2, 2)));
      off = w.add(base, w.addi(off, box * 64 * kRow));
      LLVM::StoreOp::create(b, loc, LLVM::FPTruncOp::create(b, loc, v2, v),
                            w.gep(smem, off, b.getI8Type()), 4);
    }
}

void Sm90Base::publishATiles() {
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
  NVVM::BarrierOp::create(b, loc, TypeRange{}, w.addi(wg, 1), w.i32c(128),
                          NVVM::BarrierReductionAttr{}, Value{});
}

void Sm90Base::release(Value stage) {
  w.openIf(w.icmp(LLVM::ICmpPredicate::eq, lane, w.i32c(0)));
  NVVM::MBarrierArriveOp::create(b, loc, Type{}, empty(stage), Value{},
                                 NVVM::MemScopeKind::CTA, false);
  closeIf();
}

void Sm90Base::runRoles(llvm::function_ref<void()> loadOwn,
                        llvm::function_ref<void(Value, Value, Value)> load,
                        llvm::function_ref<void()> consumer) {
  loadBlock = load;
  tid = NVVM::ThreadIdXOp::create(b, loc, w.i32);
  bh = NVVM::BlockIdYOp::create(b, loc, w.i32);
  smem = LLVM::AddressOfOp::create(b, loc, w.ptr3, "tg_smem");
  smemAddr = LLVM::PtrToIntOp::create(b, loc, w.i32, smem);

  Value isT0 = w.icmp(LLVM::ICmpPredicate::eq, tid, w.i32c(0));
  w.openIf(isT0);
  NVVM::MBarrierInitOp::create(b, loc, ownFull(), w.i32c(1), Value{});
  for (int st = 0; st < kStages; ++st) {
    NVVM::MBarrierInitOp::create(b, loc, full(w.i32c(st)), w.i32c(1), Value{});
    NVVM::MBarrierInitOp::create(b, loc, empty(w.i32c(st)),
                                 w.i32c(4 * l.consumers), Value{});
  }
  NVVM::FenceMbarrierInitOp::create(b, loc);
  closeIf();
  NVVM::Barrier0Op::create(b, loc);

  Block *consumerBlock = nullptr;
  w.openIf(w.ult(tid, w.i32c(128)), &consumerBlock);
  Operation *roles = b.getInsertionBlock()->getParentOp();
  // Two consumer warpgroups: registers move from the producer to them
  // (with one, every thread has 255 already).
  if (l.consumers > 1)
    NVVM::SetMaxRegisterOp::create(b, loc, 40, NVVM::SetMaxRegisterAction::decrease);
  w.openIf(isT0);
  loadOwn();
  scf::ForOp loop = w.openFor(trips, {}, "blk");
  produceOne(loop.getInductionVar());
  w.closeFor(loop);
  b.setInsertionPoint(consumerBlock->getTerminator());
  if (l.consumers > 1)
    NVVM::SetMaxRegisterOp::create(b, loc, 232, NVVM::SetMaxRegisterAction::increase);
  Value t = w.addi(tid, -128);
  wg = w.shri(t, 7);
  Value tw = w.andi(t, 127);
  lane = w.andi(tw, 31);
  g = w.shri(lane, 2);
  q2 = w.muli(w.andi(lane, 3), 2);
  rowInWg = w.add(w.muli(w.shri(tw, 5), 16), g);
  consumer();
  w.after(roles);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

void Sm90Base::produceOne(Value i) {
  Value stage = w.urem(i, w.i32c(kStages));
  Value phase = w.andi(w.udiv(i, w.i32c(kStages)), 1);
  // A fresh barrier counts as having completed the phase before phase 0,
  // so the first pass over the ring does not wait.
  waitParity(empty(stage), w.xor_(phase, w.i32c(1)));
  Value barrier = full(stage);
  expectBytes(barrier, l.slotBytes());
  loadBlock(i, w.addi(w.muli(stage, l.slotBytes()), l.ringOff()), barrier);
}

Value Sm90Base::lse2(Value lse, Value row) {
  Value valid = w.ult(row, w.i32c(s.tq));
  Value safe = w.select(valid, row, w.i32c(0));
  Value gL = matrix(lse, s.tq, 1, w.f32);
  Value x = LLVM::LoadOp::create(b, loc, w.f32, w.gep(gL, w.zext64(safe), w.f32));
  return w.select(valid, w.fmul(x, w.f32c(kLog2e)), w.f32c(0));
}

Value Sm90Base::rowDelta(Value gdO, Value gO, Value gDLse, Value row,
                         Value part) {
  Value d = rowDot(gdO, gO, row, part, 4);
  Value dl = LLVM::LoadOp::create(b, loc, w.f32, w.gep(gDLse, w.zext64(row), w.f32));
  return fsub(d, dl);
}

void Sm90Base::blockRange(int64_t streamedLen, int blockRows, bool ownKeys) {
  own0 = w.muli(NVVM::BlockIdXOp::create(b, loc, w.i32), l.ownRows());
  Value n = w.i32c((streamedLen + blockRows - 1) / blockRows);
  first = w.i32c(0);
  trips = n;
  if (!s.causal)
    return;
  if (ownKeys) {
    first = LLVM::UMinOp::create(b, loc, w.udiv(own0, w.i32c(blockRows)), n);
    trips = w.sub(n, first);
  } else {
    trips = LLVM::UMinOp::create(
        b, loc, n, w.addi(w.udiv(w.addi(own0, l.ownRows() - 1), w.i32c(blockRows)), 1));
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

class AttnSm90Fwd : public Sm90Base {
public:
  AttnSm90Fwd(KernelBuilder &w, const AttnShape &s)
      : Sm90Base(w, s, forwardLayout(static_cast<int>(s.d))) {}
  void run(Value qMap, Value kMap, Value vMap, Value o, Value lse);

private:
  void consumer(Value o, Value lse);
};

void AttnSm90Fwd::consumer(Value o, Value lse) {
  MLIRContext *ctx = b.getContext();
  Value rowG = w.add(w.add(own0, w.muli(wg, 64)), rowInWg);
  Type sTy = accType(ctx, kBcFwd), oTy = accType(ctx, static_cast<int>(s.d));
  Value pBase = w.addi(w.muli(wg, l.aBytes()), l.aOff());
  waitParity(ownFull(), w.i32c(0));

  Value negInf = w.f32c(-std::numeric_limits<double>::infinity());
  SmallVector<Value> init = {negInf, negInf, w.f32c(0), w.f32c(0), w.zero(oTy)};
  scf::ForOp loop = w.openFor(trips, init, "kb");
  Value kb = loop.getInductionVar();
  auto it = loop.getRegionIterArgs();
  Value m[2] = {it[0], it[1]}, lsum[2] = {it[2], it[3]};
  Value stage = w.urem(kb, w.i32c(kStages));
  waitParity(full(stage), w.andi(w.udiv(kb, w.i32c(kStages)), 1));
  Value kTile = w.addi(w.muli(stage, l.slotBytes()), l.ringOff());
  Value vTile = w.addi(kTile, l.tileBytes());

  Value sAcc = productKMajor(w.zero(sTy), w.i32c(l.ownOff(0)), l.ownRows(), kTile, kBcFwd);
  std::vector<Quad> x = quads(sAcc);
  Value alpha[2];
  onlineSoftmax(x, rowG, w.add(w.muli(kb, kBcFwd), q2), m, lsum, alpha);
  std::vector<Quad> acc = quads(it[4]);
  rescale(acc, alpha);
  storeATile(x, pBase);
  publishATiles();
  Value oAcc = productMNMajor(fromQuads(oTy, acc), pBase, kBcFwd, vTile, kBcFwd);
  // Both products of this slot are complete.
  release(stage);
  w.closeFor(loop, {m[0], m[1], lsum[0], lsum[1], oAcc});

  Value mEnd[2] = {loop.getResult(0), loop.getResult(1)};
  Value lEnd[2] = {loop.getResult(2), loop.getResult(3)};
  storeOutput(o, lse, rowG, quads(loop.getResult(4)), mEnd, lEnd);
}

void AttnSm90Fwd::run(Value qMap, Value kMap, Value vMap, Value o, Value lse) {
  // Key blocks past the CTA's last query (causal) are never loaded.
  blockRange(s.tk, kBcFwd, /*ownKeys=*/false);
  runRoles(
      [&] {
        expectBytes(ownFull(), l.ownBytes());
        tmaTile(qMap, w.i32c(l.ownOff(0)), own0, l.ownRows(), ownFull());
      },
      [&](Value kb, Value slot, Value barrier) {
        Value key0 = w.muli(kb, kBcFwd);
        tmaTile(kMap, slot, key0, kBcFwd, barrier);
        tmaTile(vMap, w.addi(slot, l.tileBytes()), key0, kBcFwd, barrier);
      },
      [&] { consumer(o, lse); });
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// The dK/dV kernel (`kv`) or the dQ kernel: own tiles A0, A1 (K, V or Q,
/// dO) against streamed blocks B0, B1 (Q, dO or K, V): X = A0 B0^T (S^T or
/// S), Y = A1 B1^T (dP^T or dP), P and dS from them, then dV += P^T dO and
/// dK += dS^T Q, or dQ += dS K.
class AttnSm90Bwd : public Sm90Base {
public:
  AttnSm90Bwd(KernelBuilder &w, const AttnShape &s, bool kv)
      : Sm90Base(w, s, backwardLayout(static_cast<int>(s.d), kv)), kv(kv) {}
  /// maps: A0, A1, B0, B1. dK/dV: ptrs = lse, the D buffer, dK, dV; dQ:
  /// ptrs = dO, dLSE, O, lse, dQ.
  void run(ArrayRef<Value> maps, ArrayRef<Value> ptrs);

private:
  void consumer(ArrayRef<Value> ptrs);
  bool kv;
};

void AttnSm90Bwd::consumer(ArrayRef<Value> ptrs) {
  MLIRContext *ctx = b.getContext();
  Value rowG = w.add(w.add(own0, w.muli(wg, 64)), rowInWg);
  Type xTy = accType(ctx, kBlockBwd), accTy = accType(ctx, static_cast<int>(s.d));
  Value aBase = w.addi(w.muli(wg, l.aTiles * l.aBytes()), l.aOff());
  Value aP = aBase, aDS = w.addi(aBase, kv ? l.aBytes() : 0);

  // dQ: lse and D of this thread's two query rows, computed while the own
  // tiles load.
  Value rowStat[2][2];
  if (!kv) {
    Value gdO = matrix(ptrs[0], s.tq, s.d, elt), gO = matrix(ptrs[2], s.tq, s.d, elt);
    Value gDL = matrix(ptrs[1], s.tq, 1, w.f32);
    for (int h = 0; h < 2; ++h) {
      Value r = w.addi(rowG, 8 * h);
      Value safe = w.select(w.ult(r, w.i32c(s.tq)), r, w.i32c(0));
      rowStat[h][0] = lse2(ptrs[3], r);
      rowStat[h][1] = rowDelta(gdO, gO, gDL, safe, w.andi(lane, 3));
    }
  }
  waitParity(ownFull(), w.i32c(0));

  int nAcc = kv ? 2 : 1;
  SmallVector<Value> init(nAcc, w.zero(accTy));
  scf::ForOp loop = w.openFor(trips, init, "blk");
  Value i = loop.getInductionVar();
  SmallVector<Value> acc(loop.getRegionIterArgs().begin(),
                         loop.getRegionIterArgs().end());
  refreshDescriptorBase();
  Value stage = w.urem(i, w.i32c(kStages));
  Value block0 = w.muli(w.add(first, i), kBlockBwd);
  waitParity(full(stage), w.andi(w.udiv(i, w.i32c(kStages)), 1));
  Value b0 = w.addi(w.muli(stage, l.slotBytes()), l.ringOff());
  Value b1 = w.addi(b0, l.tileBytes());

  // One product at a time, P kept in f32 for dS, the statistics loaded
  // just before their use: at d = 128 the dK/dV consumer's dK and dV
  // accumulators take 128 registers, and anything more live at once spills.
  auto colOf = [&](size_t t, int e) {
    return w.add(block0, w.addi(q2, static_cast<int64_t>(t) * 8 + (e & 1)));
  };
  // dK/dV: the statistics of this thread's query columns (from L1/L2).
  auto colStat = [&](Value base, size_t t, int e) {
    Value col = colOf(t, e);
    Value safe = w.select(w.ult(col, w.i32c(s.tq)), col, w.i32c(0));
    return LLVM::LoadOp::create(b, loc, w.f32,
                                w.gep(matrix(base, s.tq, 1, w.f32),
                                      w.zext64(safe), w.f32))
        .getResult();
  };
  Value xAcc = productKMajor(w.zero(xTy), w.i32c(l.ownOff(0)), l.ownRows(), b0, kBlockBwd);
  std::vector<Quad> x = quads(xAcc);
  std::vector<Quad> p(x.size()), ds(x.size());
  for (size_t t = 0; t < x.size(); ++t)
    for (int e = 0; e < 4; ++e) {
      Value row = w.addi(rowG, e >= 2 ? 8 : 0);
      Value col = colOf(t, e);
      Value l2 = kv ? w.select(w.ult(col, w.i32c(s.tq)),
                               w.fmul(colStat(ptrs[0], t, e), w.f32c(kLog2e)),
                               w.f32c(0))
                    : rowStat[e / 2][0];
      // Rows are keys and columns queries in dK/dV (transposed scores).
      Value valid = kv ? validKey(col, row) : validKey(row, col);
      Value pv = ex2(fsub(w.fmul(x[t][e], w.f32c(c2)), l2));
      p[t][e] = w.select(valid, pv, w.f32c(0));
    }
  if (kv)
    storeATile(p, aP);
  Value yAcc = productKMajor(w.zero(xTy), w.i32c(l.ownOff(1)), l.ownRows(), b1, kBlockBwd);
  std::vector<Quad> y = quads(yAcc);
  for (size_t t = 0; t < y.size(); ++t)
    for (int e = 0; e < 4; ++e) {
      Value dRow = kv ? colStat(ptrs[1], t, e) : rowStat[e / 2][1];
      ds[t][e] = w.fmul(p[t][e], fsub(y[t][e], dRow));
    }
  storeATile(ds, aDS);
  publishATiles();
  if (kv) {
    acc[1] = productMNMajor(acc[1], aP, kBlockBwd, b1, kBlockBwd);     // dV += P^T dO
    acc[0] = productMNMajor(acc[0], aDS, kBlockBwd, b0, kBlockBwd);    // dK += dS^T Q
  } else {
    acc[0] = productMNMajor(acc[0], aDS, kBlockBwd, b0, kBlockBwd);    // dQ += dS K
  }
  release(stage);
  w.closeFor(loop, acc);

  Value sc = w.f32c(s.scale), one = w.f32c(1);
  if (kv) {
    storeRows(matrix(ptrs[2], s.tk, s.d, elt), s.tk, rowG, quads(loop.getResult(0)), sc, sc);
    storeRows(matrix(ptrs[3], s.tk, s.d, elt), s.tk, rowG, quads(loop.getResult(1)), one, one);
  } else {
    storeRows(matrix(ptrs[4], s.tq, s.d, elt), s.tq, rowG, quads(loop.getResult(0)), sc, sc);
  }
}

void AttnSm90Bwd::run(ArrayRef<Value> maps, ArrayRef<Value> ptrs) {
  blockRange(kv ? s.tq : s.tk, kBlockBwd, /*ownKeys=*/kv);
  runRoles(
      [&] {
        expectBytes(ownFull(), 2 * l.ownBytes());
        tmaTile(maps[0], w.i32c(l.ownOff(0)), own0, l.ownRows(), ownFull());
        tmaTile(maps[1], w.i32c(l.ownOff(1)), own0, l.ownRows(), ownFull());
      },
      [&](Value i, Value slot, Value barrier) {
        Value row = w.muli(w.add(first, i), kBlockBwd);
        tmaTile(maps[2], slot, row, kBlockBwd, barrier);
        tmaTile(maps[3], w.addi(slot, l.tileBytes()), row, kBlockBwd, barrier);
      },
      [&] { consumer(ptrs); });
}

/// The delta kernel: D = rowsum(dO * O) - dLSE of every query row (all
/// batches and heads as one matrix), four threads per row, into `dBuf`.
void emitDelta(KernelBuilder &w, const AttnShape &s, Value dO, Value dLse,
               Value o, Value dBuf) {
  struct Gen : Sm90Base {
    using Sm90Base::Sm90Base;
    void body(Value dO, Value dLse, Value o, Value dBuf) {
      int64_t rows = s.bh * s.tq;
      Value t = NVVM::ThreadIdXOp::create(b, loc, w.i32);
      lane = w.andi(t, 31);
      Value row = w.add(w.muli(NVVM::BlockIdXOp::create(b, loc, w.i32), kDeltaRows),
                        w.shri(t, 2));
      Value valid = w.ult(row, w.i32c(rows));
      // Every lane takes part in the shuffles; rows past the end read row 0.
      Value safe = w.select(valid, row, w.i32c(0));
      Value d = rowDelta(dO, o, dLse, safe, w.andi(t, 3));
      w.openIf(w.and_(valid, w.icmp(LLVM::ICmpPredicate::eq, w.andi(t, 3), w.i32c(0))));
      LLVM::StoreOp::create(b, loc, d, w.gep(dBuf, w.zext64(row), w.f32));
      closeIf();
    }
  };
  Gen(w, s, backwardLayout(static_cast<int>(s.d), true)).body(dO, dLse, o, dBuf);
}

/// Creates kernel `symbol` in `kernels` with one parameter per entry of
/// `params` (TMA descriptors are generic pointers to the CUtensorMap,
/// buffers global pointers, as for the sm_90a GEMMs); returns its entry.
Block *createSm90Kernel(ModuleOp kernels, StringRef symbol,
                        ArrayRef<KernelParam> params, int threads, Location loc) {
  MLIRContext *ctx = kernels.getContext();
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  ctx->getOrLoadDialect<NVVM::NVVMDialect>();
  ctx->getOrLoadDialect<scf::SCFDialect>();
  declareSharedMemory(kernels);
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  Type ptr0 = LLVM::LLVMPointerType::get(ctx),
       ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
  SmallVector<Type> types;
  for (const KernelParam &p : params)
    types.push_back(p.kind == KernelParam::Kind::TensorMap ? ptr0 : ptr1);
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, symbol,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), types));
  fn->setAttr("nvvm.kernel", b.getUnitAttr());
  fn->setAttr("nvvm.maxntid", b.getDenseI32ArrayAttr({threads, 1, 1}));
  // One CTA per SM lets ptxas size registers for setmaxnreg.
  fn->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  return fn.addEntryBlock(b);
}

/// A TMA descriptor parameter over operand `operand`: bh matrices of `rows`
/// x d, boxes of `boxRows` x 64.
KernelParam mapParam(const AttnShape &s, unsigned operand, int64_t rows,
                     uint32_t boxRows) {
  TensorMapParam m{s.bf16, static_cast<uint64_t>(rows),
                   static_cast<uint64_t>(s.d), static_cast<uint64_t>(s.bh),
                   boxRows, 64};
  return KernelParam(KernelParam::Kind::TensorMap, operand, m);
}

KernelLaunch sm90Launch(Operation *op, StringRef prefix, const AttnShape &s,
                        int64_t rows, const Sm90Layout &l,
                        std::vector<KernelParam> params) {
  KernelLaunch launch;
  launch.symbol = kernelSymbol(op, prefix, Target::SM90a);
  launch.grid = {static_cast<uint32_t>((rows + l.ownRows() - 1) / l.ownRows()),
                 static_cast<uint32_t>(s.bh), 1};
  launch.block = {static_cast<uint32_t>(l.threads()), 1, 1};
  launch.dynamicSharedBytes = static_cast<uint32_t>(l.total());
  launch.params = std::move(params);
  return launch;
}

SmallVector<Value> args(Block *entry) {
  return SmallVector<Value>(entry->getArguments().begin(),
                            entry->getArguments().end());
}

} // namespace

FailureOr<std::vector<KernelLaunch>>
lowerAttentionForwardSm90(Operation *op, ModuleOp kernels) {
  AttnShape s = attentionShape(op);
  using K = KernelParam::Kind;
  Sm90Layout layout = forwardLayout(static_cast<int>(s.d));
  // q, k, v as TMA maps; the output and the log-sum-exp as pointers.
  KernelLaunch launch = sm90Launch(
      op, "tg_attn_fwd_wgmma", s, s.tq, layout,
      {mapParam(s, 0, s.tq, layout.ownRows()), mapParam(s, 1, s.tk, kBcFwd),
       mapParam(s, 2, s.tk, kBcFwd), KernelParam(K::Result, 0),
       KernelParam(K::Result, 1)});
  if (!hasKernel(kernels, launch.symbol)) {
    Block *entry = createSm90Kernel(kernels, launch.symbol, launch.params,
                                    layout.threads(),
                                    op->getLoc());
    KernelBuilder w(entry, op->getLoc());
    SmallVector<Value> p = args(entry);
    AttnSm90Fwd(w, s).run(p[0], p[1], p[2], p[3], p[4]);
  }
  return std::vector<KernelLaunch>{launch};
}

FailureOr<std::vector<KernelLaunch>>
lowerAttentionBackwardSm90(Operation *op, ModuleOp kernels) {
  AttnShape s = attentionShape(op);
  int d = static_cast<int>(s.d);
  using K = KernelParam::Kind;
  auto operand = [](unsigned i) { return KernelParam(K::Operand, i); };
  auto result = [](unsigned i) { return KernelParam(K::Result, i); };
  // Operands: dO, dLSE, Q, K, V, O, LSE; results dQ, dK, dV.
  std::vector<KernelLaunch> launches;

  // D into dQ's buffer (f32 per query row; dQ has d 16-bit elements per row).
  KernelLaunch delta;
  delta.symbol = kernelSymbol(op, "tg_attn_delta", Target::SM90a);
  delta.grid = {static_cast<uint32_t>((s.bh * s.tq + kDeltaRows - 1) / kDeltaRows), 1, 1};
  delta.block = {4 * kDeltaRows, 1, 1};
  delta.params = {operand(0), operand(1), operand(5), result(0)};
  if (!hasKernel(kernels, delta.symbol)) {
    SimtKernel kern = beginSimtKernel(kernels, delta.symbol, delta.params.size(),
                                      4 * kDeltaRows, op->getLoc());
    emitDelta(*kern.w, s, kern.params[0], kern.params[1], kern.params[2],
              kern.params[3]);
    endSimtKernel(kern);
  }
  launches.push_back(delta);

  Sm90Layout kvLayout = backwardLayout(d, true), qLayout = backwardLayout(d, false);
  KernelLaunch dkv = sm90Launch(
      op, "tg_attn_dkv_wgmma", s, s.tk, kvLayout,
      {mapParam(s, 3, s.tk, kvLayout.ownRows()),
       mapParam(s, 4, s.tk, kvLayout.ownRows()),
       mapParam(s, 2, s.tq, kBlockBwd), mapParam(s, 0, s.tq, kBlockBwd),
       operand(6), result(0), result(1), result(2)});
  if (!hasKernel(kernels, dkv.symbol)) {
    Block *entry = createSm90Kernel(kernels, dkv.symbol, dkv.params,
                                    kvLayout.threads(), op->getLoc());
    KernelBuilder w(entry, op->getLoc());
    SmallVector<Value> p = args(entry);
    AttnSm90Bwd(w, s, true).run(ArrayRef<Value>(p).take_front(4), ArrayRef<Value>(p).drop_front(4));
  }
  launches.push_back(dkv);

  KernelLaunch dq = sm90Launch(
      op, "tg_attn_dq_wgmma", s, s.tq, qLayout,
      {mapParam(s, 2, s.tq, qLayout.ownRows()),
       mapParam(s, 0, s.tq, qLayout.ownRows()),
       mapParam(s, 3, s.tk, kBlockBwd), mapParam(s, 4, s.tk, kBlockBwd),
       operand(0), operand(1), operand(5), operand(6), result(0)});
  if (!hasKernel(kernels, dq.symbol)) {
    Block *entry = createSm90Kernel(kernels, dq.symbol, dq.params,
                                    qLayout.threads(), op->getLoc());
    KernelBuilder w(entry, op->getLoc());
    SmallVector<Value> p = args(entry);
    AttnSm90Bwd(w, s, false).run(ArrayRef<Value>(p).take_front(4), ArrayRef<Value>(p).drop_front(4));
  }
  launches.push_back(dq);
  return launches;
}

} // namespace tg::nvptx::detail
