//===- FuzzPtx.cpp - libFuzzer target for the PTX emulator ----------------===//
//
// Every byte string goes through the PTX parser; what parses is launched,
// every kernel over one warpgroup (128 threads, so wgmma and setmaxnreg
// can run) with a small instruction budget, all pointer
// parameters at one registered buffer. Both must end in success or an
// error message, never a crash, hang or out-of-bounds access (ASan).
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Emulator.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::string err;
  auto m = tgrt::emu::PtxModule::parse(text, err);
  if (!m) {
    if (err.empty() || err.find('\n') != std::string::npos)
      __builtin_trap(); // one line, always
    return 0;
  }
  alignas(16) static uint8_t buffer[4096];
  tgrt::emu::Memory mem;
  mem.add(buffer, sizeof buffer);
  m->setInstructionBudget(20000);
  for (const std::string &k : m->kernelNames()) {
    std::vector<uint64_t> params(size_t(m->numParams(k)),
                                 reinterpret_cast<uint64_t>(buffer));
    if (!m->launch(k, {2, 1, 1}, {128, 1, 1}, 8192, params, mem, err) &&
        err.empty())
      __builtin_trap();
  }
  return 0;
}
