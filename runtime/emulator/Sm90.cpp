//===- Sm90.cpp - mbarriers, TMA and warpgroup MMA (sm_90a) ---------------===//
//
// The sm_90a instructions of warp-specialised kernels, from the PTX ISA:
//  - mbarriers: init, arrive (with a count, or expect_tx bytes), expect_tx,
//    try_wait/test_wait on a phase parity or an arrive's state. A phase
//    completes when its pending arrivals and its transaction count are both
//    zero. A thread whose wait has not completed blocks (the scheduler runs
//    the others); if nothing can complete it, the launch deadlocks.
//  - cp.async.bulk.tensor (TMA) loads through a tensor map in the encoding
//    of TensorMap.h: the box is copied at issue, out-of-bounds elements
//    filled, rows swizzled, and its bytes complete on the mbarrier.
//  - wgmma.mma_async m64nNk16 (bf16/f16 in, f32 accumulators) reading both
//    operands through 128B-swizzled shared-memory descriptors, and the
//    warpgroup collectives around it (fence, commit_group, wait_group) and
//    setmaxnreg: all 128 threads of the warpgroup must meet at the same
//    instruction (.aligned).
// For the race check, mbarrier arrivals and transactions release the
// thread's vector clock into the phase and a completed wait acquires it;
// TMA writes count as the issuing thread's, wgmma reads as the first
// thread's of the warpgroup, both at issue and again when wait_group
// retires the group (the hardware may read until then).
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Cta.h"
#include "runtime/emulator/TensorMap.h"

#include <cstdio>

namespace tgrt::emu::detail {
namespace {

// Arrival counts and transaction counts hold 20 bits (PTX ISA).
constexpr int64_t kMaxCount = (int64_t(1) << 20) - 1;

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}

} // namespace

Mbar &Cta::mbarAt(const Thread &t, uint64_t addr) {
  mem(t, Space::Shared, addr, 8, 8, "mbarrier access", Access::Read);
  auto it = mbars_.find(uint32_t(addr));
  if (it == mbars_.end())
    fault(t, "the mbarrier at shared " + hex(addr) +
                 " is used before mbarrier.init");
  return it->second;
}

void Cta::mbarInit(Thread &t, const Inst &in, uint64_t *R) {
  uint64_t addr = addrOf(in.ops[0], R);
  mem(t, Space::Shared, addr, 8, 8, "mbarrier.init", Access::Write);
  uint64_t count = val(in.ops[1], t, R) & 0xffffffff;
  if (count == 0 || int64_t(count) > kMaxCount)
    fault(t, "mbarrier.init with " + std::to_string(count) +
                 " expected arrivals (1 to 2^20-1)");
  Mbar &m = mbars_[uint32_t(addr)];
  m = Mbar();
  m.expected = m.pending = uint32_t(count);
  if (vc_) {
    m.vc.assign(n_, 0);
    m.done[0].assign(n_, 0);
    m.done[1].assign(n_, 0);
  }
}

void Cta::mbarUpdate(Thread &t, Mbar &m, int64_t tx, uint32_t arrivals) {
  if (arrivals > m.pending)
    fault(t, "mbarrier arrive: " + std::to_string(arrivals) +
                 " arrival(s) where " + std::to_string(m.pending) + " of " +
                 std::to_string(m.expected) + " remain in this phase");
  m.tx += tx;
  if (m.tx > kMaxCount || m.tx < -kMaxCount)
    fault(t, "mbarrier tx-count " + std::to_string(m.tx) +
                 " is out of range (a phase counts at most 2^20-1 bytes "
                 "expected or completed)");
  m.pending -= arrivals;
  if (vc_) { // a release: the phase's waiters will know this thread's past
    uint32_t *c = clockOf(t.linear);
    join(m.vc.data(), c);
    ++c[t.linear];
  }
  if (m.pending == 0 && m.tx == 0) {
    if (vc_) {
      m.done[m.phase & 1].swap(m.vc);
      std::fill(m.vc.begin(), m.vc.end(), 0);
    }
    ++m.phase;
    m.pending = m.expected;
  }
}

