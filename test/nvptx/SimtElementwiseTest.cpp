//===- SimtElementwiseTest.cpp - elementwise and optimizer kernels -*- C++ -*-===//
//
// The elementwise and optimizer groups (and single elementwise ops) of the
// MLP, LeNet and small GPT and BERT models, planned by the training
// pipeline in fp32 and bf16,
// become kernels through lowerOpToKernels: launches that cover every
// result, kernels shared by ops that print alike, PTX for sm_80 and sm_90a
// that ptxas assembles without spills or local memory (SKIPped with a
// warning without ptxas), 16-byte vector accesses where the shapes allow.
//
//===----------------------------------------------------------------------===//
#include "EmuHarness.h"
#include "SimtTestUtil.h"

#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/KernelGen.h"
#include "codegen/nvptx/SimtElementwise.h"
#include "codegen/nvptx/Toolchain.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace ::tg::nvptx;

namespace {

/// Runs a command and returns its standard output ("" on failure).
std::string run(const std::string &cmd) {
  std::string out;
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  return pclose(p) == 0 ? out : std::string();
}

/// The planned IR of examples/<name> (tgc, then the training pipeline with
/// fusion, decomposition and memory planning).
std::string plannedIR(const std::string &name, const std::string &defines,
                      const std::string &precision) {
  const char *src = std::getenv("TGC_SOURCE_DIR");
  const char *bin = std::getenv("TGC_BINARY_DIR");
  std::string s = src ? src : "..", b = bin ? bin : ".";
  return run(b + "/bin/tgc " + s + "/examples/" + name + " " + defines +
             " | " + b +
             "/bin/tg-opt --tg-training-pipeline=\"fuse=true decompose=true "
             "plan-memory=true precision=" +
             precision + "\"");
}



/// Lowers every elementwise/optimizer op of `ir` for `t`; checks the
/// launches and assembles the module. Returns the PTX.
std::string lowerAll(tgtest::SimtContext &c, const std::string &ir, Target t,
                     int &groups, int &launches) {
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, &c.ctx);
  INFO(c.diags);
  REQUIRE(m);
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  groups = launches = 0;
  int functions = 0;
  m->walk([&](Operation *op) {
    if (op->getParentOfType<mlir::tg::FusedOp>() || !isElementwiseKernelOp(op))
      return;
    FailureOr<std::vector<KernelLaunch>> r = lowerOpToKernels(op, t, *kernels);
    INFO("op " << op->getName().getStringRef().str() << ": " << c.diags);
    REQUIRE(succeeded(r));
    REQUIRE(!r->empty());
    // Every result written by exactly one launch; every launch within the
    // parameter limit and reading only operands.
    std::vector<int> written(op->getNumResults(), 0);
    for (const KernelLaunch &l : *r) {
      CHECK(hasKernel(*kernels, l.symbol));
      CHECK(l.block[0] == 256);
      CHECK(l.grid[0] >= 1);
      CHECK(l.params.size() <= 512);
      for (const KernelParam &p : l.params)
        if (p.kind == KernelParam::Kind::Result)
          ++written[p.index];
        else
          CHECK(p.index < op->getNumOperands());
    }
    CHECK(std::count(written.begin(), written.end(), 1) ==
          static_cast<long>(written.size()));
    launches += static_cast<int>(r->size());
    ++groups;
  });
  for (Operation &k : kernels->getBody()->getOperations()) {
    (void)k;
    ++functions;
  }
  // Identical groups (init, train_step and eval) share kernels.
  CHECK(functions <= launches);
  std::string ptx, err;
  bool ok = compileMLIRToPTX(tgtest::printModule(*kernels), t, ptx, err);
  INFO(err);
  REQUIRE(ok);
  return ptx;
}

void assemble(const std::string &ptx, Target t) {
  tgtest::checkPtxAssembles(ptx, t);
}

/// The example models (small sizes) whose elementwise and optimizer groups
/// the tests compile; `bertPrecision` is the tiny BERT's.
struct ExampleCase {
  const char *model, *defines, *precision;
};
std::vector<ExampleCase> exampleCases(const char *bertPrecision) {
  const char *gpt1 = "-D layers=1 -D d_model=32 -D heads=2 -D seq=16 "
                     "-D vocab=64 -D batch=2 -D accumulate=1";
  return {{"mlp.tg", "-D batch=8 -D hidden=32", "fp32"},
          {"mlp.tg", "-D batch=8 -D hidden=32", "bf16"},
          {"gpt.tg",
           "-D layers=12 -D d_model=32 -D heads=2 -D seq=16 -D vocab=64 "
           "-D batch=2 -D accumulate=1",
           "fp32"},
          {"gpt.tg", gpt1, "fp32"},
          {"gpt.tg", gpt1, "bf16"},
          {"cnn.tg", "-D batch=4 -D c1=2 -D c2=4", "fp32"},
          {"bert_large.tg",
           "-D vocab=64 -D positions=16 -D d_model=32 -D layers=1 -D heads=2 "
           "-D ff=64 -D batch=2 -D seq=8",
           bertPrecision}};
}

} // namespace

