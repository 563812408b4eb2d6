//===- GemmLoweringTest.cpp - gemm groups as tensor-core kernels -*- C++ -*-===//
//
// The pipeline's GEMMs through lowerOpToKernels: a gemm group with a bias,
// an activation and three results, batched products (both operands batched,
// one broadcast, every form) and a lone matmul, for sm_80 and sm_90a. Each
// kernel is configured by tg-configure-gemms, lowered, compiled to PTX and
// assembled by ptxas (no spills, no performance warnings), and run by the
// IR emulator (GemmEmulator.h) against a double-precision reference that
// rounds where the group's types round, and from its PTX on the PTX
// emulator (sm_90a's through tensor maps). Refusals name the op and reason.
//
//===----------------------------------------------------------------------===//
#include "SimtTestUtil.h"
#include "GemmEmulator.h"

#ifdef TG_HAVE_PTX_EMULATOR
#include "EmuHarness.h"
#include "runtime/emulator/Emulator.h"
#endif

#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/KernelGen.h"
#include "codegen/nvptx/Passes.h"
#include "codegen/nvptx/GemmLowering.h"
#include "codegen/nvptx/Toolchain.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGOps.h"
#include "frontend/Sema.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

using namespace tg::nvptx;

namespace {

/// A tg module with one entry function whose first op is the GEMM, lowered
/// for one target.
struct Lowered {
  std::string kernels; ///< the kernel module, printed
  std::vector<KernelLaunch> launches;
  std::string error;   ///< diagnostics when lowering failed
};

Lowered lower(const std::string &src, Target t, bool configure = true) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::tg::TGDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext ctx(registry);
  Lowered out;
  mlir::ScopedDiagnosticHandler h(&ctx, [&](mlir::Diagnostic &d) {
    out.error += d.str() + "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> m =
      mlir::parseSourceString<mlir::ModuleOp>(src, &ctx);
  REQUIRE(m);
  if (configure) {
    mlir::PassManager pm(&ctx);
    pm.addPass(createConfigureGemmsPass());
    REQUIRE(mlir::succeeded(pm.run(*m)));
  }
  auto fn = *m->getOps<mlir::func::FuncOp>().begin();
  mlir::Operation *op = &fn.getBody().front().front();
  mlir::OwningOpRef<mlir::ModuleOp> kernels =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
  auto launches = lowerOpToKernels(op, t, *kernels);
  if (mlir::failed(launches))
    return out;
  out.launches = *launches;
  llvm::raw_string_ostream os(out.kernels);
  kernels->print(os);
  return out;
}

/// Compiles the kernels to PTX and assembles them (skipped loudly without
/// ptxas): the contract's "ptxas -v clean". Returns the PTX.
std::string checkAssembles(const Lowered &l, Target t,
                           std::string instr = "") {
  std::string ptx, err;
  bool ok = compileMLIRToPTX(l.kernels, t, ptx, err);
  INFO(err);
  REQUIRE(ok);
  if (instr.empty())
    instr = t == Target::SM80 ? "mma.sync.aligned.m16n8k16" : "wgmma.mma_async";
  CHECK(ptx.find(instr) != std::string::npos);
  tgtest::checkPtxAssembles(ptx, t);
  return ptx;
}

/// A host tensor: raw bytes of `type` plus the values as doubles.
struct Tensor {
  ElemType type = ElemType::F32;
  std::vector<uint8_t> bytes;
  size_t size() const { return bytes.size() / elemBytes(type); }
  double at(size_t i) const {
    if (type == ElemType::F32) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    return fromHalfBits(h, type);
  }
  void set(size_t i, double v) {
    if (type == ElemType::F32) {
      float f = static_cast<float>(v);
      std::memcpy(bytes.data() + 4 * i, &f, 4);
      return;
    }
    uint16_t h = toHalfBits(static_cast<float>(v), type);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
};

Tensor tensor(ElemType t, size_t n, unsigned seed) {
  Tensor x{t, std::vector<uint8_t>(n * elemBytes(t))};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i)
    x.set(i, d(rng));
  return x;
}

/// Rounds like a tensor of type t stores.
double roundTo(double v, ElemType t) {
  if (t == ElemType::F32)
    return static_cast<float>(v);
  return fromHalfBits(toHalfBits(static_cast<float>(v), t), t);
}

void poison(std::vector<Tensor> &results) {
  for (Tensor &r : results)
    for (size_t i = 0; i < r.size(); ++i)
      r.set(i, std::nan(""));
}

/// Runs the lowered kernel's IR on `operands` with the MLIR-level emulator,
/// filling `results` (sized by the caller, poisoned with NaN so an
/// unwritten element shows), and calls `check`. On sm_80 it runs the
/// kernel's PTX again on the PTX emulator (runtime/emulator), the one
/// tg-run --device emulator uses, and checks again. Returns the number of
/// instructions the PTX emulator executed (0 without it).
/// The realigned copy of `src` that a staged map describes (rows of
/// map.pitch elements), its padding filled with `pad` bytes.
std::vector<uint8_t> stagedCopy(const std::vector<uint8_t> &src,
                                const TensorMapParam &map, uint8_t pad) {
  std::vector<uint8_t> out(map.stagedBytes(), pad);
  for (uint64_t r = 0; r < map.batches * map.rows; ++r)
    std::memcpy(out.data() + r * map.rowPitch() * 2, src.data() + r * map.cols * 2,
                map.cols * 2);
  return out;
}

uint64_t emulate(const Lowered &l, const std::string &ptx,
             std::vector<Tensor> &operands, std::vector<Tensor> &results,
             Target t, const std::function<void()> &check) {
  // One GEMM launch, after the realigning copies of a staged one.
  REQUIRE(!l.launches.empty());
  const KernelLaunch &k = l.launches.back();
  for (const KernelLaunch &c : l.launches)
    if (&c != &k)
      CHECK(c.symbol.rfind("tg_gemm_stage_", 0) == 0);
  poison(results);
  // The IR emulator knows the tensor-core kernels' ops; the SIMT GEMM runs
  // on the PTX emulator only. It runs the GEMM alone: a staged operand's
  // copy is made here, its padding NaN (0xff bytes), which the kernel must
  // never read (the map's columns end at the row's end; TMA fills zeros).
  bool tensorCore = k.symbol.rfind("tg_gemm_", 0) == 0;
  std::vector<std::vector<uint8_t>> hostStaged;
  hostStaged.reserve(k.params.size());
  std::vector<emu::KernelArg> args;
  for (const KernelParam &p : k.params) {
    bool result = p.kind == KernelParam::Kind::Result;
    std::vector<uint8_t> *buf = &(result ? results : operands).at(p.index).bytes;
    if (p.kind == KernelParam::Kind::TensorMap && p.map.staged) {
      hostStaged.push_back(stagedCopy(*buf, p.map, 0xff));
      buf = &hostStaged.back();
      CHECK(p.map.rowPitch() % 8 == 0);
      CHECK(p.map.rowPitch() - p.map.cols < 8);
    }
    emu::KernelArg a = emu::kernelArg(p, buf);
    // The descriptor covers the operand exactly.
    if (a.tensorMap)
      CHECK(a.rows * a.cols * a.batches == operands.at(p.index).size());
    args.push_back(a);
  }
  CHECK(k.grid[2] == 1);
  std::string err;
  if (tensorCore) {
    err = emu::runKernel(l.kernels, k.symbol, {k.grid[0], k.grid[1]},
                         static_cast<int>(k.block[0]), k.dynamicSharedBytes, args);
    INFO(err);
    REQUIRE(err.empty());
    check();
  }
#ifdef TG_HAVE_PTX_EMULATOR
  (void)t;
  INFO("on the PTX emulator");
  poison(results);
  auto mod = tgrt::emu::PtxModule::parse(ptx, err);
  INFO(err);
  REQUIRE(mod);
  tgrt::emu::Memory mem;
  tgtest::TensorMaps maps;
  // The op's scratch, garbage at the start as on the device.
  std::vector<uint8_t> scratch(k.scratchBytes, 0xcd);
  if (!scratch.empty())
    mem.add(scratch.data(), scratch.size());
  for (auto &x : operands)
    mem.add(x.bytes.data(), x.bytes.size());
  for (auto &x : results)
    mem.add(x.bytes.data(), x.bytes.size());
  uint64_t executed = 0;
  for (const KernelLaunch &launch : l.launches) {
    CHECK(launch.scratchBytes == k.scratchBytes);
    std::vector<uint64_t> params;
    for (const KernelParam &p : launch.params) {
      if (p.kind == KernelParam::Kind::Scratch) {
        params.push_back(reinterpret_cast<uintptr_t>(scratch.data()));
        continue;
      }
      auto &buf = (p.kind == KernelParam::Kind::Result ? results : operands)
                      .at(p.index)
                      .bytes;
      params.push_back(reinterpret_cast<uintptr_t>(buf.data()));
      if (p.kind == KernelParam::Kind::TensorMap) {
        if (p.map.staged) {
          // The copy the earlier launch wrote: the operand's rows, padded
          // with zeros.
          REQUIRE(p.map.scratchOffset + p.map.stagedBytes() <= scratch.size());
          CHECK(std::memcmp(scratch.data() + p.map.scratchOffset,
                            stagedCopy(buf, p.map, 0).data(),
                            p.map.stagedBytes()) == 0);
          params.back() =
              reinterpret_cast<uintptr_t>(scratch.data() + p.map.scratchOffset);
        }
        params.back() = maps.add(p.map, params.back(), mem, err);
        INFO(err);
        REQUIRE(params.back());
      }
    }
    REQUIRE(mod->launch(launch.symbol, launch.grid, launch.block,
                        launch.dynamicSharedBytes, params, mem, err));
    executed += mod->lastInstructionCount();
  }
  check();
  return executed;
#else
  (void)ptx;
  (void)t;
  CHECK(tensorCore);
  return 0;
#endif
}

/// Checks `got` against `want` within `tol` relative to the largest |want|.
void checkClose(const Tensor &got, const std::vector<double> &want, double tol) {
  REQUIRE(got.size() == want.size());
  double scale = 1e-30;
  for (double w : want)
    scale = std::max(scale, std::fabs(w));
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double e = std::fabs(got.at(i) - want[i]) / scale;
    if (!(e <= tol)) // NaN (unwritten) counts as bad
      ++bad;
    worst = std::max(worst, std::isnan(e) ? 1e30 : e);
  }
  INFO("elements off: " << bad << " of " << want.size() << ", worst "
                        << worst);
  CHECK(bad == 0);
}

/// C[b][i][j] = Σ_k A·B in double for form `f`, batch count `batch`, with
/// each operand batched or broadcast.
std::vector<double> product(const Tensor &a, const Tensor &b, int64_t batch,
                            bool batchA, bool batchB, int64_t m, int64_t n,
                            int64_t k, Form f) {
  std::vector<double> c(batch * m * n);
  for (int64_t bi = 0; bi < batch; ++bi) {
    size_t ao = batchA ? bi * m * k : 0, bo = batchB ? bi * n * k : 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          double x = a.at(ao + (f == Form::TN ? kk * m + i : i * k + kk));
          double y = b.at(bo + (f == Form::NT ? j * k + kk : kk * n + j));
          s += x * y;
        }
        c[(bi * m + i) * n + j] = s;
      }
  }
  return c;
}

