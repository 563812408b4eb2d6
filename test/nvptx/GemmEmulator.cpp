//===- GemmEmulator.cpp - run generated GEMM kernel IR on the CPU -*- C++ -*-===//
//
// See GemmEmulator.h for the execution model. Values are kept per thread of
// the CTA: an SSA value of n scalars is n×T 64-bit slots (integers zero-
// extended to their width, floats as doubles rounded to their type).
//
//===----------------------------------------------------------------------===//
#include "GemmEmulator.h"
#include "GemmEmulatorInterp.h"

#include <ucontext.h>

namespace tg::nvptx::emu::detail {

static Fiber *gStarting = nullptr;
static void fiberEntry() {
  Fiber *f = gStarting;
  try {
    f->body();
  } catch (const std::exception &e) {
    f->error = e.what();
  }
  f->done = true; // returns to uc_link (the scheduler)
}

void Interp::execFor(scf::ForOp op, const std::vector<char> &mask) {
  uint64_t lb = uniform(op.getLowerBound(), mask);
  uint64_t ub = uniform(op.getUpperBound(), mask);
  uint64_t st = uniform(op.getStep(), mask);
  unsigned bits = typeInfo(op.getInductionVar().getType()).bits;
  std::vector<Val> iter;
  for (Value v : op.getInitArgs())
    iter.push_back(get(v));
  Block &body = *op.getBody();
  for (uint64_t i = lb; i < ub; i += st) {
    env[op.getInductionVar()] = scalarInt(trunc(i, bits), bits);
    for (auto [arg, v] : llvm::zip(op.getRegionIterArgs(), iter))
      env[arg] = v;
    for (Operation &inner : body.without_terminator())
      exec(inner, mask);
    auto yield = cast<scf::YieldOp>(body.getTerminator());
    for (size_t k = 0; k < iter.size(); ++k)
      iter[k] = get(yield.getOperand(k));
  }
  for (auto [res, v] : llvm::zip(op.getResults(), iter))
    env[res] = v;
}

void Interp::tma(Operation &op, const std::vector<char> &mask) {
  auto t = cast<NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp>(op);
  for (int th = 0; th < T; ++th) {
    if (!mask[th])
      continue;
    uint64_t dst = u(t.getDstMem(), 0, th);
    auto it = tmaps.find(u(t.getTmaDescriptor(), 0, th));
    if (it == tmaps.end())
      fail("emulator: TMA through an unknown tensor map");
    const TensorMap &m = it->second;
    auto coords = t.getCoordinates();
    int64_t c0 = static_cast<int32_t>(u(coords[0], 0, th));
    int64_t c1 = static_cast<int32_t>(u(coords[1], 0, th));
    if (coords.size() != (m.batches > 1 ? 3u : 2u))
      fail("emulator: TMA with " + std::to_string(coords.size()) +
           " coordinates through a " + (m.batches > 1 ? "3" : "2") + "-D tensor map");
    int64_t c2 = coords.size() > 2 ? static_cast<int32_t>(u(coords[2], 0, th)) : 0;
    if (dst % 1024)
      fail("emulator: 128B-swizzled TMA destination not 1024-byte aligned");
    for (uint32_t r = 0; r < m.boxRows; ++r)
      for (uint32_t c = 0; c < m.boxCols; ++c) {
        int64_t gr = c1 + r, gc = c0 + c;
        uint16_t v = 0;
        if (gr >= 0 && gc >= 0 && c2 >= 0 && uint64_t(gr) < m.rows &&
            uint64_t(gc) < m.cols && uint64_t(c2) < m.batches)
          std::memcpy(&v, mem(m.base + ((c2 * m.rows + gr) * (m.pitch ? m.pitch : m.cols) + gc) * 2, 2), 2);
        uint64_t off = uint64_t(r) * m.boxCols * 2 + c * 2;
        off ^= ((off >> 7) & 7) << 4;
        std::memcpy(mem(dst + off, 2), &v, 2);
        if (hbCheck && c % 8 == 0)
          hbWrite(dst + off, th);
      }
    Barrier &b = bar(u(t.getMbar(), 0, th));
    if (hbCheck)
      join(b.phaseVC, vc[th]);
    b.tx -= int64_t(m.boxRows) * m.boxCols * 2;
    maybeComplete(b);
  }
}

void Interp::runRoles(Region &a, const std::vector<char> &ma, Region &b,
                      const std::vector<char> &mb) {
  Fiber fs[2];
  Region *regions[2] = {&a, &b};
  const std::vector<char> *masks[2] = {&ma, &mb};
  for (int i = 0; i < 2; ++i) {
    fs[i].stack.resize(1 << 22);
    Region *r = regions[i];
    const std::vector<char> *m = masks[i];
    fs[i].body = [this, r, m] {
      for (Operation &inner : r->front().without_terminator())
        exec(inner, *m);
    };
  }
  while (!fs[0].done || !fs[1].done) {
    uint64_t before = progress;
    bool finished = false;
    for (Fiber &f : fs) {
      if (f.done)
        continue;
      cur = &f;
      if (!f.started) {
        f.started = true;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack.data();
        f.ctx.uc_stack.ss_size = f.stack.size();
        f.ctx.uc_link = &mainCtx;
        gStarting = &f;
        makecontext(&f.ctx, fiberEntry, 0);
      }
      swapcontext(&mainCtx, &f.ctx);
      cur = nullptr;
      finished |= f.done;
      if (!f.error.empty())
        fail(f.error);
    }
    if (progress == before && !finished && (!fs[0].done || !fs[1].done))
      fail("emulator: deadlock: producer and consumers both wait on mbarriers");
  }
}

void Interp::exec(Operation &op, const std::vector<char> &mask) {
  StringRef name = op.getName().getStringRef();
  auto res = [&]() -> Value { return op.getResult(0); };
  auto intBin = [&](auto fn) {
    Val r = make(res().getType());
    unsigned bits = r.ti.bits;
    for (int e = 0; e < r.ti.n; ++e)
      for (int t = 0; t < T; ++t)
        r.s[e * T + t] = trunc(fn(u(op.getOperand(0), e, t), u(op.getOperand(1), e, t)), bits);
    env[res()] = r;
  };
  auto fltBin = [&](auto fn) {
    Val r = make(res().getType());
    for (int e = 0; e < r.ti.n; ++e)
      for (int t = 0; t < T; ++t)
        r.s[e * T + t] = bitsOf(roundTo(r.ti.k, fn(f(op.getOperand(0), e, t), f(op.getOperand(1), e, t))));
    env[res()] = r;
  };

  if (auto c = dyn_cast<LLVM::ConstantOp>(op)) {
    Val r = make(c.getType());
    if (auto ia = dyn_cast<IntegerAttr>(c.getValue()))
      r = scalarInt(trunc(ia.getValue().getZExtValue(), r.ti.bits), r.ti.bits);
    else if (auto fa = dyn_cast<FloatAttr>(c.getValue()))
      r.s.assign(T, bitsOf(roundTo(r.ti.k, fa.getValueAsDouble())));
    else
      fail("emulator: unsupported constant");
    env[res()] = r;
  } else if (name == "llvm.mlir.zero" || name == "llvm.mlir.undef") {
    env[res()] = make(res().getType());
  } else if (name == "llvm.mlir.addressof") {
    env[res()] = scalarInt(0);
  } else if (name == "llvm.add") { intBin([](uint64_t a, uint64_t b) { return a + b; });
  } else if (name == "llvm.sub") { intBin([](uint64_t a, uint64_t b) { return a - b; });
  } else if (name == "llvm.mul") { intBin([](uint64_t a, uint64_t b) { return a * b; });
  } else if (name == "llvm.udiv") { intBin([](uint64_t a, uint64_t b) { return b ? a / b : 0; });
  } else if (name == "llvm.urem") { intBin([](uint64_t a, uint64_t b) { return b ? a % b : 0; });
  } else if (name == "llvm.and") { intBin([](uint64_t a, uint64_t b) { return a & b; });
  } else if (name == "llvm.or") { intBin([](uint64_t a, uint64_t b) { return a | b; });
  } else if (name == "llvm.xor") { intBin([](uint64_t a, uint64_t b) { return a ^ b; });
  } else if (name == "llvm.shl") { intBin([](uint64_t a, uint64_t b) { return a << b; });
  } else if (name == "llvm.lshr") { intBin([](uint64_t a, uint64_t b) { return a >> b; });
  } else if (name == "llvm.intr.umin") { intBin([](uint64_t a, uint64_t b) { return std::min(a, b); });
  } else if (auto ic = dyn_cast<LLVM::ICmpOp>(op)) {
    auto pred = ic.getPredicate();
    intBin([&](uint64_t a, uint64_t b) -> uint64_t {
      switch (pred) {
      case LLVM::ICmpPredicate::ult: return a < b;
      case LLVM::ICmpPredicate::ugt: return a > b;
      case LLVM::ICmpPredicate::eq: return a == b;
      case LLVM::ICmpPredicate::ne: return a != b;
      case LLVM::ICmpPredicate::ule: return a <= b;
      case LLVM::ICmpPredicate::uge: return a >= b;
      default: fail("emulator: unsupported icmp predicate");
      }
    });
  } else if (auto fc = dyn_cast<LLVM::FCmpOp>(op)) {
    auto pred = fc.getPredicate();
    Val r = make(res().getType());
    for (int t = 0; t < T; ++t) {
      double a = f(op.getOperand(0), 0, t), b = f(op.getOperand(1), 0, t);
      bool v;
      switch (pred) {
      case LLVM::FCmpPredicate::olt: v = a < b; break;
      case LLVM::FCmpPredicate::ole: v = a <= b; break;
      case LLVM::FCmpPredicate::ogt: v = a > b; break;
      case LLVM::FCmpPredicate::oge: v = a >= b; break;
      case LLVM::FCmpPredicate::oeq: v = a == b; break;
      case LLVM::FCmpPredicate::one: v = a < b || a > b; break;
      case LLVM::FCmpPredicate::une: v = !(a == b); break;
      default: fail("emulator: unsupported fcmp predicate");
      }
      r.s[t] = v;
    }
    env[res()] = r;
  } else if (name == "llvm.select") {
    Val r = make(res().getType());
    for (int e = 0; e < r.ti.n; ++e)
      for (int t = 0; t < T; ++t)
        r.s[e * T + t] = u(op.getOperand(0), 0, t) ? u(op.getOperand(1), e, t) : u(op.getOperand(2), e, t);
    env[res()] = r;
  } else if (name == "llvm.zext" || name == "llvm.ptrtoint" || name == "llvm.addrspacecast") {
    Val r = get(op.getOperand(0));
    r.ti = typeInfo(res().getType());
    env[res()] = r;
  } else if (name == "llvm.bitcast" && op.getOperand(0).getType().isF32()) {
    Val r = make(res().getType()); // f32 → i32: its bits
    for (int t = 0; t < T; ++t) {
      float x = static_cast<float>(f(op.getOperand(0), 0, t));
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      r.s[t] = bits;
    }
    env[res()] = r;
  } else if (name == "llvm.bitcast" && res().getType().isF32()) {
    Val r = make(res().getType()); // i32 → f32
    for (int t = 0; t < T; ++t) {
      uint32_t bits = static_cast<uint32_t>(u(op.getOperand(0), 0, t));
      float x;
      std::memcpy(&x, &bits, 4);
      r.s[t] = bitsOf(x);
    }
    env[res()] = r;
  } else if (name == "llvm.sitofp") {
    Val r = make(res().getType());
    unsigned bits = typeInfo(op.getOperand(0).getType()).bits;
    for (int t = 0; t < T; ++t) {
      uint64_t v = u(op.getOperand(0), 0, t);
      int64_t sv = bits >= 64 ? static_cast<int64_t>(v)
                              : static_cast<int64_t>(v << (64 - bits)) >> (64 - bits);
      r.s[t] = bitsOf(roundTo(r.ti.k, static_cast<double>(sv)));
    }
    env[res()] = r;
  } else if (name == "llvm.intr.fma") {
    Val r = make(res().getType());
    for (int e = 0; e < r.ti.n; ++e)
      for (int t = 0; t < T; ++t)
        r.s[e * T + t] = bitsOf(roundTo(r.ti.k, std::fma(f(op.getOperand(0), e, t),
                                                         f(op.getOperand(1), e, t),
                                                         f(op.getOperand(2), e, t))));
    env[res()] = r;
  } else if (auto iv = dyn_cast<LLVM::InsertValueOp>(op)) {
    Val r = get(op.getOperand(0));
    int pos = static_cast<int>(iv.getPosition()[0]);
    for (int t = 0; t < T; ++t)
      r.s[size_t(pos) * T + t] = u(op.getOperand(1), 0, t);
    env[res()] = r;
  } else if (name == "nvvm.shfl.sync") {
    auto sh = cast<NVVM::ShflOp>(op);
    if (sh.getKind() != NVVM::ShflKind::bfly)
      fail("emulator: only butterfly shuffles are modelled");
    Val r = make(res().getType());
    for (int t = 0; t < T; ++t) {
      if (!mask[t])
        continue;
      int src = (t & ~31) | ((t & 31) ^ static_cast<int>(u(sh.getOffset(), 0, t) & 31));
      if (!mask[src])
        fail("emulator: shuffle from an inactive lane");
      r.s[t] = get(sh.getVal()).s[src];
    }
    env[res()] = r;
  } else if (name == "nvvm.barrier") {
    // A named barrier (bar.sync id, n): in lockstep every participant is
    // here; for the happens-before check, each one acquires all the others.
    auto bo = cast<NVVM::BarrierOp>(op);
    if (bo.getReductionOp() || bo.getRes())
      fail("emulator: barrier reductions are not modelled");
    std::map<uint64_t, std::vector<int>> byId;
    for (int t = 0; t < T; ++t)
      if (mask[t])
        byId[bo.getBarrierId() ? u(bo.getBarrierId(), 0, t) : 0].push_back(t);
    for (auto &[id, ts] : byId) {
      if (bo.getNumberOfThreads() &&
          ts.size() != u(bo.getNumberOfThreads(), 0, ts.front()))
        fail("emulator: named barrier " + std::to_string(id) + " reached by " +
             std::to_string(ts.size()) + " threads, not the count it names");
      if (!hbCheck)
        continue;
      std::vector<uint32_t> all;
      for (int t : ts)
        join(all, vc[t]);
      for (int t : ts) {
        join(vc[t], all);
        ++vc[t][t];
      }
    }
    ++epoch;
  } else if (name == "llvm.bitcast") { // i32 → vector<2xf16>
    Val r = make(res().getType());
    for (int t = 0; t < T; ++t)
      for (int x = 0; x < 2; ++x)
        r.s[x * T + t] = bitsOf(fromHalfBits(static_cast<uint16_t>(u(op.getOperand(0), 0, t) >> (16 * x)), ElemType::F16));
    env[res()] = r;
  } else if (auto g = dyn_cast<LLVM::GEPOp>(op)) {
    Val r = make(res().getType());
    int eb = elemBytesOfType(g.getElemType());
    Value base = op.getOperand(0), idx = op.getOperand(1);
    unsigned ib = typeInfo(idx.getType()).bits;
    for (int t = 0; t < T; ++t) {
      int64_t i = static_cast<int64_t>(u(idx, 0, t));
      if (ib == 32)
        i = static_cast<int32_t>(static_cast<uint32_t>(i));
      r.s[t] = u(base, 0, t) + uint64_t(i * eb);
    }
    env[res()] = r;
  } else if (auto ev = dyn_cast<LLVM::ExtractValueOp>(op)) {
    Val r = make(res().getType());
    int pos = static_cast<int>(ev.getPosition()[0]);
    for (int t = 0; t < T; ++t)
      r.s[t] = u(op.getOperand(0), pos, t);
    env[res()] = r;
  } else if (name == "llvm.insertelement") {
    Val r = get(op.getOperand(0));
    for (int t = 0; t < T; ++t)
      r.s[u(op.getOperand(2), 0, t) * T + t] = u(op.getOperand(1), 0, t);
    env[res()] = r;
  } else if (name == "llvm.extractelement") {
    Val r = make(res().getType());
    for (int t = 0; t < T; ++t)
      r.s[t] = u(op.getOperand(0), static_cast<int>(u(op.getOperand(1), 0, t)), t);
    env[res()] = r;
  } else if (auto sv = dyn_cast<LLVM::ShuffleVectorOp>(op)) {
    Val r = make(res().getType());
    auto m = sv.getMask();
    for (size_t e = 0; e < m.size(); ++e)
      for (int t = 0; t < T; ++t)
        r.s[e * T + t] = u(op.getOperand(0), static_cast<int>(m[e]), t);
    env[res()] = r;
  } else if (name == "llvm.fmul") { fltBin([](double a, double b) { return a * b; });
  } else if (name == "llvm.fadd") { fltBin([](double a, double b) { return a + b; });
  } else if (name == "llvm.fsub") { fltBin([](double a, double b) { return a - b; });
  } else if (name == "llvm.fdiv") { fltBin([](double a, double b) { return a / b; });
  } else if (name == "llvm.intr.exp2") {
    Val r = make(res().getType());
    for (int t = 0; t < T; ++t)
      r.s[t] = bitsOf(roundTo(r.ti.k, std::exp2(f(op.getOperand(0), 0, t))));
    env[res()] = r;
  } else if (name == "llvm.intr.maxnum") { fltBin([](double a, double b) { return std::fmax(a, b); });
  } else if (name == "llvm.fpext" || name == "llvm.fptrunc") {
    Val r = make(res().getType());
    for (size_t i = 0; i < r.s.size(); ++i)
      r.s[i] = bitsOf(roundTo(r.ti.k, dbl(get(op.getOperand(0)).s[i])));
    env[res()] = r;
  } else if (auto ia = dyn_cast<LLVM::InlineAsmOp>(op);
             ia && ia.getAsmString().starts_with("mov.b32")) {
    // An opaque copy (the attention kernels' descriptor base, kept from
    // being hoisted out of their loops).
    Val v = env.at(op.getOperand(0));
    env[res()] = v;
  } else if (auto ia = dyn_cast<LLVM::InlineAsmOp>(op)) {
    StringRef text = ia.getAsmString();
    double (*fn)(double) = text.contains("tanh.approx.f32") ? static_cast<double (*)(double)>(std::tanh)
                           : text.contains("ex2.approx")     ? static_cast<double (*)(double)>(std::exp2)
                           : text.contains("lg2.approx.f32") ? static_cast<double (*)(double)>(std::log2)
                                                             : nullptr;
    if (!fn)
      fail("emulator: unknown inline asm " + text.str());
    Val r = make(res().getType());
    for (int t = 0; t < T; ++t)
      r.s[t] = bitsOf(static_cast<float>(fn(f(op.getOperand(0), 0, t))));
    env[res()] = r;
  } else if (name == "llvm.load") {
    Val r = make(res().getType());
    for (int t = 0; t < T; ++t)
      if (mask[t])
        for (int e = 0; e < r.ti.n; ++e)
          r.s[e * T + t] = bitsOf(loadScalar(u(op.getOperand(0), 0, t) + e * bytesOf(r.ti.k), r.ti.k));
    env[res()] = r;
  } else if (name == "llvm.store") {
    TI ti = typeInfo(op.getOperand(0).getType());
    for (int t = 0; t < T; ++t)
      if (mask[t]) {
        uint64_t addr = u(op.getOperand(1), 0, t);
        // A shared store that a wgmma reads (P of attention) must be
        // ordered before that read.
        if (hbCheck && addr < (uint64_t(1) << 32))
          hbWrite(addr, t);
        for (int e = 0; e < ti.n; ++e)
          storeScalar(addr + e * bytesOf(ti.k), ti.k, f(op.getOperand(0), e, t));
      }
  } else if (name.consume_front("nvvm.read.ptx.sreg.")) {
    Val r = scalarInt(0, 32);
    for (int t = 0; t < T; ++t)
      r.s[t] = name == "tid.x"      ? t
               : name == "ctaid.x"  ? ctaid
               : name == "nctaid.x" ? nctaid
               : name == "ctaid.y"  ? ctaidY
               : name == "nctaid.y" ? nctaidY
                                    : (fail("emulator: unsupported special register " + name.str()), 0);
    env[res()] = r;
  } else if (name == "nvvm.cp.async.shared.global") {
    for (int t = 0; t < T; ++t)
      if (mask[t]) {
        // 16-byte copies of aligned rows, 8 or 4 of rows aligned only that far.
        unsigned size = static_cast<unsigned>(cast<NVVM::CpAsyncOp>(op).getSize());
        unsigned sz = op.getNumOperands() > 2 ? static_cast<unsigned>(u(op.getOperand(2), 0, t)) : size;
        if (u(op.getOperand(1), 0, t) % size)
          fail("emulator: misaligned cp.async source");
        checkWriteIssue(u(op.getOperand(0), 0, t), t);
        openGroup.push_back({u(op.getOperand(0), 0, t), u(op.getOperand(1), 0, t), size, sz, t});
      }
  } else if (name == "nvvm.cp.async.commit.group") {
    groups.push_back(std::move(openGroup));
    openGroup.clear();
  } else if (name == "nvvm.cp.async.wait.group") {
    landGroups(static_cast<unsigned>(cast<NVVM::CpAsyncWaitGroupOp>(op).getN()));
  } else if (name == "nvvm.barrier0") {
    ++epoch;
  } else if (name == "nvvm.wgmma.commit.group.sync.aligned" && hbCheck) {
    for (int g = 0; g < T / 128; ++g)
      if (mask[g * 128]) {
        wgGroups[g].push_back(std::move(wgOpen[g]));
        wgOpen[g].clear();
      }
  } else if (name == "nvvm.wgmma.wait.group.sync.aligned" && hbCheck) {
    size_t keep = static_cast<size_t>(cast<NVVM::WgmmaWaitGroupSyncOp>(op).getGroup());
    for (int g = 0; g < T / 128; ++g)
      if (mask[g * 128]) {
        auto &q = wgGroups[g];
        while (q.size() > keep) { // retired: the reads happen now
          for (uint64_t a : q.front()) {
            auto &reads = hb[a / 16].reads;
            std::pair<int, uint32_t> rd{g * 128, vc[g * 128][g * 128]};
            if (reads.empty() || reads.back() != rd)
              reads.push_back(rd);
          }
          q.erase(q.begin());
        }
        // The wgmma was the warpgroup's: each thread that waits has seen
        // it complete (its reads included).
        for (int t = g * 128 + 1; t < g * 128 + 128; ++t)
          if (mask[t])
            vc[t][g * 128] = std::max(vc[t][g * 128], vc[g * 128][g * 128]);
      }
  } else if (name == "nvvm.fence.mbarrier.init" || name == "nvvm.fence.proxy" ||
             name == "nvvm.setmaxregister" || name == "nvvm.wgmma.fence.aligned" ||
             name == "nvvm.wgmma.commit.group.sync.aligned" ||
             name == "nvvm.wgmma.wait.group.sync.aligned") {
    // Lockstep execution makes these no-ops (wgmma completes at issue).
  } else if (name == "nvvm.ldmatrix") {
    ldmatrix(op, mask);
  } else if (name == "nvvm.mma.sync") {
    mma(op);
  } else if (name == "nvvm.wgmma.mma_async") {
    wgmma(op, mask);
  } else if (name == "nvvm.mbarrier.init") {
    for (int t = 0; t < T; ++t)
      if (mask[t]) {
        Barrier &b = bar(u(op.getOperand(0), 0, t));
        b = Barrier{};
        b.init = true;
        b.expected = b.pending = static_cast<uint32_t>(u(op.getOperand(1), 0, t));
      }
  } else if (name == "nvvm.mbarrier.arrive.expect_tx") {
    for (int t = 0; t < T; ++t)
      if (mask[t])
        arrive(u(op.getOperand(0), 0, t), static_cast<int64_t>(u(op.getOperand(1), 0, t)), t);
  } else if (name == "nvvm.mbarrier.arrive") {
    for (int t = 0; t < T; ++t)
      if (mask[t])
        arrive(u(op.getOperand(0), 0, t), 0, t);
  } else if (name == "nvvm.mbarrier.try_wait.parity") {
    // The phase with this parity has completed iff the current one differs.
    auto blockedThread = [&]() -> int {
      for (int t = 0; t < T; ++t)
        if (mask[t]) {
          Barrier &b = bar(u(op.getOperand(0), 0, t));
          if (!b.init)
            fail("emulator: wait on an uninitialised mbarrier");
          if (b.phase == (u(op.getOperand(1), 0, t) & 1))
            return t;
        }
      return -1;
    };
    for (int t = blockedThread(); t >= 0; t = blockedThread()) {
      if (!cur)
        fail("emulator: deadlock: thread " + std::to_string(t) +
             " waits on an mbarrier phase that nothing can complete");
      swapcontext(&cur->ctx, &mainCtx); // let the other role run
    }
    if (hbCheck)
      for (int t = 0; t < T; ++t)
        if (mask[t]) {
          Barrier &b = bar(u(op.getOperand(0), 0, t));
          join(vc[t], b.doneVC[u(op.getOperand(1), 0, t) & 1]);
        }
  } else if (name == "nvvm.cp.async.bulk.tensor.shared.cluster.global") {
    tma(op, mask);
  } else if (auto fo = dyn_cast<scf::ForOp>(op)) {
    execFor(fo, mask);
  } else if (auto io = dyn_cast<scf::IfOp>(op)) {
    std::vector<char> thenMask(T), elseMask(T);
    bool anyThen = false, anyElse = false;
    for (int t = 0; t < T; ++t) {
      bool c = u(io.getCondition(), 0, t) & 1;
      thenMask[t] = mask[t] && c;
      elseMask[t] = mask[t] && !c;
      anyThen |= thenMask[t];
      anyElse |= elseMask[t];
    }
    bool roles = anyThen && anyElse && !cur && !io.getElseRegion().empty();
    if (roles) {
      roles = false;
      io->walk([&](Operation *o) {
        roles |= o->getName().getStringRef() == "nvvm.mbarrier.try_wait.parity";
      });
    }
    if (roles) {
      runRoles(io.getThenRegion(), thenMask, io.getElseRegion(), elseMask);
      return;
    }
    if (anyThen)
      for (Operation &inner : io.getThenRegion().front().without_terminator())
        exec(inner, thenMask);
    if (anyElse && !io.getElseRegion().empty())
      for (Operation &inner : io.getElseRegion().front().without_terminator())
        exec(inner, elseMask);
  } else if (name == "llvm.return") {
  } else {
    fail("emulator: unsupported op " + name.str());
  }
}

} // namespace tg::nvptx::emu::detail

