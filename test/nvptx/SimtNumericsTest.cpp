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
  // Ragged sizes (no dimension a tile multiple, K not a multiple of 16),
  // batched with a broadcast 2-D side and a broadcast batch dimension, and
  // a gemm group with bias, scale, relu, residual and a bf16 result.
  runAndCompare(R"mlir(
func.func @f(%a: tensor<67x37xf32>, %b: tensor<37x70xf32>, %bt: tensor<70x37xf32>,
             %at: tensor<37x67xf32>, %x: tensor<3x2x67x37xf32>,
             %w: tensor<1x37x70xf32>, %bias: tensor<70xf32>, %r: tensor<67x70xf32>)
    -> (tensor<67x70xf32>, tensor<67x70xf32>, tensor<67x70xf32>, tensor<3x2x67x70xf32>,
        tensor<3x2x67x70xf32>, tensor<67x70xf32>, tensor<67x70xbf16>) {
  %0 = tg.matmul %a, %b : tensor<67x37xf32>, tensor<37x70xf32> -> tensor<67x70xf32>
  %1 = tg.matmul %a, %bt {transpose_rhs} : tensor<67x37xf32>, tensor<70x37xf32> -> tensor<67x70xf32>
  %2 = tg.matmul %at, %b {transpose_lhs} : tensor<37x67xf32>, tensor<37x70xf32> -> tensor<67x70xf32>
  %3 = tg.matmul %x, %w : tensor<3x2x67x37xf32>, tensor<1x37x70xf32> -> tensor<3x2x67x70xf32>
  %4 = tg.matmul %x, %bt {transpose_rhs} : tensor<3x2x67x37xf32>, tensor<70x37xf32> -> tensor<3x2x67x70xf32>
  %5:2 = tg.fused <gemm> ins(%a, %b, %bias, %r : tensor<67x37xf32>, tensor<37x70xf32>, tensor<70xf32>, tensor<67x70xf32>) {
  ^bb0(%p: tensor<67x37xf32>, %q: tensor<37x70xf32>, %c: tensor<70xf32>, %s: tensor<67x70xf32>):
    %m = tg.matmul %p, %q : tensor<67x37xf32>, tensor<37x70xf32> -> tensor<67x70xf32>
    %half = tg.constant dense<5.000000e-01> : tensor<f32>
    %y = tg.add %m, %c : tensor<67x70xf32>, tensor<70xf32> -> tensor<67x70xf32>
    %z = tg.mul %y, %half : tensor<67x70xf32>, tensor<f32> -> tensor<67x70xf32>
    %g = tg.relu %z : tensor<67x70xf32>
    %t = tg.add %g, %s : tensor<67x70xf32>, tensor<67x70xf32> -> tensor<67x70xf32>
    %h = tg.cast %t : tensor<67x70xf32> to tensor<67x70xbf16>
    tg.yield %y, %h : tensor<67x70xf32>, tensor<67x70xbf16>
  } -> tensor<67x70xf32>, tensor<67x70xbf16>
  return %0, %1, %2, %3, %4, %5#0, %5#1 : tensor<67x70xf32>, tensor<67x70xf32>, tensor<67x70xf32>, tensor<3x2x67x70xf32>, tensor<3x2x67x70xf32>, tensor<67x70xf32>, tensor<67x70xbf16>
}
)mlir",
                // f32 sums of 37 products of |x| < 1 in another order; the
                // bf16 result may round the other way (one bf16 ulp).
                [](size_t k) { return k == 5 ? 1e-2 : 1e-5; });
}

TEST_CASE("movement kernels match the reference",
          "[nvptx][simt-movement][emulator]") {
  // Indices in [-3, 53) over a 50-row table: clamping at both ends.
  runAndCompare(R"mlir(
func.func @f(%x: tensor<2x6x3x4xbf16>, %q: tensor<2x6x9xf32>, %table: tensor<50x8xf32>,
             %ids: tensor<2x6xi64>, %g: tensor<2x6x8xf32>, %row: tensor<1x8xf32>,
             %ids32: tensor<5xi32>, %mask: tensor<3x4xi1>)
    -> (tensor<2x3x6x4xbf16>, tensor<2x6x12xbf16>, tensor<2x6x3xf32>, tensor<2x3x3xf32>,
        tensor<2x6x15xf32>, tensor<2x6x8xf32>, tensor<50x8xf32>, tensor<4x3x8xf32>,
        tensor<5x8xf32>, tensor<4x3xi1>) {
  %0 = tg.transpose %x perm = [0, 2, 1, 3] : tensor<2x6x3x4xbf16> -> tensor<2x3x6x4xbf16>
  %1 = tg.reshape %x : tensor<2x6x3x4xbf16> to tensor<2x6x12xbf16>
  %2 = tg.slice %q start [0, 0, 3] limit [2, 6, 6] step [1, 1, 1] : tensor<2x6x9xf32> -> tensor<2x6x3xf32>
  %3 = tg.slice %q start [0, 1, 0] limit [2, 6, 9] step [1, 2, 3] : tensor<2x6x9xf32> -> tensor<2x3x3xf32>
  %4 = tg.concat %2, %2, %q axis = 2 : tensor<2x6x3xf32>, tensor<2x6x3xf32>, tensor<2x6x9xf32> -> tensor<2x6x15xf32>
  %5 = tg.embedding %table, %ids : tensor<50x8xf32>, tensor<2x6xi64> -> tensor<2x6x8xf32>
  %6 = tg.embedding_grad %g, %ids : tensor<2x6x8xf32>, tensor<2x6xi64> -> tensor<50x8xf32>
  %7 = tg.broadcast_to %row : tensor<1x8xf32> to tensor<4x3x8xf32>
  %8 = tg.embedding %table, %ids32 : tensor<50x8xf32>, tensor<5xi32> -> tensor<5x8xf32>
  %9 = tg.transpose %mask perm = [1, 0] : tensor<3x4xi1> -> tensor<4x3xi1>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<2x3x6x4xbf16>, tensor<2x6x12xbf16>, tensor<2x6x3xf32>, tensor<2x3x3xf32>, tensor<2x6x15xf32>, tensor<2x6x8xf32>, tensor<50x8xf32>, tensor<4x3x8xf32>, tensor<5x8xf32>, tensor<4x3xi1>
}
)mlir",
                // Copies are exact; the gradient sums in the reference's
                // order but in f32, not double.
                [](size_t k) { return k == 6 ? 1e-6 : 0.0; }, -3, 53);
}

