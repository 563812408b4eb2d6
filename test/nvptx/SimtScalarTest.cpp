//===- SimtScalarTest.cpp - scalar code of every elementwise op -*- C++ -*-===//
//
// Every elementwise tg op (as tg-fuse puts them in groups) becomes a
// one-element-per-thread kernel built with SimtScalar: the kernel module
// verifies, lowers to PTX for sm_80 and sm_90a, and ptxas assembles it with
// no spills or local memory. Without ptxas the assembly step SKIPs with a
// warning.
//
//===----------------------------------------------------------------------===//
#include "EmuHarness.h"
#include "SimtTestUtil.h"

#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/SimtScalar.h"
#include "codegen/nvptx/Toolchain.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace ::tg::nvptx;
using namespace ::tg::nvptx::detail;

namespace {

/// Every elementwise op of the .td, on 64-element operands (8x8 where the
/// op needs two dimensions), in f32, bf16 and the integer types.
constexpr const char *kOps = R"mlir(
func.func @f(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %m: tensor<8x8xi1>,
             %seed: tensor<i64>, %idx: tensor<8xi64>, %h: tensor<8x8xbf16>,
             %g: tensor<8x8xbf16>, %i: tensor<8x8xi32>, %j: tensor<8x8xi64>,
             %k: tensor<8x8xf16>, %s: tensor<f32>) {
  %0 = tg.add %a, %b : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %1 = tg.sub %a, %s : tensor<8x8xf32>, tensor<f32> -> tensor<8x8xf32>
  %2 = tg.mul %h, %g : tensor<8x8xbf16>, tensor<8x8xbf16> -> tensor<8x8xbf16>
  %3 = tg.div %a, %b : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %4 = tg.pow %a, %b : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %5 = tg.maximum %a, %b : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %6 = tg.minimum %i, %i : tensor<8x8xi32>, tensor<8x8xi32> -> tensor<8x8xi32>
  %7 = tg.cmp lt %a, %b : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xi1>
  %8 = tg.select %m, %a, %b : tensor<8x8xi1>, tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %9 = tg.neg %j : tensor<8x8xi64>
  %10 = tg.abs %h : tensor<8x8xbf16>
  %11 = tg.exp %a : tensor<8x8xf32>
  %12 = tg.log %k : tensor<8x8xf16>
  %13 = tg.sqrt %a : tensor<8x8xf32>
  %14 = tg.rsqrt %a : tensor<8x8xf32>
  %15 = tg.tanh %a : tensor<8x8xf32>
  %16 = tg.sigmoid %h : tensor<8x8xbf16>
  %17 = tg.relu %a : tensor<8x8xf32>
  %18 = tg.silu %a : tensor<8x8xf32>
  %19 = tg.gelu %a : tensor<8x8xf32>
  %20 = tg.gelu %h approximate = tanh : tensor<8x8xbf16>
  %21 = tg.erf %a : tensor<8x8xf32>
  %22 = tg.cos %a : tensor<8x8xf32>
  %23 = tg.sin %a : tensor<8x8xf32>
  %24 = tg.cast %a : tensor<8x8xf32> to tensor<8x8xbf16>
  %25 = tg.cast %a : tensor<8x8xf32> to tensor<8x8xi32>
  %26 = tg.cast %m : tensor<8x8xi1> to tensor<8x8xf32>
  %27 = tg.cast %j : tensor<8x8xi64> to tensor<8x8xi1>
  %28 = tg.broadcast_to %s : tensor<f32> to tensor<8x8xf32>
  %29 = tg.causal_mask %a : tensor<8x8xf32>
  %30 = tg.dropout %h, %seed {p = 1.0e-01 : f64, stream = 3 : i64} : tensor<8x8xbf16>, tensor<i64>
  %31 = tg.one_hot %idx : tensor<8xi64> -> tensor<8x8xf32>
  %32 = tg.constant dense<5.000000e-01> : tensor<8x8xbf16>
  %33 = tg.div %i, %i : tensor<8x8xi32>, tensor<8x8xi32> -> tensor<8x8xi32>
  %34 = tg.relu %j : tensor<8x8xi64>
  %35 = tg.cmp ne %j, %j : tensor<8x8xi64>, tensor<8x8xi64> -> tensor<8x8xi1>
  return
}
)mlir";


int64_t numElements(Value v) {
  return cast<ShapedType>(v.getType()).getNumElements();
}

