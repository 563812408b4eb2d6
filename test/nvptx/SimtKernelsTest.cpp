//===- SimtKernelsTest.cpp - fp32 GEMM and single-op kernels ----*- C++ -*-===//
//
// lowerOpToKernels on the ops engineer E's generators own (SimtGemm.cpp,
// SimtMovement.cpp, SimtConvPool.cpp; the cases of SimtTestUtil.h): every
// form of the f32 GEMM (nn/nt/tn, batched with a broadcast side, ragged
// sizes, a gemm group with an epilogue and two results), every movement op
// the example models produce, convolutions and pooling. Each set of
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
    OwningOpRef<ModuleOp> m = parse(c, tgtest::kSimtGemmCases);
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
    auto all = lowerAll(c, *m, t, *kernels);
    REQUIRE(all.size() == 6);
    for (auto &launches : all)
      REQUIRE(launches.size() == 1);
    // 67x70: 2 row tiles, 2 column tiles; the batched product has 6 batches.
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
    OwningOpRef<ModuleOp> m = parse(c, tgtest::kSimtMovementCases);
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
    auto all = lowerAll(c, *m, t, *kernels);
    REQUIRE(all.size() == 12);
    // The tiled transpose: 32x32 tiles over (output last dim, input last
    // dim), the other dimensions in z.
    CHECK(all[11][0].grid == std::array<uint32_t, 3>{2, 2, 1});
    CHECK(all[10][0].grid == std::array<uint32_t, 3>{1, 1, 2});
    // Random and constant kernels go into the same module.
    OwningOpRef<ModuleOp> r = parse(c, tgtest::kSimtRandomCases);
    CHECK(lowerAll(c, *r, t, *kernels).size() == 3);
    OwningOpRef<ModuleOp> k = parse(c, tgtest::kSimtConstantCases);
    CHECK(lowerAll(c, *k, t, *kernels).size() == 4);
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

TEST_CASE("convolution and pooling kernels assemble",
          "[nvptx][simt-convpool]") {
  for (Target t : {Target::SM80, Target::SM90a}) {
    tgtest::SimtContext c;
    OwningOpRef<ModuleOp> m = parse(c, tgtest::kSimtConvPoolCases);
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
    auto all = lowerAll(c, *m, t, *kernels);
    REQUIRE(all.size() == 6);
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