namespace tg::nvptx::emu {
using namespace detail;
using namespace mlir;

namespace {

/// Runs `symbol` of the kernel module `mlir` CTA by CTA over `grid`;
/// `setup` registers the CTA's buffers with the interpreter and returns the
/// kernel's arguments.
std::string runCtas(const std::string &mlir, const std::string &symbol,
                    std::array<unsigned, 2> grid, int threads, size_t smemBytes,
                    llvm::function_ref<std::vector<Val>(Interp &)> setup) {
  DialectRegistry registry;
  registry.insert<LLVM::LLVMDialect, NVVM::NVVMDialect, scf::SCFDialect,
                  cf::ControlFlowDialect, arith::ArithDialect>();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  std::string diag;
  ScopedDiagnosticHandler h(&ctx, [&](Diagnostic &d) {
    diag += d.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(mlir, &ctx);
  if (!m)
    return "kernel IR does not parse: " + diag;
  auto fn = m->lookupSymbol<LLVM::LLVMFuncOp>(symbol);
  if (!fn)
    return "no kernel function " + symbol;
  bool mbarriers = false;
  fn->walk([&](Operation *o) {
    mbarriers |= o->getName().getStringRef().starts_with("nvvm.mbarrier");
  });
  std::vector<uint8_t> smem(smemBytes);
  try {
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned cta = 0; cta < grid[0]; ++cta) {
        std::fill(smem.begin(), smem.end(), 0xA5); // stale data is visible
        Interp in(threads, smem);
        in.raceCheck = !mbarriers;
        if (mbarriers)
          in.enableHb();
        in.ctaid = cta;
        in.nctaid = grid[0];
        in.ctaidY = y;
        in.nctaidY = grid[1];
        std::vector<Val> args = setup(in);
        in.runFunction(fn, args);
      }
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

/// Where buffer i lives in the emulated global address space.
uint64_t bufferBase(size_t i) { return (uint64_t(i) + 1) << 36; }

} // namespace

std::string runGemm(const GemmProblem &p, const TileConfig &c, unsigned grid,
                    GemmBuffers &buf) {
  std::vector<uint8_t> tmapA(128), tmapB(128);
  return runCtas(
      generateGemmMLIR(p, c), kernelName(p, c), {grid, 1}, c.threads(p.target),
      static_cast<size_t>(c.smemBytes(p.target)), [&](Interp &in) {
        uint64_t base[7];
        std::vector<uint8_t> *bufs[7] = {&buf.a, &buf.b, &buf.c, &buf.bias,
                                        &buf.residual, &tmapA, &tmapB};
        for (int i = 0; i < 7; ++i) {
          base[i] = bufferBase(i);
          if (!bufs[i]->empty())
            in.globals[base[i]] = bufs[i];
        }
        bool aK = p.form != Form::TN, bK = p.form == Form::NT;
        TmaBox ba = tmaBox(p, c, true), bb = tmaBox(p, c, false);
        in.tmaps[base[5]] = {base[0], uint64_t(aK ? p.m : p.k), uint64_t(aK ? p.k : p.m), ba.outer, ba.inner};
        in.tmaps[base[6]] = {base[1], uint64_t(bK ? p.n : p.k), uint64_t(bK ? p.k : p.n), bb.outer, bb.inner};
        bool tma = p.target == Target::SM90a;
        return std::vector<Val>{
            in.scalarInt(tma ? base[5] : base[0]), in.scalarInt(tma ? base[6] : base[1]),
            in.scalarInt(base[2]), in.scalarInt(base[3]), in.scalarInt(base[4]),
            in.scalarInt(uint64_t(p.m), 32), in.scalarInt(uint64_t(p.n), 32),
            in.scalarInt(uint64_t(p.k), 32), in.scalarF32(buf.alpha)};
      });
}

KernelArg kernelArg(const KernelParam &p, std::vector<uint8_t> *buffer) {
  KernelArg a;
  a.buffer = buffer;
  if (p.kind == KernelParam::Kind::TensorMap) {
    a.tensorMap = true;
    a.rows = p.map.rows;
    a.cols = p.map.cols;
    a.boxRows = p.map.boxRows;
    a.boxCols = p.map.boxCols;
    a.batches = p.map.batches;
    a.pitch = p.map.pitch;
  }
  return a;
}

std::string runKernel(const std::string &mlir, const std::string &symbol,
                      std::array<unsigned, 2> grid, int threads,
                      size_t smemBytes, const std::vector<KernelArg> &args) {
  return runCtas(mlir, symbol, grid, threads, smemBytes, [&](Interp &in) {
    std::vector<Val> vals;
    // Buffers first (bases 0..n-1), then one descriptor slot per argument.
    for (size_t i = 0; i < args.size(); ++i)
      in.globals[bufferBase(i)] = args[i].buffer;
    for (size_t i = 0; i < args.size(); ++i) {
      const KernelArg &a = args[i];
      if (!a.tensorMap) {
        vals.push_back(in.scalarInt(bufferBase(i)));
        continue;
      }
      uint64_t desc = bufferBase(args.size() + i);
      in.tmaps[desc] = {bufferBase(i), a.rows, a.cols, a.boxRows, a.boxCols,
                        a.batches, a.pitch};
      vals.push_back(in.scalarInt(desc));
    }
    return vals;
  });
}

} // namespace tg::nvptx::emu
