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
#include "runtime/emulator/Emulator.h"
#include "runtime/emulator/Numeric.h"
#include "runtime/emulator/Ptx.h"

#include <algorithm>
#include <cfenv>
#include <climits>
#include <cstdio>

namespace tgrt::emu {

void Memory::add(void *p, size_t bytes) {
  buffers_[reinterpret_cast<uint64_t>(p)] = bytes;
}

void Memory::remove(void *p) { buffers_.erase(reinterpret_cast<uint64_t>(p)); }

uint8_t *Memory::find(uint64_t addr, size_t bytes) const {
  auto it = buffers_.upper_bound(addr);
  if (it == buffers_.begin())
    return nullptr;
  --it;
  if (addr - it->first > it->second || bytes > it->second - (addr - it->first))
    return nullptr;
  return reinterpret_cast<uint8_t *>(addr);
}

namespace {

// Generic addresses of shared and local data: windows far above any user
// space host address (x86-64 and AArch64 user space ends below 2^48).
constexpr uint64_t kSharedWindow = 0xFFFE000000000000ull;
constexpr uint64_t kLocalWindow = 0xFFFD000000000000ull;
constexpr uint64_t kWindowBytes = uint64_t(1) << 40;
constexpr uint32_t kMaxShared = 232448; // 227 KiB, sm_90's per-CTA limit

struct Fault {
  std::string msg;
};

enum class St : uint8_t { Ready, Bar, Warp, Done };

struct Thread {
  uint32_t pc = 0;
  St st = St::Ready;
  uint32_t tid[3] = {0, 0, 0};
  uint32_t linear = 0;
  uint32_t waitMask = 0;  // warp collective: member mask
  uint32_t barId = 0;     // CTA barrier id
  uint32_t barCount = 0;  // 0: every thread of the CTA
};

bool isFloat(Ty t) { return t == Ty::F32 || t == Ty::F64; }
bool isSigned(Ty t) {
  return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64;
}
unsigned bitsOf(Ty t) {
  switch (t) {
  case Ty::Pred: return 1;
  case Ty::B8: case Ty::U8: case Ty::S8: return 8;
  case Ty::B16: case Ty::U16: case Ty::S16: case Ty::F16: case Ty::BF16:
    return 16;
  case Ty::B32: case Ty::U32: case Ty::S32: case Ty::F32: case Ty::F16x2:
  case Ty::BF16x2:
    return 32;
  default: return 64;
  }
}
uint64_t maskOf(unsigned bits) {
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}
int64_t sext(uint64_t v, unsigned bits) {
  if (bits >= 64)
    return int64_t(v);
  uint64_t m = uint64_t(1) << (bits - 1);
  v &= maskOf(bits);
  return int64_t((v ^ m) - m);
}

const char *opName(Op op) {
  static const char *names[] = {
      "ld", "st", "mov", "cvta", "cvta.to", "add", "sub", "mul", "mad", "fma",
      "div", "rem", "min", "max", "neg", "abs", "and", "or", "xor", "not",
      "cnot", "shl", "shr", "bfe", "bfi", "prmt", "lop3", "popc", "clz",
      "brev", "setp", "selp", "cvt", "ex2", "lg2", "rcp", "rsqrt", "sqrt",
      "sin", "cos", "tanh", "copysign", "bra", "ret", "bar.sync",
      "bar.warp.sync", "shfl.sync", "vote.sync", "activemask", "atom", "red",
      "nop", "cp.async", "ldmatrix", "mma.sync"};
  return names[unsigned(op)];
}

/// Runs `f` with the C rounding mode of `r` (directed float arithmetic).
template <typename F> auto withRounding(Rnd r, F f) {
  int mode = r == Rnd::Rz ? FE_TOWARDZERO
             : r == Rnd::Rm ? FE_DOWNWARD
             : r == Rnd::Rp ? FE_UPWARD
                            : FE_TONEAREST;
  if (mode == FE_TONEAREST)
    return f();
  std::fesetround(mode);
  volatile auto v = f();
  std::fesetround(FE_TONEAREST);
  return v;
}

float ftz32(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

/// One CTA of a launch.
class Cta {
public:
  Cta(const Kernel &k, Memory &mem, std::array<uint32_t, 3> grid,
      std::array<uint32_t, 3> block, uint32_t dynShared,
      const std::vector<uint8_t> &param, uint64_t &executed, uint64_t budget)
      : k_(k), mem_(mem), grid_(grid), block_(block), dynShared_(dynShared),
        param_(param), executed_(executed), budget_(budget) {
    n_ = block[0] * block[1] * block[2];
    nregs_ = std::max<uint32_t>(k.numRegs, 1);
    regs_.resize(size_t(n_) * nregs_);
    threads_.resize(n_);
    shared_.resize(size_t(k.dynSharedOffset) + dynShared);
    local_.resize(size_t(n_) * k.localBytes);
  }

  void run(std::array<uint32_t, 3> ctaid) {
    ctaid_ = ctaid;
    std::fill(regs_.begin(), regs_.end(), 0);
    std::fill(shared_.begin(), shared_.end(), 0);
    std::fill(local_.begin(), local_.end(), 0);
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
    uint32_t live = n_;
    while (live) {
      bool progress = false;
      for (Thread &t : threads_)
        if (t.st == St::Ready) {
          progress = true;
          step(t);
          if (t.st == St::Done)
            --live;
        }
      progress |= releaseBarriers();
      progress |= releaseWarps();
      if (!progress)
        deadlock();
    }
  }

private:
  [[noreturn]] void fault(const Thread &t, const std::string &what) {
    const Inst &in = k_.code[t.pc];
    char where[160];
    std::snprintf(where, sizeof where,
                  " (thread (%u,%u,%u) of CTA (%u,%u,%u))", t.tid[0],
                  t.tid[1], t.tid[2], ctaid_[0], ctaid_[1], ctaid_[2]);
    throw Fault{"kernel " + k_.name + ": line " + std::to_string(in.line) +
                ": " + what + where};
  }

  [[noreturn]] void deadlock() {
    for (const Thread &t : threads_) {
      if (t.st == St::Done)
        continue;
      const Inst &in = k_.code[t.pc];
      uint32_t arrived = 0, done = 0;
      for (const Thread &u : threads_) {
        arrived += u.st == t.st && u.pc == t.pc;
        done += u.st == St::Done;
      }
      fault(t, std::string("deadlock: ") + opName(in.op) + " waits for " +
                   (t.st == St::Bar ? "the CTA" : "its warp") + " (" +
                   std::to_string(arrived) + " thread(s) arrived here, " +
                   std::to_string(done) + " exited, of " +
                   std::to_string(n_) + ")");
    }
    throw Fault{"kernel " + k_.name + ": deadlock"};
  }

  uint64_t *regsOf(const Thread &t) {
    return regs_.data() + size_t(t.linear) * nregs_;
  }

  uint64_t sreg(const Thread &t, Sreg s) const {
    uint32_t lane = t.linear % 32;
    switch (s) {
    case Sreg::TidX: return t.tid[0];
    case Sreg::TidY: return t.tid[1];
    case Sreg::TidZ: return t.tid[2];
    case Sreg::NtidX: return block_[0];
    case Sreg::NtidY: return block_[1];
    case Sreg::NtidZ: return block_[2];
    case Sreg::CtaidX: return ctaid_[0];
    case Sreg::CtaidY: return ctaid_[1];
    case Sreg::CtaidZ: return ctaid_[2];
    case Sreg::NctaidX: return grid_[0];
    case Sreg::NctaidY: return grid_[1];
    case Sreg::NctaidZ: return grid_[2];
    case Sreg::Laneid: return lane;
    case Sreg::Warpid: return t.linear / 32;
    case Sreg::Nwarpid: return (n_ + 31) / 32;
    case Sreg::LanemaskEq: return uint32_t(1) << lane;
    case Sreg::LanemaskLt: return (uint32_t(1) << lane) - 1;
    case Sreg::LanemaskLe: return uint32_t(maskOf(lane + 1));
    case Sreg::LanemaskGt: return ~uint32_t(maskOf(lane + 1));
    case Sreg::LanemaskGe: return ~((uint32_t(1) << lane) - 1);
    case Sreg::Clock: return uint32_t(executed_);
    case Sreg::Clock64: return executed_;
    case Sreg::DynSmem: return dynShared_;
    case Sreg::TotalSmem: return shared_.size();
    }
    return 0;
  }

  uint64_t val(const Operand &o, const Thread &t, const uint64_t *R) const {
    switch (o.kind) {
    case Operand::Reg: return o.neg ? !(R[o.reg] & 1) : R[o.reg];
    case Operand::Imm: return uint64_t(o.imm);
    case Operand::Special: return sreg(t, Sreg(o.imm));
    default: return 0;
    }
  }

  uint64_t addrOf(const Operand &o, const uint64_t *R) const {
    return (o.reg == kNoReg ? 0 : R[o.reg]) + uint64_t(o.imm);
  }

  /// Host pointer of `bytes` at `addr` in `space` for thread `t`; faults
  /// when out of bounds or misaligned.
  uint8_t *mem(const Thread &t, Space space, uint64_t addr, uint32_t bytes,
               uint32_t align, const char *what) {
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
      if (uint8_t *p = mem_.find(addr, bytes))
        return p;
      break;
    case Space::Shared:
      name = "shared";
      if (addr <= shared_.size() && bytes <= shared_.size() - addr)
        return shared_.data() + addr;
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

  static uint64_t load(const uint8_t *p, uint32_t n) {
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    return v;
  }
  static void store(uint8_t *p, uint64_t v, uint32_t n) {
    std::memcpy(p, &v, n);
  }

  /// Integer operand read as the instruction's type: masked, and sign
  /// extended for signed types.
  static uint64_t ival(uint64_t v, Ty ty) {
    unsigned b = bitsOf(ty);
    return isSigned(ty) ? uint64_t(sext(v, b)) : v & maskOf(b);
  }

  void step(Thread &t);
  void exec(Thread &t, const Inst &in, uint64_t *R);
  uint64_t intBinary(const Thread &t, const Inst &in, uint64_t a, uint64_t b,
                     const uint64_t *R);
  uint64_t floatOp(const Thread &t, const Inst &in, const uint64_t *R);
  uint64_t cvt(const Inst &in, uint64_t a, uint64_t b, bool pair);
  bool compare(const Inst &in, uint64_t a, uint64_t b) const;
  void atomic(Thread &t, const Inst &in, uint64_t *R);
  bool releaseBarriers();
  bool releaseWarps();
  void warpCollective(const std::vector<Thread *> &members);

  const Kernel &k_;
  Memory &mem_;
  std::array<uint32_t, 3> grid_, block_, ctaid_{};
  uint32_t dynShared_;
  const std::vector<uint8_t> &param_;
  uint64_t &executed_;
  uint64_t budget_;
  uint32_t n_ = 0, nregs_ = 1;
  std::vector<uint64_t> regs_;
  std::vector<Thread> threads_;
  std::vector<uint8_t> shared_, local_;
};

/// Runs `t` until it exits or reaches a collective.
void Cta::step(Thread &t) {
  uint64_t *R = regsOf(t);
  const Inst *code = k_.code.data();
  for (;;) {
    const Inst &in = code[t.pc];
    if (++executed_ > budget_)
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

bool Cta::compare(const Inst &in, uint64_t a, uint64_t b) const {
  Cmp c = Cmp(in.mode);
  if (isFloat(in.ty)) {
    double x = in.ty == Ty::F32 ? double(asF32(a)) : asF64(a);
    double y = in.ty == Ty::F32 ? double(asF32(b)) : asF64(b);
    if (in.ty == Ty::F32 && (in.flags & kFtz)) {
      x = ftz32(float(x));
      y = ftz32(float(y));
    }
    bool un = std::isnan(x) || std::isnan(y);
    switch (c) {
    case Cmp::Eq: return !un && x == y;
    case Cmp::Ne: return !un && x != y;
    case Cmp::Lt: return !un && x < y;
    case Cmp::Le: return !un && x <= y;
    case Cmp::Gt: return !un && x > y;
    case Cmp::Ge: return !un && x >= y;
    case Cmp::Equ: return un || x == y;
    case Cmp::Neu: return un || x != y;
    case Cmp::Ltu: return un || x < y;
    case Cmp::Leu: return un || x <= y;
    case Cmp::Gtu: return un || x > y;
    case Cmp::Geu: return un || x >= y;
    case Cmp::Num: return !un;
    case Cmp::Nan: return un;
    default: return false;
    }
  }
  uint64_t ua = a & maskOf(bitsOf(in.ty)), ub = b & maskOf(bitsOf(in.ty));
  int64_t sa = sext(a, bitsOf(in.ty)), sb = sext(b, bitsOf(in.ty));
  bool s = isSigned(in.ty);
  switch (c) {
  case Cmp::Eq: return ua == ub;
  case Cmp::Ne: return ua != ub;
  case Cmp::Lt: return s ? sa < sb : ua < ub;
  case Cmp::Le: return s ? sa <= sb : ua <= ub;
  case Cmp::Gt: return s ? sa > sb : ua > ub;
  case Cmp::Ge: return s ? sa >= sb : ua >= ub;
  case Cmp::Lo: return ua < ub;
  case Cmp::Ls: return ua <= ub;
  case Cmp::Hi: return ua > ub;
  case Cmp::Hs: return ua >= ub;
  default: return false;
  }
}

uint64_t Cta::intBinary(const Thread &t, const Inst &in, uint64_t a,
                        uint64_t b, const uint64_t *R) {
  const Ty ty = in.ty;
  const unsigned w = bitsOf(ty);
  const bool s = isSigned(ty);
  uint64_t ua = a & maskOf(w), ub = b & maskOf(w);
  int64_t sa = sext(a, w), sb = sext(b, w);
  switch (in.op) {
  case Op::Add:
  case Op::Sub: {
    uint64_t r = in.op == Op::Add ? ua + ub : ua - ub;
    if ((in.flags & kSat) && s && w == 32) {
      int64_t x = in.op == Op::Add ? sa + sb : sa - sb;
      return uint64_t(std::clamp<int64_t>(x, INT32_MIN, INT32_MAX));
    }
    return r;
  }
  case Op::Mul:
  case Op::Mad: {
    uint64_t r;
    if (in.flags & kWide) {
      r = s ? uint64_t(sa * sb) : ua * ub; // w <= 32: exact in 64 bits
      if (in.op == Op::Mad)
        r += val(in.ops[3], t, R);
      return r;
    }
    if (in.flags & kHi) {
      if (w == 64) {
        r = s ? uint64_t((__int128(sa) * __int128(sb)) >> 64)
              : uint64_t((unsigned __int128)ua * ub >> 64);
      } else {
        r = s ? uint64_t((sa * sb) >> w) : (ua * ub) >> w;
      }
    } else {
      r = ua * ub;
    }
    if (in.op == Op::Mad)
      r += val(in.ops[3], t, R);
    return r;
  }
  case Op::Div:
    if (ub == 0)
      return maskOf(w); // undefined in PTX; the hardware gives all ones
    if (s)
      return sb == -1 ? uint64_t(0) - ua : uint64_t(sa / sb);
    return ua / ub;
  case Op::Rem:
    if (ub == 0)
      return ua;
    if (s)
      return sb == -1 ? 0 : uint64_t(sa % sb);
    return ua % ub;
  case Op::Min: return s ? uint64_t(std::min(sa, sb)) : std::min(ua, ub);
  case Op::Max: return s ? uint64_t(std::max(sa, sb)) : std::max(ua, ub);
  case Op::And: return a & b;
  case Op::Or: return a | b;
  case Op::Xor: return a ^ b;
  case Op::Shl: {
    uint32_t n = uint32_t(b);
    return n >= w ? 0 : ua << n;
  }
  case Op::Shr: {
    uint32_t n = uint32_t(b);
    if (s)
      return uint64_t(sa >> std::min<uint32_t>(n, 63));
    return n >= w ? 0 : ua >> n;
  }
  default: fault(t, std::string("no integer form of ") + opName(in.op));
  }
}

/// Float arithmetic in the instruction's type (f32 or f64).
uint64_t Cta::floatOp(const Thread &t, const Inst &in, const uint64_t *R) {
  uint64_t ra = val(in.ops[1], t, R);
  uint64_t rb = in.nops > 2 ? val(in.ops[2], t, R) : 0;
  uint64_t rc = in.nops > 3 ? val(in.ops[3], t, R) : 0;
  if (in.ty == Ty::F64) {
    double a = asF64(ra), b = asF64(rb), c = asF64(rc), r;
    switch (in.op) {
    case Op::Add: r = withRounding(in.rnd, [&] { return a + b; }); break;
    case Op::Sub: r = withRounding(in.rnd, [&] { return a - b; }); break;
    case Op::Mul: r = withRounding(in.rnd, [&] { return a * b; }); break;
    case Op::Mad:
    case Op::Fma:
      r = withRounding(in.rnd, [&] { return std::fma(a, b, c); });
      break;
    case Op::Div: r = withRounding(in.rnd, [&] { return a / b; }); break;
    case Op::Min: r = std::fmin(a, b); break;
    case Op::Max: r = std::fmax(a, b); break;
    case Op::Neg: return ra ^ (uint64_t(1) << 63);
    case Op::Abs: return ra & ~(uint64_t(1) << 63);
    case Op::Rcp: r = withRounding(in.rnd, [&] { return 1.0 / a; }); break;
    case Op::Sqrt: r = withRounding(in.rnd, [&] { return std::sqrt(a); }); break;
    case Op::Rsqrt: r = 1.0 / std::sqrt(a); break;
    case Op::Copysign: r = std::copysign(b, a); break;
    default: fault(t, std::string("no f64 form of ") + opName(in.op));
    }
    return bitsF64(r);
  }
  if (in.ty != Ty::F32)
    fault(t, std::string("unsupported type for ") + opName(in.op));
  float a = asF32(ra), b = asF32(rb), c = asF32(rc), r;
  const bool ftz = in.flags & kFtz;
  if (ftz) {
    a = ftz32(a);
    b = ftz32(b);
    c = ftz32(c);
  }
  switch (in.op) {
  case Op::Add: r = withRounding(in.rnd, [&] { return a + b; }); break;
  case Op::Sub: r = withRounding(in.rnd, [&] { return a - b; }); break;
  case Op::Mul: r = withRounding(in.rnd, [&] { return a * b; }); break;
  case Op::Mad:
  case Op::Fma:
    r = withRounding(in.rnd, [&] { return std::fma(a, b, c); });
    break;
  case Op::Div:
    r = withRounding(in.rnd, [&] { return a / b; });
    break;
  case Op::Min:
    r = (in.flags & kNanMode) && (std::isnan(a) || std::isnan(b))
            ? NAN
            : std::fmin(a, b);
    break;
  case Op::Max:
    r = (in.flags & kNanMode) && (std::isnan(a) || std::isnan(b))
            ? NAN
            : std::fmax(a, b);
    break;
  case Op::Neg: r = -a; break;
  case Op::Abs: r = std::fabs(a); break;
  case Op::Rcp: r = withRounding(in.rnd, [&] { return 1.0f / a; }); break;
  case Op::Sqrt: r = withRounding(in.rnd, [&] { return std::sqrt(a); }); break;
  case Op::Rsqrt: r = float(1.0 / std::sqrt(double(a))); break;
  case Op::Ex2: r = std::exp2(a); break;
  case Op::Lg2: r = std::log2(a); break;
  case Op::Sin: r = std::sin(a); break;
  case Op::Cos: r = std::cos(a); break;
  case Op::Tanh: r = std::tanh(a); break;
  case Op::Copysign: r = std::copysign(b, a); break;
  default: fault(t, std::string("no f32 form of ") + opName(in.op));
  }
  if (in.flags & kSat)
    r = std::isnan(r) ? 0.0f : std::clamp(r, 0.0f, 1.0f);
  if (ftz)
    r = ftz32(r);
  return bitsF32(r);
}

/// The value `v` of type `ty` read as a double (floats exactly).
double toDouble(uint64_t v, Ty ty) {
  switch (ty) {
  case Ty::F16: return f16ToF32(v);
  case Ty::BF16: return bf16ToF32(v);
  case Ty::F32: return asF32(v);
  case Ty::F64: return asF64(v);
  default:
    return isSigned(ty) ? double(sext(v, bitsOf(ty)))
                        : double(v & maskOf(bitsOf(ty)));
  }
}

uint64_t toFormat(double x, Ty ty, Rnd r) {
  switch (ty) {
  case Ty::F16: case Ty::F16x2: return roundToFormat(x, 5, 10, r);
  case Ty::BF16: case Ty::BF16x2: return roundToFormat(x, 8, 7, r);
  case Ty::F32:
    return r == Rnd::Rn || r == Rnd::None ? bitsF32(float(x))
                                          : roundToFormat(x, 8, 23, r);
  default: return bitsF64(x);
  }
}

bool floatTy(Ty t) {
  return t == Ty::F16 || t == Ty::BF16 || t == Ty::F32 || t == Ty::F64 ||
         t == Ty::F16x2 || t == Ty::BF16x2;
}

uint64_t Cta::cvt(const Inst &in, uint64_t a, uint64_t b, bool pair) {
  const Ty d = in.ty, s = in.ty2;
  Rnd r = in.rnd;
  if (pair) // cvt.rn.{bf16x2,f16x2}.f32 d, hi, lo
    return (toFormat(toDouble(a, s), d, r) << 16) | toFormat(toDouble(b, s), d, r);
  if (!floatTy(d) && !floatTy(s)) {
    if (in.flags & kSat) {
      unsigned w = bitsOf(d);
      if (isSigned(s)) {
        int64_t v = sext(a, bitsOf(s));
        int64_t hi = isSigned(d) || w == 64 ? int64_t(maskOf(w - 1))
                                            : int64_t(maskOf(w));
        int64_t lo = isSigned(d) ? -hi - 1 : 0;
        return uint64_t(std::clamp(v, lo, hi));
      }
      uint64_t v = a & maskOf(bitsOf(s));
      uint64_t hi = isSigned(d) ? maskOf(w - 1) : maskOf(w);
      return std::min(v, hi);
    }
    return ival(a, s);
  }
  double x = toDouble(a, s);
  if ((in.flags & kFtz) && s == Ty::F32)
    x = ftz32(float(x));
  if (!floatTy(d)) { // float -> int: round, saturate, NaN -> 0
    if (std::isnan(x))
      return 0;
    switch (r) {
    case Rnd::Rni: x = std::nearbyint(x); break;
    case Rnd::Rmi: x = std::floor(x); break;
    case Rnd::Rpi: x = std::ceil(x); break;
    default: x = std::trunc(x);
    }
    unsigned w = bitsOf(d);
    if (isSigned(d)) {
      double lo = -std::ldexp(1.0, int(w) - 1), hi = std::ldexp(1.0, int(w) - 1);
      if (x <= lo)
        return uint64_t(int64_t(lo));
      if (x >= hi)
        return maskOf(w - 1);
      return uint64_t(int64_t(x));
    }
    if (x <= 0)
      return 0;
    if (x >= std::ldexp(1.0, int(w)))
      return maskOf(w);
    return uint64_t(x);
  }
  // To float: from an integer or a float.
  switch (r) { // cvt.rni.f32.f32 and friends: round to an integral value
  case Rnd::Rni: x = std::nearbyint(x); r = Rnd::Rn; break;
  case Rnd::Rzi: x = std::trunc(x); r = Rnd::Rn; break;
  case Rnd::Rmi: x = std::floor(x); r = Rnd::Rn; break;
  case Rnd::Rpi: x = std::ceil(x); r = Rnd::Rn; break;
  default: break;
  }
  if (in.flags & kSat)
    x = std::isnan(x) ? 0.0 : std::clamp(x, 0.0, 1.0);
  uint64_t bits = toFormat(x, d, r);
  if ((in.flags & kFtz) && d == Ty::F32)
    bits = bitsF32(ftz32(asF32(bits)));
  return bits;
}

void Cta::atomic(Thread &t, const Inst &in, uint64_t *R) {
  const bool isRed = in.op == Op::Red;
  const Operand &addr = in.ops[isRed ? 0 : 1];
  uint32_t n = bitsOf(in.ty) / 8;
  if (n != 4 && n != 8)
    fault(t, "atomics on this type are not supported");
  uint8_t *p = mem(t, in.space, addrOf(addr, R), n, n, "atomic");
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
                           n * count, "load");
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
                     "store");
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
    if (isFloat(in.ty)) {
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
    if (isFloat(in.ty)) {
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
                       "cp.async store");
    uint64_t src = addrOf(in.ops[1], R);
    uint8_t tmp[16] = {};
    if (srcSize)
      std::memcpy(tmp, mem(t, Space::Global, src, srcSize, 1, "cp.async load"),
                  srcSize);
    if (src % size)
      fault(t, "misaligned cp.async source");
    std::memcpy(dst, tmp, size);
    return;
  }
  case Op::Nop:
    return;
  default:
    fault(t, std::string("cannot execute ") + opName(in.op));
  }
}

bool Cta::releaseBarriers() {
  bool any = false;
  for (uint32_t id = 0; id < 16; ++id) {
    uint32_t arrived = 0, count = 0;
    for (const Thread &t : threads_)
      if (t.st == St::Bar && t.barId == id) {
        ++arrived;
        count = t.barCount;
      }
    if (!arrived)
      continue;
    if (count ? arrived < count : arrived < n_)
      continue;
    for (Thread &t : threads_)
      if (t.st == St::Bar && t.barId == id) {
        t.st = St::Ready;
        ++t.pc;
      }
    any = true;
  }
  return any;
}

bool Cta::releaseWarps() {
  bool any = false;
  std::vector<Thread *> members;
  for (uint32_t base = 0; base < n_; base += 32) {
    uint32_t size = std::min<uint32_t>(32, n_ - base);
    for (uint32_t lane = 0; lane < size; ++lane) {
      Thread &t = threads_[base + lane];
      if (t.st != St::Warp)
        continue;
      uint32_t m = t.waitMask;
      if (!(m & (1u << lane)))
        fault(t, std::string(opName(k_.code[t.pc].op)) +
                     ": the member mask does not include the thread itself");
      members.clear();
      bool ready = true;
      for (uint32_t j = 0; j < 32 && ready; ++j) {
        if (!(m & (1u << j)))
          continue;
        if (j >= size)
          fault(t, std::string(opName(k_.code[t.pc].op)) +
                       ": member mask names lane " + std::to_string(j) +
                       ", which this CTA does not have");
        Thread &u = threads_[base + j];
        if (u.st == St::Done)
          fault(t, std::string(opName(k_.code[t.pc].op)) +
                       ": lane " + std::to_string(j) +
                       " of the member mask has exited");
        if (u.st != St::Warp) {
          ready = false;
          break;
        }
        if (u.waitMask != m)
          fault(t, std::string(opName(k_.code[t.pc].op)) +
                       ": lanes of one collective disagree on the member "
                       "mask");
        members.push_back(&u);
      }
      if (!ready)
        continue;
      warpCollective(members);
      for (Thread *u : members) {
        u->st = St::Ready;
        ++u->pc;
      }
      any = true;
    }
  }
  return any;
}

void Cta::warpCollective(const std::vector<Thread *> &members) {
  const Thread &first = *members[0];
  const Inst &in0 = k_.code[first.pc];
  for (Thread *u : members)
    if (k_.code[u->pc].op != in0.op ||
        ((in0.op == Op::Ldmatrix || in0.op == Op::Mma) && u->pc != first.pc))
      fault(*u, std::string("lanes of a warp meet at different collectives (") +
                    opName(k_.code[u->pc].op) + " and " + opName(in0.op) +
                    " at line " + std::to_string(in0.line) + ")");
  uint32_t lanes[32];
  uint64_t out[32][8];
  uint32_t n = uint32_t(members.size());
  for (uint32_t i = 0; i < n; ++i)
    lanes[i] = members[i]->linear % 32;
  auto byLane = [&](uint32_t lane) -> Thread * {
    for (uint32_t i = 0; i < n; ++i)
      if (lanes[i] == lane)
        return members[i];
    return nullptr;
  };
  switch (in0.op) {
  case Op::BarWarpSync:
    return;
  case Op::Shfl: {
    for (uint32_t i = 0; i < n; ++i) {
      Thread &t = *members[i];
      const Inst &in = k_.code[t.pc];
      const uint64_t *R = regsOf(t);
      uint32_t lane = lanes[i];
      uint32_t b = uint32_t(val(in.ops[2], t, R));
      uint32_t c = uint32_t(val(in.ops[3], t, R));
      uint32_t segmask = (c >> 8) & 0x1f, clamp = c & 0x1f;
      int32_t maxLane = int32_t((lane & segmask) | (clamp & ~segmask));
      int32_t minLane = int32_t(lane & segmask);
      int32_t j;
      bool p;
      switch (in.mode) {
      case kShflUp:
        j = int32_t(lane) - int32_t(b & 0x1f);
        p = j >= maxLane;
        break;
      case kShflDown:
        j = int32_t(lane) + int32_t(b & 0x1f);
        p = j <= maxLane;
        break;
      case kShflBfly:
        j = int32_t(lane ^ (b & 0x1f));
        p = j <= maxLane;
        break;
      default:
        j = minLane | int32_t(b & 0x1f & ~segmask);
        p = j <= maxLane;
      }
      if (!p)
        j = int32_t(lane);
      Thread *src = byLane(uint32_t(j));
      if (!src)
        fault(t, "shfl.sync reads lane " + std::to_string(j) +
                     ", which is outside its member mask");
      out[i][0] = val(k_.code[src->pc].ops[1], *src, regsOf(*src)) &
                  0xffffffff;
      out[i][1] = p;
    }
    for (uint32_t i = 0; i < n; ++i) {
      Thread &t = *members[i];
      const Operand &d = k_.code[t.pc].ops[0];
      const Inst &in = k_.code[t.pc];
      uint64_t *R = regsOf(t);
      if (d.kind == Operand::Reg) {
        R[d.reg] = out[i][0];
      } else if (d.kind == Operand::Vec) {
        if (in.vregs[d.reg] != kNoReg)
          R[in.vregs[d.reg]] = out[i][0];
        if (in.vregs[d.reg + 1] != kNoReg)
          R[in.vregs[d.reg + 1]] = out[i][1];
      }
    }
    return;
  }
  case Op::Vote: {
    uint32_t ballot = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const Thread &t = *members[i];
      if (val(k_.code[t.pc].ops[1], t, regsOf(t)) & 1)
        ballot |= 1u << lanes[i];
    }
    uint32_t m = first.waitMask;
    for (uint32_t i = 0; i < n; ++i) {
      Thread &t = *members[i];
      const Inst &in = k_.code[t.pc];
      uint64_t r;
      switch (in.mode) {
      case kVoteAll: r = ballot == m; break;
      case kVoteAny: r = ballot != 0; break;
      case kVoteUni: r = ballot == 0 || ballot == m; break;
      default: r = ballot;
      }
      regsOf(t)[in.ops[0].reg] = r;
    }
    return;
  }
  case Op::Ldmatrix: {
    // Lanes 8k..8k+7 give the row addresses of matrix k (8 rows of eight
    // b16); lane i receives row i/4, columns 2(i%4) and 2(i%4)+1 of each
    // matrix (of its transpose with .trans).
    if (n != 32)
      fault(first, "ldmatrix needs all 32 lanes of the warp");
    uint16_t mat[4][8][8];
    uint32_t count = in0.vec;
    for (uint32_t k = 0; k < count; ++k)
      for (uint32_t r = 0; r < 8; ++r) {
        Thread *t = byLane(k * 8 + r);
        uint64_t a = addrOf(in0.ops[1], regsOf(*t));
        std::memcpy(mat[k][r], mem(*t, Space::Shared, a, 16, 16, "ldmatrix"),
                    16);
      }
    bool trans = in0.flags & kTrans;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t lane = lanes[i], row = lane / 4, col = 2 * (lane % 4);
      for (uint32_t k = 0; k < count; ++k) {
        uint32_t lo = trans ? mat[k][col][row] : mat[k][row][col];
        uint32_t hi = trans ? mat[k][col + 1][row] : mat[k][row][col + 1];
        out[i][k] = lo | (hi << 16);
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t *R = regsOf(*members[i]);
      for (uint32_t k = 0; k < count; ++k)
        if (in0.vregs[in0.ops[0].reg + k] != kNoReg)
          R[in0.vregs[in0.ops[0].reg + k]] = out[i][k];
    }
    return;
  }
  case Op::Mma: {
    // m16n8k16, A row-major 16x16, B column-major 16x8, C/D 16x8 f32; the
    // fragment layouts of the PTX ISA ("mma.m16n8k16" for 16-bit types).
    if (n != 32)
      fault(first, "mma.sync needs all 32 lanes of the warp");
    float A[16][16], B[16][8], C[16][8];
    bool bf = in0.ty2 == Ty::BF16;
    auto half = [&](uint64_t v) {
      return bf ? bf16ToF32(v) : f16ToF32(v);
    };
    const uint32_t *vr = in0.vregs.data();
    for (uint32_t i = 0; i < 32; ++i) {
      const uint64_t *R = regsOf(*byLane(i));
      uint32_t g = i / 4, tg = i % 4;
      auto reg = [&](const Operand &o, uint32_t k) -> uint64_t {
        uint32_t r = vr[o.reg + k];
        return r == kNoReg ? 0 : R[r];
      };
      for (uint32_t k = 0; k < 4; ++k) {
        uint64_t v = reg(in0.ops[1], k);
        uint32_t row = g + ((k & 1) ? 8 : 0), col = 2 * tg + ((k & 2) ? 8 : 0);
        A[row][col] = half(v);
        A[row][col + 1] = half(v >> 16);
      }
      for (uint32_t k = 0; k < 2; ++k) {
        uint64_t v = reg(in0.ops[2], k);
        uint32_t kk = 2 * tg + (k ? 8 : 0);
        B[kk][g] = half(v);
        B[kk + 1][g] = half(v >> 16);
      }
      for (uint32_t k = 0; k < 4; ++k)
        C[g + ((k & 2) ? 8 : 0)][2 * tg + (k & 1)] =
            asF32(reg(in0.ops[3], k));
    }
    for (uint32_t i = 0; i < 32; ++i) {
      uint64_t *R = regsOf(*byLane(i));
      uint32_t g = i / 4, tg = i % 4;
      for (uint32_t k = 0; k < 4; ++k) {
        uint32_t row = g + ((k & 2) ? 8 : 0), col = 2 * tg + (k & 1);
        float acc = C[row][col];
        for (uint32_t kk = 0; kk < 16; ++kk)
          acc = std::fma(A[row][kk], B[kk][col], acc);
        uint32_t r = vr[in0.ops[0].reg + k];
        if (r != kNoReg)
          R[r] = bitsF32(acc);
      }
    }
    return;
  }
  default:
    fault(first, std::string("not a warp collective: ") + opName(in0.op));
  }
}

} // namespace

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
    Cta cta(*k, mem, grid, block, dynamicShared, param, executed_, budget_);
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
