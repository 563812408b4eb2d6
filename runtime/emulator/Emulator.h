//===- Emulator.h - a CPU emulator of the PTX that TGC generates *- C++ -*-===//
//
// Runs the PTX kernels TGC emits (LLVM's NVPTX printer output) on the CPU,
// so `tg-run --device emulator` and the generator tests check GPU code on
// machines without a GPU. It links no LLVM or MLIR: it parses PTX text.
//
// Execution model (docs/emulator.md has the details and what is approximate):
//  - The PTX is decoded once into compact instructions (register numbers,
//    typed operands, predicates, resolved labels); launches interpret them.
//  - CTAs run one after the other. In a CTA every thread has its own
//    registers and program counter; a scheduler runs one thread until it
//    reaches a collective (bar.sync/barrier.sync for the CTA; shfl.sync,
//    vote.sync, bar.warp.sync, ldmatrix and mma.sync for the warp; wgmma
//    and setmaxnreg for the warpgroup), blocks on an mbarrier phase, or
//    exits, then the next. A CTA barrier completes when every thread of the CTA
//    that has not exited (or the count it names) has arrived; a warp collective executes when
//    every lane of its member mask has arrived at one. Divergence thus needs
//    no reconvergence logic. When every live thread waits and no collective
//    can complete, the launch fails with a deadlock error naming the kernel
//    and the instruction; a per-launch instruction budget turns a runaway
//    loop into an error.
//  - State spaces: .param (the launch's parameters), .global (host
//    addresses; every access must lie inside one buffer registered in
//    `Memory` and be aligned to its size, else the launch fails naming the
//    kernel, the PTX line and the address), .shared (static declarations plus
//    the extern dynamic array, per CTA, bounds-checked), .local (per thread).
//    Generic addresses of shared and local data live in two reserved windows
//    far above any host address.
//  - Shared memory is race-checked: two threads' accesses to one byte, one
//    of them a write, with no CTA barrier between them (nor a warp
//    collective, for lanes of one warp) fail the launch.
//  - cp.async copies complete when issued (a kernel that reads too early is
//    not caught here; test/nvptx/GemmEmulator checks the kernel IR for
//    that); membar/fence are no-ops (one thread runs at a time).
//  - sm_90a: TMA loads (through tensor maps encoded by TensorMap.h) land at
//    issue and complete on their mbarrier; kernels with mbarriers keep a
//    vector clock per thread so the race check orders accesses through
//    mbarrier phases; wgmma reads are checked at issue and at retirement.
//  - .approx math (ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh) is computed
//    with libm, i.e. more exactly than the hardware.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_EMULATOR_EMULATOR_H
#define TG_RUNTIME_EMULATOR_EMULATOR_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tgrt::emu {

/// The host buffers a launch may access through global addresses. A
/// device pointer passed to a kernel is the host address of the buffer.
class Memory {
public:
  /// Registers [p, p + bytes) as device memory (replacing a buffer that
  /// starts at the same address).
  void add(void *p, size_t bytes);
  /// Forgets the buffer that starts at `p` (no-op if none does).
  void remove(void *p);
  /// Forgets every buffer.
  void clear() { buffers_.clear(); }
  /// The host pointer for [addr, addr + bytes) when it lies inside one
  /// registered buffer, else nullptr; `lo`/`hi`, when given, receive that
  /// buffer's bounds.
  uint8_t *find(uint64_t addr, size_t bytes, uint64_t *lo = nullptr,
                uint64_t *hi = nullptr) const;

private:
  std::map<uint64_t, uint64_t> buffers_; // start -> size
};

struct Kernel;

/// A parsed PTX module: its kernels, ready to launch.
class PtxModule {
public:
  ~PtxModule();
  PtxModule(const PtxModule &) = delete;
  PtxModule &operator=(const PtxModule &) = delete;

  /// Parses PTX text (as LLVM's NVPTX backend prints it). nullptr + err on
  /// failure ("line:col: what", naming an unsupported instruction).
  static std::unique_ptr<PtxModule> parse(std::string_view ptx,
                                          std::string &err);

  /// Runs kernel `name` over grid x block threads, `dynamicShared` bytes of
  /// extern shared memory, with `params` the raw 64-bit parameter values
  /// (device pointers are host addresses; a narrower parameter takes the
  /// low bytes). Global accesses are checked against `mem`'s registered
  /// buffers. False + err ("kernel K: line L: what") on any fault.
  bool launch(const std::string &name, std::array<uint32_t, 3> grid,
              std::array<uint32_t, 3> block, uint32_t dynamicShared,
              const std::vector<uint64_t> &params, Memory &mem,
              std::string &err);

  /// The names of the module's kernels (.entry), in order.
  std::vector<std::string> kernelNames() const;

  /// The number of parameters of kernel `name` (-1: no such kernel), so a
  /// caller can check a launch schedule against the PTX before running it.
  int numParams(const std::string &name) const;

  /// Caps the instructions one launch may execute (all threads together);
  /// past it the launch fails as a runaway loop. Default 2^33.
  void setInstructionBudget(uint64_t n) { budget_ = n; }

  /// Turns the shared-memory race check on or off (default on): two
  /// threads' accesses to a shared byte, at least one a write (atomics
  /// excepted), with no CTA barrier between them (nor a warp collective,
  /// for lanes of one warp) fail the launch.
  void setRaceCheck(bool on) { raceCheck_ = on; }

  /// Instructions executed by the last launch (all threads).
  uint64_t lastInstructionCount() const { return executed_; }

private:
  PtxModule();
  std::vector<std::unique_ptr<Kernel>> kernels_;
  uint64_t budget_ = uint64_t(1) << 33;
  uint64_t executed_ = 0;
  bool raceCheck_ = true;
};

} // namespace tgrt::emu

#endif // TG_RUNTIME_EMULATOR_EMULATOR_H