/// Appends to `module` a kernel computing `op` one element per thread:
/// parameters are the operands' buffers then the result's; operand element
/// `i` is read at i (same size), 0 (rank 0) or i / classes (one_hot).
LogicalResult buildOpKernel(ModuleOp module, Operation *op, StringRef name) {
  MLIRContext *ctx = module.getContext();
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  Location loc = op->getLoc();
  Type ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
  SmallVector<Type> args(op->getNumOperands() + 1, ptr1);
  auto fn = LLVM::LLVMFuncOp::create(
      mb, loc, name,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), args));
  fn->setAttr("nvvm.kernel", mb.getUnitAttr());
  Block *entry = fn.addEntryBlock(mb);
  KernelBuilder w(entry, loc);
  Value tid = NVVM::ThreadIdXOp::create(w.b, loc, w.i32);
  Value bid = NVVM::BlockIdXOp::create(w.b, loc, w.i32);
  Value i = w.add(w.muli(bid, 64), tid);
  int64_t n = numElements(op->getResult(0));
  w.openIf(w.ult(i, w.i32c(n)));
  SmallVector<Value> vals;
  for (auto [k, operand] : llvm::enumerate(op->getOperands())) {
    Value at = i;
    if (numElements(operand) == 1)
      at = w.i32c(0);
    else if (numElements(operand) != n)
      at = w.udiv(i, w.i32c(n / numElements(operand)));
    vals.push_back(loadElement(w, entry->getArgument(k), at,
                               cast<ShapedType>(operand.getType()).getElementType()));
  }
  ElementPosition pos{i};
  FailureOr<Value> r = emitScalarOp(w, op, vals, &pos);
  if (failed(r))
    return failure();
  storeElement(w, entry->getArgument(op->getNumOperands()), i,
               cast<ShapedType>(op->getResult(0).getType()).getElementType(), *r);
  w.b.setInsertionPointToEnd(entry);
  LLVM::ReturnOp::create(w.b, loc, ValueRange{});
  return success();
}

/// The kernel module for every op of @f in `ir` (kernel k_<index>).
/// `keep` holds the parsed source (destroyed before the context).
OwningOpRef<ModuleOp> buildOpKernels(tgtest::SimtContext &c,
                                     OwningOpRef<ModuleOp> &keep, StringRef ir,
                                     std::vector<Operation *> *ops = nullptr) {
  keep = parseSourceString<ModuleOp>(ir, &c.ctx);
  INFO(c.diags);
  REQUIRE(keep);
  auto f = keep->lookupSymbol<func::FuncOp>("f");
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  int index = 0;
  for (Operation &op : f.getBody().front().without_terminator()) {
    INFO("op " << op.getName().getStringRef().str());
    REQUIRE(succeeded(
        buildOpKernel(*kernels, &op, "k_" + std::to_string(index++))));
    if (ops)
      ops->push_back(&op);
  }
  return kernels;
}


} // namespace

TEST_CASE("every elementwise op has scalar code that assembles",
          "[nvptx][simt]") {
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> source;
  OwningOpRef<ModuleOp> kernels = buildOpKernels(c, source, kOps);
  std::string text = tgtest::printModule(*kernels);
  for (Target t : {Target::SM80, Target::SM90a}) {
    std::string ptx, err;
    bool ok = compileMLIRToPTX(text, t, ptx, err);
    INFO(err);
    REQUIRE(ok);
    // The libm-free math: no call survives into PTX.
    CHECK(ptx.find("call.uni") == std::string::npos);
    CHECK(ptx.find("ex2.approx") != std::string::npos);
    tgtest::checkPtxAssembles(ptx, t);
  }
}

TEST_CASE("scalar code refuses what it cannot compute", "[nvptx][simt]") {
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(R"mlir(
func.func @f(%a: tensor<4xf64>, %x: tensor<4x4xf32>, %y: tensor<4x4xf32>) {
  %0 = tg.exp %a : tensor<4xf64>
  %1 = tg.matmul %x, %y : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %2 = tg.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return
}
)mlir",
                                                        &c.ctx);
  REQUIRE(m);
  auto f = m->lookupSymbol<func::FuncOp>("f");
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  int index = 0;
  for (Operation &op : f.getBody().front().without_terminator()) {
    c.diags.clear();
    CHECK(failed(buildOpKernel(*kernels, &op, "k" + std::to_string(index++))));
    CHECK(!c.diags.empty());
  }
  auto it = f.getBody().front().begin();
  CHECK(isScalarOp(&*it));          // exp: an op it knows, in a type it refuses
  CHECK(!isScalarOp(&*std::next(it))); // matmul: no scalar form
}