void Cta::mbarArrive(Thread &t, const Inst &in, uint64_t *R) {
  bool expectOnly = in.mode & kMbarExpectOnly;
  Mbar &m = mbarAt(t, addrOf(in.ops[expectOnly ? 0 : 1], R));
  int64_t tx = 0;
  uint32_t arrivals = 1;
  if (expectOnly) {
    tx = int64_t(val(in.ops[1], t, R) & 0xffffffff);
    arrivals = 0;
  } else if (in.mode & kMbarExpectTx) {
    tx = int64_t(val(in.ops[2], t, R) & 0xffffffff);
  } else if (in.nops == 3) {
    uint64_t count = val(in.ops[2], t, R) & 0xffffffff;
    if (count == 0 || int64_t(count) > kMaxCount)
      fault(t, "mbarrier.arrive count " + std::to_string(count) +
                   " is not 1 to 2^20-1");
    arrivals = uint32_t(count);
  }
  // The state an arrive returns names the phase it arrived on.
  if (!expectOnly && in.ops[0].kind == Operand::Reg)
    R[in.ops[0].reg] = m.phase;
  mbarUpdate(t, m, tx, arrivals);
}

bool Cta::mbarWait(Thread &t, const Inst &in, uint64_t *R, bool commit) {
  uint64_t addr = addrOf(in.ops[1], R);
  Mbar &m = commit ? mbarAt(t, addr) : mbars_.at(uint32_t(addr));
  uint32_t want = uint32_t(val(in.ops[2], t, R));
  // .parity: the phase of that parity has completed iff the current one
  // has the other parity (a fresh mbarrier counts as having completed the
  // phase before phase 0). A state: the phase it arrived on has completed.
  bool done = (in.mode & kMbarParity) ? (m.phase & 1) != (want & 1)
                                      : m.phase != want;
  if (!done || !commit)
    return done;
  if (vc_) // an acquire of the completed phase
    join(clockOf(t.linear), m.done[want & 1].data());
  if (in.ops[0].kind == Operand::Reg)
    R[in.ops[0].reg] = 1;
  return true;
}

bool Cta::releaseMbars() {
  bool any = false;
  for (Thread &t : threads_) {
    if (t.st != St::Mbar)
      continue;
    const Inst &in = k_.code[t.pc];
    uint64_t *R = regsOf(t);
    // An mbarrier invalidated meanwhile: run the wait again to fault.
    if (!mbars_.count(uint32_t(addrOf(in.ops[1], R))) ||
        mbarWait(t, in, R, false)) {
      t.st = St::Ready;
      any = true;
    }
  }
  return any;
}

