//===- GemmEmulatorInterp.h - the GEMM IR emulator's interpreter -*- C++ -*-===//
//
// The interpreter of test/nvptx/GemmEmulator.cpp (the model is stated in
// GemmEmulator.h), shared with GemmEmulatorTensorCore.cpp, which holds the
// tensor-core instructions (ldmatrix, mma.sync, wgmma), so that neither file
// grows past what one reads at once. Test-only.
//
//===----------------------------------------------------------------------===//
#ifndef TG_TEST_NVPTX_GEMMEMULATORINTERP_H
#define TG_TEST_NVPTX_GEMMEMULATORINTERP_H

#include "codegen/nvptx/Gemm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <cstring>
#include <map>
#include <functional>
#include <stdexcept>
#include <ucontext.h>

namespace tg::nvptx::emu::detail {

using namespace mlir;

[[noreturn]] inline void fail(const std::string &m) { throw std::runtime_error(m); }

enum class K { Int, F32, BF16, F16 };

/// Scalar kind and count of a type.
struct TI {
  int n = 1;
  K k = K::Int;
  unsigned bits = 64;
};

inline TI typeInfo(Type t) {
  TI r;
  if (auto it = dyn_cast<IntegerType>(t)) {
    r.bits = it.getWidth();
    return r;
  }
  if (isa<LLVM::LLVMPointerType>(t))
    return r;
  if (t.isF32()) { r.k = K::F32; return r; }
  if (t.isBF16()) { r.k = K::BF16; return r; }
  if (t.isF16()) { r.k = K::F16; return r; }
  if (auto vt = dyn_cast<VectorType>(t)) {
    TI e = typeInfo(vt.getElementType());
    e.n = static_cast<int>(vt.getNumElements());
    return e;
  }
  if (auto st = dyn_cast<LLVM::LLVMStructType>(t)) {
    TI e = typeInfo(st.getBody().front());
    e.n = static_cast<int>(st.getBody().size());
    return e;
  }
  fail("emulator: unsupported type");
}

inline double roundTo(K k, double v) {
  switch (k) {
  case K::F32: return static_cast<float>(v);
  case K::BF16: return fromHalfBits(toHalfBits(static_cast<float>(v), ElemType::BF16), ElemType::BF16);
  case K::F16: return fromHalfBits(toHalfBits(static_cast<float>(v), ElemType::F16), ElemType::F16);
  case K::Int: break;
  }
  return v;
}

struct Val {
  TI ti;
  std::vector<uint64_t> s; // [elem * T + thread]
};

struct Barrier {
  bool init = false;
  uint32_t expected = 0, pending = 0;
  int64_t tx = 0;
  uint32_t phase = 0;
  std::vector<uint32_t> phaseVC, doneVC[2]; // happens-before (vector clocks)
};

struct TensorMap {
  uint64_t base;
  uint64_t rows, cols; // row-major, 2-byte elements
  uint32_t boxRows, boxCols;
  uint64_t batches = 1; // 3-D: matrices one after the other, batch outermost
  uint64_t pitch = 0;   // row stride in elements (0: cols; a staged copy's)
};

/// A role of a warp-specialised kernel (producer or consumers), run on its
/// own stack so it can block on an mbarrier while the other role proceeds.
struct Fiber {
  ucontext_t ctx;
  std::vector<char> stack;
  std::function<void()> body;
  bool started = false, done = false;
  std::string error;
};
class Interp {
public:
  Interp(int threads, std::vector<uint8_t> &smem)
      : T(threads), shared(smem), chunks(smem.size() / 16 + 1) {}

  std::map<uint64_t, std::vector<uint8_t> *> globals;
  std::map<uint64_t, TensorMap> tmaps;
  unsigned ctaid = 0, nctaid = 1, ctaidY = 0, nctaidY = 1;

  void runFunction(LLVM::LLVMFuncOp f, const std::vector<Val> &args) {
    Block &entry = f.getBody().front();
    for (auto [arg, v] : llvm::zip(entry.getArguments(), args))
      env[arg] = v;
    std::vector<char> mask(T, 1);
    runBlock(entry, mask);
  }

