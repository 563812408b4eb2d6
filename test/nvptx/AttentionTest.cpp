//===- AttentionTest.cpp - fused attention kernels, run and assembled -*- C++ -*-===//
//
// The FlashAttention-2 kernels of codegen/nvptx/AttentionSm80.cpp on the PTX
// emulator (runtime/emulator, through EmuHarness) against the reference
// evaluator's float64 attention and attention_grad, on the shapes where
// blocked kernels go wrong: T = 1, T not a multiple of the 64-row block,
// more keys than queries and fewer, one head, causal and not, bf16 and f16,
// head dims 64 and 128. The sm_90a kernels (wgmma + TMA, AttentionSm90.cpp:
// the forward, and the backward's delta, dK/dV and dQ launches) run on the
// IR-level emulator (GemmEmulator.h: TMA boxes with zero fill, mbarrier
// phases, wgmma descriptors, with its happens-before check) and from their
// PTX on the PTX emulator against the same reference. Also: ptxas accepts
// every kernel without spills, and what the kernels do not take is refused
// by name.
//
//===----------------------------------------------------------------------===//
#include "EmuHarness.h"
#include "GemmEmulator.h"
#include "SimtTestUtil.h"

#include "codegen/nvptx/AttentionSm80.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace mlir;
namespace ref = mlir::tg::ref;