/// The bias + ReLU group of the tests, in bf16: s = bf16(bf16(A·B) +
/// bias[n]) and y = relu(s), from operands {A, B, bias}.
void biasReluReference(const std::vector<Tensor> &ops, int64_t m, int64_t n,
                       int64_t k, Form f, std::vector<double> &s,
                       std::vector<double> &y) {
  s = product(ops[0], ops[1], 1, true, true, m, n, k, f);
  y.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    s[i] = roundTo(roundTo(s[i], ElemType::BF16) + ops[2].at(i % n), ElemType::BF16);
    y[i] = std::max(s[i], 0.0);
  }
}

const Target kTargets[] = {Target::SM80, Target::SM90a};

/// A bf16 product on sm_90a.
GemmProblem bf16Sm90(int64_t m, int64_t n, int64_t k, Form f) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.in = ElemType::BF16;
  p.form = f;
  p.target = Target::SM90a;
  return p;
}

} // namespace

TEST_CASE("lowered gemm group: bias, relu and three results",
          "[nvptx][lowering][emulate]") {
  // 96 x 40 over K = 72: ragged in M for every tile, bf16 throughout, the
  // pre-activation kept for the backward, a cast to f32 as a third result.
  const char *src = R"mlir(
func.func @f(%x: tensor<96x72xbf16>, %w: tensor<72x40xbf16>, %b: tensor<40xbf16>)
    -> (tensor<96x40xbf16>, tensor<96x40xbf16>, tensor<96x40xf32>) {
  %r:3 = tg.fused <gemm> ins(%x, %w, %b : tensor<96x72xbf16>, tensor<72x40xbf16>, tensor<40xbf16>) {
  ^bb0(%a: tensor<96x72xbf16>, %c: tensor<72x40xbf16>, %d: tensor<40xbf16>):
    %m = tg.matmul %a, %c {tg.acc = f32} : tensor<96x72xbf16>, tensor<72x40xbf16> -> tensor<96x40xbf16>
    %s = tg.add %m, %d : tensor<96x40xbf16>, tensor<40xbf16> -> tensor<96x40xbf16>
    %y = tg.relu %s : tensor<96x40xbf16>
    %z = tg.cast %s : tensor<96x40xbf16> to tensor<96x40xf32>
    tg.yield %s, %y, %z : tensor<96x40xbf16>, tensor<96x40xbf16>, tensor<96x40xf32>
  } -> tensor<96x40xbf16>, tensor<96x40xbf16>, tensor<96x40xf32>
  return %r#0, %r#1, %r#2 : tensor<96x40xbf16>, tensor<96x40xbf16>, tensor<96x40xf32>
})mlir";
  const int64_t M = 96, N = 40, K = 72;
  for (Target t : kTargets) {
    INFO(toString(t));
    Lowered l = lower(src, t);
    INFO(l.error);
    REQUIRE(l.launches.size() == 1);
    std::string ptx = checkAssembles(l, t);
    std::vector<Tensor> ops = {tensor(ElemType::BF16, M * K, 1),
                               tensor(ElemType::BF16, K * N, 2),
                               tensor(ElemType::BF16, N, 3)};
    std::vector<Tensor> res = {{ElemType::BF16, std::vector<uint8_t>(M * N * 2)},
                               {ElemType::BF16, std::vector<uint8_t>(M * N * 2)},
                               {ElemType::F32, std::vector<uint8_t>(M * N * 4)}};
    std::vector<double> s, y;
    biasReluReference(ops, M, N, K, Form::NN, s, y);
    // One bf16 ulp: the kernel's f32 sum may round the product the other way.
    emulate(l, ptx, ops, res, t, [&] {
      checkClose(res[0], s, 1.0 / 128);
      checkClose(res[1], y, 1.0 / 128);
      checkClose(res[2], s, 1.0 / 128);
    });
  }
}

