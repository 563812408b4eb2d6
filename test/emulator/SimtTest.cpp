//===- SimtTest.cpp - the PTX emulator on SIMT kernels and bad input ------===//
//
// Runs the kernels of ptx/simt.cu (compiled to ptx/simt.ptx by clang) on
// the emulator against C++ references: vector loads and grid-stride loops,
// warp-shuffle + shared-memory + bar.sync reductions, every atomic,
// divergence, votes and shuffles, integer/float arithmetic, conversions and
// approximate math. Then the faults: malformed PTX, an unknown instruction,
// out-of-bounds and misaligned accesses, a deadlock, a runaway loop.
//
//===----------------------------------------------------------------------===//
#include "PtxTestUtil.h"
#include "runtime/emulator/Emulator.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace tgrt::emu;

namespace {

std::string readPtx(const std::string &name) {
  const char *src = std::getenv("TGC_SOURCE_DIR");
  std::ifstream f(std::string(src ? src : ".") + "/test/emulator/ptx/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

PtxModule &simt() {
  static std::unique_ptr<PtxModule> m = [] {
    std::string err;
    auto p = PtxModule::parse(readPtx("simt.ptx"), err);
    INFO(err);
    REQUIRE(p);
    return p;
  }();
  return *m;
}

template <typename T> uint64_t ptr(std::vector<T> &v) {
  return reinterpret_cast<uint64_t>(v.data());
}
template <typename T> void add(Memory &m, std::vector<T> &v) {
  m.add(v.data(), v.size() * sizeof(T));
}
uint64_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float bf16Round(float x) { // round to nearest even, as cvt.rn.bf16.f32
  uint32_t b;
  std::memcpy(&b, &x, 4);
  b = (b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&x, &b, 4);
  return x;
}

} // namespace

TEST_CASE("emulator: float4 saxpy with a grid-stride loop and a tail") {
  const int n = 1027; // 256 float4s and a 3-element tail
  std::vector<float> x(n), y(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.25f * float(i % 17) - 1.0f;
    y[i] = float(i) * 0.5f;
    want[i] = std::fma(1.5f, x[i], y[i]);
  }
  Memory mem;
  add(mem, x);
  add(mem, y);
  std::string err;
  // 3 CTAs of 32 threads: each thread loops over several float4s.
  REQUIRE(simt().launch("saxpy4", {3, 1, 1}, {32, 1, 1}, 0,
                        {ptr(x), ptr(y), bitsOf(1.5f), uint64_t(n)}, mem,
                        err));
  INFO(err);
  CHECK(y == want);
  CHECK(simt().lastInstructionCount() > 256);
}

TEST_CASE("emulator: row sums and maxima with shuffles, shared memory and "
          "bar.sync") {
  const int rows = 5, cols = 300;
  std::vector<float> in(rows * cols), sums(rows), maxes(rows);
  for (int i = 0; i < rows * cols; ++i)
    in[i] = std::sin(float(i) * 0.37f) * 10.0f;
  Memory mem;
  add(mem, in);
  add(mem, sums);
  add(mem, maxes);
  std::string err;
  for (uint32_t threads : {32u, 96u, 256u}) {
    REQUIRE(simt().launch("rowReduce", {rows, 1, 1}, {threads, 1, 1}, 0,
                          {ptr(in), ptr(sums), ptr(maxes), uint64_t(cols)},
                          mem, err));
    for (int r = 0; r < rows; ++r) {
      double s = 0;
      float m = -INFINITY;
      for (int c = 0; c < cols; ++c) {
        s += in[r * cols + c];
        m = std::max(m, in[r * cols + c]);
      }
      CHECK(std::fabs(sums[r] - s) < 1e-3);
      CHECK(maxes[r] == m);
    }
  }
}

TEST_CASE("emulator: global atomics (add f32/u32/u64, max, min, cas, exch)") {
  const int n = 200;
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = (i * 37) % 101;
  std::vector<unsigned> hist(16), casCount(1), last(1, 12345);
  std::vector<float> fsum(1);
  std::vector<unsigned long long> usum(1);
  std::vector<int> imax(1, -1), imin(1, 1);
  Memory mem;
  add(mem, v);
  add(mem, hist);
  add(mem, fsum);
  add(mem, usum);
  add(mem, imax);
  add(mem, imin);
  add(mem, casCount);
  add(mem, last);
  std::string err;
  bool ok = simt().launch("atomics", {4, 1, 1}, {64, 1, 1}, 0,
                          {ptr(v), uint64_t(n), ptr(hist), ptr(fsum),
                           ptr(usum), ptr(imax), ptr(imin), ptr(casCount),
                           ptr(last)},
                          mem, err);
  INFO(err);
  REQUIRE(ok);
  std::vector<unsigned> wantHist(16);
  double wantF = 0;
  unsigned long long wantU = 0;
  for (int x : v) {
    ++wantHist[x & 15];
    wantF += 0.5 * x;
    wantU += (unsigned long long)x << 33;
  }
  CHECK(hist == wantHist);
  CHECK(fsum[0] == float(wantF)); // halves of integers: exact in any order
  CHECK(usum[0] == wantU);
  CHECK(imax[0] == 100);
  CHECK(imin[0] == -100);
  CHECK(casCount[0] == unsigned(n));
  CHECK(last[0] < unsigned(n)); // some thread's index
}

TEST_CASE("emulator: divergent loops meet at a barrier") {
  const uint32_t threads = 96;
  std::vector<int> out(2 * threads);
  Memory mem;
  add(mem, out);
  std::string err;
  REQUIRE(simt().launch("diverge", {2, 1, 1}, {threads, 1, 1}, 0, {ptr(out)},
                        mem, err));
  auto acc = [](int t) {
    int a = 0;
    if (t % 2 == 0)
      for (int i = 0; i < t; ++i)
        a += i * 3 - (i >> 1);
    else
      a = t % 3 == 0 ? -t : t * t;
    return a;
  };
  for (uint32_t b = 0; b < 2; ++b)
    for (uint32_t t = 0; t < threads; ++t)
      CHECK(out[b * threads + t] == acc((t + 1) % threads) - acc(t));
}

TEST_CASE("emulator: votes, ballots and shuffles (up, idx, xor in segments)") {
  std::vector<int> in(32);
  for (int i = 0; i < 32; ++i)
    in[i] = (i * 5) % 11 - 3;
  std::vector<unsigned> out(32 * 6);
  Memory mem;
  add(mem, in);
  add(mem, out);
  std::string err;
  REQUIRE(simt().launch("warpOps", {1, 1, 1}, {32, 1, 1}, 0,
                        {ptr(in), ptr(out)}, mem, err));
  unsigned ballot = 0;
  bool any = false;
  for (int i = 0; i < 32; ++i) {
    ballot |= unsigned(in[i] > 0) << i;
    any |= in[i] == 7;
  }
  for (int t = 0; t < 32; ++t) {
    CHECK(out[t * 6 + 0] == ballot);
    CHECK(out[t * 6 + 1] == 1u);
    CHECK(out[t * 6 + 2] == unsigned(any));
    CHECK(int(out[t * 6 + 3]) == in[t >= 3 ? t - 3 : t]);
    CHECK(int(out[t * 6 + 4]) == in[(t * 7) % 32]);
    CHECK(int(out[t * 6 + 5]) == in[t ^ 1]);
  }
}

TEST_CASE("emulator: integer and float arithmetic, conversions, approx math") {
  const int n = 64;
  std::vector<int> ia(n), iout(n * 12);
  std::vector<float> fa(n), fout(n * 8);
  std::vector<uint16_t> hout(n);
  for (int i = 0; i < n; ++i) {
    ia[i] = (i * 7919) % 2001 - 1000 + (i == 5 ? INT32_MIN / 2 : 0);
    fa[i] = float(i - 32) * 0.37f + (i == 9 ? NAN : 0.0f);
  }
  Memory mem;
  add(mem, ia);
  add(mem, iout);
  add(mem, fa);
  add(mem, fout);
  add(mem, hout);
  std::string err;
  REQUIRE(simt().launch("scalarOps", {2, 1, 1}, {40, 1, 1}, 0,
                        {ptr(ia), ptr(fa), ptr(iout), ptr(fout), ptr(hout),
                         uint64_t(n)},
                        mem, err));
  for (int i = 0; i < n; ++i) {
    INFO("element " << i);
    int a = ia[i], b = ia[(i + 1) % n] | 1;
    unsigned ua = unsigned(a), ub = unsigned(b);
    long long wide = (long long)a * b;
    const int *o = &iout[i * 12];
    CHECK(o[0] == a / b);
    CHECK(o[1] == a % b);
    CHECK(o[2] == int(ua / ub));
    CHECK(o[3] == a >> (b & 31));
    CHECK(o[4] == int(ua >> (b & 31)));
    CHECK(o[5] == int(wide >> 32));
    CHECK(o[6] == int((unsigned long long)ua * ub >> 32));
    CHECK(o[7] == __builtin_popcount(ua) + __builtin_clz(unsigned(a) | 1) * 64);
    CHECK(o[8] == ((a & 0xff0) >> 4 | int(unsigned(b) << 12)));
    CHECK(o[9] == int(unsigned(a < b ? a : b) * 3u + (ua > ub ? ua : ub)));
    float x = fa[i], y = fa[(i + 1) % n];
    CHECK(o[10] == (std::isnan(x) ? 0 : int(x)));
    CHECK(o[11] == int((unsigned char)(signed char)a));
    const float *f = &fout[i * 8];
    auto same = [](float got, float want, float tol) {
      if (std::isnan(want))
        return std::isnan(got);
      return std::fabs(got - want) <= tol * (1 + std::fabs(want));
    };
    CHECK(same(f[0], x * y + x / (y + 3.5f), 1e-6f));
    CHECK(same(f[1], std::fmax(x, y) - std::fmin(x, y) + std::fabs(x), 0));
    CHECK(same(f[2], std::exp2(x * 0.25f), 1e-6f));
    CHECK(same(f[3], std::tanh(y), 1e-6f));
    CHECK(same(f[4], std::sqrt(std::fabs(x)) + float(a), 1e-6f));
    CHECK(same(f[5], x < y ? x : (x != x ? 1.f : y), 0));
    CHECK(same(f[6], bf16Round(x * 3.f), 0));
    uint32_t packed;
    std::memcpy(&packed, &f[7], 4);
    float hi = bf16Round(x), lo = bf16Round(y);
    uint32_t hb, lb;
    std::memcpy(&hb, &hi, 4);
    std::memcpy(&lb, &lo, 4);
    if (!std::isnan(x) && !std::isnan(y))
      CHECK(packed == ((hb & 0xffff0000u) | (lb >> 16)));
    // cvt.rz.f16.f32: truncation towards zero to 11 significant bits.
    float v = y * 1000.f;
    uint16_t h = hout[i];
    if (!std::isnan(v)) {
      int e = ((h >> 10) & 31) - 15;
      float mag = std::ldexp(float(1024 + (h & 1023)), e - 10);
      if (((h >> 10) & 31) == 0)
        mag = std::ldexp(float(h & 1023), -24);
      float got = (h & 0x8000) ? -mag : mag;
      CHECK(std::fabs(got) <= std::fabs(v));
      CHECK(std::fabs(v - got) < std::ldexp(1.0f, e - 10) + 1e-30f);
    }
  }
}

// ---------------------------------------------------------------------------
// Faults

using ptxtest::kHeader;
using ptxtest::parseError;
using ptxtest::parseOk;

TEST_CASE("emulator: malformed PTX is a line:col error") {
  CHECK(parseError(std::string(kHeader) + ".visible .entry k(\n"
                                          "  .param .u64 k_p0\n) {\n"
                                          "  mov.u32 %r1, ;\n}\n") ==
        "7:16: expected an identifier, found ';'");
  CHECK(parseError(std::string(kHeader) + ".visible .entry k() {\n"
                                          "  bra $L__missing;\n}\n") ==
        "5:7: unknown label $L__missing");
  CHECK(parseError(std::string(kHeader) + ".visible .entry k() {\n"
                                          "  add.s32 %r1, %r2;\n}\n") ==
        "5:3: wrong operands for 'add.s32'");
  CHECK(parseError(std::string(kHeader) + ".visible .entry k() {\n"
                                          "  ret;\n") ==
        "6:1: unterminated body of k");
  CHECK(parseError(kHeader) == "1:1: no .entry kernel in the PTX");
  CHECK(parseError("garbage") == "1:1: unexpected 'garbage' at module scope");
}

TEST_CASE("emulator: an unknown instruction or modifier is named") {
  CHECK(parseError(std::string(kHeader) + ".visible .entry k() {\n"
                                          "  frobnicate.b32 %r1, %r2;\n}\n") ==
        "5:3: unsupported instruction 'frobnicate.b32'");
  CHECK(parseError(std::string(kHeader) + ".visible .entry k() {\n"
                                          "  add.cc.u32 %r1, %r2, %r3;\n}\n") ==
        "5:3: unsupported modifier '.cc' in 'add.cc.u32'");
  CHECK(parseError(std::string(kHeader) +
                   ".visible .entry k() {\n"
                   "  call.uni (retval0), f, (param0);\n}\n")
            .find("5:3: unsupported instruction 'call'") == 0);
}

TEST_CASE("emulator: out-of-bounds and misaligned global accesses fail") {
  const int n = 100;
  std::vector<float> x(n), y(n);
  Memory mem;
  add(mem, x);
  mem.add(y.data(), (n - 8) * sizeof(float)); // y registered short
  std::string err;
  CHECK(!simt().launch("saxpy4", {1, 1, 1}, {32, 1, 1}, 0,
                       {ptr(x), ptr(y), bitsOf(2.0f), uint64_t(n)}, mem, err));
  CHECK(err.find("kernel saxpy4: line ") == 0);
  CHECK(err.find("out-of-bounds global load of 16 bytes at 0x") !=
        std::string::npos);
  CHECK(err.find("thread (23,0,0) of CTA (0,0,0)") != std::string::npos);
  // A float4 access at an address that is not 16-byte aligned.
  mem.add(y.data(), n * sizeof(float));
  CHECK(!simt().launch("saxpy4", {1, 1, 1}, {32, 1, 1}, 0,
                       {ptr(x) + 4, ptr(y), bitsOf(2.0f), uint64_t(n - 4)},
                       mem, err));
  CHECK(err.find("misaligned load of 16 bytes") != std::string::npos);
  // Unregistered memory.
  Memory empty;
  CHECK(!simt().launch("saxpy4", {1, 1, 1}, {32, 1, 1}, 0,
                       {ptr(x), ptr(y), bitsOf(2.0f), uint64_t(n)}, empty,
                       err));
  CHECK(err.find("out-of-bounds global") != std::string::npos);
}

TEST_CASE("emulator: threads waiting at two different barriers deadlock") {
  std::vector<int> out(64);
  Memory mem;
  add(mem, out);
  std::string err;
  CHECK(!simt().launch("halfBarrier", {1, 1, 1}, {64, 1, 1}, 0, {ptr(out)},
                       mem, err));
  INFO(err);
  CHECK(err.find("kernel halfBarrier: line ") == 0);
  CHECK(err.find("deadlock: bar.sync waits for the CTA (32 thread(s) arrived "
                 "here, 0 exited, of 64)") != std::string::npos);
}

TEST_CASE("emulator: exited threads do not hold up a barrier") {
  std::vector<int> out(64);
  Memory mem;
  add(mem, out);
  std::string err;
  bool ok = simt().launch("halfExit", {1, 1, 1}, {64, 1, 1}, 0, {ptr(out)},
                          mem, err);
  INFO(err);
  REQUIRE(ok);
  for (int t = 0; t < 64; ++t)
    CHECK(out[t] == (t < 32 ? 2 : 0));
}

TEST_CASE("emulator: a runaway loop exhausts the instruction budget") {
  std::vector<int> flag(1, 1), out(1);
  Memory mem;
  add(mem, flag);
  add(mem, out);
  std::string err;
  simt().setInstructionBudget(100000);
  CHECK(!simt().launch("spin", {1, 1, 1}, {1, 1, 1}, 0, {ptr(flag), ptr(out)},
                       mem, err));
  CHECK(err.find("instruction budget of 100000 exhausted") !=
        std::string::npos);
  flag[0] = 0;
  CHECK(simt().launch("spin", {1, 1, 1}, {1, 1, 1}, 0, {ptr(flag), ptr(out)},
                      mem, err));
  CHECK(out[0] == 0);
  simt().setInstructionBudget(uint64_t(1) << 33);
}

TEST_CASE("emulator: launch arguments are checked") {
  std::string err;
  Memory mem;
  CHECK(!simt().launch("nope", {1, 1, 1}, {1, 1, 1}, 0, {}, mem, err));
  CHECK(err == "no kernel named nope in the PTX module");
  CHECK(!simt().launch("spin", {1, 1, 1}, {1, 1, 1}, 0, {0}, mem, err));
  CHECK(err == "kernel spin takes 2 parameters, given 1");
  CHECK(!simt().launch("spin", {1, 1, 1}, {2048, 1, 1}, 0, {0, 0}, mem, err));
  CHECK(err.find("bad block size") != std::string::npos);
  CHECK(!simt().launch("spin", {1, 1, 1}, {1, 1, 1}, 300000, {0, 0}, mem,
                       err));
  CHECK(err.find("bytes of shared memory") != std::string::npos);
}

TEST_CASE("emulator: hand-written PTX: dynamic shared memory, shared "
          "bounds, cvta, predicated code") {
  // Each thread stores tid*2 into the extern shared array through a generic
  // pointer, then thread 0 sums them; a thread past the dynamic size faults.
  auto m = parseOk(R"(
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 out) {
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 1;
  mov.u64 %rd2, dyn;
  cvta.shared.u64 %rd3, %rd2;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  st.u32 [%rd5], %r2;
  bar.sync 0;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $L_done;
  mov.u32 %r3, 0;
  mov.u32 %r4, 0;
$L_loop:
  mul.wide.u32 %rd6, %r4, 4;
  add.s64 %rd7, %rd2, %rd6;
  ld.shared.u32 %r5, [%rd7];
  add.s32 %r3, %r3, %r5;
  add.s32 %r4, %r4, 1;
  mov.u32 %r6, %ntid.x;
  setp.lt.u32 %p2, %r4, %r6;
  @%p2 bra $L_loop;
  st.global.u32 [%rd1], %r3;
$L_done:
  ret;
}
)");
  std::vector<uint32_t> out(1);
  Memory mem;
  add(mem, out);
  std::string err;
  REQUIRE(m->launch("k", {1, 1, 1}, {40, 1, 1}, 160,
                    {reinterpret_cast<uint64_t>(out.data())}, mem, err));
  CHECK(out[0] == 40u * 39u);
  CHECK(!m->launch("k", {1, 1, 1}, {40, 1, 1}, 128,
                   {reinterpret_cast<uint64_t>(out.data())}, mem, err));
  CHECK(err.find("out-of-bounds shared store of 4 bytes at 0x80") !=
        std::string::npos);
}

TEST_CASE("emulator: interprets tens of millions of instructions a second") {
  // A grid-stride saxpy over 1M floats (Release builds; a loose floor so a
  // loaded machine does not fail it, the number is printed).
  const int n = 1 << 20;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  Memory mem;
  add(mem, x);
  add(mem, y);
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(simt().launch("saxpy4", {64, 1, 1}, {256, 1, 1}, 0,
                        {ptr(x), ptr(y), bitsOf(3.0f), uint64_t(n)}, mem,
                        err));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           t0)
                 .count();
  double rate = double(simt().lastInstructionCount()) / s;
  WARN("emulator: " << simt().lastInstructionCount() << " instructions in "
                    << s << " s = " << rate / 1e6 << " M/s");
  CHECK(y[12345] == 5.0f);
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  return; // instrumented: the rate says nothing about the emulator
#endif
#endif
  CHECK(rate > 2e6);
}

