//===- Philox.h - counter-based RNG shared by every TGC target --*- C++ -*-===//
//
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11; the Random123 reference) and the exact mapping from
// (seed, stream, element index) to a dropout decision. The reference
// evaluator, the CPU backend and the CUDA runtime all include this header,
// so it depends on nothing but <cstdint>: every target must draw the same
// mask, or the backward pass and rematerialisation would see different ones.
//
// The mapping, for element `i` (the row-major linear index into the dropout
// operand) of a `tg.dropout` with seed `seed` (the i64 seed operand, read as
// uint64) and attribute `stream` (read as uint64):
//
//   counter = { lo32(i / 4), hi32(i / 4), lo32(stream), hi32(stream) }
//   key     = { lo32(seed),  hi32(seed) }
//   word    = philox4x32_10(counter, key)[i % 4]
//   u       = word * 2^-32                      (uniform in [0, 1), exact)
//   keep    = u >= p   <=>   word >= dropoutThreshold(p)
//   result  = keep ? x * (1 / (1 - p)) : 0
//
// One Philox call thus serves four consecutive elements, which is how a GPU
// thread handling a 4-wide vector would use it.
//
// `tg.random` uses the same counters (element i, its `stream` attribute):
//
//   uniform(a, b):  a + (b - a) * u                (u as above)
//   normal(m, s):   m + s * z, by Box-Muller on the word pairs of the block:
//     (w0, w1) give elements 4j (cos) and 4j+1 (sin), (w2, w3) give 4j+2
//     (cos) and 4j+3 (sin), with u1 = (w_even + 0.5) * 2^-32 in (0, 1),
//     u2 = w_odd * 2^-32, r = sqrt(-2 ln u1), z = r cos(2 pi u2) or
//     r sin(2 pi u2), computed in double. Targets that compute in float
//     agree to float rounding, not bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PHILOX_H
#define TGC_PHILOX_H

#include <cmath>
#include <cstdint>

// Device code (the CUDA runtime's kernels) calls the same functions.
#if defined(__CUDACC__)
#define TGC_PHILOX_HD __host__ __device__
#else
#define TGC_PHILOX_HD
#endif

namespace tgc {

/// N 32-bit words. A plain aggregate rather than std::array, whose
/// accessors are host-only in CUDA device code.
template <int N> struct PhiloxWords {
  uint32_t w[N];
  TGC_PHILOX_HD uint32_t &operator[](int i) { return w[i]; }
  TGC_PHILOX_HD uint32_t operator[](int i) const { return w[i]; }
  TGC_PHILOX_HD friend bool operator==(const PhiloxWords &a,
                                       const PhiloxWords &b) {
    for (int i = 0; i < N; ++i)
      if (a.w[i] != b.w[i])
        return false;
    return true;
  }
};
/// Four 32-bit words: a Philox counter or output block.
using PhiloxBlock = PhiloxWords<4>;
/// Two 32-bit words: a Philox key.
using PhiloxKey = PhiloxWords<2>;

namespace detail {
/// One Philox-4x32 round: two 32x32->64 multiplies, then a Feistel-like mix.
TGC_PHILOX_HD inline PhiloxBlock philoxRound(const PhiloxBlock &c,
                                             const PhiloxKey &k) {
  constexpr uint64_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  uint64_t p0 = m0 * c[0], p1 = m1 * c[2];
  return {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1),
          uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
}
} // namespace detail

/// Philox-4x32 with 10 rounds, as in Random123's philox4x32_R(10, ...).
TGC_PHILOX_HD inline PhiloxBlock philox4x32_10(PhiloxBlock counter,
                                               PhiloxKey key) {
  constexpr uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += w0;
      key[1] += w1;
    }
    counter = detail::philoxRound(counter, key);
  }
  return counter;
}

/// The 32-bit random word for element `index` of stream `stream` under
/// `seed` (see the mapping at the top of this file).
TGC_PHILOX_HD inline uint32_t philoxWord(uint64_t seed, uint64_t stream,
                                         uint64_t index) {
  uint64_t block = index / 4;
  PhiloxBlock counter = {uint32_t(block), uint32_t(block >> 32),
                         uint32_t(stream), uint32_t(stream >> 32)};
  PhiloxKey key = {uint32_t(seed), uint32_t(seed >> 32)};
  return philox4x32_10(counter, key)[index % 4];
}

/// Uniform in [0, 1): philoxWord(...) * 2^-32, exact in double.
TGC_PHILOX_HD inline double philoxUniform(uint64_t seed, uint64_t stream,
                                          uint64_t index) {
  return philoxWord(seed, stream, index) * 0x1p-32;
}

/// A standard normal draw for element `index` (Box-Muller, see the mapping
/// at the top of this file).
TGC_PHILOX_HD inline double philoxNormal(uint64_t seed, uint64_t stream,
                                         uint64_t index) {
  uint64_t block = index / 4;
  PhiloxBlock w = philox4x32_10({uint32_t(block), uint32_t(block >> 32),
                                 uint32_t(stream), uint32_t(stream >> 32)},
                                {uint32_t(seed), uint32_t(seed >> 32)});
  unsigned pair = index % 4 / 2 * 2;
  double u1 = (w[pair] + 0.5) * 0x1p-32, u2 = w[pair + 1] * 0x1p-32;
  double r = std::sqrt(-2.0 * std::log(u1));
  constexpr double twoPi = 6.283185307179586476925286766559;
  return index % 2 == 0 ? r * std::cos(twoPi * u2) : r * std::sin(twoPi * u2);
}

/// The smallest word value that is kept at drop probability `p`: the element
/// is kept iff word >= dropoutThreshold(p), the same as uniform >= p, so
/// integer-only targets need no floating point to draw the mask. Returns
/// 2^32 (nothing kept) for p >= 1 and 0 for p <= 0.
TGC_PHILOX_HD inline uint64_t dropoutThreshold(double p) {
  if (!(p > 0))
    return 0;
  if (p >= 1)
    return uint64_t(1) << 32;
  return uint64_t(std::ceil(p * 0x1p32)); // p * 2^32 is exact.
}

/// True iff element `index` is kept by a dropout of probability `p`.
TGC_PHILOX_HD inline bool dropoutKeep(uint64_t seed, uint64_t stream,
                                      uint64_t index, double p) {
  return philoxWord(seed, stream, index) >= dropoutThreshold(p);
}

} // namespace tgc

#endif // TGC_PHILOX_H