TEST_CASE("lowered batched GEMMs: every form, batched and broadcast operands",
          "[nvptx][lowering][emulate]") {
  // Attention's products: [B, H, T, d] x [B, H, T, d]^T (NT, both batched),
  // P x V (NN), a weight shared by every batch (rhs broadcast: TN batched,
  // NN/NT folded into one tall GEMM) and a shared lhs.
  // K = 56: TMA boxes along K (MN-major operands) run past each matrix,
  // which the 3-D descriptors of sm_90a fill with zeros.
  struct Case {
    const char *name;
    Form form;
    bool batchA, batchB;
    std::string lhsTy, rhsTy, attrs;
  };
  const int64_t M = 48, N = 40, K = 56;
  const Case cases[] = {
      {"nt", Form::NT, true, true, "2x3x48x56", "2x3x40x56", "{transpose_rhs, tg.acc = f32}"},
      {"nn", Form::NN, true, true, "2x3x48x56", "2x3x56x40", "{tg.acc = f32}"},
      {"tn, rhs broadcast", Form::TN, true, false, "2x3x56x48", "56x40", "{transpose_lhs, tg.acc = f32}"},
      {"nn, lhs broadcast", Form::NN, false, true, "48x56", "2x3x56x40", "{tg.acc = f32}"},
      // A linear layer: folded into one GEMM of 6 x 48 rows.
      {"nt, rhs broadcast (folded)", Form::NT, true, false, "2x3x48x56", "40x56", "{transpose_rhs, tg.acc = f32}"},
      {"nn, rhs broadcast (folded)", Form::NN, true, false, "2x3x48x56", "56x40", "{tg.acc = f32}"},
  };
  for (const Case &cs : cases)
    for (Target t : kTargets) {
      INFO(cs.name << " on " << toString(t));
      // A scale by a constant and a residual of the output's shape.
      std::string src =
          "func.func @f(%a: tensor<" + cs.lhsTy + "xf16>, %b: tensor<" + cs.rhsTy +
          "xf16>, %r: tensor<2x3x48x40xf32>) -> tensor<2x3x48x40xf32> {\n"
          "  %y = tg.fused <gemm> ins(%a, %b, %r : tensor<" + cs.lhsTy + "xf16>, tensor<" +
          cs.rhsTy + "xf16>, tensor<2x3x48x40xf32>) {\n"
          "  ^bb0(%x: tensor<" + cs.lhsTy + "xf16>, %w: tensor<" + cs.rhsTy +
          "xf16>, %q: tensor<2x3x48x40xf32>):\n"
          "    %p = tg.matmul %x, %w " + cs.attrs + " : tensor<" + cs.lhsTy +
          "xf16>, tensor<" + cs.rhsTy + "xf16> -> tensor<2x3x48x40xf16>\n"
          "    %m = tg.cast %p : tensor<2x3x48x40xf16> to tensor<2x3x48x40xf32>\n"
          "    %h = tg.constant dense<0.125> : tensor<f32>\n"
          "    %s = tg.mul %m, %h : tensor<2x3x48x40xf32>, tensor<f32> -> tensor<2x3x48x40xf32>\n"
          "    %o = tg.add %s, %q : tensor<2x3x48x40xf32>, tensor<2x3x48x40xf32> -> tensor<2x3x48x40xf32>\n"
          "    tg.yield %o : tensor<2x3x48x40xf32>\n"
          "  } -> tensor<2x3x48x40xf32>\n"
          "  return %y : tensor<2x3x48x40xf32>\n}\n";
      Lowered l = lower(src, t);
      INFO(l.error);
      REQUIRE(l.launches.size() == 1);
      std::string ptx = checkAssembles(l, t);
      const int64_t B = 6;
      std::vector<Tensor> ops = {
          tensor(ElemType::F16, (cs.batchA ? B : 1) * M * K, 4),
          tensor(ElemType::F16, (cs.batchB ? B : 1) * K * N, 5),
          tensor(ElemType::F32, B * M * N, 6)};
      std::vector<Tensor> res = {{ElemType::F32, std::vector<uint8_t>(B * M * N * 4)}};
      std::vector<double> c =
          product(ops[0], ops[1], B, cs.batchA, cs.batchB, M, N, K, cs.form);
      for (size_t i = 0; i < c.size(); ++i)
        c[i] = roundTo(c[i], ElemType::F16) * 0.125 + ops[2].at(i);
      // The product rounds to f16 (one ulp either way by summation order).
      emulate(l, ptx, ops, res, t, [&] { checkClose(res[0], c, 1.0 / 1024); });
    }
}

