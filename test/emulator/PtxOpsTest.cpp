//===- PtxOpsTest.cpp - the emulator's instructions one by one ------------===//
//
// Table tests of single instructions in hand-written PTX: each case is a
// few lines run in a fixed kernel frame (inputs x0..x2 as b64, their low
// 32/16 bits as a32/a16..., results y0..y2 stored) and compared with values
// computed here independently: every setp comparison including the
// unordered ones and NaN, cvt in every rounding mode (checked by the
// defining property of the mode, not by a second implementation), integer
// corner cases, f64, sign-extending loads from local memory, shared
// atomics, red, votes.
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Emulator.h"
#include "tgc/DType.h"

#include <catch2/catch.hpp>

#include <array>
#include <climits>
#include <cmath>
#include <cstring>

using namespace tgrt::emu;

namespace {

uint64_t f32(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float asF32(uint64_t v) {
  uint32_t b = uint32_t(v);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint64_t f64(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
double asF64(uint64_t v) {
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}

/// Runs `body` in a kernel frame over `threads` threads; returns y0..y2 and
/// out[3] (which the body may update through %out) of every thread.
std::vector<std::array<uint64_t, 4>> runBody(const std::string &body,
                                             std::array<uint64_t, 3> x,
                                             uint32_t threads = 1,
                                             uint64_t out3 = 0) {
  std::string ptx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry t(.param .u64 pin, .param .u64 pout) {
  .local .align 8 .b8 depot[16];
  .shared .align 8 .b8 sm[256];
  ld.param.u64 %in, [pin];
  ld.param.u64 %out0, [pout];
  mov.u32 %tid, %tid.x;
  mul.wide.u32 %off, %tid, 32;
  add.s64 %out, %out0, %off;
  ld.global.u64 %x0, [%in];
  ld.global.u64 %x1, [%in+8];
  ld.global.u64 %x2, [%in+16];
  cvt.u32.u64 %a32, %x0;
  cvt.u32.u64 %b32, %x1;
  cvt.u32.u64 %c32, %x2;
  cvt.u16.u64 %a16, %x0;
  cvt.u16.u64 %b16, %x1;
  mov.u64 %y0, 0;
  mov.u64 %y1, 0;
  mov.u64 %y2, 0;
)" + body + R"(
  st.global.u64 [%out], %y0;
  st.global.u64 [%out+8], %y1;
  st.global.u64 [%out+16], %y2;
  ret;
}
)";
  std::string err;
  auto m = PtxModule::parse(ptx, err);
  INFO(body);
  INFO(err);
  REQUIRE(m);
  std::vector<uint64_t> in(x.begin(), x.end());
  std::vector<std::array<uint64_t, 4>> out(threads, {0, 0, 0, out3});
  Memory mem;
  mem.add(in.data(), in.size() * 8);
  mem.add(out.data(), out.size() * 32);
  bool ok = m->launch("t", {1, 1, 1}, {threads, 1, 1}, 0,
                      {reinterpret_cast<uint64_t>(in.data()),
                       reinterpret_cast<uint64_t>(out.data())},
                      mem, err);
  INFO(err);
  REQUIRE(ok);
  return out;
}

std::array<uint64_t, 4> run1(const std::string &body,
                             std::array<uint64_t, 3> x, uint64_t out3 = 0) {
  return runBody(body, x, 1, out3)[0];
}

} // namespace

TEST_CASE("emulator ops: every setp comparison on floats, NaN included") {
  const char *names[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",
                         "equ", "neu", "ltu", "leu", "gtu", "geu",
                         "num", "nan"};
  const float pairs[][2] = {{1, 2}, {2, 1}, {1, 1}, {NAN, 1}, {1, NAN},
                            {-0.0f, 0.0f}, {-INFINITY, 3}};
  for (int c = 0; c < 14; ++c)
    for (auto &pr : pairs) {
      float a = pr[0], b = pr[1];
      bool un = std::isnan(a) || std::isnan(b);
      bool ord[] = {a == b, a != b, a < b, a <= b, a > b, a >= b};
      bool want = c < 6    ? !un && ord[c]
                  : c < 12 ? un || ord[c - 6] || (c == 7 && !un && a != b)
                  : c == 12 ? !un
                            : un;
      std::string n = names[c];
      auto y = run1("  setp." + n + ".f32 %p1, %a32, %b32;\n"
                    "  selp.u64 %y0, 1, 0, %p1;\n"
                    "  setp." + n + ".f64 %p2, %x0, %x1;\n"
                    "  selp.u64 %y1, 1, 0, %p2;\n",
                    {f32(a) | (f64(a) & 0), f32(b), 0});
      INFO(n << " " << a << " " << b);
      CHECK(y[0] == uint64_t(want));
      // f64 form on the same values.
      auto z = run1("  setp." + n + ".f64 %p2, %x0, %x1;\n"
                    "  selp.u64 %y1, 1, 0, %p2;\n",
                    {f64(a), f64(b), 0});
      CHECK(z[1] == uint64_t(want));
    }
}

TEST_CASE("emulator ops: integer comparisons, predicate logic, two results") {
  auto y = run1("  setp.lt.s32 %p1, %a32, %b32;\n"
                "  selp.u64 %y0, 1, 0, %p1;\n"
                "  setp.lt.u32 %p2, %a32, %b32;\n"
                "  selp.u64 %y1, 1, 0, %p2;\n"
                "  setp.hs.u32 %p3|%p4, %a32, %b32;\n"
                "  and.pred %p5, %p3, %p1;\n"
                "  setp.ne.s32.or %p6, %a32, %a32, !%p5;\n"
                "  not.pred %p7, %p6;\n"
                "  selp.u64 %y2, 2, 0, %p4;\n"
                "  @!%p7 add.u64 %y2, %y2, 1;\n",
                {uint64_t(uint32_t(-1)), 1, 0});
  CHECK(y[0] == 1); // -1 < 1 signed
  CHECK(y[1] == 0); // 0xffffffff > 1 unsigned
  // hs: p3 = true, p4 = !p3 = false; p5 = p3 && p1 = true; p6 = false ||
  // !p5 = false; p7 = true, so the guarded add does not run.
  CHECK(y[2] == 0);
}

TEST_CASE("emulator ops: cvt to f16 and bf16 in every rounding mode") {
  const float xs[] = {1.0f, -1.5f, 0.1f, -0.1f, 65504.0f, 65520.0f, 1e5f,
                      -1e5f, 1e-6f, -1e-8f, 5.960464e-8f, 3e38f,
                      1.00048828125f, 1.00146484375f, -0.0f, 0.33333334f,
                      INFINITY, -INFINITY, 1.0039062f, -2.0117188f};
  const char *modes[] = {"rn", "rz", "rm", "rp"};
  for (float x : xs)
    for (int bf = 0; bf < 2; ++bf)
      for (int md = 0; md < 4; ++md) {
        std::string ty = bf ? "bf16" : "f16";
        auto y = run1(std::string("  cvt.") + modes[md] + "." + ty +
                          ".f32 %h1, %a32;\n  cvt.u64.u16 %y0, %h1;\n",
                      {f32(x), 0, 0});
        uint16_t h = uint16_t(y[0]);
        auto value = [&](uint16_t b) {
          return bf ? double(tgc::bf16ToFloat(b)) : double(tgc::halfToFloat(b));
        };
        INFO(ty << " " << modes[md] << " of " << x << " gave 0x" << std::hex
                << h);
        double v = value(h);
        if (md == 0) {
          CHECK(h == (bf ? tgc::floatToBf16(x) : tgc::floatToHalf(x)));
          continue;
        }
        // The neighbours of |v| on the format's grid.
        uint16_t mag = h & 0x7fff;
        double up = value(uint16_t(mag + 1)), down =
                                                 mag ? value(uint16_t(mag - 1))
                                                     : 0.0;
        double ax = std::fabs(double(x)), av = std::fabs(v);
        bool towardZero = md == 1 || (md == 2 && x > 0) || (md == 3 && x < 0);
        if (x != 0)
          CHECK(std::signbit(v) == std::signbit(x));
        if (std::isinf(x)) { // exact in every format and mode
          CHECK(v == double(x));
          continue;
        }
        if (towardZero) {
          CHECK(av <= ax);
          CHECK(up > ax);
        } else {
          CHECK(av >= ax);
          CHECK((mag == 0 || down < ax));
        }
      }
}

TEST_CASE("emulator ops: float to integer conversions round and saturate") {
  const float xs[] = {2.5f, -2.5f, 3.5f, -0.7f, 1e10f, -1e10f, NAN, 127.9f,
                      -300.2f, 4294967040.0f};
  for (float x : xs) {
    auto y = run1("  cvt.rni.s32.f32 %r1, %a32;\n"
                  "  cvt.rzi.s32.f32 %r2, %a32;\n"
                  "  cvt.rmi.s32.f32 %r3, %a32;\n"
                  "  cvt.rpi.s32.f32 %r4, %a32;\n"
                  "  mov.b64 %y0, {%r1, %r2};\n"
                  "  mov.b64 %y1, {%r3, %r4};\n"
                  "  cvt.rzi.u32.f32 %r5, %a32;\n"
                  "  cvt.rzi.s8.f32 %h2, %a32;\n"
                  "  cvt.s32.s8 %r6, %h2;\n"
                  "  mov.b64 %y2, {%r5, %r6};\n",
                  {f32(x), 0, 0});
    auto sat = [&](double v, double lo, double hi) -> int64_t {
      if (std::isnan(v))
        return 0;
      return int64_t(std::min(std::max(v, lo), hi));
    };
    INFO(x);
    double s32lo = INT32_MIN, s32hi = INT32_MAX;
    CHECK(int32_t(y[0]) == sat(std::nearbyint(x), s32lo, s32hi));
    CHECK(int32_t(y[0] >> 32) == sat(std::trunc(x), s32lo, s32hi));
    CHECK(int32_t(y[1]) == sat(std::floor(x), s32lo, s32hi));
    CHECK(int32_t(y[1] >> 32) == sat(std::ceil(x), s32lo, s32hi));
    CHECK(uint32_t(y[2]) == uint32_t(sat(std::trunc(x), 0, UINT32_MAX)));
    CHECK(int32_t(y[2] >> 32) == sat(std::trunc(x), -128, 127));
  }
}

TEST_CASE("emulator ops: integer conversions, f32/f64 conversions, .sat") {
  auto y = run1("  cvt.s64.s16 %y0, %a16;\n"
                "  cvt.sat.u8.s32 %h1, %b32;\n"
                "  cvt.u64.u16 %y1, %h1;\n"
                "  cvt.rn.f64.s32 %d1, %b32;\n"
                "  cvt.rz.f32.f64 %r1, %x2;\n"
                "  cvt.f64.f32 %d2, %r1;\n"
                "  sub.f64 %d3, %x2, %d2;\n"
                "  mov.b64 %y2, %d3;\n"
                "  cvt.sat.f32.f32 %r2, %d1;\n",
                {0xfff0, uint64_t(uint32_t(-5)), f64(1.0 / 3.0)});
  CHECK(int64_t(y[0]) == -16);
  CHECK(y[1] == 0); // -5 saturated to u8
  // rz of 1/3 to f32 is below 1/3: the difference is positive and tiny.
  CHECK(asF64(y[2]) > 0);
  CHECK(asF64(y[2]) < 3e-8);
  float third = asF32(f32(float(1.0 / 3.0)));
  CHECK(std::nextafter(third, 0.0f) + asF64(y[2]) == Approx(1.0 / 3.0));
}

TEST_CASE("emulator ops: integer arithmetic corner cases") {
  auto y = run1("  div.s32 %r1, %a32, 0;\n"
                "  div.s32 %r2, %b32, -1;\n"
                "  mov.b64 %y0, {%r1, %r2};\n"
                "  rem.s32 %r3, %c32, 7;\n"
                "  add.sat.s32 %r4, %b32, %b32;\n"
                "  mov.b64 %y1, {%r3, %r4};\n"
                "  mul.hi.u64 %y2, %x0, %x0;\n",
                {~uint64_t(0), uint64_t(uint32_t(INT32_MIN)),
                 uint64_t(uint32_t(-23))});
  CHECK(uint32_t(y[0]) == 0xffffffffu);          // undefined: all ones
  CHECK(int32_t(y[0] >> 32) == INT32_MIN);       // wraps, no trap
  CHECK(int32_t(y[1]) == -23 % 7);
  CHECK(int32_t(y[1] >> 32) == INT32_MIN);       // saturated
  CHECK(y[2] == ~uint64_t(0) - 1);               // (2^64-1)^2 >> 64
  auto z = run1("  mul.wide.s32 %y0, %a32, %b32;\n"
                "  mad.wide.u32 %y1, %a32, %b32, %x2;\n"
                "  mul.hi.s32 %r1, %a32, %b32;\n"
                "  mul.lo.s32 %r2, %a32, %b32;\n"
                "  mov.b64 %y2, {%r2, %r1};\n",
                {uint64_t(uint32_t(-70000)), 90000, 5});
  CHECK(int64_t(z[0]) == -70000LL * 90000);
  CHECK(z[1] == uint64_t(uint32_t(-70000)) * 90000 + 5);
  CHECK(int64_t(z[2]) == -70000LL * 90000);
  auto s = run1("  shr.s32 %r1, %a32, 40;\n"
                "  shl.b32 %r2, %a32, 33;\n"
                "  mov.b64 %y0, {%r1, %r2};\n"
                "  shr.u64 %y1, %x0, 63;\n"
                "  min.u16 %h1, %a16, %b16;\n"
                "  max.s16 %h2, %a16, %b16;\n"
                "  mov.b32 %r3, {%h1, %h2};\n"
                "  cvt.u64.u32 %y2, %r3;\n",
                {uint64_t(0x80000000u) | (uint64_t(1) << 63), 7, 0});
  CHECK(uint32_t(s[0]) == 0xffffffffu);
  CHECK(uint32_t(s[0] >> 32) == 0);
  CHECK(s[1] == 1);
  CHECK(uint16_t(s[2]) == 0);       // min.u16(0, 7)
  CHECK(uint16_t(s[2] >> 16) == 7); // max.s16(0, 7)
}

TEST_CASE("emulator ops: bit manipulation") {
  auto y = run1("  bfe.u32 %r1, %a32, 4, 8;\n"
                "  bfe.s32 %r2, %a32, 28, 8;\n"
                "  mov.b64 %y0, {%r1, %r2};\n"
                "  bfi.b32 %r3, %b32, %a32, 8, 4;\n"
                "  prmt.b32 %r4, %a32, %b32, 0x7340;\n"
                "  mov.b64 %y1, {%r3, %r4};\n"
                "  brev.b32 %r5, %b32;\n"
                "  lop3.b32 %r6, %a32, %b32, %c32, 0x96;\n"
                "  mov.b64 %y2, {%r5, %r6};\n"
                "  popc.b64 %r7, %x0;\n"
                "  clz.b64 %r8, %x1;\n"
                "  mov.b64 {%r9, %r10}, %x0;\n"
                "  add.u32 %r11, %r7, %r8;\n"
                "  mad.lo.u32 %r12, %r11, 1000, %r10;\n"
                "  cvt.u64.u32 %x3, %r12;\n"
                "  st.global.u64 [%out+24], %x3;\n",
                {0xF2345678u, 0xABCD0005u, 0x0F0F0F0Fu});
  uint32_t a = 0xF2345678u, b = 0xABCD0005u, c = 0x0F0F0F0Fu;
  CHECK(uint32_t(y[0]) == ((a >> 4) & 0xff));
  CHECK(int32_t(y[0] >> 32) == int32_t(0xFFFFFFFFu)); // 0xF sign-extended
  CHECK(uint32_t(y[1]) == ((a & ~0xF00u) | ((b & 0xF) << 8)));
  // prmt selectors (low to high): 0 -> a.b0, 4 -> b.b0, 3 -> a.b3, 7 -> b.b3
  CHECK(uint32_t(y[1] >> 32) == (0x78u | (0x05u << 8) | (0xF2u << 16) |
                                 (0xABu << 24)));
  uint32_t rb = 0;
  for (int i = 0; i < 32; ++i)
    rb |= ((b >> i) & 1) << (31 - i);
  CHECK(uint32_t(y[2]) == rb);
  CHECK(uint32_t(y[2] >> 32) == (a ^ b ^ c));
}

TEST_CASE("emulator ops: f32 rounding modes, ftz, min/max with NaN, f64") {
  float one = 1.0f, tiny = std::ldexp(1.0f, -30);
  auto y = run1("  add.rz.f32 %r1, %a32, %b32;\n"
                "  add.rp.f32 %r2, %a32, %b32;\n"
                "  mov.b64 %y0, {%r1, %r2};\n"
                "  add.ftz.f32 %r3, %c32, 0f00000000;\n"
                "  min.f32 %r4, %a32, 0f7FC00000;\n"
                "  mov.b64 %y1, {%r3, %r4};\n"
                "  max.NaN.f32 %r5, %a32, 0f7FC00000;\n"
                "  sqrt.rn.f32 %r6, %b32;\n"
                "  mov.b64 %y2, {%r5, %r6};\n",
                {f32(one), f32(tiny), f32(std::ldexp(1.0f, -140))});
  CHECK(asF32(y[0]) == 1.0f);
  CHECK(asF32(y[0] >> 32) == std::nextafter(1.0f, 2.0f));
  CHECK(asF32(y[1]) == 0.0f); // subnormal input flushed
  CHECK(asF32(y[1] >> 32) == 1.0f);
  CHECK(std::isnan(asF32(y[2])));
  CHECK(asF32(y[2] >> 32) == std::ldexp(1.0f, -15));
  auto d = run1("  fma.rn.f64 %y0, %x0, %x1, %x2;\n"
                "  div.rn.f64 %y1, %x0, %x1;\n"
                "  neg.f64 %d1, %x2;\n"
                "  sqrt.rn.f64 %d2, %x1;\n"
                "  add.f64 %y2, %d1, %d2;\n",
                {f64(1.0 / 3.0), f64(3.0), f64(-1.0)});
  CHECK(asF64(d[0]) == std::fma(1.0 / 3.0, 3.0, -1.0));
  CHECK(asF64(d[1]) == (1.0 / 3.0) / 3.0);
  CHECK(asF64(d[2]) == 1.0 + std::sqrt(3.0));
}

TEST_CASE("emulator ops: local memory, sign-extending loads, generic "
          "addresses") {
  auto y = run1("  mov.u64 %l, depot;\n"
                "  st.local.b8 [%l], %a16;\n"
                "  ld.local.s8 %r1, [%l];\n"
                "  ld.local.u8 %r2, [%l];\n"
                "  mov.b64 %y0, {%r1, %r2};\n"
                "  cvta.local.u64 %g, %l;\n"
                "  st.u64 [%g+8], %x1;\n"
                "  ld.local.s16 %h3, [depot+8];\n"
                "  cvt.s64.s16 %y1, %h3;\n"
                "  ld.u64 %y2, [%g+8];\n",
                {0x80, 0xfffe, 0});
  CHECK(int32_t(y[0]) == -128);
  CHECK(uint32_t(y[0] >> 32) == 0x80u);
  CHECK(int64_t(y[1]) == -2);
  CHECK(y[2] == 0xfffe);
}

TEST_CASE("emulator ops: shared atomics, red.global, votes over a warp") {
  auto out = runBody("  mov.u64 %s, sm;\n"
                     "  atom.shared.add.u32 %r1, [%s], 3;\n"
                     "  atom.shared.max.s32 %r2, [%s+4], %tid;\n"
                     "  bar.sync 0;\n"
                     "  ld.shared.u32 %r3, [%s];\n"
                     "  ld.shared.u32 %r4, [%s+4];\n"
                     "  mov.b64 %y0, {%r3, %r4};\n"
                     "  atom.shared.cas.b32 %r5, [%s+8], %tid, 100;\n"
                     "  bar.sync 0;\n"
                     "  ld.shared.u32 %r6, [%s+8];\n"
                     "  setp.eq.u32 %p1, %r5, %tid;\n"
                     "  vote.sync.ballot.b32 %r7, %p1, 0xffffffff;\n"
                     "  mov.b64 %y1, {%r6, %r7};\n"
                     "  setp.lt.u32 %p2, %tid, 40;\n"
                     "  vote.sync.uni.pred %p3, %p2, -1;\n"
                     "  selp.u64 %y2, 1, 0, %p3;\n"
                     "  red.global.add.u64 [%out0+24], 5;\n",
                     {0, 0, 0}, 64, 1000);
  for (uint32_t t = 0; t < 64; ++t) {
    CHECK(uint32_t(out[t][0]) == 3 * 64);
    CHECK(uint32_t(out[t][0] >> 32) == 63);
    CHECK(uint32_t(out[t][1]) == 100); // thread 0's cas (0 == 0) wrote 100
    // Only thread 0 saw its tid: the ballot of warp 0 is lane 0's bit.
    CHECK(uint32_t(out[t][1] >> 32) == (t < 32 ? 1u : 0u));
    CHECK(out[t][2] == (t < 32 ? 1u : 0u)); // warp 1: lanes 32..39 differ
  }
  CHECK(out[0][3] == 1000 + 64 * 5);
}

TEST_CASE("emulator ops: vector immediates, shfl clamp, warp sync") {
  auto out = runBody("  mov.u32 %v, %laneid;\n"
                     "  shfl.sync.down.b32 %r1|%p1, %v, 4, 0x1f, -1;\n"
                     "  shfl.sync.up.b32 %r2|%p2, %v, 1, 0x1800, -1;\n"
                     "  bar.warp.sync -1;\n"
                     "  selp.u32 %r3, 1, 0, %p1;\n"
                     "  selp.u32 %r4, 1, 0, %p2;\n"
                     "  mov.b64 %y0, {%r1, %r2};\n"
                     "  mov.b64 %y1, {%r3, %r4};\n"
                     "  st.global.v2.u32 [%out+16], {%r1, 7};\n"
                     "  ld.global.u64 %y2, [%out+16];\n",
                     {0, 0, 0}, 32);
  for (uint32_t t = 0; t < 32; ++t) {
    INFO("lane " << t);
    // down by 4, clamp 31: lanes 28..31 keep their own value, p false
    CHECK(uint32_t(out[t][0]) == (t + 4 <= 31 ? t + 4 : t));
    CHECK(uint32_t(out[t][1]) == (t + 4 <= 31 ? 1u : 0u));
    // up by 1 in segments of 8 (segmask 0x18): lane 8k keeps its value
    CHECK(uint32_t(out[t][0] >> 32) == (t % 8 ? t - 1 : t));
    CHECK(uint32_t(out[t][1] >> 32) == (t % 8 ? 1u : 0u));
    CHECK(out[t][2] == ((uint64_t(7) << 32) | uint32_t(out[t][0])));
  }
}

TEST_CASE("emulator ops: bf16 and f16 arithmetic, scalar and x2") {
  auto bf = [](float x) { return uint64_t(tgc::floatToBf16(x)); };
  auto hf = [](float x) { return uint64_t(tgc::floatToHalf(x)); };
  float a = 1.5f, b = -2.25f, c = 0.3f;
  auto y = run1("  fma.rn.bf16 %h1, %a16, %b16, %h0;\n"
                "  mul.rn.bf16 %h2, %a16, %b16;\n"
                "  mov.b32 %r1, {%h1, %h2};\n"
                "  neg.bf16 %h3, %a16;\n"
                "  abs.bf16 %h4, %b16;\n"
                "  mov.b32 %r2, {%h3, %h4};\n"
                "  mov.b64 %y0, {%r1, %r2};\n"
                "  add.rn.f16x2 %r3, %c32, %c32;\n"
                "  max.NaN.bf16 %h5, %a16, 0x7FC0;\n"
                "  setp.lt.bf16 %p1, %b16, %a16;\n"
                "  selp.b16 %h6, 1, 0, %p1;\n"
                "  mov.b32 %r4, {%h5, %h6};\n"
                "  mov.b64 %y1, {%r3, %r4};\n"
                "  cvt.rn.relu.bf16x2.f32 %r5, %r6, %r7;\n"
                "  mov.b64 %y2, {%r5, %r5};\n",
                {bf(a), bf(b), hf(c) | (hf(-1.0f) << 16)});
  // %h0 was never written: 0, so the fma is a*b rounded once.
  CHECK(uint16_t(y[0]) == tgc::floatToBf16(a * b));
  CHECK(uint16_t(y[0] >> 16) == tgc::floatToBf16(a * b));
  CHECK(uint16_t(y[0] >> 32) == tgc::floatToBf16(-a));
  CHECK(uint16_t(y[0] >> 48) == tgc::floatToBf16(-b));
  CHECK(uint16_t(y[1]) == tgc::floatToHalf(tgc::halfToFloat(uint16_t(hf(c))) * 2));
  CHECK(uint16_t(y[1] >> 16) == tgc::floatToHalf(-2.0f));
  CHECK(std::isnan(tgc::bf16ToFloat(uint16_t(y[1] >> 32))));
  CHECK(uint16_t(y[1] >> 48) == 1);
  CHECK(y[2] == 0); // relu of the zero registers
  auto r = run1("  cvt.rn.relu.bf16x2.f32 %r5, %a32, %b32;\n"
                "  cvt.u64.u32 %y0, %r5;\n",
                {f32(-3.0f), f32(2.0f), 0});
  CHECK(r[0] == (0x0000ull << 16 | tgc::floatToBf16(2.0f)));
}
