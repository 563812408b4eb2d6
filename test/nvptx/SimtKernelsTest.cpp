//===- SimtKernelsTest.cpp - fp32 GEMM and single-op kernels ----*- C++ -*-===//
//
// lowerOpToKernels on the ops engineer E's generators own (SimtGemm.cpp,
// SimtMovement.cpp): every form of the f32 GEMM (nn/nt/tn, batched with a
// broadcast side, ragged sizes, a gemm group with an epilogue and two
// results) and every movement op the example models produce. Each set of
// kernels verifies, lowers to PTX for sm_80 and sm_90a, and ptxas assembles
// it with no spills, no local memory and no performance warnings (SKIP with
// a warning without ptxas). The launch lists are checked against the ops'
// shapes, and the plan's buffer sharing is honoured (a reshape view has no
// launch) or refused (a gather or GEMM cannot run in place).
//
//===----------------------------------------------------------------------===//
#include "SimtTestUtil.h"

#include "codegen/nvptx/KernelGen.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace ::tg::nvptx;

namespace {

/// The GEMM forms, shapes that are no tile multiple, a batched product
/// with a 2-D (broadcast) side, and a gemm group with bias, relu and two
/// yielded results (one of them bf16).
constexpr const char *kGemms = R"mlir(
func.func @f(%a: tensor<100x36xf32>, %b: tensor<36x70xf32>, %bt: tensor<70x36xf32>,
             %at: tensor<36x100xf32>, %x: tensor<3x2x100x36xf32>,
             %w: tensor<2x36x70xf32>, %bias: tensor<70xf32>, %r: tensor<100x70xf32>) {
  %0 = tg.matmul %a, %b : tensor<100x36xf32>, tensor<36x70xf32> -> tensor<100x70xf32>
  %1 = tg.matmul %a, %bt {transpose_rhs} : tensor<100x36xf32>, tensor<70x36xf32> -> tensor<100x70xf32>
  %2 = tg.matmul %at, %b {transpose_lhs} : tensor<36x100xf32>, tensor<36x70xf32> -> tensor<100x70xf32>
  %3 = tg.matmul %x, %w : tensor<3x2x100x36xf32>, tensor<2x36x70xf32> -> tensor<3x2x100x70xf32>
  %4 = tg.matmul %x, %bt {transpose_rhs} : tensor<3x2x100x36xf32>, tensor<70x36xf32> -> tensor<3x2x100x70xf32>
  %5:2 = tg.fused <gemm> ins(%a, %b, %bias, %r : tensor<100x36xf32>, tensor<36x70xf32>, tensor<70xf32>, tensor<100x70xf32>) {
  ^bb0(%p: tensor<100x36xf32>, %q: tensor<36x70xf32>, %c: tensor<70xf32>, %s: tensor<100x70xf32>):
    %m = tg.matmul %p, %q : tensor<100x36xf32>, tensor<36x70xf32> -> tensor<100x70xf32>
    %half = tg.constant dense<5.000000e-01> : tensor<f32>
    %y = tg.add %m, %c : tensor<100x70xf32>, tensor<70xf32> -> tensor<100x70xf32>
    %z = tg.mul %y, %half : tensor<100x70xf32>, tensor<f32> -> tensor<100x70xf32>
    %g = tg.relu %z : tensor<100x70xf32>
    %t = tg.add %g, %s : tensor<100x70xf32>, tensor<100x70xf32> -> tensor<100x70xf32>
    %h = tg.cast %t : tensor<100x70xf32> to tensor<100x70xbf16>
    tg.yield %y, %h : tensor<100x70xf32>, tensor<100x70xbf16>
  } -> tensor<100x70xf32>, tensor<100x70xbf16>
  return
}
)mlir";

