//===- SizeGpuScratchTest.cpp - GPU op scratch sized before the plan -*- C++ -*-===//
//
// tg-size-gpu-scratch (codegen/nvptx/SizeGpuScratch.cpp) against the
// generators themselves: every op's tg.scratch is the scratch its lowered
// launches then take (the staged copies of GPT-2's vocabulary products on
// sm_90a, split column sums, a split reduction over everything, a
// vocabulary softmax split over blocks per row), ops without scratch carry
// none (a stale tg.scratch is dropped), and tg-plan-memory places each.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/KernelGen.h"
#include "codegen/nvptx/Passes.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGDialect.h"
#include "passes/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace ::tg::nvptx;

namespace {

const char *kOps = R"mlir(
func.func @train_step(
    %g: tensor<8192x50257xbf16> {tg.name = "g", tg.role = #tg.role<input>},
    %w: tensor<50257x768xbf16> {tg.name = "w", tg.role = #tg.role<input>},
    %x: tensor<8192x768xbf16> {tg.name = "x", tg.role = #tg.role<input>},
    %c: tensor<8192x768xf32> {tg.name = "c", tg.role = #tg.role<input>},
    %v: tensor<4194304xf32> {tg.name = "v", tg.role = #tg.role<input>},
    %l: tensor<4x50257xf32> {tg.name = "l", tg.role = #tg.role<input>},
    %s: tensor<64x128xf32> {tg.name = "s", tg.role = #tg.role<input>})
    -> (tensor<8192x768xbf16> {tg.name = "dx", tg.role = #tg.role<output>},
        tensor<50257x768xbf16> {tg.name = "dw", tg.role = #tg.role<output>},
        tensor<768xf32> {tg.name = "cs", tg.role = #tg.role<output>},
        tensor<1xf32> {tg.name = "t", tg.role = #tg.role<output>},
        tensor<4x50257xf32> {tg.name = "p", tg.role = #tg.role<output>},
        tensor<64xf32> {tg.name = "r", tg.role = #tg.role<output>},
        tensor<64x128xf32> {tg.name = "e", tg.role = #tg.role<output>}) {
  %dx = tg.matmul %g, %w {tg.acc = f32} : tensor<8192x50257xbf16>, tensor<50257x768xbf16> -> tensor<8192x768xbf16>
  %dw = tg.matmul %g, %x {transpose_lhs, tg.acc = f32} : tensor<8192x50257xbf16>, tensor<8192x768xbf16> -> tensor<50257x768xbf16>
  %cs = tg.sum %c axes = [0] : tensor<8192x768xf32> -> tensor<768xf32>
  %t = tg.sum %v axes = [0] keepdims : tensor<4194304xf32> -> tensor<1xf32>
  %p = tg.fused <row_reduction> ins(%l : tensor<4x50257xf32>) {
  ^bb0(%a: tensor<4x50257xf32>):
    %m = tg.max %a axes = [1] keepdims : tensor<4x50257xf32> -> tensor<4x1xf32>
    %d = tg.sub %a, %m : tensor<4x50257xf32>, tensor<4x1xf32> -> tensor<4x50257xf32>
    %e = tg.exp %d : tensor<4x50257xf32>
    %z = tg.sum %e axes = [1] keepdims : tensor<4x50257xf32> -> tensor<4x1xf32>
    %y = tg.div %e, %z : tensor<4x50257xf32>, tensor<4x1xf32> -> tensor<4x50257xf32>
    tg.yield %y : tensor<4x50257xf32>
  } -> tensor<4x50257xf32>
  %r = tg.sum %s axes = [1] : tensor<64x128xf32> -> tensor<64xf32>
  %e = tg.exp %s {tg.scratch = 7 : i64} : tensor<64x128xf32>
  return %dx, %dw, %cs, %t, %p, %r, %e : tensor<8192x768xbf16>, tensor<50257x768xbf16>, tensor<768xf32>, tensor<1xf32>, tensor<4x50257xf32>, tensor<64xf32>, tensor<64x128xf32>
}
)mlir";

struct Sized {
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  func::FuncOp step;
  /// Sizes for `targets` (tg-configure-gemms for both first), then splits
  /// rows as the schedule would with no in-place plan.
  explicit Sized(std::vector<std::string> targets) {
    mlir::tg::registerAllDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kOps, ctx.get());
    REQUIRE(module);
    step = module->lookupSymbol<func::FuncOp>("train_step");
    PassManager pm(ctx.get());
    pm.addPass(createConfigureGemmsPass());
    SizeGpuScratchPassOptions options;
    options.targets.assign(targets.begin(), targets.end());
    pm.addPass(createSizeGpuScratchPass(options));
    pm.addPass(createConfigureRowReductionsPass());
    REQUIRE(succeeded(pm.run(*module)));
  }
  /// tg.scratch of the top-level op `n` (0-based, in body order); 0: none.
  Operation *op(unsigned n) {
    auto it = step.getBody().front().begin();
    std::advance(it, n);
    return &*it;
  }
  int64_t scratchOf(unsigned n) {
    IntegerAttr a = mlir::tg::getScratchBytes(op(n));
    return a ? a.getInt() : 0;
  }
};

} // namespace

TEST_CASE("tg-size-gpu-scratch: tg.scratch is what the launches take",
          "[nvptx][scratch]") {
  Sized s({"sm_80", "sm_90a"});
  // The two vocabulary products stage the [8192, 50257] operand on sm_90a
  // (docs/nvptx.md): rows padded to 50264 elements.
  CHECK(s.scratchOf(0) == 823525376);
  CHECK(s.scratchOf(1) == 823525376);
  // The softmax over four vocabulary rows: 49 blocks a row, the max and
  // the sum of its online pair (one phase): 2 x 49 x 4 x 8 bytes.
  CHECK(s.scratchOf(4) == 2 * 49 * 4 * 8);
  CHECK(s.scratchOf(2) > 0); // column sums over 8192 rows split
  CHECK(s.scratchOf(3) > 0); // 4M elements split over blocks
  CHECK(s.scratchOf(5) == 0); // 64 short rows: one launch
  CHECK(s.scratchOf(6) == 0); // elementwise: its stale tg.scratch is gone
  for (unsigned n = 0; n < 7; ++n) {
    Operation *op = s.op(n);
    INFO(op->getName().getStringRef().str() << " #" << n);
    for (Target t : {Target::SM80, Target::SM90a}) {
      OwningOpRef<ModuleOp> kernels = ModuleOp::create(op->getLoc());
      FailureOr<std::vector<KernelLaunch>> l = lowerOpToKernels(op, t, *kernels);
      REQUIRE(succeeded(l));
      uint64_t most = 0;
      for (const KernelLaunch &k : *l)
        most = std::max(most, k.scratchBytes);
      // sm_80 does not stage (tensor_core keeps the aligned windows): the
      // size is the largest over the targets.
      if (t == Target::SM90a || n >= 2)
        CHECK(int64_t(most) == s.scratchOf(n));
      else
        CHECK(most == 0);
    }
  }
  // The plan places each as a buffer of its own (tg.scratch_offset).
  FailureOr<mlir::tg::MemoryPlan> plan = mlir::tg::planMemory(s.step, {});
  REQUIRE(succeeded(plan));
  int64_t planned = 0;
  for (unsigned n = 0; n < 7; ++n)
    if (s.scratchOf(n)) {
      CHECK(mlir::tg::getScratchOffset(s.op(n)));
      ++planned;
    }
  CHECK(planned == 5);
  CHECK(llvm::count_if(plan->buffers, [](const mlir::tg::Buffer &b) {
          return b.kind == mlir::tg::BufferKind::Scratch;
        }) == 5);
}

TEST_CASE("tg-size-gpu-scratch: only the targets asked for",
          "[nvptx][scratch]") {
  // sm_80 alone has no staged copies; the reductions' partials stay.
  Sized s({"sm_80"});
  CHECK(s.scratchOf(0) == 0);
  CHECK(s.scratchOf(1) == 0);
  CHECK(s.scratchOf(4) == 2 * 49 * 4 * 8);
}
