//===- SimtReductionEmuTest.cpp - reduction kernels on the PTX emulator -*- C++ -*-===//
//
// Each case is a function @f whose first op is a reduction group or a
// single reduction; the op is lowered to kernels, compiled to sm_80 PTX and
// run on the PTX emulator (runtime/emulator) from random inputs, and every
// result is compared with the reference evaluator's on the same inputs.
// The shapes cover a warp per row and a block per row with rows that are
// not a multiple of the warp or block width, one row, a row of one
// element, a 50257-wide vocabulary row, column sums, reductions over
// everything and over a middle axis, integer sums (64-bit shuffles), bf16,
// and a result that shares its operand's buffer (the aliasing rule).
//
//===----------------------------------------------------------------------===//
#include "test/nvptx/SimtReductionTestUtil.h"
#include "codegen/nvptx/Passes.h"
#include "test/nvptx/EmuHarness.h"
#include "test/nvptx/SimtTestUtil.h"

#include "mlir/IR/IRMapping.h"

using namespace simtred;
using mlir::tg::ref::DType;
using mlir::tg::ref::Tensor;

namespace {

/// Runs `op` (the first op of `fn`, whose operands are `fn`'s arguments in
/// order) on the emulator and compares its results with the reference.
/// `alias[i]` >= 0 makes result i share the buffer of operand alias[i] (as
/// the plan's tg.alias_args would).
void checkOpOnEmulator(Harness &h, mlir::func::FuncOp fn, mlir::Operation *op,
                       std::vector<Tensor> args, std::vector<int> alias = {}) {
  auto ref = mlir::tg::ref::evaluate(fn, args);
  INFO(h.diagnostics);
  REQUIRE(mlir::succeeded(ref));
  if (!alias.empty()) {
    alias.resize(op->getNumResults(), -1);
    op->setAttr(mlir::tg::attr::aliasArgs,
                mlir::DenseI64ArrayAttr::get(
                    &h.ctx, std::vector<int64_t>(alias.begin(), alias.end())));
  }
  std::vector<Tensor> got;
  std::string err;
  bool ok = tgtest::runOnEmulator(op, args, got, err);
  INFO(err << h.diagnostics);
  REQUIRE(ok);
  REQUIRE(got.size() == ref->size());
  for (size_t i = 0; i < got.size(); ++i) {
    // Sums accumulate in f32 in a tree, the reference in float64 in order:
    // f32 results within 2e-5; 16-bit results may round the other way (two
    // units in the last place).
    DType d = (*ref)[i].dtype;
    bool half = d == DType::BF16 || d == DType::F16;
    double rtol = half ? (d == DType::BF16 ? 1.6e-2 : 2e-3) : 2e-5;
    double atol = half ? 1e-5 : 2e-5;
    if (d == DType::I64 || d == DType::I32)
      rtol = atol = 0;
    INFO("result " << i);
    CHECK(tgtest::worstError(got[i], (*ref)[i], rtol, atol) <= 1);
  }
}

/// checkOpOnEmulator on the first op of @f in `ir`.
void checkOnEmulator(const std::string &ir, std::vector<Tensor> args,
                     std::vector<int> alias = {}) {
  Harness h;
  h.parse(ir);
  auto fn = h.module->lookupSymbol<mlir::func::FuncOp>("f");
  REQUIRE(fn);
  checkOpOnEmulator(h, fn, firstOp(h), std::move(args), std::move(alias));
}

/// Every reduction kernel op at the top level of the planned functions of
/// examples/<name>.tg, each copied alone into a function and run on the
/// emulator from random inputs against the reference. Returns the count.
int checkExampleOnEmulator(const std::string &name,
                           std::vector<std::pair<std::string, std::string>> defines,
                           const std::string &precision) {
  Harness h;
  buildExample(h, name, std::move(defines), precision);
  std::vector<mlir::Operation *> ops;
  h.module->walk([&](mlir::func::FuncOp fn) {
    for (mlir::Operation &op : fn.getBody().front())
      if (tg::nvptx::detail::isReductionKernelOp(&op))
        ops.push_back(&op);
  });
  int n = 0;
  for (mlir::Operation *op : ops) {
    mlir::OwningOpRef<mlir::ModuleOp> m = tgtest::standaloneFunction(op);
    auto fn = m->lookupSymbol<mlir::func::FuncOp>("f");
    std::vector<Tensor> args;
    for (auto [i, t] : llvm::enumerate(op->getOperandTypes())) {
      auto rt = mlir::cast<mlir::RankedTensorType>(t);
      DType dt = *mlir::tg::ref::dtypeOf(rt.getElementType());
      // Small non-negative integers: labels in range, steps, counts.
      bool isInt = dt == DType::I64 || dt == DType::I32;
      args.push_back(Tensor::random(rt.getShape(), dt, 100 + n, i,
                                    isInt ? 0 : -2, isInt ? 5 : 2));
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os);
    INFO(name << " " << precision << " op " << n << ": " << text);
    checkOpOnEmulator(h, fn, &fn.getBody().front().front(), std::move(args));
    ++n;
  }
  return n;
}

/// Labels for `rows` rows of `classes`: in range, with -100 (ignored) at
/// every fifth row.
Tensor labels(int64_t rows, int64_t classes) {
  std::vector<double> v;
  for (int64_t r = 0; r < rows; ++r)
    v.push_back(r % 5 == 3 ? -100 : double((r * 7919) % classes));
  return Tensor::fromValues({rows}, DType::I64, v);
}

Tensor rand(llvm::ArrayRef<int64_t> shape, DType t, uint64_t seed,
            double lo = -3, double hi = 3) {
  return Tensor::random(shape, t, seed, 0, lo, hi);
}

/// A single reduction op `op` (e.g. "tg.sum %x axes = [0]") on `in`.
std::string singleOp(const std::string &op, const std::string &in,
                     const std::string &out) {
  return "func.func @f(%x: " + in + ") -> " + out + " {\n  %0 = " + op + " : " +
         in + " -> " + out + "\n  return %0 : " + out + "\n}\n";
}

/// Layer norm forward (decomposed) on rows of the last axis of `shape`,
/// with weight and bias over the last axis: normalised output and rstd.
std::string layerNormGroup(const std::string &x, const std::string &row,
                           const std::string &c, int axis) {
  std::string ax = std::to_string(axis);
  return "func.func @f(%arg0: " + x + ", %arg1: " + c + ", %arg2: " + c +
         ") -> (" + x + ", " + row + ") {\n"
         "  %0:2 = tg.fused <row_reduction> ins(%arg0, %arg1, %arg2 : " + x + ", " + c + ", " + c + ") {\n"
         "  ^bb0(%x: " + x + ", %w: " + c + ", %b: " + c + "):\n"
         "    %eps = tg.constant dense<1.0e-5> : tensor<f32>\n"
         "    %m = tg.mean %x axes = [" + ax + "] keepdims : " + x + " -> " + row + "\n"
         "    %d = tg.sub %x, %m : " + x + ", " + row + " -> " + x + "\n"
         "    %d2 = tg.mul %d, %d : " + x + ", " + x + " -> " + x + "\n"
         "    %v = tg.mean %d2 axes = [" + ax + "] keepdims : " + x + " -> " + row + "\n"
         "    %ve = tg.add %v, %eps : " + row + ", tensor<f32> -> " + row + "\n"
         "    %r = tg.rsqrt %ve : " + row + "\n"
         "    %n = tg.mul %d, %r : " + x + ", " + row + " -> " + x + "\n"
         "    %s = tg.mul %n, %w : " + x + ", " + c + " -> " + x + "\n"
         "    %y = tg.add %s, %b : " + x + ", " + c + " -> " + x + "\n"
         "    tg.yield %y, %r : " + x + ", " + row + "\n"
         "  } -> " + x + ", " + row + "\n"
         "  return %0#0, %0#1 : " + x + ", " + row + "\n"
         "}\n";
}

} // namespace