namespace {

/// IR of @f(q, k, v, do, dlse) computing attention and its gradient:
/// q [B,H,Tq,d], k and v [B,H,Tk,d] of element type `et`.
std::string attentionIR(int64_t b, int64_t h, int64_t tq, int64_t tk,
                        int64_t d, const std::string &et, bool causal) {
  auto t4 = [&](int64_t t) {
    return "tensor<" + std::to_string(b) + "x" + std::to_string(h) + "x" +
           std::to_string(t) + "x" + std::to_string(d) + "x" + et + ">";
  };
  std::string tl = "tensor<" + std::to_string(b) + "x" + std::to_string(h) +
                   "x" + std::to_string(tq) + "xf32>";
  std::string attrs = std::string("{") + (causal ? "causal, " : "") +
                      "scale = " + std::to_string(1.0 / std::sqrt(double(d))) +
                      " : f64}";
  std::string q = t4(tq), k = t4(tk);
  return "func.func @f(%q: " + q + ", %k: " + k + ", %v: " + k + ", %do: " + q +
         ", %dlse: " + tl + ") -> (" + q + ", " + tl + ", " + q + ", " + k +
         ", " + k + ") {\n" +
         "  %o, %lse = tg.attention %q, %k, %v " + attrs + " : " + q + ", " + k +
         ", " + k + " -> " + q + ", " + tl + "\n" +
         "  %dq, %dk, %dv = tg.attention_grad %do, %dlse, %q, %k, %v, %o, %lse " +
         attrs + " : " + q + ", " + tl + ", " + q + ", " + k + ", " + k + ", " +
         q + ", " + tl + " -> " + q + ", " + k + ", " + k + "\n" +
         "  return %o, %lse, %dq, %dk, %dv : " + q + ", " + tl + ", " + q + ", " +
         k + ", " + k + "\n}\n";
}

double maxAbs(const ref::Tensor &t) {
  double m = 0;
  for (double x : t.data)
    m = std::max(m, std::fabs(x));
  return m;
}

/// Random arguments for attentionIR's @f.
std::vector<ref::Tensor> randomArgs(func::FuncOp f) {
  std::vector<ref::Tensor> args;
  for (auto [i, a] : llvm::enumerate(f.getArguments())) {
    auto rt = cast<RankedTensorType>(a.getType());
    // dLSE is usually zero in a model; a non-zero one checks that it
    // enters D.
    double span = i == 4 ? 0.25 : 1.0;
    args.push_back(ref::Tensor::random(rt.getShape(),
                                       *ref::dtypeOf(rt.getElementType()), 7,
                                       i, -span, span));
  }
  return args;
}

/// attentionIR's @f with random arguments and the reference's results.
struct AttentionCase {
  AttentionCase(int64_t b, int64_t h, int64_t tq, int64_t tk, int64_t d,
                const std::string &et, bool causal) {
    m = parseSourceString<ModuleOp>(attentionIR(b, h, tq, tk, d, et, causal),
                                    &c.ctx);
    INFO(c.diags);
    REQUIRE(m);
    f = m->lookupSymbol<func::FuncOp>("f");
    args = randomArgs(f);
    auto results = ref::evaluate(f, args);
    INFO(c.diags);
    REQUIRE(succeeded(results));
    want.assign(results->begin(), results->end());
  }
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m;
  func::FuncOp f;
  std::vector<ref::Tensor> args, want;
};

/// Evaluates attentionIR with the reference, runs both ops on the emulator
/// (the gradient fed the reference's output and log-sum-exp) and compares
/// every result: within `rtol` relative to each result's largest
/// magnitude (bf16 probabilities and dS feed the products, as in every
/// FlashAttention; the reference is float64 throughout).
void checkAttention(int64_t b, int64_t h, int64_t tq, int64_t tk, int64_t d,
                    const std::string &et, bool causal, double rtol,
                    ::tg::nvptx::Target target = ::tg::nvptx::Target::SM80) {
  INFO(toString(target) << " B=" << b << " H=" << h << " Tq=" << tq << " Tk=" << tk << " d=" << d
            << " " << et << (causal ? " causal" : ""));
  AttentionCase ac(b, h, tq, tk, d, et, causal);
  const std::vector<ref::Tensor> &args = ac.args, *want = &ac.want;
  Operation *fwd = &ac.f.getBody().front().front();
  Operation *bwd = fwd->getNextNode();
  std::vector<ref::Tensor> got, grads;
  std::string err;
  bool ran =
      tgtest::runOnEmulator(fwd, {args[0], args[1], args[2]}, got, err, target) &&
      tgtest::runOnEmulator(bwd,
                            {args[3], args[4], args[0], args[1], args[2],
                             (*want)[0], (*want)[1]},
                            grads, err, target);
  INFO(err);
  REQUIRE(ran);
  got.insert(got.end(), grads.begin(), grads.end());
  REQUIRE(got.size() == 5);
  const char *names[] = {"output", "lse", "dq", "dk", "dv"};
  for (size_t i = 0; i < 5; ++i) {
    INFO(names[i]);
    double scale = std::max(maxAbs((*want)[i]), 1e-3);
    // The log-sum-exp comes from f32 scores of exact bf16 products.
    double tol = i == 1 ? 1e-5 : rtol;
    CHECK(tgtest::worstError(got[i], (*want)[i], 0, tol * scale) <= 1.0);
  }
}

/// Runs `op` on the IR-level emulator as lowerOpToKernels lowers it for
/// sm_90a: every launch in order over one set of buffers (the tensor maps
/// become the emulator's descriptors), the operands `in`. Results start as
/// NaN (0xFF bytes), so anything unwritten fails the comparison. Returns
/// the results as the reference's tensors shaped like `want`.
std::vector<ref::Tensor> runSm90(tgtest::SimtContext &c, Operation *op,
                                 const std::vector<ref::Tensor> &in,
                                 const std::vector<ref::Tensor> &want,
                                 std::vector<std::string> &symbols) {
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  auto launches =
      ::tg::nvptx::lowerOpToKernels(op, ::tg::nvptx::Target::SM90a, *kernels);
  INFO(c.diags);
  REQUIRE(succeeded(launches));
  std::vector<std::vector<uint8_t>> inBytes, out;
  for (const ref::Tensor &t : in)
    inBytes.push_back(tgtest::pack(t));
  for (const ref::Tensor &t : want)
    out.emplace_back(tgtest::pack(t).size(), 0xFF);
  std::string module = tgtest::printModule(*kernels);
  for (const ::tg::nvptx::KernelLaunch &l : *launches) {
    symbols.push_back(l.symbol);
    std::vector<::tg::nvptx::emu::KernelArg> kargs;
    for (const ::tg::nvptx::KernelParam &p : l.params) {
      bool result = p.kind == ::tg::nvptx::KernelParam::Kind::Result;
      kargs.push_back(::tg::nvptx::emu::kernelArg(
          p, result ? &out[p.index] : &inBytes[p.index]));
    }
    std::string err = ::tg::nvptx::emu::runKernel(
        module, l.symbol, {l.grid[0], l.grid[1]}, static_cast<int>(l.block[0]),
        l.dynamicSharedBytes, kargs);
    INFO(l.symbol << ": " << err);
    REQUIRE(err.empty());
  }
  std::vector<ref::Tensor> got;
  for (size_t i = 0; i < want.size(); ++i)
    got.push_back(tgtest::unpack(out[i], want[i].shape, want[i].dtype));
  return got;
}

/// The sm_90a kernels of attentionIR's tg.attention and tg.attention_grad
/// on the IR emulator against the reference: the forward's output and
/// log-sum-exp, and (`backward`) dQ, dK and dV from the reference's output
/// and log-sum-exp.
void checkSm90(int64_t b, int64_t h, int64_t tq, int64_t tk, int64_t d,
               const std::string &et, bool causal, double rtol,
               bool backward = true) {
  INFO("sm_90a B=" << b << " H=" << h << " Tq=" << tq << " Tk=" << tk
                   << " d=" << d << " " << et << (causal ? " causal" : ""));
  AttentionCase ac(b, h, tq, tk, d, et, causal);
  const std::vector<ref::Tensor> &args = ac.args, &want = ac.want;
  Operation *fwd = &ac.f.getBody().front().front();
  std::vector<std::string> symbols;
  std::vector<ref::Tensor> got =
      runSm90(ac.c, fwd, {args[0], args[1], args[2]}, {want[0], want[1]}, symbols);
  if (backward) {
    std::vector<ref::Tensor> grads =
        runSm90(ac.c, fwd->getNextNode(),
                {args[3], args[4], args[0], args[1], args[2], want[0], want[1]},
                {want[2], want[3], want[4]}, symbols);
    got.insert(got.end(), grads.begin(), grads.end());
  }
  CHECK(symbols[0].find("tg_attn_fwd_wgmma_sm_90a") == 0);
  if (backward) {
    REQUIRE(symbols.size() == 4);
    CHECK(symbols[1].find("tg_attn_delta_sm_90a") == 0);
    CHECK(symbols[2].find("tg_attn_dkv_wgmma_sm_90a") == 0);
    CHECK(symbols[3].find("tg_attn_dq_wgmma_sm_90a") == 0);
  }
  const char *names[] = {"output", "lse", "dq", "dk", "dv"};
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(names[i]);
    double scale = std::max(maxAbs(want[i]), 1e-3);
    double tol = i == 1 ? 1e-5 : rtol;
    CHECK(tgtest::worstError(got[i], want[i], 0, tol * scale) <= 1.0);
  }
}