  Val scalarInt(uint64_t v, unsigned bits = 64) {
    Val r;
    r.ti.bits = bits;
    r.s.assign(T, v);
    return r;
  }
  Val scalarF32(float v) {
    Val r;
    r.ti.k = K::F32;
    r.s.assign(T, bitsOf(v));
    return r;
  }

private:
  int T;
  std::vector<uint8_t> &shared;
  llvm::DenseMap<Value, Val> env;
  std::map<uint64_t, Barrier> barriers;
  // Race check for kernels synchronised by bar.sync alone (sm_80): per
  // 16-byte shared chunk, the barrier epochs of the last write (an async
  // copy spans issue..landing) and reads; a conflicting access by another
  // thread in an overlapping epoch is a race.
  struct Chunk {
    uint64_t wFrom = ~0ull, wUntil = 0, rEpoch = ~0ull;
    int writer = -1, reader = -1;
    bool multiReaders = false;
  };
  std::vector<Chunk> chunks;
  uint64_t epoch = 0;
  static constexpr uint64_t kPending = ~0ull >> 1;
  void checkRead(uint64_t addr, int t) {
    if (!raceCheck || addr >= (uint64_t(1) << 32))
      return;
    Chunk &c = chunks[addr / 16];
    if (c.writer >= 0 && c.writer != t && c.wFrom <= epoch && epoch <= c.wUntil)
      fail("emulator: race: thread " + std::to_string(t) + " reads shared byte " +
           std::to_string(addr) + " that thread " + std::to_string(c.writer) +
           " writes without a barrier in between");
    if (c.rEpoch != epoch) {
      c.rEpoch = epoch;
      c.reader = t;
      c.multiReaders = false;
    } else if (c.reader != t) {
      c.multiReaders = true;
    }
  }
  void checkWriteIssue(uint64_t addr, int t) {
    if (!raceCheck || addr >= (uint64_t(1) << 32))
      return;
    Chunk &c = chunks[addr / 16];
    if (c.rEpoch == epoch && (c.multiReaders || c.reader != t))
      fail("emulator: race: thread " + std::to_string(t) + " overwrites shared byte " +
           std::to_string(addr) + " that another thread reads without a barrier in between");
    c.writer = t;
    c.wFrom = epoch;
    c.wUntil = kPending;
  }
  void landWrite(uint64_t addr) {
    if (raceCheck && addr < (uint64_t(1) << 32))
      chunks[addr / 16].wUntil = epoch;
  }

  // Happens-before check for mbarrier-synchronised kernels (sm_90a): vector
  // clocks per thread; arrivals release, completed phases carry the join of
  // their arrivals (and of the TMA issues that completed their bytes), a
  // successful wait acquires. wgmma reads count from the wait_group that
  // retires them, so a slot released before its reads retire is a race.
  std::vector<std::vector<uint32_t>> vc;
  struct HbChunk {
    int writer = -1;
    uint32_t wclock = 0;
    std::vector<std::pair<int, uint32_t>> reads;
  };
  std::vector<HbChunk> hb;
  std::map<int, std::vector<uint64_t>> wgOpen;
  std::map<int, std::vector<std::vector<uint64_t>>> wgGroups;
  static void join(std::vector<uint32_t> &d, const std::vector<uint32_t> &s) {
    if (d.size() < s.size())
      d.resize(s.size(), 0);
    for (size_t i = 0; i < s.size(); ++i)
      d[i] = std::max(d[i], s[i]);
  }
  void hbWrite(uint64_t addr, int t) {
    HbChunk &c = hb[addr / 16];
    for (auto [r, clk] : c.reads)
      if (r != t && vc[t][r] < clk)
        fail("emulator: race: thread " + std::to_string(t) + " overwrites shared byte " +
             std::to_string(addr) + " before thread " + std::to_string(r) +
             "'s wgmma reads of it are known to be retired");
    c.writer = t;
    c.wclock = vc[t][t];
    c.reads.clear();
  }
  void hbRead(uint64_t addr, int t) {
    HbChunk &c = hb[addr / 16];
    if (c.writer >= 0 && c.writer != t && vc[t][c.writer] < c.wclock)
      fail("emulator: race: thread " + std::to_string(t) + " reads shared byte " +
           std::to_string(addr) + " before thread " + std::to_string(c.writer) +
           "'s write of it is known to have landed");
  }

public:
  bool raceCheck = false;
  bool hbCheck = false;
  void enableHb() {
    hbCheck = true;
    vc.assign(T, std::vector<uint32_t>(T, 0));
    // Own clocks start at 1, so that a write before a thread's first
    // release is unordered for everyone else until they acquire it.
    for (int t = 0; t < T; ++t)
      vc[t][t] = 1;
    hb.assign(shared.size() / 16 + 1, {});
  }

private:
  ucontext_t mainCtx;
  Fiber *cur = nullptr;
  uint64_t progress = 0;
  void runRoles(Region &a, const std::vector<char> &ma, Region &b,
                const std::vector<char> &mb);
  // cp.async: pending copies of the open group, then committed groups.
  struct Copy { uint64_t dst, src; unsigned size, fill; int thread; };
  std::vector<Copy> openGroup;
  std::vector<std::vector<Copy>> groups;

  static uint64_t bitsOf(double d) { uint64_t u; std::memcpy(&u, &d, 8); return u; }
  static double dbl(uint64_t u) { double d; std::memcpy(&d, &u, 8); return d; }