/// Every movement op of the examples (GPT's head split and merge, the QKV
/// slices and concat, embeddings, initialisers) plus broadcast_to, in the
/// element types they come in.
constexpr const char *kMovement = R"mlir(
func.func @f(%x: tensor<2x6x3x4xbf16>, %q: tensor<2x6x9xf32>, %table: tensor<50x8xf32>,
             %ids: tensor<2x6xi64>, %g: tensor<2x6x8xbf16>, %seed: tensor<i64>,
             %row: tensor<1x8xf32>, %ids32: tensor<5xi32>, %mask: tensor<3x4xi1>) {
  %0 = tg.transpose %x perm = [0, 2, 1, 3] : tensor<2x6x3x4xbf16> -> tensor<2x3x6x4xbf16>
  %1 = tg.reshape %x : tensor<2x6x3x4xbf16> to tensor<2x6x12xbf16>
  %2 = tg.slice %q start [0, 0, 3] limit [2, 6, 6] step [1, 1, 1] : tensor<2x6x9xf32> -> tensor<2x6x3xf32>
  %3 = tg.slice %q start [0, 1, 0] limit [2, 6, 9] step [1, 2, 3] : tensor<2x6x9xf32> -> tensor<2x3x3xf32>
  %4 = tg.concat %2, %2, %q axis = 2 : tensor<2x6x3xf32>, tensor<2x6x3xf32>, tensor<2x6x9xf32> -> tensor<2x6x15xf32>
  %5 = tg.embedding %table, %ids : tensor<50x8xf32>, tensor<2x6xi64> -> tensor<2x6x8xf32>
  %6 = tg.embedding_grad %g, %ids : tensor<2x6x8xbf16>, tensor<2x6xi64> -> tensor<50x8xbf16>
  %7 = tg.random normal %seed {a = 0.000000e+00 : f64, b = 2.000000e-02 : f64, stream = 7 : i64} : tensor<i64> -> tensor<50x8xf32>
  %8 = tg.random uniform %seed {a = -1.000000e-01 : f64, b = 1.000000e-01 : f64, stream = 8 : i64} : tensor<i64> -> tensor<9x7xbf16>
  %9 = tg.broadcast_to %row : tensor<1x8xf32> to tensor<4x3x8xf32>
  %10 = tg.embedding %table, %ids32 : tensor<50x8xf32>, tensor<5xi32> -> tensor<5x8xf32>
  %11 = tg.transpose %mask perm = [1, 0] : tensor<3x4xi1> -> tensor<4x3xi1>
  return
}
)mlir";

/// LeNet's convolution and pooling ops (strided, padded, dilated, grouped)
/// and init's splat constants.
constexpr const char *kConvPool = R"mlir(
func.func @f(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %dy: tensor<2x4x5x5xf32>,
             %xg: tensor<2x4x7x7xbf16>, %wg: tensor<4x2x3x3xbf16>, %pg: tensor<2x3x4x4xf32>) {
  %0 = tg.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x5x5xf32>
  %1 = tg.conv2d_grad_input %dy, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x9x9xf32>
  %2 = tg.conv2d_grad_weight %x, %dy {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x3x9x9xf32>, tensor<2x4x5x5xf32> -> tensor<4x3x3x3xf32>
  %3 = tg.conv2d %xg, %wg {dilation = array<i64: 2, 2>, groups = 2 : i64} : tensor<2x4x7x7xbf16>, tensor<4x2x3x3xbf16> -> tensor<2x4x3x3xbf16>
  %4 = tg.max_pool2d %x kernel = [3, 3] stride = [2, 2] : tensor<2x3x9x9xf32> -> tensor<2x3x4x4xf32>
  %5 = tg.max_pool2d_grad %pg, %x kernel = [3, 3] stride = [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x9x9xf32>
  %6 = tg.constant dense<1.5> : tensor<3x5xbf16>
  %7 = tg.constant dense<true> : tensor<3xi1>
  return
}
)mlir";

OwningOpRef<ModuleOp> parse(tgtest::SimtContext &c, StringRef ir) {
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, &c.ctx);
  INFO(c.diags);
  REQUIRE(m);
  return m;
}

std::vector<Operation *> topLevelOps(ModuleOp m) {
  std::vector<Operation *> ops;
  auto f = m.lookupSymbol<func::FuncOp>("f");
  for (Operation &op : f.getBody().front().without_terminator())
    ops.push_back(&op);
  return ops;
}

