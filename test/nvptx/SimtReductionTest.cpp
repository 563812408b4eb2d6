//===- SimtReductionTest.cpp - reduction kernels assemble cleanly -*- C++ -*-===//
//
// The reduction and row-reduction kernels (codegen/nvptx/SimtReduction.cpp)
// of the example models' planned steps (MLP, LeNet, a one-layer GPT at small
// and at GPT-2 small widths, fp32 and bf16) and of 50257-wide vocabulary
// rows are generated, lowered to PTX and assembled by ptxas for sm_80 and
// sm_90a: no errors, spills, stack or performance warnings. Without ptxas the assembly SKIPs with a warning.
// Bad input (a composite op left in a group) is a located error.
//
//===----------------------------------------------------------------------===//
#include "test/nvptx/SimtReductionTestUtil.h"
#include "test/nvptx/SimtTestUtil.h"


#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace simtred;

namespace {

/// Lowers every reduction op at the top level of every function for `t`;
/// returns how many ops were lowered (kernels dedupe by symbol).
int lowerAll(Harness &h, tg::nvptx::Target t, mlir::ModuleOp kernels) {
  int n = 0;
  h.module->walk([&](mlir::func::FuncOp fn) {
    for (mlir::Operation &op : fn.getBody().front()) {
      if (!tg::nvptx::detail::isReductionKernelOp(&op))
        continue;
      auto launches = tg::nvptx::lowerOpToKernels(&op, t, kernels);
      INFO(h.diagnostics);
      REQUIRE(mlir::succeeded(launches));
      // One kernel, or a split reduction's partial and combine kernels.
      REQUIRE(!launches->empty());
      REQUIRE(launches->size() <= 2);
      if (launches->size() == 2) {
        CHECK((*launches)[0].symbol.rfind("tg_redp_", 0) == 0);
        CHECK((*launches)[1].symbol.rfind("tg_redc_", 0) == 0);
      }
      ++n;
    }
  });
  return n;
}

void checkExample(const std::string &name,
                  std::vector<std::pair<std::string, std::string>> defines,
                  const std::string &precision, int minOps) {
  for (tg::nvptx::Target t : {tg::nvptx::Target::SM80, tg::nvptx::Target::SM90a}) {
    INFO(name << " " << precision << " " << tg::nvptx::toString(t));
    Harness h;
    buildExample(h, name, defines, precision);
    auto kernels = newKernelModule(h);
    CHECK(lowerAll(h, t, *kernels) >= minOps);
    tgtest::checkAssembles(*kernels, t);
  }
}

} // namespace

TEST_CASE("reduction kernels of the MLP assemble", "[nvptx][reduction]") {
  std::vector<std::pair<std::string, std::string>> d = {{"batch", "8"},
                                                        {"hidden", "32"}};
  checkExample("mlp", d, "fp32", 8);
  checkExample("mlp", d, "bf16", 8);
}

TEST_CASE("reduction kernels of the LeNet assemble", "[nvptx][reduction]") {
  std::vector<std::pair<std::string, std::string>> d = {{"batch", "4"}};
  checkExample("cnn", d, "fp32", 8);
  checkExample("cnn", d, "bf16", 8);
}

TEST_CASE("reduction kernels of a one-layer GPT assemble", "[nvptx][reduction]") {
  std::vector<std::pair<std::string, std::string>> d = {
      {"layers", "1"}, {"d_model", "32"}, {"heads", "2"}, {"seq", "16"},
      {"batch", "2"},  {"vocab", "64"},   {"ctx", "16"},  {"accumulate", "1"}};
  checkExample("gpt", d, "fp32", 20);
  checkExample("gpt", d, "bf16", 20);
}

TEST_CASE("a 50257-wide vocabulary row assembles", "[nvptx][reduction]") {
  for (tg::nvptx::Target t : {tg::nvptx::Target::SM80, tg::nvptx::Target::SM90a}) {
    // 50257: one element a step; 50256 in bf16 and f32: four (vector
    // loads and stores).
    for (auto [width, elem] : {std::pair<int, const char *>{50257, "f32"},
                               {50256, "bf16"}, {50256, "f32"}}) {
      INFO(width << " " << elem);
      Harness h;
      h.parse(crossEntropyGroup(4, width, elem));
      auto kernels = newKernelModule(h);
      auto launches = lowerSingle(h, t, *kernels);
      REQUIRE(launches.size() == 1);
      // A block per row.
      CHECK(launches[0].grid[0] == 4);
      CHECK(launches[0].block[0] == 256);
      tgtest::checkAssembles(*kernels, t);
      if (width % 4 == 0 && std::string(elem) == "f32")
        CHECK(compileKernels(*kernels, t).find("ld.global.v4.b32") !=
              std::string::npos);
    }
  }
}