TEST_CASE("elementwise and optimizer kernels of the examples assemble",
          "[nvptx][simt]") {
  for (const ExampleCase &k : exampleCases("bf16")) {
    INFO(k.model << " " << k.precision);
    std::string ir = plannedIR(k.model, k.defines, k.precision);
    REQUIRE(!ir.empty());
    for (Target t : {Target::SM80, Target::SM90a}) {
      tgtest::SimtContext c;
      int groups = 0, launches = 0;
      std::string ptx = lowerAll(c, ir, t, groups, launches);
      CHECK(groups > 0);
      // A 12-layer GPT's optimizer group reads and writes over 544 buffers,
      // PTX's parameter limit: it is split into launches.
      if (std::string(k.defines).find("layers=12") != std::string::npos)
        CHECK(launches > groups);
      // The optimizer's parameter-sized domains use 16-byte accesses.
      CHECK(ptx.find(".v4.b32") != std::string::npos);
      assemble(ptx, t);
    }
  }
}

TEST_CASE("an in-place result read at other elements is refused",
          "[nvptx][simt]") {
  tgtest::SimtContext c;
  // The planner never asks for this: result 0 in place of operand 1, a row
  // vector every row of the result reads.
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(R"mlir(
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x8xf32>) {
  %0:2 = tg.fused <elementwise> ins(%a, %b : tensor<4x8xf32>, tensor<8xf32>) attributes {tg.alias_args = array<i64: -1, 1>} {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<8xf32>):
    %1 = tg.add %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %2 = tg.neg %y : tensor<8xf32>
    tg.yield %1, %2 : tensor<4x8xf32>, tensor<8xf32>
  } -> tensor<4x8xf32>, tensor<8xf32>
  %3 = tg.add %a, %c {tg.alias_arg = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}
)mlir",
                                                        &c.ctx);
  REQUIRE(m);
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  auto f = m->lookupSymbol<func::FuncOp>("f");
  auto it = f.getBody().front().begin();
  CHECK(failed(lowerOpToKernels(&*it, Target::SM80, *kernels)));
  CHECK_THAT(c.diags, Catch::Contains("shares the buffer of operand #1"));
  CHECK(kernels->getBody()->empty());
  // Elementwise in place at its own elements is what the planner does.
  CHECK(succeeded(lowerOpToKernels(&*std::next(it), Target::SM80, *kernels)));
}

TEST_CASE("the examples' elementwise and optimizer groups match the "
          "reference evaluator on the emulator",
          "[nvptx][simt][emulator]") {
  // Chains of f32 ops round where the reference rounds (each op's result
  // type), so they differ only by the libm-free functions' few ulp, grown
  // along the chain: tolerances are 4x the single op's (EmuHarness.cpp).
  for (const ExampleCase &k : exampleCases("fp32")) {
    std::string ir = plannedIR(k.model, k.defines, k.precision);
    REQUIRE(!ir.empty());
    tgtest::SimtContext c;
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, &c.ctx);
    REQUIRE(m);
    auto step = m->lookupSymbol<func::FuncOp>("train_step");
    REQUIRE(step);
    int checked = 0;
    uint64_t stream = 0;
    step.walk([&](Operation *op) {
      if (op->getParentOfType<mlir::tg::FusedOp>() || !isElementwiseKernelOp(op))
        return;
      std::string text;
      llvm::raw_string_ostream os(text);
      op->print(os, OpPrintingFlags().skipRegions());
      INFO(k.model << " " << k.precision << ": " << text);
      std::vector<tgtest::Tensor> in;
      for (Value v : op->getOperands()) {
        auto type = cast<RankedTensorType>(v.getType());
        tgtest::DType d = *mlir::tg::ref::dtypeOf(type.getElementType());
        // Nonnegative floats (second moments), small step counts.
        bool integer = d == tgtest::DType::I64 || d == tgtest::DType::I32;
        in.push_back(tgtest::Tensor::random(type.getShape(), d, 7, stream++,
                                            integer ? 0 : 0.01,
                                            integer ? 20 : 1));
      }
      OwningOpRef<ModuleOp> alone = tgtest::standaloneFunction(op);
      auto want =
          mlir::tg::ref::evaluate(alone->lookupSymbol<func::FuncOp>("f"), in);
      REQUIRE(succeeded(want));
      std::vector<tgtest::Tensor> got;
      std::string err;
      bool ran = tgtest::runOnEmulator(op, in, got, err);
      INFO(err);
      REQUIRE(ran);
      REQUIRE(got.size() == want->size());
      for (size_t r = 0; r < got.size(); ++r) {
        INFO("result #" << r);
        auto [rtol, atol] = tgtest::tolerance((*want)[r].dtype);
        CHECK(tgtest::worstError(got[r], (*want)[r], 4 * rtol, 4 * atol) <= 1);
      }
      ++checked;
    });
    CHECK(checked > 0);
  }
}

