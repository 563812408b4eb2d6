//===- Interpreter.cpp - runs decoded PTX kernels thread by thread --------===//
//
// A launch runs its CTAs one after the other. Within a CTA each thread runs
// alone until it exits or reaches a collective; then the scheduler completes
// every collective whose participants have all arrived (CTA barriers, warp
// collectives over their member mask) and runs the threads again. Nothing
// runs and nothing completes = deadlock. Every fault (out-of-bounds or
// misaligned access, deadlock, runaway loop, an instruction the emulator
// cannot give meaning to) ends the launch with one message naming the
// kernel, the PTX line and the thread.
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Cta.h"

#include <algorithm>
#include <cstdio>

namespace tgrt::emu {

void Memory::add(void *p, size_t bytes) {
  buffers_[reinterpret_cast<uint64_t>(p)] = bytes;
}

void Memory::remove(void *p) { buffers_.erase(reinterpret_cast<uint64_t>(p)); }

uint8_t *Memory::find(uint64_t addr, size_t bytes, uint64_t *lo,
                      uint64_t *hi) const {
  auto it = buffers_.upper_bound(addr);
  if (it == buffers_.begin())
    return nullptr;
  --it;
  if (addr - it->first > it->second || bytes > it->second - (addr - it->first))
    return nullptr;
  if (lo && hi) {
    *lo = it->first;
    *hi = it->first + it->second;
  }
  return reinterpret_cast<uint8_t *>(addr);
}

namespace detail {

const char *opName(Op op) {
  static const char *names[] = {
      "ld", "st", "mov", "cvta", "cvta.to", "add", "sub", "mul", "mad", "fma",
      "div", "rem", "min", "max", "neg", "abs", "and", "or", "xor", "not",
      "cnot", "shl", "shr", "bfe", "bfi", "prmt", "lop3", "popc", "clz",
      "brev", "setp", "selp", "cvt", "ex2", "lg2", "rcp", "rsqrt", "sqrt",
      "sin", "cos", "tanh", "copysign", "bra", "ret", "bar.sync",
      "bar.warp.sync", "shfl.sync", "vote.sync", "activemask", "atom", "red",
      "nop", "cp.async", "ldmatrix", "mma.sync", "mbarrier.init",
      "mbarrier.arrive", "mbarrier.try_wait", "mbarrier.inval",
      "cp.async.bulk.tensor", "wgmma.fence", "wgmma.commit_group",
      "wgmma.wait_group", "wgmma.mma_async", "setmaxnreg", "elect.sync"};
  return names[unsigned(op)];
}

void Cta::fault(const Thread &t, const std::string &what) {
  const Inst &in = k_.code[t.pc];
  char where[160];
  std::snprintf(where, sizeof where,
                " (thread (%u,%u,%u) of CTA (%u,%u,%u))", t.tid[0],
                t.tid[1], t.tid[2], ctaid_[0], ctaid_[1], ctaid_[2]);
  throw Fault{"kernel " + k_.name + ": line " + std::to_string(in.line) +
              ": " + what + where};
}

void Cta::deadlock() {
  for (const Thread &t : threads_) {
    if (t.st == St::Done)
      continue;
    const Inst &in = k_.code[t.pc];
    uint32_t arrived = 0, done = 0;
    for (const Thread &u : threads_) {
      arrived += u.st == t.st && u.pc == t.pc;
      done += u.st == St::Done;
    }
    if (t.st == St::Mbar) {
      uint64_t addr = addrOf(in.ops[1], regsOf(t));
      auto it = mbars_.find(uint32_t(addr));
      Mbar none;
      const Mbar &m = it == mbars_.end() ? none : it->second;
      char b[224];
      std::snprintf(b, sizeof b,
                    "deadlock: mbarrier wait on the mbarrier at shared 0x%llx "
                    "for a phase nothing can complete (%u of %u arrivals "
                    "pending, tx-count %lld, %u phase(s) completed; %u "
                    "thread(s) wait here, %u exited, of %u)",
                    (unsigned long long)addr, m.pending, m.expected,
                    (long long)m.tx, m.phase, arrived, done, n_);
      fault(t, b);
    }
    fault(t, std::string("deadlock: ") + opName(in.op) + " waits for " +
                 (t.st == St::Bar    ? "the CTA"
                  : t.st == St::Warp ? "its warp"
                                     : "its warpgroup") +
                 " (" +
                 std::to_string(arrived) + " thread(s) arrived here, " +
                 std::to_string(done) + " exited, of " +
                 std::to_string(n_) + ")");
  }
  throw Fault{"kernel " + k_.name + ": deadlock"};
}

void Cta::run(std::array<uint32_t, 3> ctaid) {
  ctaid_ = ctaid;
  ++epoch_;
  std::fill(std::begin(barArrived_), std::end(barArrived_), 0);
  std::fill(regs_.begin(), regs_.end(), 0);
  std::fill(shared_.begin(), shared_.end(), 0);
  std::fill(local_.begin(), local_.end(), 0);
  mbars_.clear();
  for (WgState &w : wg_)
    w = WgState();
  if (vc_) {
    // Every thread starts at clock 1 of its own entry and knows nothing of
    // the others (0), so no access is ordered by a clock it never acquired.
    clocks_.assign(size_t(n_) * n_, 0);
    for (uint32_t i = 0; i < n_; ++i)
      clockOf(i)[i] = 1;
  }
  for (uint32_t i = 0; i < n_; ++i) {
    Thread &t = threads_[i];
    t = Thread();
    t.linear = i;
    t.tid[0] = i % block_[0];
    t.tid[1] = (i / block_[0]) % block_[1];
    t.tid[2] = i / (block_[0] * block_[1]);
    for (auto [r, v] : k_.constRegs)
      regsOf(t)[r] = v;
  }
  live_ = n_;
  while (live_) {
    bool progress = false;
    for (Thread &t : threads_)
      if (t.st == St::Ready) {
        progress = true;
        step(t);
        if (t.st == St::Done)
          --live_;
      }
    progress |= releaseBarriers();
    progress |= releaseWarps();
    if (k_.mbarriers || k_.warpgroups) {
      progress |= releaseGroups();
      progress |= releaseMbars();
    }
    if (!progress)
      deadlock();
  }
}

uint8_t *Cta::mem(const Thread &t, Space space, uint64_t addr, uint32_t bytes,
                  uint32_t align, const char *what, Access access) {
  if (align > 1 && addr % align) {
    char b[96];
    std::snprintf(b, sizeof b, "misaligned %s of %u bytes at 0x%llx", what,
                  bytes, (unsigned long long)addr);
    fault(t, b);
  }
  if (space == Space::Generic) {
    if (addr - kSharedWindow < kWindowBytes) {
      space = Space::Shared;
      addr -= kSharedWindow;
    } else if (addr - kLocalWindow < kWindowBytes) {
      space = Space::Local;
      addr -= kLocalWindow;
    } else {
      space = Space::Global;
    }
  }
  const char *name = "global";
  switch (space) {
  case Space::Global:
    // Most accesses hit the buffer of the previous one.
    if (addr >= lastLo_ && addr < lastHi_ && bytes <= lastHi_ - addr)
      return reinterpret_cast<uint8_t *>(addr);
    if (uint8_t *p = mem_.find(addr, bytes, &lastLo_, &lastHi_))
      return p;
    break;
  case Space::Shared:
    name = "shared";
    if (addr <= shared_.size() && bytes <= shared_.size() - addr) {
      if (raceCheck_ && access != Access::Atomic)
        checkRace(t, addr, bytes, access == Access::Write);
      return shared_.data() + addr;
    }
    break;
  case Space::Local:
    name = "local";
    if (addr <= k_.localBytes && bytes <= k_.localBytes - addr)
      return local_.data() + size_t(t.linear) * k_.localBytes + addr;
    break;
  case Space::Param:
    name = "param";
    if (addr <= param_.size() && bytes <= param_.size() - addr)
      return const_cast<uint8_t *>(param_.data()) + addr;
    break;
  case Space::Generic: break;
  }
  char b[128];
  std::snprintf(b, sizeof b, "out-of-bounds %s %s of %u bytes at 0x%llx",
                name, what, bytes, (unsigned long long)addr);
  fault(t, b);
}

void Cta::checkRace(const Thread &t, uint64_t off, uint32_t bytes,
                    bool write) {
  const uint32_t id = t.linear + 1, warp = t.linear / 32;
  const uint32_t warpEpoch = warpEpoch_[warp];
  const uint32_t *clock = vc_ ? clockOf(t.linear) : nullptr;
  // Accesses by two threads conflict unless a CTA barrier completed between
  // them, or they are lanes of one warp and a warp collective did, or this
  // thread has acquired (through an mbarrier phase or a collective) the
  // other's clock at its access.
  auto ordered = [&](uint32_t other, uint32_t epoch, uint32_t otherWarpEpoch,
                     uint32_t otherClock) {
    return other == 0 || other == id || epoch != epoch_ ||
           ((other - 1) / 32 == warp && otherWarpEpoch != warpEpoch) ||
           (clock && clock[other - 1] >= otherClock);
  };
  for (uint64_t w = off / 4, end = off + bytes; w * 4 < end; ++w) {
    // The bytes of word w this access touches.
    uint64_t lo = std::max(off, w * 4), hi = std::min(end, w * 4 + 4);
    uint8_t mask = uint8_t(((1u << (hi - lo)) - 1) << (lo - w * 4));
    Shadow &s = shadow_[w];
    bool raw = (s.wMask & mask) &&
               !ordered(s.writer, s.wEpoch, s.wWarpEpoch, s.wClock);
    bool war = write && (s.rMask & mask) &&
               !ordered(s.reader, s.rEpoch, s.rWarpEpoch, s.rClock);
    if (raw || war) {
      const Thread &u = threads_[(raw ? s.writer : s.reader) - 1];
      uint8_t both = mask & (raw ? s.wMask : s.rMask);
      uint64_t byte = w * 4 + uint64_t(__builtin_ctz(both));
      std::string other = raw ? "wrote at line " + std::to_string(s.wLine)
                              : std::string("read");
      char msg[160];
      std::snprintf(msg, sizeof msg,
                    "shared-memory race: %s of byte 0x%llx, which thread "
                    "(%u,%u,%u) %s with no barrier between",
                    write ? "write" : "read", (unsigned long long)byte,
                    u.tid[0], u.tid[1], u.tid[2], other.c_str());
      fault(t, msg);
    }
    // One writer and one reader per word are kept: a different thread's
    // access to other bytes replaces the record (a race with the bytes of
    // the replaced one can then be missed, never invented).
    if (write) {
      bool same = s.writer == id && s.wEpoch == epoch_;
      s.wMask = same ? uint8_t(s.wMask | mask) : mask;
      s.writer = uint16_t(id);
      s.wEpoch = epoch_;
      s.wWarpEpoch = warpEpoch;
      s.wClock = clock ? clock[t.linear] : 0;
      s.wLine = k_.code[t.pc].line;
    } else {
      bool same = s.reader == id && s.rEpoch == epoch_;
      s.rMask = same ? uint8_t(s.rMask | mask) : mask;
      s.reader = uint16_t(id);
      s.rEpoch = epoch_;
      s.rWarpEpoch = warpEpoch;
      s.rClock = clock ? clock[t.linear] : 0;
    }
  }
}

/// Runs `t` until it exits or reaches a collective.
void Cta::step(Thread &t) {
  uint64_t *R = regsOf(t);
  const Inst *code = k_.code.data();
  // Counted in a local (the shared counter would be reloaded after every
  // register store) and added back however the thread stops.
  struct Count {
    uint64_t n = 0;
    uint64_t &total;
    ~Count() { total += n; }
  } count{0, executed_};
  const uint64_t left = budget_ - std::min(budget_, executed_);
  for (;;) {
    const Inst &in = code[t.pc];
    if (++count.n > left)
      fault(t, "instruction budget of " + std::to_string(budget_) +
                   " exhausted (a runaway loop?)");
    if (in.pred != kNoReg && bool(R[in.pred] & 1) == in.predNeg) {
      ++t.pc;
      continue;
    }
    switch (in.op) {
    case Op::Bra:
      t.pc = uint32_t(in.ops[0].imm);
      continue;
    case Op::Ret:
      t.st = St::Done;
      return;
    case Op::BarSync:
      t.st = St::Bar;
      t.barId = uint32_t(val(in.ops[0], t, R));
      t.barCount = in.nops > 1 ? uint32_t(val(in.ops[1], t, R)) : 0;
      if (t.barId > 15)
        fault(t, "barrier id " + std::to_string(t.barId) + " is over 15");
      ++barArrived_[t.barId];
      return;
    case Op::BarWarpSync:
    case Op::Shfl:
    case Op::Vote:
      t.st = St::Warp;
      t.waitMask = uint32_t(val(in.ops[in.op == Op::BarWarpSync ? 0
                                        : in.op == Op::Shfl   ? 4
                                                              : 2],
                                t, R));
      return;
    case Op::MbarWait:
      if (!mbarWait(t, in, R, true)) {
        t.st = St::Mbar;
        return;
      }
      ++t.pc;
      continue;
    case Op::WgFence:
    case Op::WgCommit:
    case Op::WgWait:
    case Op::Wgmma:
    case Op::Setmaxnreg:
      t.st = St::Group;
      return;
    case Op::Elect:
      t.st = St::Warp;
      t.waitMask = uint32_t(val(in.ops[1], t, R));
      return;
    case Op::Ldmatrix:
    case Op::Mma: {
      t.st = St::Warp;
      uint32_t warpBase = t.linear & ~31u;
      t.waitMask = uint32_t(maskOf(std::min<uint32_t>(32, n_ - warpBase)));
      return;
    }
    default:
      exec(t, in, R);
      ++t.pc;
    }
  }
}

void Cta::atomic(Thread &t, const Inst &in, uint64_t *R) {
  const bool isRed = in.op == Op::Red;
  const Operand &addr = in.ops[isRed ? 0 : 1];
  uint32_t n = bitsOf(in.ty) / 8;
  if (n != 4 && n != 8)
    fault(t, "atomics on this type are not supported");
  uint8_t *p = mem(t, in.space, addrOf(addr, R), n, n, "atomic",
                   Access::Atomic);
  uint64_t old = load(p, n);
  uint64_t b = val(in.ops[isRed ? 1 : 2], t, R);
  uint64_t res;
  const Ty ty = in.ty;
  unsigned w = n * 8;
  switch (in.mode) {
  case kAtomAdd:
    if (ty == Ty::F32)
      res = bitsF32(asF32(old) + asF32(b));
    else if (ty == Ty::F64)
      res = bitsF64(asF64(old) + asF64(b));
    else
      res = old + b;
    break;
  case kAtomMin:
  case kAtomMax: {
    bool mn = in.mode == kAtomMin;
    if (ty == Ty::F32)
      res = bitsF32(mn ? std::fmin(asF32(old), asF32(b))
                       : std::fmax(asF32(old), asF32(b)));
    else if (isSigned(ty))
      res = uint64_t(mn ? std::min(sext(old, w), sext(b, w))
                        : std::max(sext(old, w), sext(b, w)));
    else
      res = mn ? std::min(old, b & maskOf(w)) : std::max(old, b & maskOf(w));
    break;
  }
  case kAtomInc: res = old >= (b & maskOf(w)) ? 0 : old + 1; break;
  case kAtomDec:
    res = (old == 0 || old > (b & maskOf(w))) ? b : old - 1;
    break;
  case kAtomAnd: res = old & b; break;
  case kAtomOr: res = old | b; break;
  case kAtomXor: res = old ^ b; break;
  case kAtomCas:
    if (in.nops != 4)
      fault(t, "atom.cas needs a compare and a new value");
    res = old == (b & maskOf(w)) ? val(in.ops[3], t, R) : old;
    break;
  case kAtomExch: res = b; break;
  default: fault(t, "unsupported atomic operation");
  }
  if (in.mode != kAtomCas && in.nops != (isRed ? 2 : 3))
    fault(t, "wrong operands for an atomic");
  store(p, res, n);
  if (!isRed)
    R[in.ops[0].reg] = old;
}

void Cta::exec(Thread &t, const Inst &in, uint64_t *R) {
  const Operand &d = in.ops[0];
  switch (in.op) {
  case Op::Ld: {
    uint32_t n = bitsOf(in.ty) / 8, count = in.vec;
    const uint8_t *p = mem(t, in.space, addrOf(in.ops[1], R), n * count,
                           n * count, "load", Access::Read);
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t v = ival(load(p + i * n, n), in.ty);
      if (d.kind == Operand::Reg)
        R[d.reg] = v;
      else if (in.vregs[d.reg + i] != kNoReg)
        R[in.vregs[d.reg + i]] = v;
    }
    return;
  }
  case Op::St: {
    if (in.space == Space::Param)
      fault(t, "st.param is not supported");
    uint32_t n = bitsOf(in.ty) / 8, count = in.vec;
    const Operand &s = in.ops[1];
    uint8_t *p = mem(t, in.space, addrOf(in.ops[0], R), n * count, n * count,
                     "store", Access::Write);
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t v = s.kind == Operand::Vec
                       ? (in.vregs[s.reg + i] == kNoReg
                              ? 0
                              : R[in.vregs[s.reg + i]])
                       : val(s, t, R);
      store(p + i * n, v, n);
    }
    return;
  }
  case Op::Mov: {
    const Operand &s = in.ops[1];
    if (d.kind == Operand::Vec) { // unpack: mov.b64 {lo, hi}, %rd
      uint64_t v = val(s, t, R);
      unsigned w = bitsOf(in.ty) / d.count;
      for (unsigned i = 0; i < d.count; ++i)
        if (in.vregs[d.reg + i] != kNoReg)
          R[in.vregs[d.reg + i]] = (v >> (i * w)) & maskOf(w);
      return;
    }
    if (s.kind == Operand::Vec) { // pack: mov.b64 %rd, {lo, hi}
      unsigned w = bitsOf(in.ty) / s.count;
      uint64_t v = 0;
      for (unsigned i = 0; i < s.count; ++i)
        if (in.vregs[s.reg + i] != kNoReg)
          v |= (R[in.vregs[s.reg + i]] & maskOf(w)) << (i * w);
      R[d.reg] = v;
      return;
    }
    R[d.reg] = val(s, t, R) & maskOf(bitsOf(in.ty));
    return;
  }
  case Op::Cvta:
  case Op::CvtaTo: {
    uint64_t a = val(in.ops[1], t, R);
    uint64_t base = in.space == Space::Shared  ? kSharedWindow
                    : in.space == Space::Local ? kLocalWindow
                                               : 0;
    if (in.space == Space::Param || in.space == Space::Generic)
      fault(t, "cvta to or from this state space is not supported");
    R[d.reg] = in.op == Op::Cvta ? a + base : a - base;
    return;
  }
  case Op::Add: case Op::Sub: case Op::Mul: case Op::Mad: case Op::Div:
  case Op::Min: case Op::Max:
    if (isFloat(in.ty) || isHalf(in.ty)) {
      R[d.reg] = floatOp(t, in, R);
      return;
    }
    [[fallthrough]];
  case Op::Rem: case Op::And: case Op::Or: case Op::Xor: case Op::Shl:
  case Op::Shr: {
    uint64_t r = intBinary(t, in, val(in.ops[1], t, R), val(in.ops[2], t, R),
                           R);
    unsigned w = bitsOf(in.ty) * ((in.flags & kWide) ? 2 : 1);
    R[d.reg] = r & maskOf(w);
    return;
  }
  case Op::Fma: case Op::Rcp: case Op::Rsqrt: case Op::Sqrt: case Op::Ex2:
  case Op::Lg2: case Op::Sin: case Op::Cos: case Op::Tanh: case Op::Copysign:
    R[d.reg] = floatOp(t, in, R);
    return;
  case Op::Neg:
  case Op::Abs: {
    if (isFloat(in.ty) || isHalf(in.ty)) {
      R[d.reg] = floatOp(t, in, R);
      return;
    }
    int64_t a = sext(val(in.ops[1], t, R), bitsOf(in.ty));
    uint64_t r = in.op == Op::Neg ? uint64_t(0) - uint64_t(a)
                                  : (a < 0 ? uint64_t(0) - uint64_t(a)
                                           : uint64_t(a));
    R[d.reg] = r & maskOf(bitsOf(in.ty));
    return;
  }
  case Op::Not:
    R[d.reg] = ~val(in.ops[1], t, R) & maskOf(bitsOf(in.ty));
    return;
  case Op::Cnot:
    R[d.reg] = (val(in.ops[1], t, R) & maskOf(bitsOf(in.ty))) == 0;
    return;
  case Op::Popc:
    R[d.reg] = __builtin_popcountll(val(in.ops[1], t, R) &
                                    maskOf(bitsOf(in.ty)));
    return;
  case Op::Clz: {
    unsigned w = bitsOf(in.ty);
    uint64_t a = val(in.ops[1], t, R) & maskOf(w);
    R[d.reg] = a ? __builtin_clzll(a) - (64 - w) : w;
    return;
  }
  case Op::Brev: {
    unsigned w = bitsOf(in.ty);
    uint64_t a = val(in.ops[1], t, R), r = 0;
    for (unsigned i = 0; i < w; ++i)
      r |= ((a >> i) & 1) << (w - 1 - i);
    R[d.reg] = r;
    return;
  }
  case Op::Bfe: {
    unsigned msb = bitsOf(in.ty) - 1;
    uint64_t a = val(in.ops[1], t, R);
    uint32_t pos = uint32_t(val(in.ops[2], t, R)) & 0xff;
    uint32_t len = uint32_t(val(in.ops[3], t, R)) & 0xff;
    uint64_t sbit = 0;
    if (isSigned(in.ty) && len)
      sbit = (a >> std::min<uint32_t>(pos + len - 1, msb)) & 1;
    uint64_t r = 0;
    for (unsigned i = 0; i <= msb; ++i) {
      uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;
      r |= bit << i;
    }
    R[d.reg] = r;
    return;
  }
  case Op::Bfi: {
    unsigned msb = bitsOf(in.ty) - 1;
    uint64_t a = val(in.ops[1], t, R), r = val(in.ops[2], t, R);
    uint32_t pos = uint32_t(val(in.ops[3], t, R)) & 0xff;
    uint32_t len = uint32_t(val(in.ops[4], t, R)) & 0xff;
    for (uint32_t i = 0; i < len && pos + i <= msb; ++i)
      r = (r & ~(uint64_t(1) << (pos + i))) | (((a >> i) & 1) << (pos + i));
    R[d.reg] = r & maskOf(msb + 1);
    return;
  }
  case Op::Prmt: {
    uint64_t bytes = (val(in.ops[1], t, R) & 0xffffffff) |
                     (val(in.ops[2], t, R) << 32);
    uint32_t c = uint32_t(val(in.ops[3], t, R)), r = 0;
    for (unsigned i = 0; i < 4; ++i) {
      uint32_t sel = (c >> (4 * i)) & 0xf;
      uint32_t byte = uint32_t(bytes >> (8 * (sel & 7))) & 0xff;
      if (sel & 8) // replicate the sign of the selected byte
        byte = (byte & 0x80) ? 0xff : 0;
      r |= byte << (8 * i);
    }
    R[d.reg] = r;
    return;
  }
  case Op::Lop3: {
    uint64_t a = val(in.ops[1], t, R), b = val(in.ops[2], t, R),
             c = val(in.ops[3], t, R);
    uint32_t lut = uint32_t(val(in.ops[4], t, R)) & 0xff;
    uint64_t r = 0;
    for (unsigned i = 0; i < 8; ++i)
      if (lut & (1u << i))
        r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
    R[d.reg] = r & maskOf(bitsOf(in.ty));
    return;
  }
  case Op::Setp: {
    bool r = compare(in, val(in.ops[1], t, R), val(in.ops[2], t, R));
    bool c = in.nops > 3 ? val(in.ops[3], t, R) & 1 : false;
    auto combine = [&](bool x) {
      switch (in.boolOp) {
      case BoolOp::And: return x && c;
      case BoolOp::Or: return x || c;
      case BoolOp::Xor: return x != c;
      default: return x;
      }
    };
    if (d.kind == Operand::Reg) {
      R[d.reg] = combine(r);
    } else if (d.kind == Operand::Vec) {
      if (in.vregs[d.reg] != kNoReg)
        R[in.vregs[d.reg]] = combine(r);
      if (in.vregs[d.reg + 1] != kNoReg)
        R[in.vregs[d.reg + 1]] = combine(!r);
    }
    return;
  }
  case Op::Selp:
    R[d.reg] = (val(in.ops[3], t, R) & 1) ? val(in.ops[1], t, R)
                                          : val(in.ops[2], t, R);
    return;
  case Op::Cvt: {
    bool pair = in.nops == 3;
    if (pair && in.ty != Ty::BF16x2 && in.ty != Ty::F16x2)
      fault(t, "a cvt with two sources must convert to bf16x2 or f16x2");
    uint64_t r = cvt(in, val(in.ops[1], t, R),
                     pair ? val(in.ops[2], t, R) : 0, pair);
    R[d.reg] = r & maskOf(bitsOf(in.ty));
    return;
  }
  case Op::Activemask: {
    uint32_t base = t.linear & ~31u, m = 0;
    for (uint32_t i = 0; i < 32 && base + i < n_; ++i)
      if (threads_[base + i].st != St::Done)
        m |= 1u << i;
    R[d.reg] = m;
    return;
  }
  case Op::Atom:
  case Op::Red:
    atomic(t, in, R);
    return;
  case Op::CpAsync: {
    // cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}:
    // src-size bytes are copied and the rest zero-filled; done at issue.
    uint32_t size = uint32_t(val(in.ops[2], t, R));
    if (size != 4 && size != 8 && size != 16)
      fault(t, "cp.async size must be 4, 8 or 16");
    uint32_t srcSize =
        in.nops > 3 ? uint32_t(val(in.ops[3], t, R)) : size;
    if (srcSize > size)
      fault(t, "cp.async src-size over the copy size");
    uint8_t *dst = mem(t, Space::Shared, addrOf(in.ops[0], R), size, size,
                       "cp.async store", Access::Write);
    uint64_t src = addrOf(in.ops[1], R);
    uint8_t tmp[16] = {};
    if (srcSize)
      std::memcpy(tmp, mem(t, Space::Global, src, srcSize, 1, "cp.async load",
                      Access::Read),
                  srcSize);
    if (src % size)
      fault(t, "misaligned cp.async source");
    std::memcpy(dst, tmp, size);
    return;
  }
  case Op::MbarInit:
    mbarInit(t, in, R);
    return;
  case Op::MbarArrive:
    mbarArrive(t, in, R);
    return;
  case Op::MbarInval:
    mbars_.erase(uint32_t(addrOf(in.ops[0], R)));
    return;
  case Op::TmaLoad:
    tmaLoad(t, in, R);
    return;
  case Op::Nop:
    return;
  default:
    fault(t, std::string("cannot execute ") + opName(in.op));
  }
}

} // namespace detail

