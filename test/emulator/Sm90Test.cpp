//===- Sm90Test.cpp - the emulator's sm_90a instructions, hand-written ----===//
//
// Small kernels in hand-written PTX for what the generated sm_90a GEMMs
// (GemmTest.cpp) do not isolate: a consumer warp blocked on an mbarrier
// lets the producer run, repeated inline-asm labels in their own scopes,
// an mbarrier wait nothing completes (a deadlock error, not a hang), use
// before init and too many arrivals, a TMA box with out-of-bounds rows and
// columns in the 128-byte swizzle, a raw pointer where a tensor map
// belongs, setmaxnreg's legality and whole-warpgroup rule, elect.sync.
//
//===----------------------------------------------------------------------===//
#include "PtxTestUtil.h"
#include "runtime/emulator/Emulator.h"
#include "runtime/emulator/TensorMap.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

using namespace tgrt::emu;

namespace {

using ptxtest::parseOk;

std::string parseError(const std::string &body) {
  return ptxtest::parseError(ptxtest::kHeader + body);
}

template <typename T> uint64_t ptr(std::vector<T> &v) {
  return reinterpret_cast<uint64_t>(v.data());
}

/// Warp 0 consumes what lane 0 of warp 1 produces in shared memory, behind
/// an mbarrier (`WAIT` is the consumers' wait, pasted twice: the second
/// returns at once); the consumers come first in the scheduler's order, so
/// they must block for the producer to run.
std::string producerConsumer(const std::string &wait) {
  return R"(
.visible .entry pc(.param .u64 pc_out) {
  .reg .pred %p<4>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  .shared .align 8 .b64 bar;
  .shared .align 4 .b32 data[32];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra INIT_DONE;
  mbarrier.init.shared.b64 [bar], 1;
INIT_DONE:
  bar.sync 0;
  setp.lt.u32 %p2, %r1, 32;
  @%p2 bra CONSUMER;
  setp.ne.u32 %p3, %r1, 32;
  @%p3 bra END;
  mov.u32 %r2, 0;
FILL:
  shl.b32 %r3, %r2, 2;
  mov.u32 %r4, data;
  add.u32 %r5, %r4, %r3;
  mul.lo.u32 %r6, %r2, 3;
  st.shared.u32 [%r5], %r6;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p3, %r2, 32;
  @%p3 bra FILL;
  mbarrier.arrive.shared.b64 %rd1, [bar];
  bra.uni END;
CONSUMER:
)" + wait + wait + R"(
  shl.b32 %r3, %r1, 2;
  mov.u32 %r4, data;
  add.u32 %r5, %r4, %r3;
  ld.shared.u32 %r6, [%r5];
  ld.param.u64 %rd2, [pc_out];
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r6;
END:
  ret;
}
)";
}

/// NVPTX's spelling of a wait loop (GemmSm90.cpp's inline asm).
const char *kWaitParity0 = R"(
  {
  .reg .pred P1;
  LAB_WAIT:
  mbarrier.try_wait.parity.shared.b64 P1, [bar], 0, 10000000;
  @P1 bra.uni DONE;
  bra.uni LAB_WAIT;
  DONE:
  }
)";

std::string launchError(PtxModule &m, const std::string &kernel,
                        uint32_t threads, uint32_t dynShared,
                        const std::vector<uint64_t> &params, Memory &mem) {
  std::string err;
  CHECK(!m.launch(kernel, {1, 1, 1}, {threads, 1, 1}, dynShared, params, mem,
                  err));
  CHECK(err.find('\n') == std::string::npos);
  return err;
}

} // namespace

TEST_CASE("emulator sm_90a: a consumer blocked on an mbarrier lets the "
          "producer run",
          "[emulator][sm90]") {
  auto m = parseOk(producerConsumer(kWaitParity0));
  std::vector<uint32_t> out(32, 7);
  Memory mem;
  mem.add(out.data(), out.size() * 4);
  std::string err;
  bool ok = m->launch("pc", {1, 1, 1}, {64, 1, 1}, 0, {ptr(out)}, mem, err);
  INFO(err);
  REQUIRE(ok);
  for (uint32_t i = 0; i < 32; ++i)
    CHECK(out[i] == 3 * i);
}