TEST_CASE("every reduction kernel of the example steps on the emulator",
          "[nvptx][reduction][emulator]") {
  for (const char *precision : {"fp32", "bf16"}) {
    CHECK(checkExampleOnEmulator("mlp", {{"batch", "8"}, {"hidden", "32"}},
                                 precision) >= 8);
    // The LeNet: bias gradients of convolutions (sums over batch and
    // pixels, a middle-and-leading reduction).
    CHECK(checkExampleOnEmulator("cnn", {{"batch", "2"}, {"c1", "2"}, {"c2", "3"}},
                                 precision) >= 8);
    CHECK(checkExampleOnEmulator(
              "gpt",
              {{"layers", "1"}, {"d_model", "32"}, {"heads", "2"}, {"seq", "16"},
               {"batch", "2"}, {"vocab", "64"}, {"ctx", "16"}, {"accumulate", "1"}},
              precision) >= 20);
  }
}

TEST_CASE("cross-entropy rows on the emulator", "[nvptx][reduction][emulator]") {
  SECTION("warp per row, 37 classes, 5 rows") {
    checkOnEmulator(crossEntropyGroup(5, 37, "f32"),
                    {rand({5, 37}, DType::F32, 1), labels(5, 37)});
  }
  SECTION("warp per row, bf16, 9 rows (not a multiple of 4 rows a block)") {
    checkOnEmulator(crossEntropyGroup(9, 100, "bf16"),
                    {rand({9, 100}, DType::BF16, 2), labels(9, 100)});
  }
  SECTION("block per row, 1500 classes, 3 rows") {
    checkOnEmulator(crossEntropyGroup(3, 1500, "f32"),
                    {rand({3, 1500}, DType::F32, 3), labels(3, 1500)});
  }
  SECTION("one 50257-wide vocabulary row") {
    checkOnEmulator(crossEntropyGroup(1, 50257, "bf16"),
                    {rand({1, 50257}, DType::BF16, 4), labels(1, 50257)});
  }
}