void Cta::tmaLoad(Thread &t, const Inst &in, uint64_t *R) {
  uint64_t dst = addrOf(in.ops[0], R), mapAddr = addrOf(in.ops[1], R);
  const uint8_t *bytes = mem(t, Space::Generic, mapAddr, kTensorMapBytes, 64,
                             "tensor-map read", Access::Read);
  TmaDescriptor m;
  if (std::string why = decodeTensorMap(bytes, m); !why.empty())
    fault(t, "cp.async.bulk.tensor: the tensor map at " + hex(mapAddr) +
                 ": " + why);
  if (m.rank != in.vec)
    fault(t, "cp.async.bulk.tensor." + std::to_string(in.vec) +
                 "d through a rank-" + std::to_string(m.rank) +
                 " tensor map");
  if (m.interleave != kTmaInterleaveNone)
    fault(t, "interleaved tensor maps are not emulated");
  for (uint32_t i = 0; i < m.rank; ++i)
    if (m.elementStrides[i] != 1)
      fault(t, "tensor-map element strides other than 1 are not emulated");
  const uint32_t elem = tensorMapElementBytes(m.dataType);
  const uint64_t inner = uint64_t(m.boxDim[0]) * elem;
  const uint64_t span = m.swizzle ? uint64_t(16) << m.swizzle : 0;
  if (span && inner != span)
    fault(t, "a swizzled box whose rows (" + std::to_string(inner) +
                 " bytes) are not the swizzle span (" + std::to_string(span) +
                 " bytes) is not emulated");
  // The swizzle permutes 16-byte chunks within 8 rows of the span, so a
  // destination must start a pattern; unswizzled boxes need 128 bytes.
  uint64_t align = span ? span * 8 : 128;
  if (dst % align)
    fault(t, "cp.async.bulk.tensor destination shared " + hex(dst) +
                 " is not " + std::to_string(align) + "-byte aligned");
  const Operand &cv = in.ops[2];
  int64_t coord[5] = {};
  for (uint32_t i = 0; i < m.rank; ++i) {
    uint32_t r = in.vregs[cv.reg + i];
    coord[i] = r == kNoReg ? 0 : int64_t(int32_t(R[r]));
  }
  // Out-of-bounds elements: zeros, or for .NaN fill the type's quiet NaN.
  uint8_t fill[8] = {};
  if (m.oobFill == kTmaOobNan) {
    uint64_t nan = elem == 2 ? (m.dataType == kTmaBfloat16 ? 0x7FC0 : 0x7E00)
                   : elem == 4 ? 0x7FC00000
                               : 0x7FF8000000000000ull;
    std::memcpy(fill, &nan, elem);
  }
  uint64_t rows = 1;
  for (uint32_t i = 1; i < m.rank; ++i)
    rows *= m.boxDim[i];
  std::vector<uint8_t> row(inner);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t e = 0; e < m.boxDim[0]; ++e)
      std::memcpy(row.data() + e * elem, fill, elem);
    bool inside = true;
    uint64_t off = 0;
    for (uint64_t i = 1, rest = r; i < m.rank; ++i) {
      int64_t g = coord[i] + int64_t(rest % m.boxDim[i]);
      rest /= m.boxDim[i];
      inside &= g >= 0 && uint64_t(g) < m.globalDim[i];
      off += inside ? uint64_t(g) * m.globalStrides[i - 1] : 0;
    }
    int64_t lo = std::max<int64_t>(0, -coord[0]);
    int64_t hi = std::min<int64_t>(m.boxDim[0],
                                   int64_t(m.globalDim[0]) - coord[0]);
    if (inside && lo < hi) {
      uint64_t src = m.globalAddress + off + uint64_t(coord[0] + lo) * elem;
      std::memcpy(row.data() + lo * elem,
                  mem(t, Space::Global, src, uint32_t((hi - lo) * elem), 1,
                      "TMA load", Access::Read),
                  size_t(hi - lo) * elem);
    }
    for (uint64_t c = 0; c < inner; c += 16) {
      uint64_t a = dst + r * inner + c;
      if (span) // 16-byte chunk bits [4, 4+s) ^= row bits [7, 7+s)
        a ^= ((a >> 7) & ((1u << m.swizzle) - 1)) << 4;
      std::memcpy(mem(t, Space::Shared, a, 16, 16, "TMA store", Access::Write),
                  row.data() + c, 16);
    }
  }
  mbarUpdate(t, mbarAt(t, addrOf(in.ops[3], R)), -int64_t(rows * inner), 0);
}

void Cta::joinClocks(Thread *const *members, uint32_t count) {
  if (!vc_ || count < 2)
    return;
  uint32_t *first = clockOf(members[0]->linear);
  for (uint32_t i = 1; i < count; ++i)
    join(first, clockOf(members[i]->linear));
  for (uint32_t i = 1; i < count; ++i)
    std::memcpy(clockOf(members[i]->linear), first, n_ * sizeof(uint32_t));
}