/// Lowers every op of @f for `t`; returns the launches per op.
std::vector<std::vector<KernelLaunch>> lowerAll(tgtest::SimtContext &c, ModuleOp m,
                                                Target t, ModuleOp kernels) {
  std::vector<std::vector<KernelLaunch>> all;
  for (Operation *op : topLevelOps(m)) {
    c.diags.clear();
    auto launches = lowerOpToKernels(op, t, kernels);
    INFO("op " << op->getName().getStringRef().str() << ": " << c.diags);
    REQUIRE(succeeded(launches));
    for (const KernelLaunch &l : *launches)
      CHECK(hasKernel(kernels, l.symbol));
    all.push_back(*launches);
  }
  return all;
}

} // namespace

TEST_CASE("f32 GEMMs of every form assemble", "[nvptx][simt-gemm]") {
  for (Target t : {Target::SM80, Target::SM90a}) {
    tgtest::SimtContext c;
    OwningOpRef<ModuleOp> m = parse(c, kGemms);
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
    auto all = lowerAll(c, *m, t, *kernels);
    REQUIRE(all.size() == 6);
    for (auto &launches : all)
      REQUIRE(launches.size() == 1);
    // 100x70: 2 row tiles, 2 column tiles; the batched product has 6 batches.
    CHECK(all[0][0].grid == std::array<uint32_t, 3>{2, 2, 1});
    CHECK(all[3][0].grid == std::array<uint32_t, 3>{2, 2, 6});
    CHECK(all[0][0].block == std::array<uint32_t, 3>{256, 1, 1});
    // The group: its four operands, then its two results.
    REQUIRE(all[5][0].params.size() == 6);
    CHECK(all[5][0].params[4].kind == KernelParam::Kind::Result);
    CHECK(all[5][0].params[5].index == 1);
    tgtest::checkAssembles(*kernels, t);
  }
}

TEST_CASE("movement ops assemble", "[nvptx][simt-movement]") {
  for (Target t : {Target::SM80, Target::SM90a}) {
    tgtest::SimtContext c;
    OwningOpRef<ModuleOp> m = parse(c, kMovement);
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
    auto all = lowerAll(c, *m, t, *kernels);
    REQUIRE(all.size() == 12);
    // An unplanned reshape is a copy; concat one launch per input;
    // embedding_grad zeroes the table, then sums one thread per column.
    CHECK(all[1].size() == 1);
    CHECK(all[4].size() == 3);
    REQUIRE(all[6].size() == 2);
    CHECK(all[6][0].grid[0] == (50 * 8 + 255) / 256);
    CHECK(all[6][1].params.size() == 3);
    CHECK(all[0][0].grid[0] == 1);
    tgtest::checkAssembles(*kernels, t);
  }
}

TEST_CASE("convolution, pooling and constant kernels assemble",
          "[nvptx][simt-convpool]") {
  for (Target t : {Target::SM80, Target::SM90a}) {
    tgtest::SimtContext c;
    OwningOpRef<ModuleOp> m = parse(c, kConvPool);
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
    auto all = lowerAll(c, *m, t, *kernels);
    REQUIRE(all.size() == 8);
    // One thread per result element.
    CHECK(all[1][0].grid[0] == (2 * 3 * 9 * 9 + 255) / 256);
    CHECK(all[5][0].params.size() == 3);
    tgtest::checkAssembles(*kernels, t);
  }
}

TEST_CASE("identical ops share one kernel", "[nvptx][simt-movement]") {
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m = parse(c, R"mlir(
func.func @f(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) {
  %0 = tg.transpose %x perm = [1, 0] {tg.offset = 0 : i64} : tensor<4x6xf32> -> tensor<6x4xf32>
  %1 = tg.transpose %y perm = [1, 0] {tg.offset = 256 : i64} : tensor<4x6xf32> -> tensor<6x4xf32>
  return
}
)mlir");
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  auto all = lowerAll(c, *m, Target::SM80, *kernels);
  CHECK(all[0][0].symbol == all[1][0].symbol);
  CHECK(std::distance(kernels->getOps<LLVM::LLVMFuncOp>().begin(),
                      kernels->getOps<LLVM::LLVMFuncOp>().end()) == 1);
}

