//===- AttentionSm90.cpp - FlashAttention forward with wgmma + TMA -*- C++ -*-===//
//
// One CTA per (block of 128 queries, batch x head), three warpgroups:
//
//   warpgroup 0 (producer, setmaxnreg 40): one thread loads the CTA's Q
//     tile by TMA (arming the `qFull` mbarrier), then streams the key
//     blocks: per block it waits for a free ring slot (`empty`), arms the
//     slot's `full` mbarrier with the bytes of K and V and issues their TMA
//     loads. Rows past the sequence end arrive zero-filled (TMA's out of
//     bounds fill), so the last block may be ragged.
//   warpgroups 1 and 2 (consumers, setmaxnreg 232): each owns 64 queries.
//     Per key block: S = Q K^T as wgmma m64n128k16 straight from the TMA
//     tiles; the online softmax of AttentionCommon in registers (wgmma's
//     accumulator fragment is mma.sync's, per warp); P rounded to the input
//     type and stored to the warpgroup's own shared tile in wgmma's K-major
//     128B-swizzle layout (wgmma reads A from shared memory or registers,
//     and MLIR's nvvm.wgmma.mma_async takes descriptors only); then
//     O += P V as wgmma m64n{d}k16 with V read MN-major (the transpose
//     bit), and the slot is released.
//
// With `causal` the key blocks past the CTA's last query are never loaded.
// Shared memory (bytes): Q (128 x d x 2), two ring slots of K and V
// (2 x 2 x 128 x d x 2), P (2 x 64 x 128 x 2), the mbarriers: 112 KiB for
// d = 64, 192 KiB for d = 128. Every tile is stored as 64-column boxes
// (128-byte rows, the 128B swizzle's atom), so d = 128 is two boxes.
//
// Each wgmma group is waited for before its accumulator is read or its
// operands reused (wait_group 0): the structure is FlashAttention-3's
// without its inter-warpgroup ping-pong and intra-warpgroup overlap of
// softmax with the next S, which are the next step for speed.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/AttentionSm90.h"
#include "codegen/nvptx/AttentionCommon.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

namespace tg::nvptx::detail {

using namespace mlir;

namespace {

constexpr int kConsumers = 2;
/// Queries per CTA (64 per consumer warpgroup) and keys per streamed block.
constexpr int kBr = 64 * kConsumers, kBc = 128;
constexpr int kStages = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
/// Bytes of one 128B-swizzle row: 64 16-bit elements.
constexpr int kRow = 128;

/// Byte offsets of the shared-memory regions for head dimension d.
struct Sm90Layout {
  int d;
  int qBytes() const { return kBr * d * 2; }
  int kvBytes() const { return kBc * d * 2; }
  int kOff(int stage) const { return qBytes() + stage * 2 * kvBytes(); }
  int vOff(int stage) const { return kOff(stage) + kvBytes(); }
  int pBytes() const { return 64 * kBc * 2; }
  int pOff() const { return kOff(kStages); }
  int barOff() const { return pOff() + kConsumers * pBytes(); }
  int total() const { return barOff() + 8 * (1 + 2 * kStages); }
};

class AttnSm90Gen : public AttnBase {
public:
  AttnSm90Gen(KernelBuilder &w, const AttnShape &s) : AttnBase(w, s), l{int(s.d)} {}
  void run(Value qMap, Value kMap, Value vMap, Value o, Value lse);

private:
  void producer(Value qMap, Value kMap, Value vMap);
  void consumer(Value o, Value lse);
  Value barrier(int index) { return w.gep(smem, w.i32c(l.barOff() + 8 * index), b.getI8Type()); }
  Value qFull() { return barrier(0); }
  Value full(Value stage) {
    return w.gep(smem, w.addi(w.muli(stage, 8), l.barOff() + 8), b.getI8Type());
  }
  Value empty(Value stage) {
    return w.gep(smem, w.addi(w.muli(stage, 8), l.barOff() + 8 * (1 + kStages)),
                 b.getI8Type());
  }
  void waitParity(Value bar, Value parity) {
    NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parity, w.i32c(10000000));
  }
  /// A TMA load of the box at (col, row) of this CTA's matrix into shared
  /// byte offset `dst`, completing bytes on `bar`.
  void tma(Value map, Value dst, Value col, Value row, Value bar);
  Value desc(Value off, int lbo) { return wgmmaDescriptor(w, smemAddr, off, lbo, 1024); }
  /// acc = wgmma m64nNk16 over the descriptors, one per k16 step; waits for
  /// the group to complete.
  Value wgmmaChain(Value acc, int n, bool bKMajor,
                   llvm::function_ref<std::pair<Value, Value>(int)> descs, int steps);
  Value keyBlocks(Value row0) {
    Value n = w.i32c((s.tk + kBc - 1) / kBc);
    if (!s.causal)
      return n;
    return LLVM::UMinOp::create(
        b, loc, n, w.addi(w.udiv(w.addi(row0, kBr - 1), w.i32c(kBc)), 1));
  }