/// The kernels lowerOpToKernels makes for @f's two ops.
OwningOpRef<ModuleOp> lowerBoth(tgtest::SimtContext &c, const std::string &ir,
                                ::tg::nvptx::Target t) {
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, &c.ctx);
  REQUIRE(m);
  auto f = m->lookupSymbol<func::FuncOp>("f");
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  for (Operation &op : f.getBody().front().without_terminator()) {
    auto launches = ::tg::nvptx::lowerOpToKernels(&op, t, *kernels);
    INFO(c.diags);
    REQUIRE(succeeded(launches));
  }
  return kernels;
}

} // namespace

TEST_CASE("fused attention matches the reference on ragged and tiny shapes",
          "[nvptx][attention][emulator]") {
  // bf16 rounding of P and dS in the products: a few bf16 ulps of the
  // largest value.
  checkAttention(1, 2, 1, 1, 64, "bf16", true, 1e-2);   // T = 1
  checkAttention(1, 1, 77, 77, 64, "bf16", true, 1e-2); // ragged causal
  checkAttention(1, 1, 77, 77, 64, "bf16", false, 1e-2);
  checkAttention(2, 1, 20, 70, 64, "f16", false, 2e-3); // more keys
  checkAttention(1, 1, 70, 20, 64, "bf16", true, 1e-2); // fewer keys, causal
  checkAttention(1, 1, 150, 150, 64, "bf16", true, 1e-2); // 3 blocks: ring reuse
}

TEST_CASE("fused attention with head dimension 128",
          "[nvptx][attention][emulator]") {
  checkAttention(1, 1, 40, 40, 128, "bf16", true, 1e-2);
  checkAttention(1, 1, 33, 33, 128, "f16", false, 2e-3);
}