TEST_CASE("random initialisers draw the CPU's numbers",
          "[nvptx][simt-movement][emulator]") {
  runAndCompare(R"mlir(
func.func @f(%seed: tensor<i64>) -> (tensor<50x8xf32>, tensor<9x7xbf16>, tensor<5x3xf32>) {
  %0 = tg.random normal %seed {a = 0.000000e+00 : f64, b = 2.000000e-02 : f64, stream = 7 : i64} : tensor<i64> -> tensor<50x8xf32>
  %1 = tg.random uniform %seed {a = -1.000000e-01 : f64, b = 1.000000e-01 : f64, stream = 8 : i64} : tensor<i64> -> tensor<9x7xbf16>
  %2 = tg.random normal %seed {a = 1.000000e+00 : f64, b = 1.000000e+00 : f64, stream = 3 : i64} : tensor<i64> -> tensor<5x3xf32>
  return %0, %1, %2 : tensor<50x8xf32>, tensor<9x7xbf16>, tensor<5x3xf32>
}
)mlir",
                // Box-Muller in f32 with approximate log/cos/sin against
                // double; uniform draws round to bf16 the same way.
                [](size_t k) { return k == 1 ? 0.0 : k == 0 ? 2e-6 : 1e-4; },
                0, 1000000);
}

TEST_CASE("convolution and pooling kernels match the reference",
          "[nvptx][simt-convpool][emulator]") {
  // Strided, padded, dilated and grouped convolutions with both gradients;
  // overlapping pooling windows, so max_pool2d_grad sums several windows.
  runAndCompare(R"mlir(
func.func @f(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %dy: tensor<2x4x5x5xf32>,
             %xg: tensor<2x4x7x7xbf16>, %wg: tensor<4x2x3x3xbf16>, %pg: tensor<2x3x4x4xf32>)
    -> (tensor<2x4x5x5xf32>, tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<2x4x3x3xbf16>,
        tensor<2x3x4x4xf32>, tensor<2x3x9x9xf32>) {
  %0 = tg.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x5x5xf32>
  %1 = tg.conv2d_grad_input %dy, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x9x9xf32>
  %2 = tg.conv2d_grad_weight %x, %dy {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x3x9x9xf32>, tensor<2x4x5x5xf32> -> tensor<4x3x3x3xf32>
  %3 = tg.conv2d %xg, %wg {dilation = array<i64: 2, 2>, groups = 2 : i64} : tensor<2x4x7x7xbf16>, tensor<4x2x3x3xbf16> -> tensor<2x4x3x3xbf16>
  %4 = tg.max_pool2d %x kernel = [3, 3] stride = [2, 2] : tensor<2x3x9x9xf32> -> tensor<2x3x4x4xf32>
  %5 = tg.max_pool2d_grad %pg, %x kernel = [3, 3] stride = [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x9x9xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x4x5x5xf32>, tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<2x4x3x3xbf16>, tensor<2x3x4x4xf32>, tensor<2x3x9x9xf32>
}
)mlir",
                // f32 sums in another order; the bf16 output may round the
                // other way (one ulp); pooling picks exact values, its
                // gradient sums them in f32 (the reference in double).
                [](size_t k) { return k == 3 ? 1e-2 : k == 4 ? 0.0 : 1e-5; });
}

TEST_CASE("splat constants fill their buffers", "[nvptx][simt-movement][emulator]") {
  runAndCompare(R"mlir(
func.func @f() -> (tensor<3x5xbf16>, tensor<4xi64>, tensor<3xi1>, tensor<7xf32>) {
  %0 = tg.constant dense<1.5> : tensor<3x5xbf16>
  %1 = tg.constant dense<-3> : tensor<4xi64>
  %2 = tg.constant dense<true> : tensor<3xi1>
  %3 = tg.constant dense<0.0> : tensor<7xf32>
  return %0, %1, %2, %3 : tensor<3x5xbf16>, tensor<4xi64>, tensor<3xi1>, tensor<7xf32>
}
)mlir",
                [](size_t) { return 0.0; });
}