TEST_CASE("a tensor of 2^31 elements or more is indexed in 64 bits",
          "[nvptx][simt]") {
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(R"mlir(
func.func @f(%a: tensor<65536x32768xf32>, %b: tensor<32768xf32>) {
  %0 = tg.add %a, %b : tensor<65536x32768xf32>, tensor<32768xf32> -> tensor<65536x32768xf32>
  return
}
)mlir",
                                                        &c.ctx);
  REQUIRE(m);
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  Operation *op = &m->lookupSymbol<func::FuncOp>("f").getBody().front().front();
  FailureOr<std::vector<KernelLaunch>> r =
      lowerOpToKernels(op, Target::SM80, *kernels);
  REQUIRE(succeeded(r));
  CHECK(r->front().grid[0] == 4096); // the cap: the rest is the grid stride
  std::string ptx, err;
  bool ok = compileMLIRToPTX(tgtest::printModule(*kernels), Target::SM80, ptx, err);
  INFO(err);
  REQUIRE(ok);
  // 2^29 units of 4: the loop counts in 64 bits (an i32 would wrap).
  bool wide = false;
  for (const char *cmp : {"setp.lt.s64", "setp.lt.u64", "setp.ge.s64",
                          "setp.ge.u64", "setp.gt.s64", "setp.gt.u64"})
    wide = wide || ptx.find(cmp) != std::string::npos;
  CHECK(wide);
  CHECK(ptx.find("ld.global.v4.b32") != std::string::npos);
  assemble(ptx, Target::SM80);
}

TEST_CASE("an empty result gets a kernel that writes nothing",
          "[nvptx][simt][emulator]") {
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(R"mlir(
func.func @f(%a: tensor<0x8xf32>, %b: tensor<8xf32>) {
  %0:2 = tg.fused <elementwise> ins(%a, %b : tensor<0x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<0x8xf32>, %y: tensor<8xf32>):
    %1 = tg.add %x, %y : tensor<0x8xf32>, tensor<8xf32> -> tensor<0x8xf32>
    %2 = tg.exp %y : tensor<8xf32>
    tg.yield %1, %2 : tensor<0x8xf32>, tensor<8xf32>
  } -> tensor<0x8xf32>, tensor<8xf32>
  return
}
)mlir",
                                                        &c.ctx);
  REQUIRE(m);
  Operation *op = &m->lookupSymbol<func::FuncOp>("f").getBody().front().front();
  std::vector<tgtest::Tensor> in = {
      tgtest::Tensor::filled({0, 8}, tgtest::DType::F32, 0),
      tgtest::Tensor::random({8}, tgtest::DType::F32, 3)};
  std::vector<tgtest::Tensor> got;
  std::string err;
  bool ran = tgtest::runOnEmulator(op, in, got, err);
  INFO(err);
  REQUIRE(ran);
  REQUIRE(got.size() == 2);
  CHECK(got[0].data.empty());
  for (int i = 0; i < 8; ++i)
    CHECK(got[1].data[i] == Approx(std::exp(in[1].data[i])).epsilon(1e-6));
}

TEST_CASE("a result placed in an operand another result reads is stored "
          "after that read",
          "[nvptx][simt][emulator]") {
  // Result 0 (exp of %a) lives in %b's buffer, which result 1 reads: in
  // result order result 0 would be stored first and result 1 would negate
  // exp(a). The plan orders the clusters, and names the kernel apart.
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(R"mlir(
func.func @f(%a: tensor<64xf32>, %b: tensor<64xf32>) {
  %0:2 = tg.fused <elementwise> ins(%a, %b : tensor<64xf32>, tensor<64xf32>) attributes {tg.alias_args = array<i64: 1, -1>} {
  ^bb0(%x: tensor<64xf32>, %y: tensor<64xf32>):
    %1 = tg.exp %x : tensor<64xf32>
    %2 = tg.neg %y : tensor<64xf32>
    tg.yield %1, %2 : tensor<64xf32>, tensor<64xf32>
  } -> tensor<64xf32>, tensor<64xf32>
  return
}
)mlir",
                                                        &c.ctx);
  REQUIRE(m);
  Operation *op = &m->lookupSymbol<func::FuncOp>("f").getBody().front().front();
  std::vector<tgtest::Tensor> in = {
      tgtest::Tensor::random({64}, tgtest::DType::F32, 5, 0),
      tgtest::Tensor::random({64}, tgtest::DType::F32, 5, 1)};
  std::vector<tgtest::Tensor> got;
  std::string err;
  bool ran = tgtest::runOnEmulator(op, in, got, err);
  INFO(err);
  REQUIRE(ran);
  for (int i = 0; i < 64; ++i) {
    CHECK(got[1].data[i] == -in[1].data[i]);
    CHECK(got[0].data[i] == Approx(std::exp(in[0].data[i])).epsilon(1e-6));
  }
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  FailureOr<std::vector<KernelLaunch>> r =
      lowerOpToKernels(op, Target::SM80, *kernels);
  REQUIRE(succeeded(r));
  CHECK(r->front().symbol.find("_o") != std::string::npos);
}
