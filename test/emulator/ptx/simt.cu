// SIMT test kernels for the PTX emulator (test/emulator/SimtTest.cpp).
// Compiled to simt.ptx by regen.sh (clang's CUDA mode, no CUDA libraries),
// so the tests do not need clang's CUDA support. Instructions clang would
// only reach through libdevice are written as inline PTX or builtins.
#define K extern "C" __global__

__device__ inline float ex2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ inline float tanhApprox(float x) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ inline unsigned short toBf16(float x) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}
__device__ inline unsigned short toF16Rz(float x) {
  unsigned short r;
  asm("cvt.rz.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}
__device__ inline float fromBf16(unsigned short h) {
  float r;
  asm("cvt.f32.bf16 %0, %1;" : "=f"(r) : "h"(h));
  return r;
}
__device__ inline unsigned packBf16x2(float hi, float lo) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// y = a*x + y over float4s with a grid-stride loop, plus a scalar tail.
K void saxpy4(const float *__restrict__ x, float *__restrict__ y, float a,
              int n) {
  int n4 = n / 4;
  const float4 *x4 = reinterpret_cast<const float4 *>(x);
  float4 *y4 = reinterpret_cast<float4 *>(y);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4;
       i += gridDim.x * blockDim.x) {
    float4 u = x4[i], v = y4[i];
    v.x = __builtin_fmaf(a, u.x, v.x);
    v.y = __builtin_fmaf(a, u.y, v.y);
    v.z = __builtin_fmaf(a, u.z, v.z);
    v.w = __builtin_fmaf(a, u.w, v.w);
    y4[i] = v;
  }
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n - 4 * n4)
    y[4 * n4 + t] = __builtin_fmaf(a, x[4 * n4 + t], y[4 * n4 + t]);
}

// One block per row: the row's sum and max with warp shuffles and shared
// memory (rows[r] = sum, maxes[r] = max); blockDim.x is a multiple of 32.
K void rowReduce(const float *__restrict__ in, float *sums, float *maxes,
                 int cols) {
  __shared__ float partS[32], partM[32];
  const float *row = in + (long)blockIdx.x * cols;
  float s = 0.f, m = -__builtin_inff();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    s += row[c];
    m = __builtin_fmaxf(m, row[c]);
  }
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_down_sync(0xffffffffu, s, o);
    m = __builtin_fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  }
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    partS[warp] = s;
    partM[warp] = m;
  }
  __syncthreads();
  if (warp == 0) {
    int nw = blockDim.x / 32;
    s = lane < nw ? partS[lane] : 0.f;
    m = lane < nw ? partM[lane] : -__builtin_inff();
    for (int o = 16; o > 0; o >>= 1) {
      s += __shfl_down_sync(0xffffffffu, s, o);
      m = __builtin_fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
    }
    if (lane == 0) {
      sums[blockIdx.x] = s;
      maxes[blockIdx.x] = m;
    }
  }
}

// Atomics of every kind on global counters; hist counts values mod 16.
K void atomics(const int *__restrict__ v, int n, unsigned *hist, float *fsum,
               unsigned long long *usum, int *imax, int *imin,
               unsigned *casCount, unsigned *last) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  atomicAdd(&hist[v[i] & 15], 1u);
  atomicAdd(fsum, 0.5f * (float)v[i]);
  atomicAdd(usum, (unsigned long long)v[i] << 33);
  atomicMax(imax, v[i]);
  atomicMin(imin, -v[i]);
  unsigned old = *casCount, seen;
  do {
    seen = old;
    old = atomicCAS(casCount, seen, seen + 1);
  } while (old != seen);
  atomicExch(last, (unsigned)i);
}

// Divergent work: even threads loop i times, odd threads take another
// path; everyone meets at the barrier, then reads a neighbour's result.
K void diverge(int *out) {
  __shared__ int tmp[256];
  int t = threadIdx.x, acc = 0;
  if (t % 2 == 0) {
    for (int i = 0; i < t; ++i)
      acc += i * 3 - (i >> 1);
  } else {
    acc = t % 3 == 0 ? -t : t * t;
  }
  tmp[t] = acc;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = tmp[(t + 1) % blockDim.x] - acc;
}