  Val &get(Value v) {
    auto it = env.find(v);
    if (it == env.end())
      fail("emulator: value used before definition");
    return it->second;
  }
  double f(Value v, int e, int t) { return dbl(get(v).s[e * T + t]); }
  uint64_t u(Value v, int e, int t) { return get(v).s[e * T + t]; }
  Val make(Type t) {
    Val r;
    r.ti = typeInfo(t);
    r.s.assign(size_t(r.ti.n) * T, r.ti.k == K::Int ? 0 : bitsOf(0.0));
    return r;
  }
  static uint64_t trunc(uint64_t v, unsigned bits) {
    return bits >= 64 ? v : (v & ((uint64_t(1) << bits) - 1));
  }
  /// Uniform value of an integer operand across active threads.
  uint64_t uniform(Value v, const std::vector<char> &mask) {
    int first = -1;
    for (int t = 0; t < T; ++t)
      if (mask[t]) {
        if (first < 0)
          first = t;
        else if (u(v, 0, t) != u(v, 0, first))
          fail("emulator: loop bound or descriptor not uniform");
      }
    return first < 0 ? 0 : u(v, 0, first);
  }

  // Memory.
  uint8_t *mem(uint64_t addr, size_t n) {
    if (addr < (uint64_t(1) << 32)) {
      if (addr + n > shared.size())
        fail("emulator: shared-memory access out of bounds at " + std::to_string(addr));
      return shared.data() + addr;
    }
    auto it = globals.upper_bound(addr);
    if (it == globals.begin())
      fail("emulator: wild global address");
    --it;
    if (addr + n > it->first + it->second->size())
      fail("emulator: global access out of bounds (buffer at " +
           std::to_string(it->first) + ", offset " + std::to_string(addr - it->first) + ")");
    return it->second->data() + (addr - it->first);
  }
  double loadScalar(uint64_t addr, K k) {
    switch (k) {
    case K::F32: { float x; std::memcpy(&x, mem(addr, 4), 4); return x; }
    case K::BF16: case K::F16: {
      uint16_t h; std::memcpy(&h, mem(addr, 2), 2);
      return fromHalfBits(h, k == K::BF16 ? ElemType::BF16 : ElemType::F16);
    }
    case K::Int: break;
    }
    fail("emulator: integer loads are not used by the kernels");
  }
  void storeScalar(uint64_t addr, K k, double v) {
    if (k == K::F32) { float x = static_cast<float>(v); std::memcpy(mem(addr, 4), &x, 4); return; }
    uint16_t h = toHalfBits(static_cast<float>(v), k == K::BF16 ? ElemType::BF16 : ElemType::F16);
    std::memcpy(mem(addr, 2), &h, 2);
  }
  static int bytesOf(K k) { return k == K::F32 ? 4 : 2; }
  static int elemBytesOfType(Type t) {
    if (t.isF32() || t.isInteger(32)) return 4;
    if (t.isBF16() || t.isF16() || t.isInteger(16)) return 2;
    if (t.isInteger(8)) return 1;
    if (t.isInteger(64)) return 8;
    fail("emulator: unsupported GEP element type");
  }
  uint16_t h16(uint64_t addr) { uint16_t h; std::memcpy(&h, mem(addr, 2), 2); return h; }

  void runBlock(Block &b, const std::vector<char> &mask) {
    for (Operation &op : b)
      exec(op, mask);
  }

  void exec(Operation &op, const std::vector<char> &mask);
  void execFor(scf::ForOp op, const std::vector<char> &mask);
  void ldmatrix(Operation &op, const std::vector<char> &mask);
  void mma(Operation &op);
  void wgmma(Operation &op, const std::vector<char> &mask);
  void tma(Operation &op, const std::vector<char> &mask);
  void landGroups(unsigned keep) {
    while (groups.size() > keep) {
      for (const Copy &c : groups.front()) {
        uint8_t *d = mem(c.dst, c.size);
        if (c.fill)
          std::memcpy(d, mem(c.src, c.fill), c.fill);
        std::memset(d + c.fill, 0, c.size - c.fill);
        landWrite(c.dst);
      }
      groups.erase(groups.begin());
    }
  }
  Barrier &bar(uint64_t addr) {
    Barrier &b = barriers[addr];
    return b;
  }
  void arrive(uint64_t addr, int64_t txAdd, int t) {
    Barrier &b = bar(addr);
    if (!b.init)
      fail("emulator: arrive on an uninitialised mbarrier");
    if (hbCheck) {
      join(b.phaseVC, vc[t]);
      ++vc[t][t];
    }
    b.tx += txAdd;
    if (b.pending == 0)
      fail("emulator: too many arrivals on an mbarrier");
    --b.pending;
    maybeComplete(b);
  }
  void maybeComplete(Barrier &b) {
    ++progress;
    if (b.pending == 0 && b.tx == 0) {
      b.doneVC[b.phase & 1] = b.phaseVC;
      b.phaseVC.clear();
      b.phase ^= 1;
      b.pending = b.expected;
    }
  }
};

} // namespace tg::nvptx::emu::detail

#endif // TG_TEST_NVPTX_GEMMEMULATORINTERP_H