TEST_CASE("sm_90a attention (wgmma + TMA) forward and backward match the reference",
          "[nvptx][attention][sm90]") {
  checkSm90(1, 2, 1, 1, 64, "bf16", true, 1e-2);     // T = 1, 3-D maps
  checkSm90(1, 1, 77, 77, 64, "bf16", true, 1e-2);   // ragged causal
  checkSm90(1, 1, 77, 77, 64, "bf16", false, 1e-2);
  checkSm90(2, 1, 20, 150, 64, "f16", false, 2e-3);  // 2 key blocks
  checkSm90(1, 1, 300, 300, 64, "bf16", true, 1e-2); // 3 CTAs, ring reuse
  checkSm90(1, 1, 70, 20, 64, "bf16", true, 1e-2);   // fewer keys
  // More keys than queries, causal: keys past the last query get zero
  // gradients, and the dK/dV CTA of keys 128.. streams no query block.
  checkSm90(1, 1, 20, 150, 64, "bf16", true, 1e-2);
}

TEST_CASE("sm_90a attention (wgmma forward and backward) from its PTX",
          "[nvptx][attention][sm90][emulator]") {
  // The PTX emulator runs what ptxas would assemble: the kernels' TMA,
  // mbarriers and wgmma, the tensor maps encoded as the runtime does.
  using ::tg::nvptx::Target;
  checkAttention(1, 2, 1, 1, 64, "bf16", true, 1e-2, Target::SM90a);
  checkAttention(1, 1, 150, 150, 64, "bf16", true, 1e-2, Target::SM90a);
  checkAttention(2, 1, 20, 150, 64, "f16", false, 2e-3, Target::SM90a);
  checkAttention(1, 1, 130, 130, 128, "bf16", true, 1e-2, Target::SM90a);
}

TEST_CASE("sm_90a attention with head dimension 128",
          "[nvptx][attention][sm90]") {
  checkSm90(1, 1, 130, 130, 128, "bf16", true, 1e-2);
  checkSm90(1, 2, 33, 33, 128, "f16", false, 2e-3);
  // dK/dV with one consumer warpgroup (64 keys per CTA): three CTAs of
  // keys, three query blocks, Tq != Tk.
  checkSm90(1, 1, 150, 140, 128, "bf16", true, 1e-2);
}

TEST_CASE("fused attention kernels assemble without spills",
          "[nvptx][attention][ptxas]") {
  // sm_90a: the wgmma forward, the delta kernel and the wgmma dK/dV and dQ
  // kernels.
  for (::tg::nvptx::Target t :
       {::tg::nvptx::Target::SM80, ::tg::nvptx::Target::SM90a})
    for (int64_t d : {64, 128})
      for (const char *et : {"bf16", "f16"}) {
        INFO(toString(t) << " d = " << d << " " << et);
        tgtest::SimtContext c;
        auto kernels = lowerBoth(c, attentionIR(2, 3, 200, 200, d, et, true), t);
        // One forward kernel, dQ and dK/dV (and on sm_90a the delta kernel).
        CHECK(llvm::range_size(kernels->getOps<LLVM::LLVMFuncOp>()) ==
              (t == ::tg::nvptx::Target::SM90a ? 4u : 3u));
        tgtest::checkAssembles(*kernels, t);
      }
}

TEST_CASE("attention the fused kernels do not take is refused by name",
          "[nvptx][attention]") {
  tgtest::SimtContext c;
  auto refusal = [&](const std::string &ir) {
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, &c.ctx);
    REQUIRE(m);
    Operation *op = &m->lookupSymbol<func::FuncOp>("f").getBody().front().front();
    std::optional<std::string> why = ::tg::nvptx::attentionKernelRefusal(op);
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
    CHECK(failed(::tg::nvptx::lowerOpToKernels(op, ::tg::nvptx::Target::SM80, *kernels)));
    return why.value_or("");
  };
  CHECK(refusal(attentionIR(1, 1, 8, 8, 64, "f32", true)) ==
        "its inputs are f32 (the fused kernels take bf16 or f16)");
  CHECK(refusal(attentionIR(1, 1, 8, 8, 32, "bf16", true)) ==
        "its head dimension is 32 (the fused kernels take 64 or 128)");
  CHECK(c.diags.find("has no fused GPU kernel: its head dimension is 32") !=
        std::string::npos);
  OwningOpRef<ModuleOp> ok = parseSourceString<ModuleOp>(
      attentionIR(1, 1, 8, 8, 128, "f16", false), &c.ctx);
  REQUIRE(ok);
  CHECK_FALSE(::tg::nvptx::attentionKernelRefusal(
      &ok->lookupSymbol<func::FuncOp>("f").getBody().front().front()));
}