TEST_CASE("emulator: the fuzzer's seeds parse, and the mma seed runs") {
  const char *src = std::getenv("TGC_SOURCE_DIR");
  std::string dir = std::string(src ? src : ".") + "/runtime/emulator/fuzz-seeds/";
  for (const char *name : {"atomics", "diverge", "halfBarrier", "halfExit", "mma",
                           "rowReduce", "saxpy4", "scalarOps", "sm90", "spin",
                           "warpOps"}) {
    std::ifstream f(dir + name + ".ptx");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string err;
    INFO(name << ": " << err);
    CHECK(PtxModule::parse(ss.str(), err));
  }
  std::ifstream f(dir + "mma.ptx");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string err;
  auto m = PtxModule::parse(ss.str(), err);
  REQUIRE(m);
  std::vector<uint32_t> buf(256, 0x3f803f80u); // bf16 ones
  Memory mem;
  add(mem, buf);
  bool ok = m->launch("mma", {1, 1, 1}, {32, 1, 1}, 1024,
                      {ptr(buf), 16}, mem, err);
  INFO(err);
  REQUIRE(ok);
  // Lanes 0..15 copy ones into shared bytes 0..255, lanes 16..31 zero-fill
  // 256..511: A has ones in columns 0..7, B in rows 0..7, so every output
  // is 8; each lane stores bf16x2(tanh(8 + 8) = 1.0, 8.0).
  for (int i = 0; i < 32; ++i)
    CHECK(buf[i] == 0x3f804100u);
  CHECK(m->numParams("mma") == 2);
  CHECK(m->numParams("nope") == -1);
}