TEST_CASE("layer norm rows on the emulator", "[nvptx][reduction][emulator]") {
  SECTION("rank 3, 40 wide") {
    checkOnEmulator(layerNormGroup("tensor<3x5x40xf32>", "tensor<3x5x1xf32>",
                                   "tensor<40xf32>", 2),
                    {rand({3, 5, 40}, DType::F32, 5), rand({40}, DType::F32, 6),
                     rand({40}, DType::F32, 7)});
  }
  SECTION("rows of one element") {
    checkOnEmulator(layerNormGroup("tensor<6x1xf32>", "tensor<6x1xf32>",
                                   "tensor<1xf32>", 1),
                    {rand({6, 1}, DType::F32, 8), rand({1}, DType::F32, 9),
                     rand({1}, DType::F32, 10)});
  }
  SECTION("256 wide: a warp per row, four neighbours a lane") {
    checkOnEmulator(layerNormGroup("tensor<7x256xf32>", "tensor<7x1xf32>",
                                   "tensor<256xf32>", 1),
                    {rand({7, 256}, DType::F32, 26), rand({256}, DType::F32, 27),
                     rand({256}, DType::F32, 28)},
                    {0, -1});
  }
  SECTION("2048 wide: a block per row, vectors, the output over its input") {
    checkOnEmulator(layerNormGroup("tensor<3x2048xf32>", "tensor<3x1xf32>",
                                   "tensor<2048xf32>", 1),
                    {rand({3, 2048}, DType::F32, 29), rand({2048}, DType::F32, 30),
                     rand({2048}, DType::F32, 31)},
                    {0, -1});
  }
  SECTION("2050 wide: a block per row, the output over its input") {
    checkOnEmulator(layerNormGroup("tensor<2x2050xf32>", "tensor<2x1xf32>",
                                   "tensor<2050xf32>", 1),
                    {rand({2, 2050}, DType::F32, 11), rand({2050}, DType::F32, 12),
                     rand({2050}, DType::F32, 13)},
                    {0, -1});
  }
}

TEST_CASE("a row result in place of a row operand", "[nvptx][reduction][emulator]") {
  // t (per row) lives in s's buffer while every thread of the row still
  // reads s for y: the first thread may store t only after all have read.
  for (int width : {40, 3000}) {
    std::string c = std::to_string(width);
    std::string x = "tensor<6x" + c + "xf32>";
    std::string ir = "func.func @f(%arg0: " + x + ", %arg1: tensor<6x1xf32>) -> (" + x + ", tensor<6x1xf32>) {\n"
        "  %0:2 = tg.fused <row_reduction> ins(%arg0, %arg1 : " + x + ", tensor<6x1xf32>) {\n"
        "  ^bb0(%x: " + x + ", %s: tensor<6x1xf32>):\n"
        "    %m = tg.max %x axes = [1] keepdims : " + x + " -> tensor<6x1xf32>\n"
        "    %y = tg.mul %x, %s : " + x + ", tensor<6x1xf32> -> " + x + "\n"
        "    %t = tg.mul %s, %m : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>\n"
        "    tg.yield %y, %t : " + x + ", tensor<6x1xf32>\n"
        "  } -> " + x + ", tensor<6x1xf32>\n"
        "  return %0#0, %0#1 : " + x + ", tensor<6x1xf32>\n}\n";
    INFO(width);
    checkOnEmulator(ir, {rand({6, width}, DType::F32, 40), rand({6, 1}, DType::F32, 41)},
                    {-1, 1});
  }
}

