//===- Cta.h - one CTA of an emulated launch --------------------*- C++ -*-===//
//
// The interpreter's state for one CTA (threads, registers, shared and local
// memory) and the pieces that run it, split by concern over
// Interpreter.cpp (scheduling, memory, the instructions of one thread),
// Arithmetic.cpp (integer, float and 16-bit float arithmetic, comparisons,
// conversions) and Collectives.cpp (CTA barriers and warp collectives:
// shfl, vote, ldmatrix, mma). Internal to runtime/emulator.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_EMULATOR_CTA_H
#define TG_RUNTIME_EMULATOR_CTA_H

#include "runtime/emulator/Emulator.h"
#include "runtime/emulator/Numeric.h"
#include "runtime/emulator/Ptx.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace tgrt::emu::detail {

// Generic addresses of shared and local data: windows far above any user
// space host address (x86-64 and AArch64 user space ends below 2^48).
constexpr uint64_t kSharedWindow = 0xFFFE000000000000ull;
constexpr uint64_t kLocalWindow = 0xFFFD000000000000ull;
constexpr uint64_t kWindowBytes = uint64_t(1) << 40;
constexpr uint32_t kMaxShared = 232448; // 227 KiB, sm_90's per-CTA limit

struct Fault {
  std::string msg;
};

/// A thread runs (Ready), waits at a CTA barrier, a warp collective, a
/// warpgroup collective (wgmma, setmaxnreg) or an mbarrier phase, or has
/// exited.
enum class St : uint8_t { Ready, Bar, Warp, Group, Mbar, Done };

/// How an instruction touches memory (the shared-memory race check).
enum class Access : uint8_t { Read, Write, Atomic };

/// The race check's record of one 4-byte shared word: the last writer and
/// the last reader (thread id + 1, 0 = none), which bytes of the word each
/// touched, the CTA barrier epoch, their warp's collective epoch and (in
/// kernels with mbarriers) their own vector-clock entry at the access, and
/// the writer's PTX line.
struct Shadow {
  uint32_t wEpoch = 0, rEpoch = 0, wWarpEpoch = 0, rWarpEpoch = 0, wLine = 0;
  uint32_t wClock = 0, rClock = 0;
  uint16_t writer = 0, reader = 0;
  uint8_t wMask = 0, rMask = 0;
};
struct Thread {
  uint32_t pc = 0;
  St st = St::Ready;
  uint32_t tid[3] = {0, 0, 0};
  uint32_t linear = 0;
  uint32_t waitMask = 0;  // warp collective: member mask
  uint32_t barId = 0;     // CTA barrier id
  uint32_t barCount = 0;  // 0: every thread of the CTA
};

/// An mbarrier (PTX ISA "Parallel synchronization: mbarrier"): arrivals
/// expected per phase and still pending, the transaction count, the phases
/// completed so far. For the race check, `vc` joins the vector clocks of
/// this phase's arrivals and transactions, and done[parity] is that of the
/// last completed phase of each parity (what a waiter acquires).
struct Mbar {
  uint32_t expected = 0, pending = 0, phase = 0;
  int64_t tx = 0;
  std::vector<uint32_t> vc, done[2];
};

/// One wgmma's shared-memory reads, kept until wgmma.wait_group retires
/// its group: the reads are checked again then, since the hardware may
/// read at any moment until the group completes.
struct WgRead {
  uint64_t da, db;
  uint32_t n;
  uint8_t mode;
  Ty ty;
  uint32_t line;
};

/// A warpgroup's wgmmas not yet committed and the committed groups not
/// yet retired, oldest first.
struct WgState {
  std::vector<WgRead> open;
  std::deque<std::vector<WgRead>> groups;
};