bool Cta::releaseGroups() {
  bool any = false;
  for (uint32_t g = 0; g * 128 < n_; ++g) {
    uint32_t base = g * 128, size = std::min<uint32_t>(128, n_ - base);
    Thread *first = nullptr;
    bool ready = true;
    for (uint32_t i = 0; i < size; ++i) {
      Thread &u = threads_[base + i];
      if (u.st == St::Group)
        first = first ? first : &u;
      else
        ready = false;
    }
    if (!first)
      continue;
    const char *name = opName(k_.code[first->pc].op);
    if (size < 128)
      fault(*first, std::string(name) + " needs a whole warpgroup of 128 "
                                        "threads; this CTA has " +
                        std::to_string(size) + " in warpgroup " +
                        std::to_string(g));
    for (uint32_t i = 0; i < size; ++i)
      if (threads_[base + i].st == St::Done)
        fault(*first, std::string(name) + ": thread " +
                          std::to_string(base + i) +
                          " of the warpgroup has exited");
    if (!ready)
      continue;
    for (uint32_t i = 0; i < size; ++i)
      if (threads_[base + i].pc != first->pc)
        fault(threads_[base + i],
              std::string("threads of a warpgroup meet at different "
                          "instructions (") +
                  opName(k_.code[threads_[base + i].pc].op) + " and " + name +
                  " at line " + std::to_string(k_.code[first->pc].line) +
                  "): .aligned needs all 128 at the same one");
    groupCollective(g);
    Thread *members[128];
    for (uint32_t i = 0; i < 128; ++i) {
      members[i] = &threads_[base + i];
      members[i]->st = St::Ready;
      ++members[i]->pc;
    }
    joinClocks(members, 128);
    if (raceCheck_)
      for (uint32_t w = 0; w < 4; ++w)
        ++warpEpoch_[base / 32 + w];
    any = true;
  }
  return any;
}

void Cta::groupCollective(uint32_t g) {
  const Thread &f = threads_[g * 128];
  const Inst &in = k_.code[f.pc];
  WgState &w = wg_[g];
  switch (in.op) {
  case Op::WgFence:
    return;
  case Op::WgCommit:
    w.groups.push_back(std::move(w.open));
    w.open.clear();
    return;
  case Op::WgWait: {
    int64_t keep = in.ops[0].imm;
    if (keep < 0 || keep > 7)
      fault(f, "wgmma.wait_group " + std::to_string(keep) +
                   ": the count is 0 to 7");
    while (int64_t(w.groups.size()) > keep) {
      for (const WgRead &r : w.groups.front())
        wgmmaRead(f, r, nullptr, nullptr);
      w.groups.pop_front();
    }
    return;
  }
  case Op::Setmaxnreg: {
    int64_t n = in.ops[0].imm;
    if (n < 24 || n > 256 || n % 8)
      fault(f, "setmaxnreg to " + std::to_string(n) +
                   " registers: it takes a multiple of 8 from 24 to 256");
    return;
  }
  case Op::Wgmma:
    wgmma(g, in);
    return;
  default:
    fault(f, std::string("not a warpgroup collective: ") + opName(in.op));
  }
}