  Sm90Layout l;
  Value tid, smem, smemAddr, row0, nKB;
};

void AttnSm90Gen::tma(Value map, Value dst, Value col, Value row, Value bar) {
  // The destination is a shared::cluster address; this CTA's shared
  // window is part of it.
  Value to = LLVM::AddrSpaceCastOp::create(
      b, loc, w.ptr7, w.gep(smem, dst, b.getI8Type()));
  SmallVector<Value, 3> coords = {col, row};
  if (s.bh > 1) // a 3-D map: (batch x head) outermost
    coords.push_back(bh);
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, to, map, coords, bar, ValueRange{}, Value{}, Value{},
      NVVM::TMALoadMode::TILE, false, NVVM::CTAGroupKindAttr{}, Value{});
}

void AttnSm90Gen::producer(Value qMap, Value kMap, Value vMap) {
  int boxes = static_cast<int>(s.d / 64);
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type{}, qFull(),
                                         w.i32c(l.qBytes()),
                                         NVVM::MemScopeKind::CTA, false, Value{});
  for (int c = 0; c < boxes; ++c)
    tma(qMap, w.i32c(c * kBr * kRow), w.i32c(64 * c), row0, qFull());
  scf::ForOp loop = w.openFor(nKB, {}, "kb");
  Value kb = loop.getInductionVar();
  Value stage = w.urem(kb, w.i32c(kStages));
  Value phase = w.andi(w.udiv(kb, w.i32c(kStages)), 1);
  // A fresh barrier counts as having completed the phase before phase 0,
  // so the first pass over the ring does not wait.
  waitParity(empty(stage), w.xor_(phase, w.i32c(1)));
  Value bar = full(stage);
  NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type{}, bar,
                                         w.i32c(2 * l.kvBytes()),
                                         NVVM::MemScopeKind::CTA, false, Value{});
  Value key0 = w.muli(kb, kBc);
  Value slot = w.muli(stage, 2 * l.kvBytes());
  for (int c = 0; c < boxes; ++c) {
    tma(kMap, w.addi(slot, l.kOff(0) + c * kBc * kRow), w.i32c(64 * c), key0, bar);
    tma(vMap, w.addi(slot, l.vOff(0) + c * kBc * kRow), w.i32c(64 * c), key0, bar);
  }
  w.closeFor(loop);
}

