//===- GemmEmulatorTensorCore.cpp - tensor-core instructions ----*- C++ -*-===//
//
// ldmatrix, mma.sync and wgmma of the GEMM IR emulator (GemmEmulator.h),
// following the PTX ISA's fragment layouts and matrix descriptors.
//
//===----------------------------------------------------------------------===//

#include "GemmEmulatorInterp.h"

namespace tg::nvptx::emu::detail {

void Interp::ldmatrix(Operation &op, const std::vector<char> &mask) {
  auto lm = cast<NVVM::LdMatrixOp>(op);
  bool trans = lm.getLayout() == NVVM::MMALayout::col;
  int num = static_cast<int>(lm.getNum());
  Val r = make(op.getResult(0).getType());
  Value ptr = op.getOperand(0);
  for (int w = 0; w < T / 32; ++w) {
    if (!mask[w * 32])
      continue;
    for (int l = 0; l < 8 * num; ++l) // each lane reads the row it names
      checkRead(u(ptr, 0, w * 32 + l), w * 32 + l);
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < num; ++j) {
        // Matrix j's row i comes from the address lane 8j+i supplies.
        auto rowAddr = [&](int i) { return u(ptr, 0, w * 32 + 8 * j + i); };
        uint16_t e[2];
        for (int x = 0; x < 2; ++x) {
          int row = l / 4, col = 2 * (l % 4) + x;
          e[x] = trans ? h16(rowAddr(col) + 2 * row) : h16(rowAddr(row) + 2 * col);
        }
        r.s[j * T + w * 32 + l] = uint64_t(e[0]) | (uint64_t(e[1]) << 16);
      }
  }
  env[op.getResult(0)] = r;
}

void Interp::mma(Operation &op) {
  // Operands: A regs (4), B regs (2), C (4), as packed i32 or vector<2xf16>.
  auto m = cast<NVVM::MmaOp>(op);
  ElemType et = m.getMultiplicandAPtxType() == NVVM::MMATypes::bf16 ? ElemType::BF16 : ElemType::F16;
  auto el = [&](Value v, int x, int t) -> float {
    const Val &vv = get(v);
    if (vv.ti.k == K::Int)
      return fromHalfBits(static_cast<uint16_t>(vv.s[t] >> (16 * x)), et);
    return static_cast<float>(dbl(vv.s[x * T + t]));
  };
  auto aOps = m.getOperandA(), bOps = m.getOperandB(), cOps = m.getOperandC();
  Val r = make(op.getResult(0).getType());
  for (int w = 0; w < T / 32; ++w) {
    float A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; ++l) {
      int t = w * 32 + l, g = l / 4, q = l % 4;
      for (int reg = 0; reg < 4; ++reg)
        for (int x = 0; x < 2; ++x)
          A[g + 8 * (reg % 2)][2 * q + x + 8 * (reg / 2)] = el(aOps[reg], x, t);
      for (int reg = 0; reg < 2; ++reg)
        for (int x = 0; x < 2; ++x)
          B[2 * q + x + 8 * reg][g] = el(bOps[reg], x, t);
      for (int i = 0; i < 4; ++i)
        C[g + 8 * (i / 2)][2 * q + i % 2] = static_cast<float>(f(cOps[i], 0, t));
    }
    for (int l = 0; l < 32; ++l) {
      int t = w * 32 + l, g = l / 4, q = l % 4;
      for (int i = 0; i < 4; ++i) {
        int row = g + 8 * (i / 2), col = 2 * q + i % 2;
        double acc = C[row][col];
        for (int k = 0; k < 16; ++k)
          acc += double(A[row][k]) * B[k][col];
        r.s[i * T + t] = bitsOf(static_cast<float>(acc));
      }
    }
  }
  env[op.getResult(0)] = r;
}

/// Byte address of element (x, k) of a wgmma operand in shared memory, per
/// the PTX ISA's canonical 128B-swizzle layouts (16-bit elements, T = 8):
/// K-major  ((8,m),(T,2k)) : ((8T,SBO),(1,LBO));
/// MN-major ((T,8,m),(8,k)) : ((1,T,LBO),(8T,SBO)); then the swizzle
/// XORs address bits [4,7) with bits [7,10).
static uint64_t wgmmaAddr(uint64_t desc, bool kMajor, int x, int k) {
  uint64_t start = (desc & 0x3FFF) << 4;
  uint64_t lbo = ((desc >> 16) & 0x3FFF) << 4;
  uint64_t sbo = ((desc >> 32) & 0x3FFF) << 4;
  if ((desc >> 62) != 1)
    fail("emulator: wgmma descriptor is not 128B-swizzled");
  uint64_t a;
  if (kMajor)
    a = start + (x / 8) * sbo + (x % 8) * 128 + uint64_t(k) * 2;
  else
    a = start + (x % 64) * 2 + (x / 64) * lbo + (k % 8) * 128 + (k / 8) * sbo;
  return a ^ (((a >> 7) & 7) << 4);
}

void Interp::wgmma(Operation &op, const std::vector<char> &mask) {
  auto w = cast<NVVM::WgmmaMmaAsyncOp>(op);
  int n = w.getShape().getN();
  bool aK = w.getLayoutA() == NVVM::MMALayout::row;
  bool bK = w.getLayoutB() == NVVM::MMALayout::col;
  ElemType et = w.getTypeA() == NVVM::WGMMATypes::bf16 ? ElemType::BF16 : ElemType::F16;
  Value dA = w.getDescriptorA(), dB = w.getDescriptorB(), acc = w.getInouts();
  Val r = get(acc);
  for (int g = 0; g < T / 128; ++g) {
    int t0 = g * 128;
    if (!mask[t0])
      continue;
    std::vector<char> wgMask(T, 0);
    for (int t = t0; t < t0 + 128; ++t)
      wgMask[t] = 1;
    uint64_t da = uniform(dA, wgMask), db = uniform(dB, wgMask);
    std::vector<float> A(64 * 16), B(16 * n);
    auto rd = [&](uint64_t addr) {
      if (hbCheck) {
        hbRead(addr, t0);
        wgOpen[g].push_back(addr);
      }
      return h16(addr);
    };
    for (int x = 0; x < 64; ++x)
      for (int k = 0; k < 16; ++k)
        A[x * 16 + k] = fromHalfBits(rd(wgmmaAddr(da, aK, x, k)), et);
    for (int x = 0; x < n; ++x)
      for (int k = 0; k < 16; ++k)
        B[k * n + x] = fromHalfBits(rd(wgmmaAddr(db, bK, x, k)), et);
    for (int t = 0; t < 128; ++t) {
      int wp = t / 32, l = t % 32;
      for (int i = 0; i < n / 8; ++i)
        for (int e = 0; e < 4; ++e) {
          int row = wp * 16 + l / 4 + 8 * (e / 2), col = 8 * i + 2 * (l % 4) + e % 2;
          double s = dbl(r.s[size_t(4 * i + e) * T + t0 + t]);
          for (int k = 0; k < 16; ++k)
            s += double(A[row * 16 + k]) * B[k * n + col];
          r.s[size_t(4 * i + e) * T + t0 + t] = bitsOf(static_cast<float>(s));
        }
    }
  }
  env[op.getResult(0)] = r;
}

} // namespace tg::nvptx::emu::detail
