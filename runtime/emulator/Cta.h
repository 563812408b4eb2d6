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
#include <string>
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

enum class St : uint8_t { Ready, Bar, Warp, Done };

/// How an instruction touches memory (the shared-memory race check).
enum class Access : uint8_t { Read, Write, Atomic };

/// The race check's record of one 4-byte shared word: the last writer and
/// the last reader (thread id + 1, 0 = none), which bytes of the word each
/// touched, the CTA barrier epoch and their warp's collective epoch at the
/// access, and the writer's PTX line.
struct Shadow {
  uint32_t wEpoch = 0, rEpoch = 0, wWarpEpoch = 0, rWarpEpoch = 0, wLine = 0;
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
};

} // namespace tgrt::emu::detail

#endif // TG_RUNTIME_EMULATOR_CTA_H
