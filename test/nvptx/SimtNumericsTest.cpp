//===- SimtNumericsTest.cpp - fp32 GEMM and movement kernels, run -*- C++ -*-===//
//
// Runs the kernels of SimtGemm.cpp, SimtMovement.cpp and SimtConvPool.cpp
// on the PTX emulator (runtime/emulator, through EmuHarness) and compares
// every result with the reference evaluator, op by op, each op fed the
// reference's values of its operands.
// Movement ops must match exactly (they copy bits); products and random
// draws within the tolerance stated per case (f32 sums in another order,
// f32 Box-Muller against the reference's double).
//
//===----------------------------------------------------------------------===//
#include "EmuHarness.h"
#include "SimtTestUtil.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <functional>

using namespace mlir;
namespace ref = mlir::tg::ref;

namespace {

/// Evaluates @f (which returns the result of each of its ops in order) on
/// inputs from Philox (indices in [lo, hi)), runs every op on the emulator
/// (EmuHarness's runOnEmulator: lowerOpToKernels, sm_80 PTX) on the
/// reference's values of its operands, and checks each result: exactly when
/// `tolerance(op index)` is 0, else within it (absolute and relative).
void runAndCompare(StringRef ir, std::function<double(size_t)> tolerance,
                   double indexLo = 0, double indexHi = 8) {
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, &c.ctx);
  INFO(c.diags);
  REQUIRE(m);
  auto f = m->lookupSymbol<func::FuncOp>("f");
  std::vector<ref::Tensor> args;
  llvm::DenseMap<Value, ref::Tensor> values;
  for (auto [i, a] : llvm::enumerate(f.getArguments())) {
    auto rt = cast<RankedTensorType>(a.getType());
    ref::DType d = *ref::dtypeOf(rt.getElementType());
    bool isIndex = d == ref::DType::I64 || d == ref::DType::I32;
    args.push_back(ref::Tensor::random(rt.getShape(), d, 42, i,
                                       isIndex ? indexLo : -1.0,
                                       isIndex ? indexHi : 1.0));
    values[a] = args.back();
  }
  auto expected = ref::evaluate(f, args);
  INFO(c.diags);
  REQUIRE(succeeded(expected));
  size_t resultNo = 0;
  for (auto [k, op] : llvm::enumerate(f.getBody().front().without_terminator())) {
    std::vector<ref::Tensor> inputs, outputs;
    for (Value v : op.getOperands())
      inputs.push_back(values[v]);
    std::string err;
    INFO("op " << k << " (" << op.getName().getStringRef().str() << ")");
    bool ran = tgtest::runOnEmulator(&op, inputs, outputs, err);
    INFO(err << c.diags);
    REQUIRE(ran);
    REQUIRE(outputs.size() == op.getNumResults());
    for (auto [r, got] : llvm::zip(op.getResults(), outputs)) {
      const ref::Tensor &want = (*expected)[resultNo++];
      values[r] = want;
      double tol = tolerance(k);
      if (tol == 0)
        CHECK(got.data == want.data);
      else
        CHECK(tgtest::worstError(got, want, tol, tol) <= 1.0);
    }
  }
}

} // namespace

TEST_CASE("f32 GEMM matches the reference in every form",
          "[nvptx][simt-gemm][emulator]") {
  runAndCompare(tgtest::kSimtGemmCases,
                // f32 sums of 37 products of |x| < 1 in another order; the
                // bf16 result may round the other way (one bf16 ulp).
                [](size_t k) { return k == 5 ? 1e-2 : 1e-5; });
}

TEST_CASE("movement kernels match the reference",
          "[nvptx][simt-movement][emulator]") {
  // Indices in [-3, 53) over a 50-row table: clamping at both ends.
  runAndCompare(tgtest::kSimtMovementCases,
                // Copies are exact; the gradient sums in the reference's
                // order but in f32, not double.
                [](size_t k) { return k == 6 ? 1e-6 : 0.0; }, -3, 53);
}

TEST_CASE("random initialisers draw the CPU's numbers",
          "[nvptx][simt-movement][emulator]") {
  runAndCompare(tgtest::kSimtRandomCases,
                // Box-Muller in f32 with approximate log/cos/sin against
                // double; uniform draws round to bf16 the same way.
                [](size_t k) { return k == 1 ? 0.0 : k == 0 ? 2e-6 : 1e-4; },
                0, 1000000);
}

TEST_CASE("convolution and pooling kernels match the reference",
          "[nvptx][simt-convpool][emulator]") {
  runAndCompare(tgtest::kSimtConvPoolCases,
                // f32 sums in another order; the bf16 output may round the
                // other way (one ulp); pooling picks exact values, its
                // gradient sums them in f32 (the reference in double).
                [](size_t k) { return k == 3 ? 1e-2 : k == 4 ? 0.0 : 1e-5; });
}

TEST_CASE("splat constants fill their buffers", "[nvptx][simt-movement][emulator]") {
  runAndCompare(tgtest::kSimtConstantCases,
                [](size_t) { return 0.0; });
}