TEST_CASE("emulator: shared-memory races are reported, synchronised "
          "accesses are not") {
  // Each thread writes its word, then reads its neighbour's: racy unless a
  // barrier (CTA) or a warp collective (one warp) separates the two.
  auto kernel = [](const char *sync) {
    return std::string(R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out) {
  .shared .align 4 .b8 sm[512];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, sm;
  shl.b32 %r3, %r1, 2;
  add.s32 %r4, %r2, %r3;
  st.shared.u32 [%r4], %r1;
  )") + sync + R"(
  add.s32 %r5, %r1, 1;
  mov.u32 %r9, %ntid.x;
  rem.u32 %r6, %r5, %r9;
  shl.b32 %r7, %r6, 2;
  add.s32 %r8, %r2, %r7;
  ld.shared.u32 %r10, [%r8];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r10;
  ret;
}
)";
  };
  std::vector<uint32_t> out(64);
  Memory mem;
  add(mem, out);
  std::string err;
  auto racy = PtxModule::parse(kernel(""), err);
  REQUIRE(racy);
  CHECK(!racy->launch("k", {1, 1, 1}, {64, 1, 1}, 0, {ptr(out)}, mem, err));
  CHECK(err.find("shared-memory race: write of byte 0x4, which thread "
                 "(0,0,0) read with no barrier between") != std::string::npos);
  CHECK(err.find("thread (1,0,0)") != std::string::npos);
  // Off, the race goes unnoticed (and thread 0 reads a stale 0).
  racy->setRaceCheck(false);
  CHECK(racy->launch("k", {1, 1, 1}, {64, 1, 1}, 0, {ptr(out)}, mem, err));
  CHECK(out[0] == 0);
  // A CTA barrier orders them.
  auto bar = PtxModule::parse(kernel("bar.sync 0;"), err);
  REQUIRE(bar);
  bool ok = bar->launch("k", {1, 1, 1}, {64, 1, 1}, 0, {ptr(out)}, mem, err);
  INFO(err);
  CHECK(ok);
  for (uint32_t t = 0; t < 64; ++t)
    CHECK(out[t] == (t + 1) % 64);
  // A warp collective orders the lanes of one warp, not two warps.
  auto warp = PtxModule::parse(kernel("bar.warp.sync -1;"), err);
  REQUIRE(warp);
  CHECK(warp->launch("k", {1, 1, 1}, {32, 1, 1}, 0, {ptr(out)}, mem, err));
  CHECK(!warp->launch("k", {1, 1, 1}, {64, 1, 1}, 0, {ptr(out)}, mem, err));
  INFO(err);
  CHECK(err.find("shared-memory race: read of byte 0x80, which thread "
                 "(32,0,0) wrote at line 11") != std::string::npos);
}