TEST_CASE("lowered ragged GEMMs: any M, N, K in every form",
          "[nvptx][lowering][emulate][ragged]") {
  // Each shape in NN, NT and TN with a bias, a relu and both values
  // stored. The operand row pitches cover every copy width of the sm_80
  // loader (16, 8 and 4-byte cp.async, 2-byte loads for odd pitches), N
  // odd for the half-out output pair, M, N, K off every tile edge, and
  // products under 8 in a dimension for the SIMT GEMM. On sm_90a the
  // rows TMA cannot load take the mma.sync kernel (tg-configure-gemms).
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {
      {37, 10, 51},  // odd K and M: 2-byte loads; N = 10: 4-byte copies
      {40, 21, 36},  // K % 4 == 0: 8-byte copies; odd N
      {72, 24, 200}, // aligned rows, K = 6.25 tiles of 32 (7 steps), ragged M
      {37, 21, 64},  // aligned in NT: wgmma with ragged M and N
      {20, 5, 12},   // N < 8: the SIMT GEMM
  };
  const Form forms[] = {Form::NN, Form::NT, Form::TN};
  for (const Shape &sh : shapes)
    for (Form f : forms)
      for (Target t : kTargets) {
        const int64_t M = sh.m, N = sh.n, K = sh.k;
        std::string dims = std::to_string(M) + "x" + std::to_string(N) + "x" +
                           std::to_string(K);
        INFO(dims << " " << toString(f) << " on " << toString(t));
        auto ty = [](int64_t r, int64_t c) {
          return "tensor<" + std::to_string(r) + "x" + std::to_string(c) + "xbf16>";
        };
        std::string lhs = f == Form::TN ? ty(K, M) : ty(M, K);
        std::string rhs = f == Form::NT ? ty(N, K) : ty(K, N);
        std::string out = ty(M, N), bias = "tensor<" + std::to_string(N) + "xbf16>";
        std::string attrs = f == Form::NN   ? "{tg.acc = f32}"
                            : f == Form::NT ? "{transpose_rhs, tg.acc = f32}"
                                            : "{transpose_lhs, tg.acc = f32}";
        std::string src =
            "func.func @f(%x: " + lhs + ", %w: " + rhs + ", %b: " + bias + ") -> (" +
            out + ", " + out + ") {\n"
            "  %r:2 = tg.fused <gemm> ins(%x, %w, %b : " + lhs + ", " + rhs + ", " + bias + ") {\n"
            "  ^bb0(%a: " + lhs + ", %c: " + rhs + ", %d: " + bias + "):\n"
            "    %m = tg.matmul %a, %c " + attrs + " : " + lhs + ", " + rhs + " -> " + out + "\n"
            "    %s = tg.add %m, %d : " + out + ", " + bias + " -> " + out + "\n"
            "    %y = tg.relu %s : " + out + "\n"
            "    tg.yield %s, %y : " + out + ", " + out + "\n"
            "  } -> " + out + ", " + out + "\n"
            "  return %r#0, %r#1 : " + out + ", " + out + "\n}\n";
        Lowered l = lower(src, t);
        INFO(l.error);
        REQUIRE(l.launches.size() == 1);
        // The oracle for the generator tg-configure-gemms picks.
        GemmProblem p{M, N, K, ElemType::BF16, f, t};
        bool simt = std::min({M, N, K}) < 8;
        bool wgmma = t == Target::SM90a && rowsAligned(p, true) && rowsAligned(p, false);
        std::string instr = simt    ? "fma.rn.f32"
                            : wgmma ? "wgmma.mma_async"
                                    : "mma.sync.aligned.m16n8k16";
        std::string ptx = checkAssembles(l, t, instr);
        if (simt)
          CHECK(ptx.find("mma") == std::string::npos);
        std::vector<Tensor> ops = {tensor(ElemType::BF16, M * K, 21),
                                   tensor(ElemType::BF16, K * N, 22),
                                   tensor(ElemType::BF16, N, 23)};
        std::vector<Tensor> res = {{ElemType::BF16, std::vector<uint8_t>(M * N * 2)},
                                   {ElemType::BF16, std::vector<uint8_t>(M * N * 2)}};
        std::vector<double> s, y;
        biasReluReference(ops, M, N, K, f, s, y);
        // One bf16 ulp of the largest value: the f32 sum's order differs.
        emulate(l, ptx, ops, res, t, [&] {
          checkClose(res[0], s, 1.0 / 128);
          checkClose(res[1], y, 1.0 / 128);
        });
      }
}

