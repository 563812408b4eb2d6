//===- SimtNumericsTest.cpp - fp32 GEMM and movement kernels, run -*- C++ -*-===//
//
// Runs the kernels of SimtGemm.cpp and SimtMovement.cpp on the PTX emulator
// (runtime/emulator) and compares every result with the reference
// evaluator: each op of a function is lowered with lowerOpToKernels, the
// module is compiled to sm_80 PTX, and the op's launches run on host
// buffers holding the reference's inputs in their stored formats.
// Movement ops must match exactly (they copy bits); products and random
// draws within the tolerance stated per case (f32 sums in another order,
// f32 Box-Muller against the reference's double).
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/KernelGen.h"
#include "codegen/reference/Evaluator.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGOps.h"
#include "runtime/emulator/Emulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace ::tg::nvptx;
namespace ref = mlir::tg::ref;

namespace {

struct Context {
  MLIRContext ctx;
  std::string diags;
  Context() {
    DialectRegistry registry;
    mlir::tg::registerAllDialects(registry);
    registry.insert<LLVM::LLVMDialect, NVVM::NVVMDialect, scf::SCFDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    ctx.getDiagEngine().registerHandler(
        [this](Diagnostic &d) { diags += d.str() + "\n"; });
  }
};

/// Bytes of one stored element of `t`.
size_t storedBytes(ref::DType t) {
  switch (t) {
  case ref::DType::F64:
  case ref::DType::I64:
    return 8;
  case ref::DType::F32:
  case ref::DType::I32:
    return 4;
  case ref::DType::F16:
  case ref::DType::BF16:
    return 2;
  default:
    return 1;
  }
}

/// `x` in the stored format of its element type.
std::vector<uint8_t> store(const ref::Tensor &x) {
  size_t eb = storedBytes(x.dtype);
  std::vector<uint8_t> out(std::max<size_t>(1, x.data.size() * eb));
  for (size_t i = 0; i < x.data.size(); ++i) {
    uint8_t *p = out.data() + i * eb;
    double v = x.data[i];
    switch (x.dtype) {
    case ref::DType::F32: {
      float f = float(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case ref::DType::BF16:
    case ref::DType::F16: {
      uint16_t h = toHalfBits(float(v), x.dtype == ref::DType::BF16
                                            ? ElemType::BF16
                                            : ElemType::F16);
      std::memcpy(p, &h, 2);
      break;
    }
    case ref::DType::I64: {
      int64_t i64 = int64_t(v);
      std::memcpy(p, &i64, 8);
      break;
    }
    case ref::DType::I32: {
      int32_t i32 = int32_t(v);
      std::memcpy(p, &i32, 4);
      break;
    }
    case ref::DType::F64:
      std::memcpy(p, &v, 8);
      break;
    default:
      *p = v != 0;
    }
  }
  return out;
}

/// Element i of a stored buffer of `t`, as a double.
double load(const std::vector<uint8_t> &buf, ref::DType t, size_t i) {
  const uint8_t *p = buf.data() + i * storedBytes(t);
  switch (t) {
  case ref::DType::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case ref::DType::BF16:
  case ref::DType::F16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fromHalfBits(h, t == ref::DType::BF16 ? ElemType::BF16
                                                 : ElemType::F16);
  }
  case ref::DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return double(v);
  }
  case ref::DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case ref::DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default:
    return *p;
  }
}

/// Evaluates @f (which returns the result of each of its ops in order) on
/// inputs from Philox (indices in [lo, hi)), runs every op's kernels on the
/// emulator and checks each result against the reference within
/// `tolerance(op index)` (absolute, relative to max(1, |ref|)).
void runAndCompare(StringRef ir, std::function<double(size_t)> tolerance,
                   double indexLo = 0, double indexHi = 8) {
  Context c;
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(ir, &c.ctx);
  INFO(c.diags);
  REQUIRE(m);
  auto f = m->lookupSymbol<func::FuncOp>("f");
  std::vector<ref::Tensor> args;
  for (auto [i, t] : llvm::enumerate(f.getArgumentTypes())) {
    auto rt = cast<RankedTensorType>(t);
    ref::DType d = *ref::dtypeOf(rt.getElementType());
    bool isIndex = d == ref::DType::I64 || d == ref::DType::I32;
    args.push_back(ref::Tensor::random(rt.getShape(), d, 42, i,
                                       isIndex ? indexLo : -1.0,
                                       isIndex ? indexHi : 1.0));
  }
  auto expected = ref::evaluate(f, args);
  INFO(c.diags);
  REQUIRE(succeeded(expected));

  OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&c.ctx));
  std::vector<Operation *> ops;
  std::vector<std::vector<KernelLaunch>> launches;
  for (Operation &op : f.getBody().front().without_terminator()) {
    auto l = lowerOpToKernels(&op, Target::SM80, *kernels);
    INFO("op " << op.getName().getStringRef().str() << ": " << c.diags);
    REQUIRE(succeeded(l));
    ops.push_back(&op);
    launches.push_back(*l);
  }
  std::string text, ptx, err;
  llvm::raw_string_ostream os(text);
  kernels->print(os);
  REQUIRE(compileMLIRToPTX(text, Target::SM80, ptx, err));
  std::unique_ptr<tgrt::emu::PtxModule> emu = tgrt::emu::PtxModule::parse(ptx, err);
  INFO(err);
  REQUIRE(emu);

  // Every value's buffer: arguments, then each op's results.
  std::vector<std::unique_ptr<std::vector<uint8_t>>> owned;
  llvm::DenseMap<Value, std::vector<uint8_t> *> bufOf;
  tgrt::emu::Memory mem;
  auto bufferFor = [&](Value v, std::vector<uint8_t> init) {
    owned.push_back(std::make_unique<std::vector<uint8_t>>(std::move(init)));
    bufOf[v] = owned.back().get();
    mem.add(owned.back()->data(), owned.back()->size());
  };
  for (auto [i, a] : llvm::enumerate(f.getArguments()))
    bufferFor(a, store(args[i]));
  size_t resultNo = 0;
  for (auto [k, op] : llvm::enumerate(ops)) {
    for (Value r : op->getResults()) {
      auto rt = cast<RankedTensorType>(r.getType());
      ref::Tensor zero = *ref::Tensor::zeros(rt);
      // Poison: a kernel that misses an element is caught.
      std::vector<uint8_t> init = store(zero);
      std::fill(init.begin(), init.end(), 0x7f);
      bufferFor(r, init);
    }
    for (const KernelLaunch &l : launches[k]) {
      std::vector<uint64_t> params;
      for (const KernelParam &p : l.params) {
        Value v = p.kind == KernelParam::Kind::Operand ? op->getOperand(p.index)
                                                       : op->getResult(p.index);
        params.push_back(uint64_t(uintptr_t(bufOf[v]->data())));
      }
      INFO("op " << k << " kernel " << l.symbol);
      bool ran = emu->launch(l.symbol, l.grid, l.block, l.dynamicSharedBytes,
                             params, mem, err);
      INFO(err);
      REQUIRE(ran);
    }
    if (launches[k].empty()) // a view: the result is the operand's buffer
      *bufOf[op->getResult(0)] = *bufOf[op->getOperand(0)];
    for (Value r : op->getResults()) {
      const ref::Tensor &want = (*expected)[resultNo++];
      const std::vector<uint8_t> &got = *bufOf[r];
      double tol = tolerance(k);
      INFO("op " << k << " (" << op->getName().getStringRef().str()
                 << ") result " << cast<OpResult>(r).getResultNumber());
      size_t bad = 0;
      for (size_t i = 0; i < want.data.size(); ++i) {
        double g = load(got, want.dtype, i), e = want.data[i];
        if (!(std::fabs(g - e) <= tol * std::max(1.0, std::fabs(e)))) {
          if (bad++ < 5)
            UNSCOPED_INFO("element " << i << ": got " << g << ", want " << e);
        }
      }
      CHECK(bad == 0);
    }
  }
  for (auto &b : owned)
    mem.remove(b->data());
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
