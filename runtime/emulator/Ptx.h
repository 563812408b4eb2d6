//===- Ptx.h - decoded PTX instructions of the emulator ---------*- C++ -*-===//
//
// The compact form the parser (Parser.cpp) decodes PTX into and the
// interpreter (Interpreter.cpp) runs: every register is a number, every
// operand typed by its kind, every label a program counter, every symbol an
// offset in its state space. Internal to runtime/emulator.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_EMULATOR_PTX_H
#define TG_RUNTIME_EMULATOR_PTX_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tgrt::emu {

/// PTX fundamental types (registers hold raw bits; the type of an
/// instruction says how to read them).
enum class Ty : uint8_t {
  None, B8, B16, B32, B64, B128, U8, U16, U32, U64, S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64, Pred
};

enum class Space : uint8_t { Generic, Global, Shared, Local, Param };

/// Rounding (float: Rn..Rp; to integral: Rni..Rpi).
enum class Rnd : uint8_t { None, Rn, Rz, Rm, Rp, Rni, Rzi, Rmi, Rpi };

enum class Op : uint8_t {
  Ld, St, Mov, Cvta, CvtaTo, Add, Sub, Mul, Mad, Fma, Div, Rem, Min, Max,
  Neg, Abs, And, Or, Xor, Not, Cnot, Shl, Shr, Bfe, Bfi, Prmt, Lop3, Popc,
  Clz, Brev, Setp, Selp, Cvt, Ex2, Lg2, Rcp, Rsqrt, Sqrt, Sin, Cos, Tanh,
  Copysign, Bra, Ret, BarSync, BarWarpSync, Shfl, Vote, Activemask, Atom,
  Red, Nop, CpAsync, Ldmatrix, Mma,
  // sm_90a: mbarriers, TMA, warpgroup MMA, register reallocation, elect.
  MbarInit, MbarArrive, MbarWait, MbarInval, TmaLoad, WgFence, WgCommit,
  WgWait, Wgmma, Setmaxnreg, Elect
};

/// Comparison of setp; bool op combining with the c predicate.
enum class Cmp : uint8_t {
  Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Equ, Neu, Ltu, Leu, Gtu, Geu, Num,
  Nan
};
enum class BoolOp : uint8_t { None, And, Or, Xor };

/// Special registers.
enum class Sreg : uint8_t {
  TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaidX, CtaidY, CtaidZ, NctaidX,
  NctaidY, NctaidZ, Laneid, Warpid, Nwarpid, LanemaskEq, LanemaskLt,
  LanemaskLe, LanemaskGt, LanemaskGe, Clock, Clock64, DynSmem, TotalSmem,
  ClusterCtarank, ClusterNctarank
};

constexpr uint32_t kNoReg = ~0u;

struct Operand {
  enum Kind : uint8_t { None, Reg, Imm, Special, Addr, Vec, Label, Sink };
  Kind kind = None;
  bool neg = false;     // `!%p`
  uint8_t count = 0;    // Vec: number of registers
  uint32_t reg = kNoReg; // Reg, Addr base (kNoReg: absolute), Vec: first
                         // index into Inst::vregs
  int64_t imm = 0;       // Imm bits, Addr offset, Label pc, Special id
};

/// Modifier bits.
enum : uint16_t {
  kFtz = 1, kSat = 2, kApprox = 4, kTrans = 8, kWide = 16, kHi = 32,
  kLo = 64, kNanMode = 128, kRelu = 256
};

struct Inst {
  Op op = Op::Nop;
  Ty ty = Ty::None;  // the instruction type (cvt: destination)
  Ty ty2 = Ty::None; // cvt: source; mma, wgmma: A/B element type
  Space space = Space::Generic;
  Rnd rnd = Rnd::None;
  uint8_t vec = 1;   // .v2/.v4; ldmatrix: .x1/.x2/.x4; wgmma: N / 8;
                     // cp.async.bulk.tensor: dimensions
  uint8_t mode = 0;  // Cmp, shfl/vote mode, atom op, kMbar*/kWgmma* bits
  BoolOp boolOp = BoolOp::None;
  uint16_t flags = 0;
  uint8_t nops = 0;
  bool predNeg = false;
  uint32_t pred = kNoReg; // guard predicate register
  uint32_t line = 0;
  Operand ops[5];
  std::vector<uint32_t> vregs; // registers of Vec operands (kNoReg = `_`)
};

/// shfl modes, vote modes, atomic ops (Inst::mode).
enum : uint8_t { kShflUp, kShflDown, kShflBfly, kShflIdx };
enum : uint8_t { kVoteAll, kVoteAny, kVoteUni, kVoteBallot };
enum : uint8_t {
  kAtomAdd, kAtomMin, kAtomMax, kAtomInc, kAtomDec, kAtomAnd, kAtomOr,
  kAtomXor, kAtomCas, kAtomExch
};

/// mbarrier variants (Inst::mode): arrive.expect_tx, expect_tx alone;
/// try_wait/test_wait on a phase parity (else on an arrive's state).
enum : uint8_t { kMbarExpectTx = 1, kMbarExpectOnly = 2, kMbarParity = 4 };
/// wgmma's immediates (Inst::mode): negate A or B (imm-scale -1),
/// transpose A or B (imm-trans 1: the operand is MN-major).
enum : uint8_t { kWgNegA = 1, kWgNegB = 2, kWgTransA = 4, kWgTransB = 8 };
/// setmaxnreg.inc (Inst::mode; else .dec).
enum : uint8_t { kSetmaxnregInc = 1 };

/// One .entry: decoded body and its state-space layout.
struct Kernel {
  std::string name;
  std::vector<Inst> code;
  uint32_t numRegs = 0;
  /// Parameter byte offsets and sizes in the param buffer.
  std::vector<uint32_t> paramOffset, paramSize;
  uint32_t paramBytes = 0;
  /// Static shared bytes; dynamic shared (extern arrays) start at
  /// dynSharedOffset.
  uint32_t staticShared = 0, dynSharedOffset = 0;
  uint32_t localBytes = 0;
  /// Uses mbarriers: the race check then orders accesses through their
  /// phases too (vector clocks).
  bool mbarriers = false;
  /// Has warpgroup collectives (wgmma, setmaxnreg).
  bool warpgroups = false;
  /// Hidden registers holding the immediates of vector operands
  /// (`{%r1, 0}`), set in every thread at start.
  std::vector<std::pair<uint32_t, uint64_t>> constRegs;
};

} // namespace tgrt::emu

#endif // TG_RUNTIME_EMULATOR_PTX_H