namespace {

/// Random operands for @f of kOps: floats in [-3, 3), bf16/f16 logs'
/// inputs positive, integer divisors nonzero, one_hot indices in range.
std::vector<tgtest::Tensor> kOpsInputs(func::FuncOp f) {
  using tgtest::DType;
  using tgtest::Tensor;
  std::vector<Tensor> args;
  uint64_t stream = 0;
  for (BlockArgument a : f.getArguments()) {
    auto type = cast<RankedTensorType>(a.getType());
    DType d = *mlir::tg::ref::dtypeOf(type.getElementType());
    double lo = -3, hi = 3;
    if (d == DType::F16)
      lo = 0.05; // tg.log
    if (d == DType::I32)
      lo = 1, hi = 100; // tg.div
    if (d == DType::I64)
      lo = type.getRank() == 1 ? 0 : -100, hi = type.getRank() == 1 ? 8 : 100;
    if (type.getRank() == 0 && d == DType::I64)
      lo = 0, hi = 1 << 30; // the dropout seed
    args.push_back(Tensor::random(type.getShape(), d, 42, stream++, lo, hi));
  }
  return args;
}

} // namespace

TEST_CASE("scalar code matches the reference evaluator on the emulator",
          "[nvptx][simt][emulator]") {
  tgtest::SimtContext c;
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(kOps, &c.ctx);
  REQUIRE(m);
  auto f = m->lookupSymbol<func::FuncOp>("f");
  std::vector<tgtest::Tensor> args = kOpsInputs(f);
  for (Operation &op : f.getBody().front().without_terminator()) {
    INFO("op " << op.getName().getStringRef().str());
    std::vector<tgtest::Tensor> in;
    for (Value v : op.getOperands())
      in.push_back(args[cast<BlockArgument>(v).getArgNumber()]);
    OwningOpRef<ModuleOp> alone = tgtest::standaloneFunction(&op);
    auto want = mlir::tg::ref::evaluate(alone->lookupSymbol<func::FuncOp>("f"), in);
    INFO(c.diags);
    REQUIRE(succeeded(want));
    std::vector<tgtest::Tensor> got;
    std::string err;
    bool ran = tgtest::runOnEmulator(&op, in, got, err);
    INFO(err);
    REQUIRE(ran);
    auto [rtol, atol] = tgtest::tolerance(want->front().dtype);
    CHECK(tgtest::worstError(got.front(), want->front(), rtol, atol) <= 1);
  }
}

TEST_CASE("the libm-free math is within its stated error",
          "[nvptx][simt][emulator]") {
  // The emulator computes ex2/lg2/sin/cos.approx with libm, so this
  // measures the formulas of SimtScalar.h in f32, not the hardware's
  // approximate instructions (2 ulp more for ex2, documented there).
  struct Fn {
    const char *op;
    double lo, hi, rtol, atol;
    bool logScale;
  };
  for (Fn fn : {Fn{"erf", -6, 6, 0, 3e-7, false},
                Fn{"tanh", -12, 12, 5e-7, 1e-30, false},
                Fn{"exp", -87, 88, 5e-7, 1e-37, false},
                Fn{"log", -99, 99, 5e-7, 1e-30, true},
                Fn{"log", 0.9, 1.1, 5e-7, 1e-30, false},
                Fn{"sin", -100, 100, 0, 2e-6, false},
                Fn{"cos", -100, 100, 0, 2e-6, false}}) {
    INFO(fn.op << " on [" << fn.lo << ", " << fn.hi << ")");
    tgtest::SimtContext c;
    std::string ir = std::string("func.func @f(%x: tensor<4096xf32>) {\n  %0 = tg.") +
                     fn.op + " %x : tensor<4096xf32>\n  return\n}\n";
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, &c.ctx);
    REQUIRE(m);
    Operation *op = &m->lookupSymbol<func::FuncOp>("f").getBody().front().front();
    std::vector<double> xs;
    for (int i = 0; i < 4096; ++i) {
      double t = fn.lo + (fn.hi - fn.lo) * (i + 0.37) / 4096;
      xs.push_back(fn.logScale ? std::exp(t) : t);
    }
    tgtest::Tensor x = tgtest::Tensor::fromValues({4096}, tgtest::DType::F32, xs);
    OwningOpRef<ModuleOp> alone = tgtest::standaloneFunction(op);
    mlir::tg::ref::EvalOptions exact;
    exact.roundToDtype = false; // against float64, not f32-rounded
    auto want = mlir::tg::ref::evaluate(alone->lookupSymbol<func::FuncOp>("f"),
                                        {x}, exact);
    REQUIRE(succeeded(want));
    std::vector<tgtest::Tensor> got;
    std::string err;
    bool ran = tgtest::runOnEmulator(op, {x}, got, err);
    INFO(err);
    REQUIRE(ran);
    // The float64 result rounded to f32 is itself off by half an ulp.
    CHECK(tgtest::worstError(got.front(), want->front(), fn.rtol + 6e-8,
                             fn.atol) <= 1);
  }
}