TEST_CASE("emulator sm_90a: reading without the mbarrier wait is a race",
          "[emulator][sm90]") {
  auto m = parseOk(producerConsumer(""));
  std::vector<uint32_t> out(32);
  Memory mem;
  mem.add(out.data(), out.size() * 4);
  std::string err = launchError(*m, "pc", 64, 0, {ptr(out)}, mem);
  CHECK(err.find("shared-memory race: write of byte") != std::string::npos);
}

TEST_CASE("emulator sm_90a: mbarrier misuse fails the launch",
          "[emulator][sm90]") {
  std::vector<uint32_t> out(32);
  Memory mem;
  mem.add(out.data(), out.size() * 4);
  SECTION("a phase nothing completes is a deadlock, not a hang") {
    auto m = parseOk(R"(
.visible .entry k(.param .u64 k_out) {
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  .shared .align 8 .b64 bar;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SYNC;
  mbarrier.init.shared.b64 [bar], 2;
SYNC:
  bar.sync 0;
)" + std::string(kWaitParity0) + "  ret;\n}\n");
    std::string err = launchError(*m, "k", 32, 0, {ptr(out)}, mem);
    CHECK(err.find("deadlock: mbarrier wait on the mbarrier at shared 0x0 for "
                   "a phase nothing can complete (2 of 2 arrivals pending, "
                   "tx-count 0, 0 phase(s) completed; 32 thread(s) wait "
                   "here") != std::string::npos);
  }
  SECTION("use before mbarrier.init") {
    auto m = parseOk(R"(
.visible .entry k(.param .u64 k_out) {
  .shared .align 8 .b64 bar;
  mbarrier.arrive.shared.b64 _, [bar];
  ret;
}
)");
    CHECK(launchError(*m, "k", 1, 0, {ptr(out)}, mem)
              .find("the mbarrier at shared 0x0 is used before "
                    "mbarrier.init") != std::string::npos);
  }
  SECTION("more arrivals than the phase expects") {
    auto m = parseOk(R"(
.visible .entry k(.param .u64 k_out) {
  .shared .align 8 .b64 bar;
  mbarrier.init.shared.b64 [bar], 2;
  mbarrier.arrive.shared.b64 _, [bar], 3;
  ret;
}
)");
    CHECK(launchError(*m, "k", 1, 0, {ptr(out)}, mem)
              .find("3 arrival(s) where 2 of 2 remain") != std::string::npos);
  }
  SECTION("an arrive's state and expect_tx") {
    // Two arrivals and 16 expected bytes: the phase stays open until a
    // transaction completes them, which nothing here does, so the wait on
    // the arrive's state deadlocks with the count in the message.
    auto m = parseOk(R"(
.visible .entry k(.param .u64 k_out) {
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  .shared .align 8 .b64 bar;
  mbarrier.init.shared.b64 [bar], 2;
  mbarrier.expect_tx.shared.b64 [bar], 16;
  mbarrier.arrive.shared.b64 %rd1, [bar], 2;
WAIT:
  mbarrier.test_wait.shared.b64 %p1, [bar], %rd1;
  @!%p1 bra WAIT;
  ret;
}
)");
    CHECK(launchError(*m, "k", 1, 0, {ptr(out)}, mem)
              .find("(0 of 2 arrivals pending, tx-count 16, 0 phase(s)") !=
          std::string::npos);
  }
}