TEST_CASE("tensors of 2^31 elements and more use 64-bit indices",
          "[nvptx][reduction]") {
  // 65536 rows of 50257 bf16 logits: 3.3e9 elements.
  for (tg::nvptx::Target t : {tg::nvptx::Target::SM80, tg::nvptx::Target::SM90a}) {
    Harness h;
    h.parse(crossEntropyGroup(65536, 50257, "bf16"));
    auto kernels = newKernelModule(h);
    auto launches = lowerSingle(h, t, *kernels);
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].grid[0] == 65536);
    // The row loops count in i64.
    std::string text;
    llvm::raw_string_ostream os(text);
    kernels->print(os);
    CHECK(text.find(": i64 {") != std::string::npos);
    tgtest::checkAssembles(*kernels, t);
  }
}

TEST_CASE("a composite op left in a group is a located error",
          "[nvptx][reduction]") {
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.fused <row_reduction> ins(%x : tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = tg.max %a axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %2 = tg.softmax %a axis = 1 : tensor<4x8xf32>
    %3 = tg.sub %2, %1 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    tg.yield %3 : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
)");
  auto kernels = newKernelModule(h);
  mlir::Operation *op = firstOp(h);
  auto r = tg::nvptx::lowerOpToKernels(op, tg::nvptx::Target::SM80, *kernels);
  CHECK(mlir::failed(r));
  CHECK(h.diagnostics.find("cannot compile 'tg.softmax' inside a GPU reduction "
                           "kernel (run tg-decompose first)") != std::string::npos);
  // Nothing half-built is left behind.
  CHECK(kernels->getBody()->getOperations().size() == 0);
}
TEST_CASE("reduction kernels of GPT-2 small's step assemble",
          "[nvptx][reduction]") {
  // Real widths (vocabulary rows of 50257 a block each, 768-wide norms, the
  // 1024x1024 attention rows), one layer to keep the test short.
  checkExample("gpt", {{"layers", "1"}, {"accumulate", "1"}}, "bf16", 20);
}

TEST_CASE("a group reducing over two domains is a located error",
          "[nvptx][reduction]") {
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %0:2 = tg.fused <reduction> ins(%x : tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = tg.sum %a axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
    %2 = tg.sum %a axes = [0] : tensor<4x8xf32> -> tensor<8xf32>
    tg.yield %1, %2 : tensor<4xf32>, tensor<8xf32>
  } -> tensor<4xf32>, tensor<8xf32>
  return %0#0, %0#1 : tensor<4xf32>, tensor<8xf32>
}
)");
  auto kernels = newKernelModule(h);
  auto r = tg::nvptx::lowerOpToKernels(firstOp(h), tg::nvptx::Target::SM80,
                                       *kernels);
  CHECK(mlir::failed(r));
  CHECK(h.diagnostics.find("reduces over two domains") != std::string::npos);
  CHECK(kernels->getBody()->getOperations().empty());
}

TEST_CASE("a plan the reduction kernel cannot run in place is a located error",
          "[nvptx][reduction]") {
  // The normalised rows in the buffer of a transposed operand: other
  // threads still read what one thread overwrites.
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<4x8xf32>, %z: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %0 = tg.fused <row_reduction> ins(%x, %z : tensor<4x8xf32>, tensor<8x4xf32>) attributes {tg.alias_args = array<i64: 1>} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>):
    %1 = tg.max %a axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %2 = tg.sub %a, %1 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    tg.yield %2 : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
)");
  auto kernels = newKernelModule(h);
  auto r = tg::nvptx::lowerOpToKernels(firstOp(h), tg::nvptx::Target::SM80,
                                       *kernels);
  CHECK(mlir::failed(r));
  CHECK(h.diagnostics.find("the memory plan puts result #0 in the buffer of "
                           "operand #1") != std::string::npos);
}