inline bool isFloat(Ty t) { return t == Ty::F32 || t == Ty::F64; }
inline bool isHalf(Ty t) {
  return t == Ty::F16 || t == Ty::BF16 || t == Ty::F16x2 || t == Ty::BF16x2;
}
inline bool isSigned(Ty t) {
  return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64;
}
inline unsigned bitsOf(Ty t) {
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
inline uint64_t maskOf(unsigned bits) {
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}
inline int64_t sext(uint64_t v, unsigned bits) {
  if (bits >= 64)
    return int64_t(v);
  uint64_t m = uint64_t(1) << (bits - 1);
  v &= maskOf(bits);
  return int64_t((v ^ m) - m);
}

/// The name of an op, for messages.
const char *opName(Op op);

/// The value `v` of type `ty` read as a double (floats exactly).
double toDouble(uint64_t v, Ty ty);

/// `x` rounded to the float type `ty` (f16, bf16 and their x2 lanes, f32,
/// f64) in rounding mode `r`: its bits.
uint64_t toFormat(double x, Ty ty, Rnd r);

/// One CTA of a launch.
class Cta {
public:
  Cta(const Kernel &k, Memory &mem, std::array<uint32_t, 3> grid,
      std::array<uint32_t, 3> block, uint32_t dynShared,
      const std::vector<uint8_t> &param, uint64_t &executed, uint64_t budget,
      bool raceCheck)
      : k_(k), mem_(mem), grid_(grid), block_(block), dynShared_(dynShared),
        param_(param), executed_(executed), budget_(budget),
        raceCheck_(raceCheck) {
    n_ = block[0] * block[1] * block[2];
    nregs_ = std::max<uint32_t>(k.numRegs, 1);
    regs_.resize(size_t(n_) * nregs_);
    threads_.resize(n_);
    shared_.resize(size_t(k.dynSharedOffset) + dynShared);
    local_.resize(size_t(n_) * k.localBytes);
    if (raceCheck_) {
      shadow_.resize((shared_.size() + 3) / 4);
      warpEpoch_.resize((n_ + 31) / 32);
    }
    // Mbarriers order threads pairwise, which barrier epochs cannot
    // express: those kernels also keep a vector clock per thread.
    vc_ = raceCheck_ && k.mbarriers;
    wg_.resize((n_ + 127) / 128);
  }

  /// Runs the CTA `ctaid` to completion (throws Fault).
  void run(std::array<uint32_t, 3> ctaid);

private:
  /// Ends the launch with `what` at `t`'s instruction.
  [[noreturn]] void fault(const Thread &t, const std::string &what);

  [[noreturn]] void deadlock();

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
    case Sreg::ClusterCtarank: return 0;  // clusters of one CTA
    case Sreg::ClusterNctarank: return 1;
    }
    return 0;
  }

  __attribute__((always_inline)) uint64_t val(const Operand &o, const Thread &t,
                                              const uint64_t *R) const {
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
               uint32_t align, const char *what, Access access);
  /// Faults when `t`'s access to shared bytes [off, off + bytes) conflicts
  /// with another thread's access since the last barrier that orders them.
  void checkRace(const Thread &t, uint64_t off, uint32_t bytes, bool write);

  // Fixed-size copies per width: a memcpy of a variable size is a call.
  static uint64_t load(const uint8_t *p, uint32_t n) {
    switch (n) {
    case 1: return *p;
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case 8: { uint64_t v; std::memcpy(&v, p, 8); return v; }
    default: return 0;
    }
  }
  static void store(uint8_t *p, uint64_t v, uint32_t n) {
    switch (n) {
    case 1: *p = uint8_t(v); break;
    case 2: { uint16_t x = uint16_t(v); std::memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = uint32_t(v); std::memcpy(p, &x, 4); break; }
    case 8: std::memcpy(p, &v, 8); break;
    default: break;
    }
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
  uint64_t halfOp(const Thread &t, const Inst &in, uint64_t ra, uint64_t rb,
                  uint64_t rc);
  uint64_t cvt(const Inst &in, uint64_t a, uint64_t b, bool pair);
  bool compare(const Inst &in, uint64_t a, uint64_t b) const;
  void atomic(Thread &t, const Inst &in, uint64_t *R);
  bool releaseBarriers();
  bool releaseWarps();
  void warpCollective(const std::vector<Thread *> &members);

  // sm_90a (Sm90.cpp): mbarriers, TMA, warpgroup collectives.
  /// The mbarrier at shared address `addr` (faults if none was initialised
  /// there); the access counts as a read of it for the race check.
  Mbar &mbarAt(const Thread &t, uint64_t addr);
  void mbarInit(Thread &t, const Inst &in, uint64_t *R);
  void mbarArrive(Thread &t, const Inst &in, uint64_t *R);
  /// try_wait/test_wait: true (and the predicate set) when the phase has
  /// completed; false leaves the thread blocked on it.
  bool mbarWait(Thread &t, const Inst &in, uint64_t *R, bool commit);
  /// Adds `tx` transaction bytes (negative: completes them) and `arrivals`
  /// arrivals by `t`, completing the phase when both reach zero.
  void mbarUpdate(Thread &t, Mbar &m, int64_t tx, uint32_t arrivals);
  void tmaLoad(Thread &t, const Inst &in, uint64_t *R);
  bool releaseMbars();
  bool releaseGroups();
  void groupCollective(uint32_t g);
  void wgmma(uint32_t g, const Inst &in);
  /// Reads a wgmma's operands from shared memory as thread `t` (the race
  /// check), into `A` (64x16) and `B` (16xN) when given.
  void wgmmaRead(const Thread &t, const WgRead &r, float *A, float *B);
  /// Joins the vector clocks of `members` (a collective orders them).
  void joinClocks(Thread *const *members, uint32_t count);
  uint32_t *clockOf(uint32_t thread) {
    return clocks_.data() + size_t(thread) * n_;
  }
  void join(uint32_t *dst, const uint32_t *src) const {
    for (uint32_t i = 0; i < n_; ++i)
      dst[i] = std::max(dst[i], src[i]);
  }

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
  uint64_t lastLo_ = 0, lastHi_ = 0; // the global buffer last accessed
  uint32_t barArrived_[16] = {};      // threads waiting at each barrier
  uint32_t live_ = 0;                 // threads not exited
  // The race check: one Shadow per shared word; epochs only grow (a new
  // CTA starts a new one), so records of earlier CTAs never match.
  bool raceCheck_ = true;
  std::vector<Shadow> shadow_;
  uint32_t epoch_ = 0;
  std::vector<uint32_t> warpEpoch_;
  // Kernels with mbarriers: n_ x n_ vector clocks (row = thread), the
  // mbarriers by shared offset, each warpgroup's wgmma groups.
  bool vc_ = false;
  std::vector<uint32_t> clocks_;
  std::unordered_map<uint32_t, Mbar> mbars_;
  std::vector<WgState> wg_;
};

} // namespace tgrt::emu::detail

#endif // TG_RUNTIME_EMULATOR_CTA_H