using detail::Cta;
using detail::Fault;
using detail::kMaxShared;

bool PtxModule::launch(const std::string &name, std::array<uint32_t, 3> grid,
                       std::array<uint32_t, 3> block, uint32_t dynamicShared,
                       const std::vector<uint64_t> &params, Memory &mem,
                       std::string &err) {
  executed_ = 0;
  const Kernel *k = nullptr;
  for (const auto &c : kernels_)
    if (c->name == name)
      k = c.get();
  if (!k) {
    err = "no kernel named " + name + " in the PTX module";
    return false;
  }
  uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
  if (threads == 0 || threads > 1024 || block[2] > 64) {
    err = "kernel " + name + ": bad block size (" + std::to_string(threads) +
          " threads; 1 to 1024, z at most 64)";
    return false;
  }
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[1] > 65535 ||
      grid[2] > 65535) {
    err = "kernel " + name + ": bad grid size";
    return false;
  }
  if (params.size() != k->paramOffset.size()) {
    err = "kernel " + name + " takes " +
          std::to_string(k->paramOffset.size()) + " parameters, given " +
          std::to_string(params.size());
    return false;
  }
  if (uint64_t(k->dynSharedOffset) + dynamicShared > kMaxShared) {
    err = "kernel " + name + ": " +
          std::to_string(uint64_t(k->dynSharedOffset) + dynamicShared) +
          " bytes of shared memory, over the " + std::to_string(kMaxShared) +
          " a CTA may have";
    return false;
  }
  std::vector<uint8_t> param(k->paramBytes);
  for (size_t i = 0; i < params.size(); ++i)
    std::memcpy(param.data() + k->paramOffset[i], &params[i],
                std::min<uint32_t>(8, k->paramSize[i]));
  try {
    Cta cta(*k, mem, grid, block, dynamicShared, param, executed_, budget_,
            raceCheck_);
    for (uint32_t z = 0; z < grid[2]; ++z)
      for (uint32_t y = 0; y < grid[1]; ++y)
        for (uint32_t x = 0; x < grid[0]; ++x)
          cta.run({x, y, z});
  } catch (const Fault &f) {
    err = f.msg;
    return false;
  }
  return true;
}

} // namespace tgrt::emu