Value AttnSm90Gen::wgmmaChain(
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

void AttnSm90Gen::consumer(Value o, Value lse) {
  MLIRContext *ctx = b.getContext();
  Value t = w.addi(tid, -128);
  Value wg = w.shri(t, 7);
  Value tw = w.andi(t, 127);
  Value warp = w.shri(tw, 5);
  lane = w.andi(tw, 31);
  g = w.shri(lane, 2);
  q2 = w.muli(w.andi(lane, 3), 2);
  Value rowInWg = w.add(w.muli(warp, 16), g);
  Value rowG = w.add(w.add(row0, w.muli(wg, 64)), rowInWg);
  Type sTy = accType(ctx, kBc), oTy = accType(ctx, static_cast<int>(s.d));
  Value qBase = w.muli(wg, 64 * kRow);
  Value pBase = w.addi(w.muli(wg, l.pBytes()), l.pOff());
  waitParity(qFull(), w.i32c(0));

  Value negInf = w.f32c(-std::numeric_limits<double>::infinity());
  SmallVector<Value> init = {negInf, negInf, w.f32c(0), w.f32c(0), w.zero(oTy)};
  scf::ForOp loop = w.openFor(nKB, init, "kb");
  Value kb = loop.getInductionVar();
  auto it = loop.getRegionIterArgs();
  Value m[2] = {it[0], it[1]}, lsum[2] = {it[2], it[3]};
  Value stage = w.urem(kb, w.i32c(kStages));
  waitParity(full(stage), w.andi(w.udiv(kb, w.i32c(kStages)), 1));
  Value slot = w.muli(stage, 2 * l.kvBytes());

  // S = Q K^T: both K-major (d contiguous); k16 step kk is 32 bytes into
  // the rows of box kk / 4.
  Value sAcc = wgmmaChain(w.zero(sTy), kBc, /*bKMajor=*/true, [&](int kk) {
    int inBox = (kk % 4) * 32;
    Value da = desc(w.addi(qBase, (kk / 4) * kBr * kRow + inBox), 16);
    Value db = desc(w.addi(slot, l.kOff(0) + (kk / 4) * kBc * kRow + inBox), 16);
    return std::make_pair(da, db);
  }, static_cast<int>(s.d / 16));

  std::vector<Quad> x = quads(sAcc);
  Value alpha[2];
  onlineSoftmax(x, rowG, w.add(w.muli(kb, kBc), q2), m, lsum, alpha);
  std::vector<Quad> acc = quads(it[4]);
  rescale(acc, alpha);

  // P to shared memory, K-major for wgmma: key block columns in boxes of
  // 64, row r's 16-byte chunk c at chunk c ^ (r % 8) (the 128B swizzle;
  // r % 8 is g for both of a thread's rows).
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
      off = w.add(pBase, w.addi(off, box * 64 * kRow));
      LLVM::StoreOp::create(b, loc, LLVM::FPTruncOp::create(b, loc, v2, v),
                            w.gep(smem, off, b.getI8Type()), 4);
    }
  // The stores are generic-proxy writes that wgmma (the async proxy) reads:
  // fence, then the warpgroup's named barrier so all 128 threads' rows are in.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  NVVM::BarrierOp::create(b, loc, TypeRange{}, w.addi(wg, 1), w.i32c(128),
                          NVVM::BarrierReductionAttr{}, Value{});

  // O += P V: P K-major (keys contiguous), V MN-major ([key][d]: 16 keys
  // are 16 rows of 128 bytes; the second 64 columns are the next box).
  Value oAcc = wgmmaChain(fromQuads(oTy, acc), static_cast<int>(s.d),
                          /*bKMajor=*/false, [&](int kk) {
    Value da = desc(w.addi(pBase, (kk / 4) * 64 * kRow + (kk % 4) * 32), 16);
    Value db = desc(w.addi(slot, l.vOff(0) + kk * 16 * kRow), kBc * kRow);
    return std::make_pair(da, db);
  }, kBc / 16);
  // Both products of this slot are complete: release it (one arrival per
  // consumer warp).
  w.openIf(w.icmp(LLVM::ICmpPredicate::eq, lane, w.i32c(0)));
  NVVM::MBarrierArriveOp::create(b, loc, Type{}, empty(stage), Value{},
                                 NVVM::MemScopeKind::CTA, false);
  closeIf();
  w.closeFor(loop, {m[0], m[1], lsum[0], lsum[1], oAcc});

  Value mEnd[2] = {loop.getResult(0), loop.getResult(1)};
  Value lEnd[2] = {loop.getResult(2), loop.getResult(3)};
  storeOutput(o, lse, rowG, quads(loop.getResult(4)), mEnd, lEnd);
}

