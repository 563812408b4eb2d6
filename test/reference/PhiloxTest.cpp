//===- PhiloxTest.cpp - Philox-4x32-10 and the dropout mapping --*- C++ -*-===//
//
// Known-answer vectors from Random123 (kat_vectors, philox4x32 with 10
// rounds), then the properties the dropout mapping promises: a pure
// function of (seed, stream, index), streams independent, keep rate ~ 1-p.
//
//===----------------------------------------------------------------------===//

#include "tgc/Philox.h"

#include <catch2/catch.hpp>

using tgc::PhiloxBlock;

TEST_CASE("Philox4x32-10 matches the Random123 known answers", "[philox]") {
  CHECK(tgc::philox4x32_10({0, 0, 0, 0}, {0, 0}) ==
        PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(tgc::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                           {0xffffffff, 0xffffffff}) ==
        PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(tgc::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                           {0xa4093822, 0x299f31d0}) ==
        PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("philoxWord maps (seed, stream, index) as documented", "[philox]") {
  uint64_t seed = 0x0123456789abcdefULL, stream = 0x500000003ULL;
  uint64_t index = (uint64_t(7) << 32 | 9) * 4 + 2;
  PhiloxBlock block =
      tgc::philox4x32_10({9, 7, 3, 5}, {0x89abcdef, 0x01234567});
  CHECK(tgc::philoxWord(seed, stream, index) == block[2]);
  CHECK(tgc::philoxUniform(seed, stream, index) == block[2] * 0x1p-32);
  // Four consecutive elements share one Philox block.
  PhiloxBlock first = tgc::philox4x32_10({0, 0, 0, 0}, {42, 0});
  for (uint64_t i = 0; i < 4; ++i)
    CHECK(tgc::philoxWord(42, 0, i) == first[i]);
}

TEST_CASE("dropout thresholds agree with uniform >= p", "[philox]") {
  CHECK(tgc::dropoutThreshold(0.0) == 0);
  CHECK(tgc::dropoutThreshold(1.0) == uint64_t(1) << 32);
  CHECK(tgc::dropoutThreshold(0.5) == uint64_t(1) << 31);
  for (double p : {0.1, 0.25, 0.3, 0.9, 1e-9}) {
    uint64_t t = tgc::dropoutThreshold(p);
    CHECK(t * 0x1p-32 >= p);
    CHECK((t - 1) * 0x1p-32 < p);
  }
  // The keep rate is close to 1 - p, and differs between streams.
  int kept = 0, same = 0, n = 100000;
  for (int i = 0; i < n; ++i) {
    bool a = tgc::dropoutKeep(7, 1, i, 0.3), b = tgc::dropoutKeep(7, 2, i, 0.3);
    kept += a;
    same += a == b;
  }
  CHECK(kept / double(n) == Approx(0.7).margin(0.01));
  CHECK(same / double(n) == Approx(0.7 * 0.7 + 0.3 * 0.3).margin(0.01));
}