TEST_CASE("odd row pitches stay asynchronous",
          "[nvptx][lowering][emulate][ragged]") {
  // GPT-2's vocabulary (50257) in the backward: the logits' gradient is A
  // of the input gradient (NN, odd K) and of the embedding's weight
  // gradient (TN, odd M). Its rows are only 2-byte aligned, yet every
  // operand byte must arrive by cp.async (16-byte windows realigned in
  // shared memory), so no synchronous global load is left in the kernel.
  // Odd N takes the same path for B (NN), as does sm_90a's mma.sync kernel.
  struct Case {
    int64_t m, n, k;
    Form form;
  };
  const Case cases[] = {{64, 64, 257, Form::NN},
                        {257, 64, 64, Form::TN},
                        {48, 57, 40, Form::NN},
                        {40, 33, 61, Form::NT}};
  for (const Case &cs : cases)
    for (Target t : kTargets) {
      const int64_t M = cs.m, N = cs.n, K = cs.k;
      INFO(M << "x" << N << "x" << K << " " << toString(cs.form) << " on "
              << toString(t));
      auto ty = [](int64_t r, int64_t c) {
        return "tensor<" + std::to_string(r) + "x" + std::to_string(c) + "xbf16>";
      };
      std::string lhs = cs.form == Form::TN ? ty(K, M) : ty(M, K);
      std::string rhs = cs.form == Form::NT ? ty(N, K) : ty(K, N);
      std::string attrs = cs.form == Form::NN   ? ""
                          : cs.form == Form::NT ? " {transpose_rhs}"
                                                : " {transpose_lhs}";
      std::string src = "func.func @f(%a: " + lhs + ", %b: " + rhs + ") -> " +
                        ty(M, N) + " {\n  %c = tg.matmul %a, %b" + attrs +
                        " : " + lhs + ", " + rhs + " -> " + ty(M, N) +
                        "\n  return %c : " + ty(M, N) + "\n}\n";
      Lowered l = lower(src, t);
      INFO(l.error);
      REQUIRE(l.launches.size() == 1);
      std::string ptx = checkAssembles(l, t, "mma.sync.aligned.m16n8k16");
      CHECK(ptx.find("cp.async.cg.shared.global") != std::string::npos);
      CHECK(ptx.find("ld.global") == std::string::npos);
      std::vector<Tensor> ops = {tensor(ElemType::BF16, M * K, 31),
                                 tensor(ElemType::BF16, K * N, 32)};
      std::vector<Tensor> res = {
          {ElemType::BF16, std::vector<uint8_t>(M * N * 2)}};
      std::vector<double> c = product(ops[0], ops[1], 1, true, true, M, N, K, cs.form);
      uint64_t executed = emulate(l, ptx, ops, res, t,
                                  [&] { checkClose(res[0], c, 1.0 / 128); });
      // The counts docs/nvptx.md quotes (before: 2-byte loads).
      auto count = [&](const std::string &what) {
        size_t n = 0;
        for (size_t at = ptx.find(what); at != std::string::npos;
             at = ptx.find(what, at + 1))
          ++n;
        return n;
      };
      WARN(M << "x" << N << "x" << K << " " << toString(cs.form) << " on "
             << toString(t) << ": " << executed << " instructions emulated; "
             << count("cp.async.ca.") + count("cp.async.cg.") << " cp.async, " << count("ld.global")
             << " ld.global, " << count("bar.sync") << " bar.sync in the PTX");
    }
}

TEST_CASE("batched odd row pitches on both targets",
          "[nvptx][lowering][emulate][ragged]") {
  // Batched products whose rows TMA cannot load (NT with odd K, TN with
  // odd M: 2-byte aligned rows and batch strides): on sm_90a too they take the
  // mma.sync kernel (tg-configure-gemms), never a wgmma kernel with
  // unaligned tensor maps, and match the reference per batch.
  struct Case {
    int64_t b, m, n, k;
    Form form;
  };
  const Case cases[] = {{2, 40, 33, 61, Form::NT}, {3, 25, 16, 40, Form::TN}};
  for (const Case &cs : cases)
    for (Target t : kTargets) {
      const int64_t B = cs.b, M = cs.m, N = cs.n, K = cs.k;
      INFO(B << "x" << M << "x" << N << "x" << K << " " << toString(cs.form)
              << " on " << toString(t));
      auto ty = [&](int64_t r, int64_t c) {
        return "tensor<" + std::to_string(B) + "x" + std::to_string(r) + "x" +
               std::to_string(c) + "xbf16>";
      };
      std::string lhs = cs.form == Form::TN ? ty(K, M) : ty(M, K);
      std::string rhs = cs.form == Form::NT ? ty(N, K) : ty(K, N);
      std::string attrs = cs.form == Form::NT ? " {transpose_rhs}" : " {transpose_lhs}";
      std::string src = "func.func @f(%a: " + lhs + ", %b: " + rhs + ") -> " +
                        ty(M, N) + " {\n  %c = tg.matmul %a, %b" + attrs +
                        " : " + lhs + ", " + rhs + " -> " + ty(M, N) +
                        "\n  return %c : " + ty(M, N) + "\n}\n";
      Lowered l = lower(src, t);
      INFO(l.error);
      REQUIRE(l.launches.size() == 1);
      for (const KernelParam &p : l.launches[0].params)
        CHECK(p.kind != KernelParam::Kind::TensorMap);
      std::string ptx = checkAssembles(l, t, "mma.sync.aligned.m16n8k16");
      CHECK(ptx.find("wgmma") == std::string::npos);
      std::vector<Tensor> ops = {tensor(ElemType::BF16, B * M * K, 41),
                                 tensor(ElemType::BF16, B * K * N, 42)};
      std::vector<Tensor> res = {
          {ElemType::BF16, std::vector<uint8_t>(B * M * N * 2)}};
      std::vector<double> c =
          product(ops[0], ops[1], B, true, true, M, N, K, cs.form);
      emulate(l, ptx, ops, res, t, [&] { checkClose(res[0], c, 1.0 / 128); });
    }
}