void AttnSm90Gen::run(Value qMap, Value kMap, Value vMap, Value o, Value lse) {
  tid = NVVM::ThreadIdXOp::create(b, loc, w.i32);
  bh = NVVM::BlockIdYOp::create(b, loc, w.i32);
  row0 = w.muli(NVVM::BlockIdXOp::create(b, loc, w.i32), kBr);
  smem = LLVM::AddressOfOp::create(b, loc, w.ptr3, "tg_smem");
  smemAddr = LLVM::PtrToIntOp::create(b, loc, w.i32, smem);
  // Blocks above the diagonal are never loaded.
  nKB = keyBlocks(row0);

  Value isT0 = w.icmp(LLVM::ICmpPredicate::eq, tid, w.i32c(0));
  w.openIf(isT0);
  NVVM::MBarrierInitOp::create(b, loc, qFull(), w.i32c(1), Value{});
  for (int st = 0; st < kStages; ++st) {
    NVVM::MBarrierInitOp::create(b, loc, full(w.i32c(st)), w.i32c(1), Value{});
    NVVM::MBarrierInitOp::create(b, loc, empty(w.i32c(st)),
                                 w.i32c(4 * kConsumers), Value{});
  }
  NVVM::FenceMbarrierInitOp::create(b, loc);
  closeIf();
  NVVM::Barrier0Op::create(b, loc);

  Block *consumerBlock = nullptr;
  w.openIf(w.ult(tid, w.i32c(128)), &consumerBlock);
  Operation *roles = b.getInsertionBlock()->getParentOp();
  NVVM::SetMaxRegisterOp::create(b, loc, 40, NVVM::SetMaxRegisterAction::decrease);
  w.openIf(isT0);
  producer(qMap, kMap, vMap);
  b.setInsertionPoint(consumerBlock->getTerminator());
  NVVM::SetMaxRegisterOp::create(b, loc, 232, NVVM::SetMaxRegisterAction::increase);
  consumer(o, lse);
  w.after(roles);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

} // namespace

FailureOr<std::vector<KernelLaunch>>
lowerAttentionForwardSm90(Operation *op, ModuleOp kernels) {
  AttnShape s = attentionShape(op);
  Sm90Layout layout{static_cast<int>(s.d)};
  KernelLaunch launch;
  launch.symbol = kernelSymbol(op, "tg_attn_fwd_wgmma", Target::SM90a);
  launch.grid = {static_cast<uint32_t>((s.tq + kBr - 1) / kBr),
                 static_cast<uint32_t>(s.bh), 1};
  launch.block = {kThreads, 1, 1};
  launch.dynamicSharedBytes = static_cast<uint32_t>(layout.total());
  // q, k, v as TMA maps of 64-column boxes (bh matrices of rows x d);
  // the output and the log-sum-exp as pointers.
  auto map = [&](unsigned operand, int64_t rows, uint32_t boxRows) {
    TensorMapParam m{s.bf16, static_cast<uint64_t>(rows),
                     static_cast<uint64_t>(s.d), static_cast<uint64_t>(s.bh),
                     boxRows, 64};
    return KernelParam(KernelParam::Kind::TensorMap, operand, m);
  };
  launch.params = {map(0, s.tq, kBr), map(1, s.tk, kBc), map(2, s.tk, kBc),
                   KernelParam(KernelParam::Kind::Result, 0),
                   KernelParam(KernelParam::Kind::Result, 1)};
  if (hasKernel(kernels, launch.symbol))
    return std::vector<KernelLaunch>{launch};

  MLIRContext *ctx = kernels.getContext();
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  ctx->getOrLoadDialect<NVVM::NVVMDialect>();
  ctx->getOrLoadDialect<scf::SCFDialect>();
  declareSharedMemory(kernels);
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  Location loc = op->getLoc();
  // TMA descriptors are generic pointers (to the CUtensorMap), buffers
  // global ones, as for the sm_90a GEMMs.
  Type ptr0 = LLVM::LLVMPointerType::get(ctx),
       ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, launch.symbol,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {ptr0, ptr0, ptr0, ptr1, ptr1}));
  fn->setAttr("nvvm.kernel", b.getUnitAttr());
  fn->setAttr("nvvm.maxntid", b.getDenseI32ArrayAttr({kThreads, 1, 1}));
  // One CTA per SM lets ptxas size registers for setmaxnreg.
  fn->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  Block *entry = fn.addEntryBlock(b);
  KernelBuilder w(entry, loc);
  AttnSm90Gen gen(w, s);
  gen.run(entry->getArgument(0), entry->getArgument(1), entry->getArgument(2),
          entry->getArgument(3), entry->getArgument(4));
  return std::vector<KernelLaunch>{launch};
}

} // namespace tg::nvptx::detail
