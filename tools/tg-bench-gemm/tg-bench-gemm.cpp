//===- tg-bench-gemm.cpp - generate, check and time one GEMM kernel -*- C++ -*-===//
//
//   tg-bench-gemm M N K [--dtype bf16|f16] [--form nn|nt|tn]
//                 [--target sm_80|sm_90a] [--out f32|bf16|f16] [--bias]
//                 [--act none|relu|gelu] [--residual] [--alpha X]
//                 [--config NAME] [--emit-ptx FILE] [--emit-mlir FILE]
//                 [--ptx FILE] [--emit-cubin FILE] [--list-configs]
//                 [--iters N] [--warmup N] [--device N] [--seed N]
//
// With --emit-ptx/--emit-mlir it only writes the kernel (no GPU). --ptx runs
// a kernel emitted earlier instead of generating one. The same source also
// builds `tg-bench-gemm-run` (TG_BENCH_RUN_ONLY): no generator, no MLIR or
// LLVM libraries, for GPU machines that have only a driver (and perhaps the
// CUDA toolkit); it needs --ptx. Otherwise
// it assembles the kernel into a fat binary, loads it through the CUDA
// runtime, fills A, B (and bias, residual) with random data, poisons C with
// NaN, runs once and checks every output is written and, against an fp64 CPU
// reference (all of C for small problems, 4096 random entries otherwise),
// that the normwise relative error is ≤ 1e-2; then times warm-up + N runs
// with CUDA events and prints the median. The last line is key=value pairs
// (scripts/device-check.sh parses it). Exit: 0 pass, 1 wrong results,
// 2 bad arguments, 3 compile or device error.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmConfig.h"
#include "codegen/nvptx/Toolchain.h"
#ifndef TG_BENCH_RUN_ONLY
#include "codegen/nvptx/Gemm.h"
#endif
#include "runtime/cuda/CudaDriver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using namespace tg::nvptx;
namespace cu = tg::rt::cuda;

namespace {

struct Options {
  GemmProblem p;
  std::string config, emitPtx, emitMlir, ptxFile, emitCubin;
  bool listConfigs = false;
  float alpha = 1.0f;
  int iters = 30, warmup = 5, device = 0;
  unsigned seed = 42;
};

[[noreturn]] void usageError(const std::string &msg) {
  std::fprintf(stderr, "tg-bench-gemm: error: %s\n", msg.c_str());
  std::exit(2);
}

int64_t parseInt(const std::string &s, const char *what) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || v <= 0)
    usageError(std::string(what) + " must be a positive integer, got '" + s + "'");
  return v;
}