TEST_CASE("odd row pitches through wgmma over realigned copies",
          "[nvptx][lowering][emulate][ragged][staged]") {
  // kernel = "wgmma_staged" (sm_90a): each operand whose rows are not
  // 16-byte aligned is first copied into the op's scratch with rows padded
  // to 8 elements, and the wgmma kernel reads the copy through a tensor map
  // with that pitch. The shapes of "odd row pitches stay asynchronous" and
  // the batched ones, with the config written by hand (the cost rule keeps
  // products this small on mma.sync), against the fp64 reference and
  // against the mma.sync kernel tg-configure-gemms picks for them.
  struct Case {
    int64_t b, m, n, k;
    Form form;
  };
  const Case cases[] = {{1, 64, 64, 257, Form::NN}, {1, 257, 64, 64, Form::TN},
                        {1, 48, 57, 40, Form::NN},  {1, 40, 33, 61, Form::NT},
                        {2, 40, 33, 61, Form::NT},  {3, 25, 16, 40, Form::TN}};
  for (const Case &cs : cases) {
    const int64_t B = cs.b, M = cs.m, N = cs.n, K = cs.k;
    std::string name = std::to_string(B) + "x" + std::to_string(M) + "x" +
                       std::to_string(N) + "x" + std::to_string(K) + " " +
                       toString(cs.form);
    INFO(name);
    auto ty = [&](int64_t r, int64_t c) {
      return "tensor<" + (B > 1 ? std::to_string(B) + "x" : std::string()) +
             std::to_string(r) + "x" + std::to_string(c) + "xbf16>";
    };
    std::string lhs = cs.form == Form::TN ? ty(K, M) : ty(M, K);
    std::string rhs = cs.form == Form::NT ? ty(N, K) : ty(K, N);
    GemmProblem p = bf16Sm90(M, N, K, cs.form);
    p.batch = B;
    REQUIRE(!(rowsAligned(p, true) && rowsAligned(p, false)));
    // The decision tg-configure-gemms makes for this small product.
    CHECK(configureGemm(p).kernel == GemmKernel::MmaSync);
    CHECK(!stagingCost(p).pays);
    TileConfig c = chooseTileConfig(p);
    std::string cfg =
        "#tg.tile_config<bm = " + std::to_string(c.bm) + ", bn = " +
        std::to_string(c.bn) + ", bk = " + std::to_string(c.bk) +
        ", stages = " + std::to_string(c.stages) + ", group_m = " +
        std::to_string(c.groupM) + ", warps_m = 1, warps_n = 1, "
        "consumer_warpgroups = " + std::to_string(c.consumerWarpgroups()) +
        ", persistent = true, target = \"sm_90a\", kernel = \"wgmma_staged\">";
    std::string form = cs.form == Form::NN   ? ""
                       : cs.form == Form::NT ? "transpose_rhs, "
                                             : "transpose_lhs, ";
    auto source = [&](const std::string &attrs) {
      return "func.func @f(%a: " + lhs + ", %b: " + rhs + ") -> " + ty(M, N) +
             " {\n  %c = tg.matmul %a, %b {" + form + attrs + "} : " + lhs +
             ", " + rhs + " -> " + ty(M, N) + "\n  return %c : " + ty(M, N) +
             "\n}\n";
    };
    Lowered l = lower(source("tg.tile_configs = [" + cfg + "]"),
                      Target::SM90a, /*configure=*/false);
    INFO(l.error);
    // The copies (one per odd operand), then the GEMM.
    int odd = !rowsAligned(p, true) + !rowsAligned(p, false);
    REQUIRE(l.launches.size() == size_t(odd) + 1);
    const KernelLaunch &g = l.launches.back();
    uint64_t staged = 0;
    for (const KernelParam &q : g.params)
      if (q.kind == KernelParam::Kind::TensorMap && q.map.staged) {
        ++staged;
        CHECK(q.map.scratchOffset % 256 == 0);
        CHECK(q.map.scratchOffset + q.map.stagedBytes() <= g.scratchBytes);
        // The manifest's map: the padded pitch as its row stride.
        CHECK(q.map.driverArgs().strides[0] == q.map.rowPitch() * 2);
        CHECK(q.map.driverArgs().strides[0] % 16 == 0);
      }
    CHECK(staged == uint64_t(odd));
    CHECK(g.scratchBytes == stagingCost(p).scratchBytes);
    std::string ptx = checkAssembles(l, Target::SM90a, "wgmma.mma_async");
    CHECK(ptx.find("cp.async.bulk.tensor") != std::string::npos);
    // The copy's 16-byte stores.
    CHECK(ptx.find("st.global.v4.") != std::string::npos);

    std::vector<Tensor> ops = {tensor(ElemType::BF16, B * M * K, 51),
                               tensor(ElemType::BF16, B * K * N, 52)};
    std::vector<double> want =
        product(ops[0], ops[1], B, true, true, M, N, K, cs.form);
    std::vector<Tensor> res = {
        {ElemType::BF16, std::vector<uint8_t>(B * M * N * 2)}};
    uint64_t executed = emulate(l, ptx, ops, res, Target::SM90a,
                                [&] { checkClose(res[0], want, 1.0 / 128); });
    Tensor viaWgmma = res[0];
    // The same product through the mma.sync kernel tg-configure-gemms picks.
    Lowered m = lower(source("tg.acc = f32"), Target::SM90a);
    INFO(m.error);
    REQUIRE(m.launches.size() == 1);
    std::string mptx = checkAssembles(m, Target::SM90a, "mma.sync.aligned.m16n8k16");
    uint64_t mexecuted = emulate(m, mptx, ops, res, Target::SM90a,
                                 [&] { checkClose(res[0], want, 1.0 / 128); });
    std::vector<double> viaMma(res[0].size());
    for (size_t i = 0; i < viaMma.size(); ++i)
      viaMma[i] = res[0].at(i);
    // f32 sums in another order, each rounded to bf16: one bf16 ulp of the
    // largest value at most.
    checkClose(viaWgmma, viaMma, 1.0 / 128);
    size_t same = 0;
    for (size_t i = 0; i < viaMma.size(); ++i)
      same += viaWgmma.at(i) == viaMma[i];
    WARN(name << " on sm_90a: wgmma over realigned copies " << executed
              << " PTX instructions emulated (copies included), scratch "
              << g.scratchBytes << " B; mma.sync " << mexecuted << "; "
              << same << " of " << viaMma.size() << " outputs bit-identical");
  }
}

TEST_CASE("the staging cost rule: GPT-2's vocabulary products take wgmma",
          "[nvptx][lowering][staged]") {
  // The two products of the logits' gradient [B*T, 50257] in GPT-2 small's
  // backward (B*T = 8192, C = 768): the input gradient (NN, K = 50257) and
  // the output embedding's weight gradient (TN, M = 50257).
  GemmProblem dx = bf16Sm90(8192, 768, 50257, Form::NN);
  GemmProblem dw = bf16Sm90(50257, 768, 8192, Form::TN);
  for (const GemmProblem &p : {dx, dw}) {
    StagingCost s = stagingCost(p);
    INFO(p.m << "x" << p.n << "x" << p.k << ": wgmma " << s.wgmmaSeconds
             << " s + copy " << s.copySeconds << " s vs mma.sync "
             << s.mmaSyncSeconds << " s");
    CHECK(s.pays);
    // One operand, [8192, 50257] read and written at a pitch of 50264.
    CHECK(s.copyBytes == 2 * (8192ull * 50257 + 8192ull * 50264));
    CHECK(s.scratchBytes == (2 * 8192ull * 50264 + 255) / 256 * 256);
    TileConfig c = configureGemm(p);
    CHECK(c.kernel == GemmKernel::WgmmaStaged);
    CHECK(c == [&] {
      TileConfig t = chooseTileConfig(p);
      t.kernel = GemmKernel::WgmmaStaged;
      return t;
    }());
  }
  // A thin product over the same operand: the copy costs more than wgmma
  // saves.
  GemmProblem thin = bf16Sm90(8192, 8, 50257, Form::NN);
  CHECK(!stagingCost(thin).pays);
  CHECK(configureGemm(thin).kernel == GemmKernel::MmaSync);
  // Aligned rows: nothing to stage.
  GemmProblem aligned = bf16Sm90(8192, 768, 50264, Form::NN);
  CHECK(!stagingCost(aligned).pays);
  CHECK(configureGemm(aligned).kernel == GemmKernel::TensorCore);
}