TEST_CASE("column sums and total reductions on the emulator",
          "[nvptx][reduction][emulator]") {
  SECTION("bias gradient: a ReLU backward and its column sum") {
    std::string ir = R"(
func.func @f(%arg0: tensor<37x45xf32>, %arg1: tensor<37x45xf32>) -> (tensor<37x45xf32>, tensor<1x45xf32>) {
  %0:2 = tg.fused <reduction> ins(%arg0, %arg1 : tensor<37x45xf32>, tensor<37x45xf32>) {
  ^bb0(%a: tensor<37x45xf32>, %g: tensor<37x45xf32>):
    %z = tg.constant dense<0.0> : tensor<f32>
    %c = tg.cmp le %a, %z : tensor<37x45xf32>, tensor<f32> -> tensor<37x45xi1>
    %s = tg.select %c, %z, %g : tensor<37x45xi1>, tensor<f32>, tensor<37x45xf32> -> tensor<37x45xf32>
    %r = tg.sum %s axes = [0] keepdims : tensor<37x45xf32> -> tensor<1x45xf32>
    tg.yield %s, %r : tensor<37x45xf32>, tensor<1x45xf32>
  } -> tensor<37x45xf32>, tensor<1x45xf32>
  return %0#0, %0#1 : tensor<37x45xf32>, tensor<1x45xf32>
}
)";
    checkOnEmulator(ir, {rand({37, 45}, DType::F32, 14),
                         rand({37, 45}, DType::F32, 15)});
    // The elementwise result over its operand's buffer.
    checkOnEmulator(ir, {rand({37, 45}, DType::F32, 14),
                         rand({37, 45}, DType::F32, 15)},
                    {1, -1});
  }
  SECTION("bf16 column sums over two leading axes") {
    std::string ir = R"(
func.func @f(%arg0: tensor<2x16x96xbf16>, %arg1: tensor<2x16x96xbf16>) -> (tensor<2x16x96xbf16>, tensor<1x1x96xbf16>) {
  %0:2 = tg.fused <reduction> ins(%arg0, %arg1 : tensor<2x16x96xbf16>, tensor<2x16x96xbf16>) {
  ^bb0(%a: tensor<2x16x96xbf16>, %b: tensor<2x16x96xbf16>):
    %s = tg.add %a, %b : tensor<2x16x96xbf16>, tensor<2x16x96xbf16> -> tensor<2x16x96xbf16>
    %r = tg.sum %s axes = [0, 1] keepdims : tensor<2x16x96xbf16> -> tensor<1x1x96xbf16>
    tg.yield %s, %r : tensor<2x16x96xbf16>, tensor<1x1x96xbf16>
  } -> tensor<2x16x96xbf16>, tensor<1x1x96xbf16>
  return %0#0, %0#1 : tensor<2x16x96xbf16>, tensor<1x1x96xbf16>
}
)";
    checkOnEmulator(ir, {rand({2, 16, 96}, DType::BF16, 16),
                         rand({2, 16, 96}, DType::BF16, 17)});
  }
  SECTION("the clipping norm's sum of squares over everything") {
    std::string ir = R"(
func.func @f(%arg0: tensor<300x7xf32>) -> tensor<f32> {
  %0 = tg.fused <reduction> ins(%arg0 : tensor<300x7xf32>) {
  ^bb0(%a: tensor<300x7xf32>):
    %s = tg.mul %a, %a : tensor<300x7xf32>, tensor<300x7xf32> -> tensor<300x7xf32>
    %r = tg.sum %s axes = [0, 1] : tensor<300x7xf32> -> tensor<f32>
    tg.yield %r : tensor<f32>
  } -> tensor<f32>
  return %0 : tensor<f32>
}
)";
    checkOnEmulator(ir, {rand({300, 7}, DType::F32, 18)});
  }
}

TEST_CASE("single reductions on the emulator", "[nvptx][reduction][emulator]") {
  SECTION("sum of a vector") {
    checkOnEmulator(singleOp("tg.sum %x axes = [0]", "tensor<8xf32>", "tensor<f32>"),
                    {rand({8}, DType::F32, 19)});
  }
  SECTION("mean over a middle axis") {
    checkOnEmulator(singleOp("tg.mean %x axes = [1]", "tensor<4x33x5xf32>",
                             "tensor<4x5xf32>"),
                    {rand({4, 33, 5}, DType::F32, 20)});
  }
  SECTION("max over long rows") {
    checkOnEmulator(singleOp("tg.max %x axes = [1] keepdims", "tensor<3x2000xf32>",
                             "tensor<3x1xf32>"),
                    {rand({3, 2000}, DType::F32, 21)});
  }
  SECTION("max over a leading axis, negative values") {
    checkOnEmulator(singleOp("tg.max %x axes = [0]", "tensor<70x3xf32>",
                             "tensor<3xf32>"),
                    {rand({70, 3}, DType::F32, 22, -9, -1)});
  }
  SECTION("integer sums: i64 rows and an i32 total") {
    checkOnEmulator(singleOp("tg.sum %x axes = [1]", "tensor<5x77xi64>",
                             "tensor<5xi64>"),
                    {rand({5, 77}, DType::I64, 23, -1e12, 1e12)});
    checkOnEmulator(singleOp("tg.sum %x axes = [0, 1]", "tensor<33x9xi32>",
                             "tensor<i32>"),
                    {rand({33, 9}, DType::I32, 24, -1000, 1000)});
  }
  SECTION("integer max (64-bit shuffles)") {
    checkOnEmulator(singleOp("tg.max %x axes = [0]", "tensor<100xi64>",
                             "tensor<i64>"),
                    {rand({100}, DType::I64, 25, -1e15, 1e15)});
  }
}