Options parseArgs(int argc, char **argv) {
  Options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usageError("option " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--dtype") {
      auto t = parseElemType(value());
      if (!t || *t == ElemType::F32)
        usageError("--dtype must be bf16 or f16");
      o.p.in = *t;
    } else if (a == "--form") {
      auto f = parseForm(value());
      if (!f)
        usageError("--form must be nn, nt or tn");
      o.p.form = *f;
    } else if (a == "--target") {
      auto t = parseTarget(value());
      if (!t)
        usageError("--target must be sm_80 or sm_90a");
      o.p.target = *t;
    } else if (a == "--out") {
      auto t = parseElemType(value());
      if (!t)
        usageError("--out must be f32, bf16 or f16");
      o.p.epilogue.out = *t;
    } else if (a == "--act") {
      auto act = parseActivation(value());
      if (!act)
        usageError("--act must be none, relu or gelu");
      o.p.epilogue.act = *act;
    } else if (a == "--bias") {
      o.p.epilogue.bias = true;
    } else if (a == "--residual") {
      o.p.epilogue.residual = true;
    } else if (a == "--alpha") {
      std::string v = value();
      char *end = nullptr;
      o.alpha = std::strtof(v.c_str(), &end);
      if (v.empty() || *end)
        usageError("--alpha must be a number, got '" + v + "'");
      o.p.epilogue.scale = true;
    } else if (a == "--config") {
      o.config = value();
    } else if (a == "--emit-ptx") {
      o.emitPtx = value();
    } else if (a == "--ptx") {
      o.ptxFile = value();
    } else if (a == "--emit-cubin") {
      o.emitCubin = value();
    } else if (a == "--emit-mlir") {
      o.emitMlir = value();
    } else if (a == "--iters") {
      o.iters = static_cast<int>(parseInt(value(), "--iters"));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(parseInt(value(), "--warmup"));
    } else if (a == "--device") {
      std::string v = value();
      o.device = v == "0" ? 0 : static_cast<int>(parseInt(v, "--device"));
    } else if (a == "--seed") {
      o.seed = static_cast<unsigned>(parseInt(value(), "--seed"));
    } else if (a == "--list-configs") {
      o.listConfigs = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: tg-bench-gemm M N K [--dtype bf16|f16] [--form nn|nt|tn] "
                  "[--target sm_80|sm_90a] [--out f32|bf16|f16] [--bias] "
                  "[--act none|relu|gelu] [--residual] [--alpha X] [--config NAME] "
                  "[--emit-ptx FILE] [--emit-mlir FILE] [--ptx FILE] [--emit-cubin FILE] "
                  "[--list-configs] "
                  "[--iters N] [--warmup N] "
                  "[--device N] [--seed N]\n");
      std::exit(0);
    } else if (a.size() > 1 && a[0] == '-') {
      usageError("unknown option '" + a + "'");
    } else {
      pos.push_back(a);
    }
  }
  if (o.listConfigs) { // the candidates the heuristic chooses from
    for (const TileConfig &c : candidateConfigs(o.p.target))
      std::printf("%s\n", c.str(o.p.target).c_str());
    std::exit(0);
  }
  if (pos.size() != 3)
    usageError("expected M N K, got " + std::to_string(pos.size()) +
               " positional arguments");
  o.p.m = parseInt(pos[0], "M");
  o.p.n = parseInt(pos[1], "N");
  o.p.k = parseInt(pos[2], "K");
  if (auto why = checkProblem(o.p))
    usageError(*why);
  return o;
}

/// Writes `data` to `path` ("-" is stdout).
bool writeFile(const std::string &path, const std::string &data) {
  if (path == "-")
    return std::fwrite(data.data(), 1, data.size(), stdout) == data.size();
  std::ofstream f(path, std::ios::binary);
  f << data;
  return static_cast<bool>(f);
}


/// A host matrix stored as raw bytes of element type `t`, with float values.
struct HostMatrix {
  ElemType t;
  int64_t rows, cols;
  std::vector<float> val;   // what the device sees, as float
  std::string bytes;
  HostMatrix(ElemType t, int64_t r, int64_t c) : t(t), rows(r), cols(c) {}
  /// Uniform values in [-1, 1) from a xorshift stream (fast enough for
  /// 8192² operands on one core; the statistics need no more).
  void randomize(uint64_t &state) {
    val.resize(rows * cols);
    bytes.resize(rows * cols * elemBytes(t));
    for (int64_t i = 0; i < rows * cols; ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      float v = static_cast<float>(state >> 40) * (2.0f / 16777216.0f) - 1.0f;
      if (t == ElemType::F32) {
        std::memcpy(&bytes[i * 4], &v, 4);
      } else {
        uint16_t h = toHalfBits(v, t);
        std::memcpy(&bytes[i * 2], &h, 2);
        v = fromHalfBits(h, t);
      }
      val[i] = v;
    }
  }
};