TEST_CASE("lowered lone matmul and kernel deduplication", "[nvptx][lowering]") {
  const char *src = R"mlir(
func.func @f(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) -> tensor<64x16xbf16> {
  %c = tg.matmul %a, %b : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return %c : tensor<64x16xbf16>
})mlir";
  for (Target t : kTargets) {
    Lowered l = lower(src, t);
    INFO(l.error);
    REQUIRE(l.launches.size() == 1);
    const KernelLaunch &k = l.launches[0];
    // A, B, then the result; sm_90a reads the matrices through TMA.
    REQUIRE(k.params.size() == 3);
    auto mapKind = t == Target::SM90a ? KernelParam::Kind::TensorMap
                                      : KernelParam::Kind::Operand;
    CHECK(k.params[0].kind == mapKind);
    CHECK(k.params[1].kind == mapKind);
    CHECK(k.params[1].index == 1);
    CHECK(k.params[2].kind == KernelParam::Kind::Result);
    CHECK(k.symbol.rfind("tg_gemm_" + toString(t) + "_", 0) == 0);
    std::vector<Tensor> ops = {tensor(ElemType::BF16, 64 * 32, 7),
                               tensor(ElemType::BF16, 32 * 16, 8)};
    std::vector<Tensor> res = {{ElemType::BF16, std::vector<uint8_t>(64 * 16 * 2)}};
    std::vector<double> c =
        product(ops[0], ops[1], 1, true, true, 64, 16, 32, Form::NN);
    emulate(l, checkAssembles(l, t), ops, res, t,
            [&] { checkClose(res[0], c, 1.0 / 128); });
  }
}

TEST_CASE("GEMMs the tensor-core path refuses, by name", "[nvptx][lowering]") {
  auto refusal = [](const std::string &body, bool configure = true) {
    std::string src = "func.func @f(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, "
                      "%c: tensor<16x64xbf16>, %d: tensor<32x10xbf16>) {\n" +
                      body + "  return\n}\n";
    Lowered l = lower(src, Target::SM80, configure);
    CHECK(l.launches.empty());
    return l.error;
  };
  // No tile config: the pass has not run.
  CHECK_THAT(refusal("  %0 = tg.matmul %a, %b : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>\n",
                     false),
             Catch::Contains("'tg.matmul' op has no #tg.tile_config for sm_80 (run "
                             "tg-configure-gemms{targets=sm_80} first)"));
  // An accumulator other than f32 (tg.acc = f64 passes the verifier: at
  // least as wide as the result): refused by name, never computed in f32
  // behind the attribute's back (issue 13: no backend ignores a precision).
  CHECK_THAT(refusal("  %0 = tg.matmul %a, %b {tg.acc = f64} : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>\n"),
             Catch::Contains("'tg.matmul' op cannot become a tensor-core GEMM: it "
                             "accumulates in a type other than f32"));
  // A^T B^T has no kernel form.
  CHECK_THAT(refusal("  %0 = tg.matmul %c, %b {transpose_lhs, transpose_rhs} : tensor<16x64xbf16>, tensor<32x16xbf16> -> tensor<64x32xbf16>\n"),
             Catch::Contains("cannot become a tensor-core GEMM: both operands are transposed"));
  // N = 10 on sm_90a with a hand-written wgmma config: TMA cannot load rows
  // of 20 bytes (tg-configure-gemms picks the mma.sync kernel instead).
  {
    Lowered l = lower(
        "func.func @f(%a: tensor<64x32xbf16>, %d: tensor<32x10xbf16>) {\n"
        "  %0 = tg.matmul %a, %d {tg.tile_configs = [#tg.tile_config<bm = 64, "
        "bn = 128, bk = 64, stages = 8, group_m = 8, warps_m = 1, warps_n = 1, "
        "consumer_warpgroups = 1, persistent = true, target = \"sm_90a\">]} : "
        "tensor<64x32xbf16>, tensor<32x10xbf16> -> tensor<64x10xbf16>\n  return\n}\n",
        Target::SM90a, false);
    CHECK(l.launches.empty());
    CHECK_THAT(l.error, Catch::Contains("cannot become a wgmma GEMM: an operand's "
                                        "rows are not 16-byte aligned"));
  }
  // The plan puts the product in place of its own lhs (function argument
  // #0): other CTAs would read overwritten tiles.
  CHECK_THAT(lower("func.func @f(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) {\n"
                   "  %0 = tg.matmul %a, %b {tg.alias_arg = 0 : i64} : tensor<64x64xbf16>, "
                   "tensor<64x64xbf16> -> tensor<64x64xbf16>\n  return\n}\n",
                   Target::SM80)
                 .error,
             Catch::Contains("the memory plan puts result #0 in the buffer of "
                             "operand #0, a matrix the kernel still reads"));
  // A reduction is no per-element epilogue (tg-fuse never puts one in a
  // gemm group; a hand-written group is refused by name).
  std::string sum =
      "  %0 = tg.fused <gemm> ins(%a, %b : tensor<64x32xbf16>, tensor<32x16xbf16>) {\n"
      "  ^bb0(%x: tensor<64x32xbf16>, %y: tensor<32x16xbf16>):\n"
      "    %m = tg.matmul %x, %y {tg.acc = f32} : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>\n"
      "    %g = tg.sum %m axes = [1] keepdims : tensor<64x16xbf16> -> tensor<64x1xbf16>\n"
      "    tg.yield %g : tensor<64x1xbf16>\n"
      "  } -> tensor<64x1xbf16>\n";
  CHECK_THAT(refusal(sum),
             Catch::Contains("cannot become a tensor-core GEMM: its epilogue "
                             "op 'tg.sum'") &&
                 Catch::Contains("has no per-element GPU form"));
}