TEST_CASE("the plan's shared buffers are honoured or refused",
          "[nvptx][simt-movement]") {
  tgtest::SimtContext c;
  // %0 is a view of %1's buffer (same offset): no launch. %2 copies into
  // its own buffer. %3 and %4 were given their operand's buffer, which a
  // gather and a GEMM cannot overwrite while reading. %6 reads %5#0, which
  // lives at 1024 (tg.offsets), not at the group's tg.offset 0: no sharing.
  OwningOpRef<ModuleOp> m = parse(c, R"mlir(
func.func @f(%x: tensor<4x6xf32>, %w: tensor<6x6xf32>) {
  %1 = tg.transpose %x perm = [1, 0] {tg.offset = 512 : i64} : tensor<4x6xf32> -> tensor<6x4xf32>
  %0 = tg.reshape %1 {tg.offset = 512 : i64} : tensor<6x4xf32> to tensor<24xf32>
  %2 = tg.reshape %1 {tg.offset = 1024 : i64} : tensor<6x4xf32> to tensor<24xf32>
  %3 = tg.transpose %x perm = [1, 0] {tg.alias_arg = 0 : i64} : tensor<4x6xf32> -> tensor<6x4xf32>
  %4 = tg.matmul %w, %w {tg.alias_arg = 1 : i64} : tensor<6x6xf32>, tensor<6x6xf32> -> tensor<6x6xf32>
  %5:2 = tg.fused <gemm> ins(%w : tensor<6x6xf32>) attributes {tg.offset = 0 : i64, tg.offsets = array<i64: 1024, 0>} {
  ^bb0(%a: tensor<6x6xf32>):
    %m = tg.matmul %a, %a : tensor<6x6xf32>, tensor<6x6xf32> -> tensor<6x6xf32>
    %r = tg.relu %m : tensor<6x6xf32>
    tg.yield %m, %r : tensor<6x6xf32>, tensor<6x6xf32>
  } -> tensor<6x6xf32>, tensor<6x6xf32>
  %6 = tg.transpose %5#0 perm = [1, 0] {tg.offset = 0 : i64} : tensor<6x6xf32> -> tensor<6x6xf32>
  return
}
)mlir");
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  std::vector<Operation *> ops = topLevelOps(*m);
  auto view = lowerOpToKernels(ops[1], Target::SM80, *kernels);
  REQUIRE(succeeded(view));
  CHECK(view->empty());
  auto copy = lowerOpToKernels(ops[2], Target::SM80, *kernels);
  REQUIRE(succeeded(copy));
  CHECK(copy->size() == 1);
  for (int i : {3, 4}) {
    c.diags.clear();
    CHECK(failed(lowerOpToKernels(ops[i], Target::SM80, *kernels)));
    CHECK(c.diags.find("buffer") != std::string::npos);
  }
  CHECK(succeeded(lowerOpToKernels(ops[6], Target::SM80, *kernels)));
}

TEST_CASE("ops without a GPU kernel are located errors", "[nvptx][simt-movement]") {
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m = parse(c, R"mlir(
func.func @f(%x: tensor<1x1x8x8xf32>, %i: tensor<2x2xi64>, %j: tensor<2x2xi64>) {
  %0 = tg.avg_pool2d %x kernel = [2, 2] stride = [2, 2] : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  %1 = tg.matmul %i, %j : tensor<2x2xi64>, tensor<2x2xi64> -> tensor<2x2xi64>
  return
}
)mlir");
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  for (Operation *op : topLevelOps(*m)) {
    c.diags.clear();
    CHECK(failed(lowerOpToKernels(op, Target::SM80, *kernels)));
    CHECK(c.diags.find("GPU backend") != std::string::npos);
  }
}