namespace {

/// The launches of the first op of @f in `ir`; checks that the op is a
/// split reduction (a partial and a combine launch sharing scratch) with
/// `slices` slices: blocks of the partial kernel along y for column sums,
/// along x for a reduction over everything.
void checkSplit(const std::string &ir, uint32_t slices, bool columns) {
  Harness h;
  h.parse(ir);
  auto kernels = newKernelModule(h);
  std::vector<tg::nvptx::KernelLaunch> ls =
      lowerSingle(h, tg::nvptx::Target::SM80, *kernels);
  REQUIRE(ls.size() == 2);
  CHECK(ls[0].symbol.rfind("tg_redp_", 0) == 0);
  CHECK(ls[1].symbol.rfind("tg_redc_", 0) == 0);
  CHECK((columns ? ls[0].grid[1] : ls[0].grid[0]) == slices);
  for (const auto &l : ls) {
    REQUIRE(!l.params.empty());
    CHECK(l.params.back().kind == tg::nvptx::KernelParam::Kind::Scratch);
    CHECK(l.scratchBytes == ls[0].scratchBytes);
  }
  CHECK(ls[0].scratchBytes > 0);
  // Both kernels assemble (ptxas -v, no spills) where the toolkit is.
  tgtest::checkAssembles(*kernels, tg::nvptx::Target::SM80);
  auto kernels90 = newKernelModule(h);
  lowerSingle(h, tg::nvptx::Target::SM90a, *kernels90);
  tgtest::checkAssembles(*kernels90, tg::nvptx::Target::SM90a);
}

/// Runs the first op of @f in `ir` twice on the emulator: the results
/// are the same bits (the split's order is fixed by the shapes).
void checkDeterministic(const std::string &ir, const std::vector<Tensor> &args) {
  Harness h;
  h.parse(ir);
  std::vector<Tensor> a, b;
  std::string err;
  REQUIRE(tgtest::runOnEmulator(firstOp(h), args, a, err));
  REQUIRE(tgtest::runOnEmulator(firstOp(h), args, b, err));
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(tgtest::pack(a[i]) == tgtest::pack(b[i]));
}

} // namespace

TEST_CASE("big reductions split over blocks on the emulator",
          "[nvptx][reduction][emulator]") {
  SECTION("a bias gradient over 4096 rows: ReLU backward and column sums") {
    // 40 outputs are two column blocks: the 4096 rows go to 16 slices.
    std::string ir = R"(
func.func @f(%arg0: tensor<4096x40xf32>, %arg1: tensor<4096x40xf32>) -> (tensor<4096x40xf32>, tensor<1x40xf32>) {
  %0:2 = tg.fused <reduction> ins(%arg0, %arg1 : tensor<4096x40xf32>, tensor<4096x40xf32>) {
  ^bb0(%a: tensor<4096x40xf32>, %g: tensor<4096x40xf32>):
    %z = tg.constant dense<0.0> : tensor<f32>
    %c = tg.cmp le %a, %z : tensor<4096x40xf32>, tensor<f32> -> tensor<4096x40xi1>
    %s = tg.select %c, %z, %g : tensor<4096x40xi1>, tensor<f32>, tensor<4096x40xf32> -> tensor<4096x40xf32>
    %r = tg.sum %s axes = [0] keepdims : tensor<4096x40xf32> -> tensor<1x40xf32>
    tg.yield %s, %r : tensor<4096x40xf32>, tensor<1x40xf32>
  } -> tensor<4096x40xf32>, tensor<1x40xf32>
  return %0#0, %0#1 : tensor<4096x40xf32>, tensor<1x40xf32>
}
)";
    checkSplit(ir, 16, /*columns=*/true);
    std::vector<Tensor> args{rand({4096, 40}, DType::F32, 60),
                             rand({4096, 40}, DType::F32, 61)};
    checkOnEmulator(ir, args);
    // The elementwise result over its operand's buffer.
    checkOnEmulator(ir, args, {1, -1});
    checkDeterministic(ir, args);
  }
  SECTION("bf16 bias gradients over [64, 64] rows, GPT's tg.sum") {
    std::string ir = singleOp("tg.sum %x axes = [0, 1] keepdims",
                              "tensor<64x64x96xbf16>", "tensor<1x1x96xbf16>");
    checkSplit(ir, 16, /*columns=*/true);
    checkOnEmulator(ir, {rand({64, 64, 96}, DType::BF16, 62)});
  }
  SECTION("column max over a leading axis, negative values") {
    std::string ir = singleOp("tg.max %x axes = [0]", "tensor<3000x33xf32>",
                              "tensor<33xf32>");
    checkOnEmulator(ir, {rand({3000, 33}, DType::F32, 63, -9, -1)});
  }
  SECTION("a mean over everything, and the norm from a sum of squares") {
    // 76800 elements, 4 at a time: 19200 groups, 4 slices of 256 threads.
    std::string mean = singleOp("tg.mean %x axes = [0, 1]",
                                "tensor<256x300xf32>", "tensor<f32>");
    checkSplit(mean, 4, /*columns=*/false);
    std::vector<Tensor> args{rand({256, 300}, DType::F32, 64)};
    checkOnEmulator(mean, args);
    checkDeterministic(mean, args);
    // A result computed from the reduced value (the combine kernel
    // evaluates it), with the squares written as a full-shape result.
    std::string norm = R"(
func.func @f(%arg0: tensor<512x200xf32>) -> (tensor<512x200xf32>, tensor<f32>) {
  %0:2 = tg.fused <reduction> ins(%arg0 : tensor<512x200xf32>) {
  ^bb0(%a: tensor<512x200xf32>):
    %s = tg.mul %a, %a : tensor<512x200xf32>, tensor<512x200xf32> -> tensor<512x200xf32>
    %r = tg.sum %s axes = [0, 1] : tensor<512x200xf32> -> tensor<f32>
    %n = tg.sqrt %r : tensor<f32>
    tg.yield %s, %n : tensor<512x200xf32>, tensor<f32>
  } -> tensor<512x200xf32>, tensor<f32>
  return %0#0, %0#1 : tensor<512x200xf32>, tensor<f32>
}
)";
    checkSplit(norm, 6, /*columns=*/false);
    checkOnEmulator(norm, {rand({512, 200}, DType::F32, 65)});
  }
  SECTION("an i64 total: 64-bit partials") {
    checkOnEmulator(singleOp("tg.sum %x axes = [0]", "tensor<40000xi64>",
                             "tensor<i64>"),
                    {rand({40000}, DType::I64, 66, -1e12, 1e12)});
  }
}