void Cta::wgmmaRead(const Thread &t, const WgRead &r, float *A, float *B) {
  // Per the PTX ISA's canonical 128B-swizzle layouts (16-bit elements):
  // K-major rows of 128 bytes, 8-row groups SBO apart; MN-major 64-element
  // columns of 128 bytes, k-groups of 8 SBO apart and 64-wide blocks LBO
  // apart; then the swizzle XORs address bits [4,7) with bits [7,10).
  auto addr = [](uint64_t desc, bool kMajor, uint32_t x, uint32_t k) {
    uint64_t start = (desc & 0x3FFF) << 4;
    uint64_t lbo = ((desc >> 16) & 0x3FFF) << 4;
    uint64_t sbo = ((desc >> 32) & 0x3FFF) << 4;
    uint64_t a = kMajor ? start + (x / 8) * sbo + (x % 8) * 128 + k * 2
                        : start + (x % 64) * 2 + (x / 64) * lbo +
                              (k % 8) * 128 + (k / 8) * sbo;
    return a ^ (((a >> 7) & 7) << 4);
  };
  bool bf = r.ty == Ty::BF16;
  auto operand = [&](uint64_t desc, bool kMajor, uint32_t rows, float *out,
                     bool isA, float sign) {
    if ((desc >> 62) != 1)
      fault(t, "wgmma: descriptor swizzle mode " +
                   std::to_string(desc >> 62) +
                   " is not emulated (only the 128-byte swizzle, mode 1)");
    if ((desc >> 49) & 7)
      fault(t, "wgmma: descriptors with a base offset are not emulated");
    // Eight elements along the contiguous dimension are one 16-byte chunk.
    for (uint32_t x = 0; x < rows; x += kMajor ? 1 : 8)
      for (uint32_t k = 0; k < 16; k += kMajor ? 8 : 1) {
        const uint8_t *p = mem(t, Space::Shared, addr(desc, kMajor, x, k), 16,
                               16, "wgmma operand read", Access::Read);
        if (!out)
          continue;
        for (uint32_t j = 0; j < 8; ++j) {
          uint16_t h;
          std::memcpy(&h, p + 2 * j, 2);
          uint32_t xx = kMajor ? x : x + j, kk = kMajor ? k + j : k;
          out[isA ? xx * 16 + kk : kk * rows + xx] =
              sign * (bf ? bf16ToF32(h) : f16ToF32(h));
        }
      }
  };
  operand(r.da, !(r.mode & kWgTransA), 64, A, true,
          (r.mode & kWgNegA) ? -1.f : 1.f);
  operand(r.db, !(r.mode & kWgTransB), r.n, B, false,
          (r.mode & kWgNegB) ? -1.f : 1.f);
}

void Cta::wgmma(uint32_t g, const Inst &in) {
  const uint32_t base = g * 128, n = uint32_t(in.vec) * 8;
  const Thread &f = threads_[base];
  const uint64_t *RF = regsOf(f);
  uint64_t da = val(in.ops[1], f, RF), db = val(in.ops[2], f, RF);
  bool scaleD = val(in.ops[3], f, RF) & 1;
  for (uint32_t i = 1; i < 128; ++i) {
    const Thread &u = threads_[base + i];
    const uint64_t *R = regsOf(u);
    if (val(in.ops[1], u, R) != da || val(in.ops[2], u, R) != db ||
        bool(val(in.ops[3], u, R) & 1) != scaleD)
      fault(u, "wgmma: the descriptors or scale-d differ across the "
               "warpgroup");
  }
  WgRead r{da, db, n, in.mode, in.ty2, in.line};
  std::vector<float> A(64 * 16), B(16 * size_t(n));
  wgmmaRead(f, r, A.data(), B.data());
  // The f32 D fragment: thread t of the warpgroup holds rows
  // 16 (t/32) + (t%32)/4 (+8) and columns 8i + 2 (t%4) (+1).
  const uint32_t *vr = in.vregs.data() + in.ops[0].reg;
  for (uint32_t t = 0; t < 128; ++t) {
    uint64_t *R = regsOf(threads_[base + t]);
    uint32_t wp = t / 32, l = t % 32;
    for (uint32_t i = 0; i < n / 8; ++i)
      for (uint32_t e = 0; e < 4; ++e) {
        uint32_t reg = vr[4 * i + e];
        if (reg == kNoReg)
          continue;
        uint32_t row = wp * 16 + l / 4 + 8 * (e / 2);
        uint32_t col = 8 * i + 2 * (l % 4) + e % 2;
        // Products of 16-bit floats are exact in f32, their sum in double:
        // one rounding to f32 per k16 step.
        double acc = scaleD ? double(asF32(R[reg])) : 0.0;
        for (uint32_t k = 0; k < 16; ++k)
          acc += double(A[row * 16 + k] * B[k * n + col]);
        R[reg] = bitsF32(float(acc));
      }
  }
  wg_[g].open.push_back(r);
}

} // namespace tgrt::emu::detail