namespace {

const char *kTmaKernel = R"(
.extern .shared .align 1024 .b8 smem[];
.visible .entry tma(.param .u64 tma_map, .param .u64 tma_out,
                    .param .u32 tma_x, .param .u32 tma_y) {
  .reg .pred %p<2>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .shared .align 8 .b64 bar;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SYNC;
  mbarrier.init.shared.b64 [bar], 1;
  mbarrier.arrive.expect_tx.shared.b64 %rd1, [bar], 2048;
  ld.param.u64 %rd2, [tma_map];
  ld.param.u32 %r2, [tma_x];
  ld.param.u32 %r3, [tma_y];
  mov.u64 %rd3, smem;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%rd3], [%rd2, {%r2, %r3}], [bar];
SYNC:
  bar.sync 0;
  {
  .reg .pred P1;
  LAB_WAIT:
  mbarrier.try_wait.parity.shared.b64 P1, [bar], 0;
  @P1 bra.uni DONE;
  bra.uni LAB_WAIT;
  DONE:
  }
  shl.b32 %r4, %r1, 4;
  mov.u32 %r5, smem;
  add.u32 %r6, %r5, %r4;
  ld.shared.v4.b32 {%r7, %r8, %r9, %r10}, [%r6];
  ld.param.u64 %rd4, [tma_out];
  cvt.u64.u32 %rd5, %r4;
  add.s64 %rd6, %rd4, %rd5;
  st.global.v4.b32 [%rd6], {%r7, %r8, %r9, %r10};
  ret;
}
)";

} // namespace

TEST_CASE("emulator sm_90a: a TMA box past every edge, 128-byte swizzle",
          "[emulator][sm90][tma]") {
  // A 10 x 104 bf16 matrix; a 16-row x 64-column box at column 48, row -2:
  // rows -2, -1 and 10..13 and columns 104..111 lie outside and read 0.
  const uint32_t rows = 10, cols = 104;
  std::vector<uint16_t> g(rows * cols);
  for (uint32_t i = 0; i < g.size(); ++i)
    g[i] = uint16_t(i + 1);
  alignas(64) uint8_t map[kTensorMapBytes];
  uint64_t dims[2] = {cols, rows}, strides[1] = {cols * 2};
  uint32_t box[2] = {64, 16}, es[2] = {1, 1};
  REQUIRE(encodeTensorMapTiled(map, kTmaBfloat16, 2, g.data(), dims, strides,
                               box, es, kTmaInterleaveNone, kTmaSwizzle128B,
                               0, kTmaOobZero) == "");
  std::vector<uint16_t> out(16 * 64, 0xFFFF);
  Memory mem;
  mem.add(g.data(), g.size() * 2);
  mem.add(map, sizeof map);
  mem.add(out.data(), out.size() * 2);
  auto m = parseOk(kTmaKernel);
  auto u = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
  std::string err;
  bool ok = m->launch("tma", {1, 1, 1}, {128, 1, 1}, 2048,
                      {u(map), ptr(out), 48, uint64_t(uint32_t(-2))}, mem, err);
  INFO(err);
  REQUIRE(ok);
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t c = 0; c < 64; ++c) {
      int64_t gr = int64_t(r) - 2, gc = 48 + c;
      uint16_t want = gr >= 0 && gr < rows && gc < cols ? g[gr * cols + gc] : 0;
      uint32_t off = r * 128 + c * 2;
      off ^= ((off >> 7) & 7) << 4; // the 16-byte chunk moves within the row
      INFO("row " << r << " col " << c);
      CHECK(out[off / 2] == want);
    }

  SECTION("a buffer pointer where the tensor map belongs") {
    alignas(64) uint8_t raw[kTensorMapBytes] = {};
    mem.add(raw, sizeof raw);
    std::string e = launchError(*m, "tma", 128, 2048,
                                {u(raw), ptr(out), 0, 0}, mem);
    INFO(e);
    CHECK(e.find("cp.async.bulk.tensor: the tensor map at 0x") !=
          std::string::npos);
    CHECK(e.find("not an encoded tensor map") != std::string::npos);
  }
  SECTION("a destination outside shared memory") {
    std::string e = launchError(*m, "tma", 128, 1024,
                                {u(map), ptr(out), 48, 0}, mem);
    INFO(e);
    CHECK(e.find("out-of-bounds shared TMA store") != std::string::npos);
  }
}