namespace {

/// Softmax rows of `shape` ("RxC") in `elem`, decomposed as tg-decompose
/// writes it (max, x - max, exp, sum, divide): one online phase.
std::string softmaxGroup(const std::string &rows, const std::string &cols,
                         const std::string &elem) {
  std::string x = "tensor<" + rows + "x" + cols + "x" + elem + ">";
  std::string r = "tensor<" + rows + "x1x" + elem + ">";
  return "func.func @f(%arg0: " + x + ") -> " + x + " {\n"
         "  %0 = tg.fused <row_reduction> ins(%arg0 : " + x + ") {\n"
         "  ^bb0(%x: " + x + "):\n"
         "    %m = tg.max %x axes = [1] keepdims : " + x + " -> " + r + "\n"
         "    %s = tg.sub %x, %m : " + x + ", " + r + " -> " + x + "\n"
         "    %e = tg.exp %s : " + x + "\n"
         "    %z = tg.sum %e axes = [1] keepdims : " + x + " -> " + r + "\n"
         "    %y = tg.div %e, %z : " + x + ", " + r + " -> " + x + "\n"
         "    tg.yield %y : " + x + "\n"
         "  } -> " + x + "\n"
         "  return %0 : " + x + "\n}\n";
}

/// Log-softmax rows with the row's log-sum-exp yielded too (a row result).
std::string logSoftmaxGroup(const std::string &rows, const std::string &cols,
                            const std::string &elem) {
  std::string x = "tensor<" + rows + "x" + cols + "x" + elem + ">";
  std::string r = "tensor<" + rows + "x1x" + elem + ">";
  return "func.func @f(%arg0: " + x + ") -> (" + x + ", " + r + ") {\n"
         "  %0:2 = tg.fused <row_reduction> ins(%arg0 : " + x + ") {\n"
         "  ^bb0(%x: " + x + "):\n"
         "    %m = tg.max %x axes = [1] keepdims : " + x + " -> " + r + "\n"
         "    %s = tg.sub %x, %m : " + x + ", " + r + " -> " + x + "\n"
         "    %e = tg.exp %s : " + x + "\n"
         "    %z = tg.sum %e axes = [1] keepdims : " + x + " -> " + r + "\n"
         "    %lz = tg.log %z : " + r + "\n"
         "    %y = tg.sub %s, %lz : " + x + ", " + r + " -> " + x + "\n"
         "    %l = tg.add %lz, %m : " + r + ", " + r + " -> " + r + "\n"
         "    tg.yield %y, %l : " + x + ", " + r + "\n"
         "  } -> " + x + ", " + r + "\n"
         "  return %0#0, %0#1 : " + x + ", " + r + "\n}\n";
}

/// Logits that need the max subtraction: around 80..120 (exp overflows
/// f32 past 88.7), -inf at every 7th element and at the first of each
/// row (a lane's running max starts at -inf), one row far below the
/// others.
Tensor hardLogits(int64_t rows, int64_t cols, DType t) {
  std::vector<double> v;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double x = 100 + 20 * std::sin(0.37 * double(c) + double(r));
      if (r == 1)
        x -= 1e4;
      v.push_back(c % 7 == 0 ? -INFINITY : x);
    }
  return Tensor::fromValues({rows, cols}, t, v);
}