namespace {

/// The bf16 training step of examples/<name>.tg with `defines`, fused,
/// planned and configured for both targets, lowered op by op: every 16-bit
/// GEMM becomes a kernel (none is refused), and each target's kernels
/// assemble. Returns the launches of sm_80 by symbol prefix count.
std::vector<KernelLaunch>
lowerExampleGemms(const std::string &name,
                  std::vector<std::pair<std::string, std::string>> defines) {
  const char *root = std::getenv("TGC_SOURCE_DIR");
  REQUIRE(root);
  std::string path = std::string(root) + "/examples/" + name + ".tg";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  REQUIRE(buffer);
  mlir::DialectRegistry registry;
  mlir::tg::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  std::string errors;
  mlir::ScopedDiagnosticHandler h(&ctx, [&](mlir::Diagnostic &d) {
    errors += d.str() + "\n";
    return mlir::success();
  });
  tgc::SourceFile file(path, (*buffer)->getBuffer().str());
  tgc::DiagEngine diag(file);
  tgc::FrontendOptions opts;
  opts.defines = std::move(defines);
  opts.context = &ctx;
  std::unique_ptr<tgc::Builder> builder = tgc::parseAndElaborate(file, diag, opts);
  REQUIRE(builder);
  mlir::OwningOpRef<mlir::ModuleOp> module = builder->build();
  REQUIRE(module);
  mlir::PassManager pm(&ctx);
  mlir::tg::TrainingPipelineOptions options;
  options.precision = "bf16";
  options.fuse = true;
  options.decompose = true;
  options.planMemory = true;
  mlir::tg::buildTrainingPipeline(pm, options);
  pm.addPass(createConfigureGemmsPass());
  INFO(errors);
  REQUIRE(mlir::succeeded(pm.run(*module)));
  auto step = module->lookupSymbol<mlir::func::FuncOp>("train_step");
  REQUIRE(step);
  std::vector<KernelLaunch> sm80;
  for (Target t : kTargets) {
    INFO(toString(t));
    mlir::OwningOpRef<mlir::ModuleOp> kernels =
        mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
    size_t gemms = 0;
    size_t checked = 0;
    uint64_t stream = 0;
    step.walk([&](mlir::Operation *op) {
      if (!isTensorCoreGemm(op))
        return;
      ++gemms;
      auto launches = lowerOpToKernels(op, t, *kernels);
      INFO(errors);
      REQUIRE(mlir::succeeded(launches));
      if (t == Target::SM80)
        sm80.insert(sm80.end(), launches->begin(), launches->end());
#ifdef TG_HAVE_PTX_EMULATOR
      // The group's numerics on the PTX emulator against the reference
      // evaluator (EmuHarness.h), as the SIMT generators' tests do.
      std::vector<tgtest::Tensor> in, got;
      for (mlir::Value v : op->getOperands()) {
        auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
        in.push_back(tgtest::Tensor::random(
            type.getShape(), *mlir::tg::ref::dtypeOf(type.getElementType()), 11,
            stream++, -1, 1));
      }
      mlir::OwningOpRef<mlir::ModuleOp> alone = tgtest::standaloneFunction(op);
      auto want = mlir::tg::ref::evaluate(
          alone->lookupSymbol<mlir::func::FuncOp>("f"), in);
      REQUIRE(mlir::succeeded(want));
      std::string err;
      bool ran = tgtest::runOnEmulator(op, in, got, err, t);
      INFO(err);
      REQUIRE(ran);
      // Every result within 4x the tolerance of its dtype or, when it is
      // computed from the product rounded to a narrower type, of that type:
      // the kernel's f32 sum runs in another order than the reference's,
      // so the rounded product may differ by an ulp (worstError <= 1).
      REQUIRE(got.size() == want->size());
      mlir::Operation *matmul = op;
      op->walk([&](mlir::tg::MatmulOp m) { matmul = m; });
      std::pair<double, double> productTol = tgtest::tolerance(*mlir::tg::ref::dtypeOf(
          mlir::getElementTypeOrSelf(matmul->getResult(0).getType())));
      std::vector<double> worst;
      for (auto [g, w] : llvm::zip(got, *want)) {
        std::pair<double, double> tol = tgtest::tolerance(w.dtype);
        tol = {std::max(tol.first, productTol.first),
               std::max(tol.second, productTol.second)};
        worst.push_back(tgtest::worstError(g, w, 4 * tol.first, 4 * tol.second));
      }
      INFO("worst error per result (1 = the tolerance): "
           << llvm::join(llvm::map_range(worst, [](double e) { return std::to_string(e); }), ", "));
      CHECK(llvm::all_of(worst, [](double e) { return e <= 1; }));
      ++checked;
#endif
    });
    CHECK(gemms > 0);
#ifdef TG_HAVE_PTX_EMULATOR
    CHECK(checked == gemms);
#endif
    Lowered l;
    llvm::raw_string_ostream os(l.kernels);
    kernels->print(os);
    checkAssembles(l, t);
  }
  return sm80;
}

} // namespace

TEST_CASE("every GEMM of bf16 MLP and GPT training steps lowers and assembles",
          "[nvptx][lowering]") {
  std::vector<KernelLaunch> mlp = lowerExampleGemms(
      "mlp", {{"batch", "16"}, {"pixels", "64"}, {"hidden", "32"}, {"classes", "16"}});
  // Forward, the two weight gradients and the input gradient (fc2 only;
  // fc1's input needs none).
  CHECK(mlp.size() >= 5);
  std::vector<KernelLaunch> gpt = lowerExampleGemms(
      "gpt", {{"layers", "1"}, {"d_model", "64"}, {"heads", "2"}, {"seq", "32"},
              {"batch", "2"}, {"vocab", "256"}, {"ctx", "32"}, {"accumulate", "1"}});
  // The weight gradients of [B, T, C] activations fold the batch into the
  // rows (MatmulOp's VJP): no GEMM of the step is a batched product any
  // more (attention is its own kernel; batched GEMMs are lowered by "lowered
  // batched GEMMs: every form, batched and broadcast operands").
  CHECK(llvm::none_of(gpt, [](const KernelLaunch &k) { return k.grid[1] > 1; }));
}