TEST_CASE("emulator sm_90a: setmaxnreg", "[emulator][sm90]") {
  auto kernel = [](int n) {
    return ".visible .entry k() {\n  setmaxnreg.inc.sync.aligned.u32 " +
           std::to_string(n) + ";\n  ret;\n}\n";
  };
  Memory mem;
  std::string err;
  CHECK(parseOk(kernel(232))->launch("k", {1, 1, 1}, {256, 1, 1}, 0, {}, mem,
                                     err));
  CHECK(launchError(*parseOk(kernel(20)), "k", 128, 0, {}, mem)
            .find("setmaxnreg to 20 registers: it takes a multiple of 8 "
                  "from 24 to 256") != std::string::npos);
  CHECK(launchError(*parseOk(kernel(100)), "k", 128, 0, {}, mem)
            .find("setmaxnreg to 100") != std::string::npos);
  CHECK(launchError(*parseOk(kernel(232)), "k", 64, 0, {}, mem)
            .find("needs a whole warpgroup of 128 threads; this CTA has 64") !=
        std::string::npos);
  // Half the warpgroup skips it: .aligned is broken.
  auto half = parseOk(R"(
.visible .entry k() {
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 64;
  @%p1 bra END;
  setmaxnreg.dec.sync.aligned.u32 40;
END:
  ret;
}
)");
  CHECK(launchError(*half, "k", 128, 0, {}, mem)
            .find("of the warpgroup has exited") != std::string::npos);
}

TEST_CASE("emulator sm_90a: elect.sync elects the lowest member lane",
          "[emulator][sm90]") {
  auto m = parseOk(R"(
.visible .entry el(.param .u64 el_out) {
  .reg .pred %p<3>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p0, %r1, 4;
  @%p0 bra END;
  elect.sync %r2|%p1, 0xfffffff0;
  selp.u32 %r3, 1, 0, %p1;
  mad.lo.u32 %r4, %r2, 10, %r3;
  ld.param.u64 %rd1, [el_out];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r4;
END:
  ret;
}
)");
  std::vector<uint32_t> out(32, 0);
  Memory mem;
  mem.add(out.data(), out.size() * 4);
  std::string err;
  REQUIRE(m->launch("el", {1, 1, 1}, {32, 1, 1}, 0, {ptr(out)}, mem, err));
  for (uint32_t t = 0; t < 32; ++t)
    CHECK(out[t] == (t < 4 ? 0u : 40u + (t == 4)));
}

TEST_CASE("emulator sm_90a: parse errors", "[emulator][sm90]") {
  // Labels of a `{ }` block are its own: invisible outside it.
  CHECK(parseError(".visible .entry k() {\n  bra INNER;\n  {\n  INNER:\n"
                   "  ret;\n  }\n}\n") == "5:7: unknown label INNER");
  CHECK(parseError(".visible .entry k() {\n  cp.async.bulk.tensor.2d.shared::"
                   "cluster.global.im2col.mbarrier::complete_tx::bytes [%rd1],"
                   " [%rd2, {%r1, %r2}], [%rd3];\n}\n")
            .find("unsupported modifier '.im2col'") != std::string::npos);
  CHECK(parseError(".visible .entry k() {\n  wgmma.mma_async.sync.aligned."
                   "m64n8k16.f32.bf16.bf16 {%r1, %r2, %r3, %r4}, %rd1, %rd2, "
                   "1, 2, 1, 0, 0;\n}\n")
            .find("wgmma's imm-scale operands are 1 or -1") !=
        std::string::npos);
  CHECK(parseError(".visible .entry k() {\n  wgmma.mma_async.sync.aligned."
                   "m64n8k16.f32.bf16.bf16 {%r1, %r2}, %rd1, %rd2, 1, 1, 1, "
                   "0, 0;\n}\n")
            .find("wrong operands") != std::string::npos);
  CHECK(parseError(".visible .entry k() {\n  mbarrier.init.b64 [%r1], 1;\n}\n")
            .find("need the .shared state space") != std::string::npos);
}