/// Runs tg-configure-row-reductions on `ir`; checks its decision for the
/// first op of @f (`blocks`; 1: no attribute) and, when split, the
/// launches: one statistics kernel per phase (`phases`) and the output
/// kernel, blocks (slice, row), every launch sharing one scratch of
/// `reductions` partials per row and block; all assemble with ptxas for
/// sm_80 and sm_90a.
void checkRowSplit(const std::string &ir, int64_t blocks, unsigned phases,
                   unsigned reductions, uint32_t rows) {
  Harness h;
  h.parse(ir);
  mlir::PassManager pm(&h.ctx);
  pm.addPass(tg::nvptx::createConfigureRowReductionsPass());
  REQUIRE(mlir::succeeded(pm.run(*h.module)));
  auto attr = firstOp(h)->getAttrOfType<mlir::IntegerAttr>(
      tg::nvptx::detail::kRowBlocksAttr);
  CHECK((attr ? attr.getInt() : 1) == blocks);
  if (blocks == 1)
    return;
  auto kernels = newKernelModule(h);
  std::vector<tg::nvptx::KernelLaunch> ls =
      lowerSingle(h, tg::nvptx::Target::SM80, *kernels);
  REQUIRE(ls.size() == phases + 1);
  for (unsigned i = 0; i < ls.size(); ++i) {
    INFO("launch " << i << ": " << ls[i].symbol);
    std::string prefix = i < phases ? "tg_rowp" + std::to_string(i) : "tg_rowc";
    CHECK(ls[i].symbol.rfind(prefix + "_", 0) == 0);
    CHECK(ls[i].grid[1] == rows);
    CHECK(ls[i].block[0] == 256);
    if (i < phases)
      CHECK(ls[i].grid[0] == uint32_t(blocks));
    REQUIRE(!ls[i].params.empty());
    CHECK(ls[i].params.back().kind == tg::nvptx::KernelParam::Kind::Scratch);
    CHECK(ls[i].scratchBytes == uint64_t(reductions) * rows * blocks * 8);
  }
  tgtest::checkAssembles(*kernels, tg::nvptx::Target::SM80);
  auto kernels90 = newKernelModule(h);
  lowerSingle(h, tg::nvptx::Target::SM90a, *kernels90);
  tgtest::checkAssembles(*kernels90, tg::nvptx::Target::SM90a);
}

/// checkOnEmulator after tg-configure-row-reductions, twice: the split's
/// results match the reference and are the same bits on a second run.
void checkSplitOnEmulator(const std::string &ir, const std::vector<Tensor> &args) {
  Harness h;
  h.parse(ir);
  mlir::PassManager pm(&h.ctx);
  pm.addPass(tg::nvptx::createConfigureRowReductionsPass());
  REQUIRE(mlir::succeeded(pm.run(*h.module)));
  auto fn = h.module->lookupSymbol<mlir::func::FuncOp>("f");
  REQUIRE(fn);
  checkOpOnEmulator(h, fn, firstOp(h), args);
  std::vector<Tensor> a, b;
  std::string err;
  REQUIRE(tgtest::runOnEmulator(firstOp(h), args, a, err));
  REQUIRE(tgtest::runOnEmulator(firstOp(h), args, b, err));
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(tgtest::pack(a[i]) == tgtest::pack(b[i]));
}

} // namespace

TEST_CASE("online max-and-sum rows on the emulator",
          "[nvptx][reduction][emulator][online]") {
  // Rows of 1 and 31 elements (a warp per row: lanes without elements
  // merge their (-inf, 0)), a block per row, -inf and large values.
  SECTION("softmax, rows of 1 and 31, f32 and bf16") {
    for (const char *elem : {"f32", "bf16"}) {
      DType t = std::string(elem) == "f32" ? DType::F32 : DType::BF16;
      INFO(elem);
      checkOnEmulator(softmaxGroup("5", "1", elem), {rand({5, 1}, t, 70)});
      checkOnEmulator(softmaxGroup("6", "31", elem), {hardLogits(6, 31, t)});
    }
  }
  SECTION("log-softmax, a block per row, -inf and large values") {
    checkOnEmulator(logSoftmaxGroup("3", "3000", "f32"),
                    {hardLogits(3, 3000, DType::F32)});
  }
  SECTION("the softmax pair is one pass: max and sum share a phase") {
    Harness h;
    h.parse(softmaxGroup("300", "2000", "f32"));
    auto kernels = newKernelModule(h);
    std::vector<tg::nvptx::KernelLaunch> ls =
        lowerSingle(h, tg::nvptx::Target::SM80, *kernels);
    REQUIRE(ls.size() == 1);
    // One statistics pass, one output pass: two loops over the row.
    std::string ptx = compileKernels(*kernels, tg::nvptx::Target::SM80);
    size_t barriers = 0;
    for (size_t at = ptx.find("bar.sync"); at != std::string::npos;
         at = ptx.find("bar.sync", at + 1))
      ++barriers;
    CHECK(barriers == 1);
  }
}