// Warp votes, ballots and the other shuffles.
K void warpOps(const int *__restrict__ in, unsigned *out) {
  int t = threadIdx.x, v = in[t];
  unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
  int all = __all_sync(0xffffffffu, v > -100);
  int any = __any_sync(0xffffffffu, v == 7);
  int up = __shfl_up_sync(0xffffffffu, v, 3);
  int idx = __shfl_sync(0xffffffffu, v, (t * 7) % 32);
  int sub = __shfl_xor_sync(0xffffffffu, v, 1, 8); // width 8 segments
  out[t * 6 + 0] = ballot;
  out[t * 6 + 1] = all;
  out[t * 6 + 2] = any;
  out[t * 6 + 3] = up;
  out[t * 6 + 4] = idx;
  out[t * 6 + 5] = sub;
}

// Integer and float arithmetic, conversions, approximate math.
K void scalarOps(const int *__restrict__ ia, const float *__restrict__ fa,
                 int *iout, float *fout, unsigned short *hout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  int a = ia[i], b = ia[(i + 1) % n] | 1;
  unsigned ua = (unsigned)a, ub = (unsigned)b;
  long long wide = (long long)a * b;
  iout[i * 12 + 0] = a / b;
  iout[i * 12 + 1] = a % b;
  iout[i * 12 + 2] = (int)(ua / ub);
  iout[i * 12 + 3] = a >> (b & 31);
  iout[i * 12 + 4] = (int)(ua >> (b & 31));
  iout[i * 12 + 5] = (int)(wide >> 32);
  iout[i * 12 + 6] = __nvvm_mulhi_ui(ua, ub);
  iout[i * 12 + 7] = __builtin_popcount(ua) + __builtin_clz(a | 1) * 64;
  iout[i * 12 + 8] = (a & 0xff0) >> 4 | int(unsigned(b) << 12);
  iout[i * 12 + 9] = (int)((unsigned)(a < b ? a : b) * 3u + (ua > ub ? ua : ub));
  float x = fa[i], y = fa[(i + 1) % n];
  iout[i * 12 + 10] = (int)x;                // cvt.rzi.s32.f32
  iout[i * 12 + 11] = (int)(unsigned char)(signed char)a;
  fout[i * 8 + 0] = x * y + x / (y + 3.5f);
  fout[i * 8 + 1] = __builtin_fmaxf(x, y) - __builtin_fminf(x, y) + __builtin_fabsf(x);
  fout[i * 8 + 2] = ex2(x * 0.25f);
  fout[i * 8 + 3] = tanhApprox(y);
  fout[i * 8 + 4] = __builtin_sqrtf(__builtin_fabsf(x)) + (float)a;
  fout[i * 8 + 5] = x < y ? x : (x != x ? 1.f : y);
  fout[i * 8 + 6] = fromBf16(toBf16(x * 3.f));
  fout[i * 8 + 7] = __builtin_bit_cast(float, packBf16x2(x, y));
  hout[i] = toF16Rz(y * 1000.f);
}

// Spins while *flag is non-zero (a runaway loop when it never clears).
K void spin(volatile int *flag, int *out) {
  int n = 0;
  while (*flag)
    ++n;
  out[0] = n;
}

// Half the threads wait at barrier 0, the other half at barrier 1: a
// deadlock.
K void halfBarrier(int *out) {
  if (threadIdx.x < blockDim.x / 2)
    __syncthreads();
  else
    asm volatile("bar.sync 1;" ::: "memory");
  out[threadIdx.x] = 1;
}

// Half the threads exit, the others meet at a barrier: the exited threads
// do not hold it up (the PTX ISA's exit).
K void halfExit(int *out) {
  if (threadIdx.x >= blockDim.x / 2)
    return;
  out[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] += 1;
}