float readOut(const std::string &bytes, int64_t i, ElemType t) {
  if (t == ElemType::F32) {
    float v;
    std::memcpy(&v, &bytes[i * 4], 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, &bytes[i * 2], 2);
  return fromHalfBits(h, t);
}

int deviceFail(const std::string &msg) {
  std::fprintf(stderr, "tg-bench-gemm: error: %s\n", msg.c_str());
  return 3;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseArgs(argc, argv);
  GemmProblem &p = o.p;
  TileConfig cfg = chooseTileConfig(p);
  if (!o.config.empty()) {
    bool found = false;
    for (const TileConfig &c : candidateConfigs(p.target))
      if (c.str(p.target) == o.config) {
        cfg = c;
        found = true;
      }
    if (!found)
      usageError("unknown --config '" + o.config + "' for " + toString(p.target));
  }
  std::string name = kernelName(p, cfg);
  std::string ptx, err;
  if (!o.ptxFile.empty()) {
    std::ifstream f(o.ptxFile, std::ios::binary);
    if (!f)
      usageError("cannot read --ptx file '" + o.ptxFile + "'");
    ptx.assign(std::istreambuf_iterator<char>(f), {});
    if (ptx.find(".entry " + name) == std::string::npos)
      usageError("'" + o.ptxFile + "' has no kernel " + name +
                 " (emit it with the same shape, type and epilogue options)");
  } else {
#ifdef TG_BENCH_RUN_ONLY
    usageError("this build has no kernel generator: pass --ptx FILE "
               "(written by tg-bench-gemm --emit-ptx)");
#else
    if (!o.emitMlir.empty() && !writeFile(o.emitMlir, generateGemmMLIR(p, cfg)))
      return deviceFail("cannot write " + o.emitMlir);
    if (!generateGemmPTX(p, cfg, ptx, err))
      return deviceFail(err);
#endif
  }
  if (!o.emitPtx.empty() && !writeFile(o.emitPtx, ptx))
    return deviceFail("cannot write " + o.emitPtx);
  if (!o.emitPtx.empty() || !o.emitMlir.empty())
    return 0;

  // Assemble before touching the GPU: a ptxas error is a compile error.
  bool toolkit = haveCudaTool("ptxas") && haveCudaTool("fatbinary");
  if (toolkit) {
    PtxasReport r = assemblePtx(ptx, toString(p.target));
    if (!r.ok)
      return deviceFail("ptxas -arch=" + toString(p.target) + " failed: " + r.log);
    if (!o.emitCubin.empty() && !writeFile(o.emitCubin, r.cubin))
      return deviceFail("cannot write " + o.emitCubin);
  }

  cu::Device dev;
  if (cu::Status s = cu::Device::open(o.device, dev); !s)
    return deviceFail(s.message);
  int cc = dev.ccMajor * 10 + dev.ccMinor;
  if ((p.target == Target::SM90a && cc != 90) || (p.target == Target::SM80 && cc < 80))
    return deviceFail("device " + dev.name + " (sm_" + std::to_string(cc) +
                      ") cannot run " + toString(p.target) + " kernels");
  // A cubin runs only on its own major architecture, so the sm_80 path is
  // assembled for the device's architecture (its PTX targets sm_80, which
  // any newer ptxas accepts); the fat binary also carries the PTX. Without
  // a toolkit the driver JIT-compiles the PTX.
  std::string image = ptx, imageKind = "ptx-jit";
  if (toolkit) {
    std::string arch = p.target == Target::SM90a ? "sm_90a" : "sm_" + std::to_string(cc);
    PtxasReport r = assemblePtx(ptx, arch);
    if (!r.ok)
      return deviceFail("ptxas -arch=" + arch + " failed: " + r.log);
    if (!buildFatbin({{arch, r.cubin, false}, {toString(p.target), ptx, true}}, image, err))
      return deviceFail(err);
    imageKind = "fatbin:" + arch;
  } else {
    std::fprintf(stderr, "tg-bench-gemm: warning: no ptxas/fatbinary under %s; "
                         "loading PTX through the driver JIT\n",
                 cudaHome().c_str());
  }
  cu::CUmodule mod;
  cu::CUfunction fn;
  if (cu::Status s = dev.loadModule(image, mod); !s)
    return deviceFail(s.message);
  if (cu::Status s = dev.getFunction(mod, name, fn); !s)
    return deviceFail(s.message);

  // Host data.
  std::mt19937 rng(o.seed);
  uint64_t state = 0x9E3779B97F4A7C15ull ^ o.seed;
  bool aKMajor = p.form != Form::TN, bKMajor = p.form == Form::NT;
  HostMatrix A(p.in, aKMajor ? p.m : p.k, aKMajor ? p.k : p.m);
  HostMatrix B(p.in, bKMajor ? p.n : p.k, bKMajor ? p.k : p.n);
  HostMatrix bias(ElemType::F32, 1, p.n), res(p.epilogue.out, p.m, p.n);
  A.randomize(state);
  B.randomize(state);
  if (p.epilogue.bias)
    bias.randomize(state);
  if (p.epilogue.residual)
    res.randomize(state);
  size_t cBytes = size_t(p.m) * p.n * elemBytes(p.epilogue.out);

  // Device buffers (bias/residual get a dummy allocation when unused).
  cu::CUdeviceptr dA, dB, dC, dBias, dRes, dMapA = 0, dMapB = 0;
  auto allocUp = [&](cu::CUdeviceptr &d, const std::string &b) -> cu::Status {
    if (cu::Status s = dev.alloc(std::max<size_t>(b.size(), 256), d); !s)
      return s;
    return b.empty() ? cu::Status::success() : dev.upload(d, b.data(), b.size());
  };
  for (auto [d, b] : {std::pair{&dA, &A.bytes}, {&dB, &B.bytes},
                      {&dBias, &bias.bytes}, {&dRes, &res.bytes}})
    if (cu::Status s = allocUp(*d, *b); !s)
      return deviceFail(s.message);
  if (cu::Status s = dev.alloc(cBytes, dC); !s)
    return deviceFail(s.message);
  if (p.target == Target::SM90a) {
    cu::CUtensorMap mapA, mapB;
    TmaBox ba = tmaBox(p, cfg, true), bb = tmaBox(p, cfg, false);
    bool bf = p.in == ElemType::BF16;
    if (cu::Status s = dev.encodeTensorMap2D(mapA, dA, bf, A.rows, A.cols, ba.outer, ba.inner); !s)
      return deviceFail(s.message);
    if (cu::Status s = dev.encodeTensorMap2D(mapB, dB, bf, B.rows, B.cols, bb.outer, bb.inner); !s)
      return deviceFail(s.message);
    std::string ma(reinterpret_cast<char *>(&mapA), sizeof mapA);
    std::string mb(reinterpret_cast<char *>(&mapB), sizeof mapB);
    if (cu::Status s = allocUp(dMapA, ma); !s)
      return deviceFail(s.message);
    if (cu::Status s = allocUp(dMapB, mb); !s)
      return deviceFail(s.message);
  }
  int32_t M = static_cast<int32_t>(p.m), N = static_cast<int32_t>(p.n),
          K = static_cast<int32_t>(p.k);
  float alpha = o.alpha;
  cu::CUdeviceptr argA = p.target == Target::SM90a ? dMapA : dA;
  cu::CUdeviceptr argB = p.target == Target::SM90a ? dMapB : dB;
  void *args[] = {&argA, &argB, &dC, &dBias, &dRes, &M, &N, &K, &alpha};
  LaunchGeometry g = launchGeometry(p, cfg, dev.smCount);
  auto launch = [&]() { return dev.launch(fn, g.grid, g.block, g.smemBytes, args); };

  // Correctness: poison, run once, check.
  if (cu::Status s = dev.fill(dC, 0xFF, cBytes); !s)
    return deviceFail(s.message);
  if (cu::Status s = launch(); !s)
    return deviceFail(s.message);
  if (cu::Status s = dev.synchronize(); !s)
    return deviceFail(s.message);
  std::string out(cBytes, '\0');
  if (cu::Status s = dev.download(out.data(), dC, cBytes); !s)
    return deviceFail(s.message);
  int64_t unwritten = 0;
  for (int64_t i = 0; i < p.m * p.n; ++i)
    if (std::isnan(readOut(out, i, p.epilogue.out)))
      ++unwritten;
  auto aAt = [&](int64_t i, int64_t k) {
    return aKMajor ? A.val[i * p.k + k] : A.val[k * p.m + i];
  };
  auto bAt = [&](int64_t k, int64_t j) {
    return bKMajor ? B.val[j * p.k + k] : B.val[k * p.n + j];
  };
  auto reference = [&](int64_t i, int64_t j) {
    double acc = 0;
    for (int64_t k = 0; k < p.k; ++k)
      acc += double(aAt(i, k)) * double(bAt(k, j));
    if (p.epilogue.scale)
      acc *= alpha;
    if (p.epilogue.bias)
      acc += bias.val[j];
    if (p.epilogue.act == Activation::ReLU)
      acc = std::max(acc, 0.0);
    else if (p.epilogue.act == Activation::GELU)
      acc = 0.5 * acc * (1 + std::tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
    if (p.epilogue.residual)
      acc += res.val[i * p.n + j];
    return acc;
  };
  double errSq = 0, refSq = 0, maxAbs = 0;
  int64_t checked = 0;
  auto checkOne = [&](int64_t i, int64_t j) {
    double r = reference(i, j), v = readOut(out, i * p.n + j, p.epilogue.out);
    errSq += (v - r) * (v - r);
    refSq += r * r;
    double d = std::fabs(v - r);
    if (!(d <= maxAbs)) // NaN propagates
      maxAbs = d;
    ++checked;
  };
  bool full = double(p.m) * p.n * p.k <= double(1 << 28);
  if (full) {
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j)
        checkOne(i, j);
  } else {
    std::uniform_int_distribution<int64_t> di(0, p.m - 1), dj(0, p.n - 1);
    // Always include the four corners (edge tiles), then random entries.
    for (auto [i, j] : {std::pair<int64_t, int64_t>{0, 0}, {0, p.n - 1},
                        {p.m - 1, 0}, {p.m - 1, p.n - 1}})
      checkOne(i, j);
    for (int s = 0; s < 4096; ++s)
      checkOne(di(rng), dj(rng));
  }
  double relErr = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  bool pass = unwritten == 0 && relErr <= 1e-2 && std::isfinite(relErr);

  // Timing: warm-up, then one event pair per run; report the median.
  for (int i = 0; i < o.warmup; ++i)
    if (cu::Status s = launch(); !s)
      return deviceFail(s.message);
  std::vector<float> ms;
  if (cu::Status s = dev.time(o.iters, ms, launch); !s)
    return deviceFail(s.message);
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  double tflops = 2.0 * p.m * p.n * p.k / (median * 1e-3) / 1e12;

  std::printf("device=\"%s\" M=%lld N=%lld K=%lld dtype=%s form=%s target=%s "
              "out=%s image=%s kernel=%s config=%s grid=%u block=%u smem=%u checked=%lld "
              "unwritten=%lld rel_err=%.3e max_abs_err=%.3e median_ms=%.4f "
              "tflops=%.2f status=%s\n",
              dev.name.c_str(), (long long)p.m, (long long)p.n, (long long)p.k,
              toString(p.in).c_str(), toString(p.form).c_str(),
              toString(p.target).c_str(), toString(p.epilogue.out).c_str(),
              imageKind.c_str(), name.c_str(), cfg.str(p.target).c_str(), g.grid, g.block,
              g.smemBytes, (long long)checked, (long long)unwritten, relErr,
              maxAbs, median, tflops, pass ? "PASS" : "FAIL");
  for (cu::CUdeviceptr d : {dA, dB, dC, dBias, dRes, dMapA, dMapB})
    if (d)
      dev.free(d);
  return pass ? 0 : 1;
}