TEST_CASE("long rows split over several blocks", "[nvptx][reduction][emulator][split-rows]") {
  SECTION("the decision: few long rows split, many or short rows do not") {
    // 50257 / (256 x 4) = 49 blocks of a row, under 264 / rows.
    checkRowSplit(crossEntropyGroup(1, 50257, "f32"), 49, 2, 3, 1);
    checkRowSplit(crossEntropyGroup(4, 50257, "bf16"), 49, 2, 3, 4);
    checkRowSplit(crossEntropyGroup(16, 50257, "f32"), 17, 2, 3, 16);
    checkRowSplit(softmaxGroup("2", "50257", "f32"), 49, 1, 2, 2);
    checkRowSplit(layerNormGroup("tensor<2x8192xf32>", "tensor<2x1xf32>",
                                 "tensor<8192xf32>", 1),
                  2, 2, 2, 2);
    checkRowSplit(crossEntropyGroup(300, 50257, "f32"), 1, 0, 0, 0);
    checkRowSplit(softmaxGroup("4", "1024", "f32"), 1, 0, 0, 0);
    checkRowSplit(softmaxGroup("4", "2000", "f32"), 1, 0, 0, 0);
  }
  SECTION("cross-entropy over one 50257-wide f32 row") {
    checkSplitOnEmulator(crossEntropyGroup(1, 50257, "f32"),
                         {rand({1, 50257}, DType::F32, 80), labels(1, 50257)});
  }
  SECTION("cross-entropy over three 50257-wide bf16 rows") {
    checkSplitOnEmulator(crossEntropyGroup(3, 50257, "bf16"),
                         {rand({3, 50257}, DType::BF16, 81), labels(3, 50257)});
  }
  SECTION("softmax rows with -inf and large values, f32 and bf16") {
    checkSplitOnEmulator(softmaxGroup("2", "50257", "f32"),
                         {hardLogits(2, 50257, DType::F32)});
    checkSplitOnEmulator(logSoftmaxGroup("2", "50257", "bf16"),
                         {hardLogits(2, 50257, DType::BF16)});
  }
  SECTION("layer norm: two dependent phases, the output over its input") {
    std::string ir = layerNormGroup("tensor<2x8192xf32>", "tensor<2x1xf32>",
                                    "tensor<8192xf32>", 1);
    std::vector<Tensor> args{rand({2, 8192}, DType::F32, 82),
                             rand({8192}, DType::F32, 83),
                             rand({8192}, DType::F32, 84)};
    checkSplitOnEmulator(ir, args);
    Harness h;
    h.parse(ir);
    firstOp(h)->setAttr(tg::nvptx::detail::kRowBlocksAttr,
                        mlir::IntegerAttr::get(mlir::IntegerType::get(&h.ctx, 64), 2));
    auto fn = h.module->lookupSymbol<mlir::func::FuncOp>("f");
    checkOpOnEmulator(h, fn, firstOp(h), args, {0, -1});
  }
}

TEST_CASE("row splits the lowering refuses", "[nvptx][reduction][split-rows]") {
  auto refusal = [](const std::string &ir, int64_t blocks,
                    std::vector<int64_t> alias = {}) {
    Harness h;
    h.parse(ir);
    mlir::Operation *op = firstOp(h);
    op->setAttr(tg::nvptx::detail::kRowBlocksAttr,
                mlir::IntegerAttr::get(mlir::IntegerType::get(&h.ctx, 64), blocks));
    if (!alias.empty())
      op->setAttr(mlir::tg::attr::aliasArgs,
                  mlir::DenseI64ArrayAttr::get(&h.ctx, alias));
    auto kernels = newKernelModule(h);
    CHECK(mlir::failed(
        tg::nvptx::lowerOpToKernels(op, tg::nvptx::Target::SM80, *kernels)));
    return h.diagnostics;
  };
  CHECK_THAT(refusal(softmaxGroup("4", "1000", "f32"), 4),
             Catch::Contains("'tg_nvptx.row_blocks' = 4 on rows of 1000 "
                             "elements, which take a warp each"));
  CHECK_THAT(refusal(softmaxGroup("4", "5000", "f32"), 100),
             Catch::Contains("'tg_nvptx.row_blocks' must be an integer from 1 to 64"));
  // The row result t in s's buffer: other blocks of the row still read s.
  std::string x = "tensor<6x3000xf32>";
  std::string ir = "func.func @f(%arg0: " + x + ", %arg1: tensor<6x1xf32>) -> (" + x + ", tensor<6x1xf32>) {\n"
      "  %0:2 = tg.fused <row_reduction> ins(%arg0, %arg1 : " + x + ", tensor<6x1xf32>) {\n"
      "  ^bb0(%x: " + x + ", %s: tensor<6x1xf32>):\n"
      "    %m = tg.max %x axes = [1] keepdims : " + x + " -> tensor<6x1xf32>\n"
      "    %y = tg.mul %x, %s : " + x + ", tensor<6x1xf32> -> " + x + "\n"
      "    %t = tg.mul %s, %m : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>\n"
      "    tg.yield %y, %t : " + x + ", tensor<6x1xf32>\n"
      "  } -> " + x + ", tensor<6x1xf32>\n"
      "  return %0#0, %0#1 : " + x + ", tensor<6x1xf32>\n}\n";
  CHECK_THAT(refusal(ir, 2, {-1, 1}),
             Catch::Contains("puts row result #1 in an operand's buffer, which "
                             "a row split over blocks cannot compute in place"));
}
