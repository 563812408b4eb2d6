//===- SimtTestUtil.h - shared pieces of the SIMT generator tests -*- C++ -*-===//
//
// The context the SIMT generator tests build tg ops and kernels in, the
// cases they share, and the assembly check every kernel module must pass: sm_80/sm_90a PTX without
// calls, assembled by ptxas with no spills, no local memory and no
// performance warnings (SKIP with a warning without ptxas).
//
//===----------------------------------------------------------------------===//
#ifndef TG_TEST_NVPTX_SIMTTESTUTIL_H
#define TG_TEST_NVPTX_SIMTTESTUTIL_H

#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/Toolchain.h"
#include "codegen/registry/InitAll.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

#include <string>

namespace tgtest {

/// A context with TGC's dialects and the kernels' dialects, collecting
/// diagnostics in `diags`.
struct SimtContext {
  mlir::MLIRContext ctx;
  std::string diags;
  SimtContext() {
    mlir::DialectRegistry registry;
    mlir::tg::registerAllDialects(registry);
    registry.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect,
                    mlir::scf::SCFDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    ctx.getDiagEngine().registerHandler(
        [this](mlir::Diagnostic &d) { diags += d.str() + "\n"; });
  }
};

// The cases of the SIMT generator tests: functions @f whose ops are lowered
// one by one (SimtKernelsTest assembles them, SimtNumericsTest runs them
// against the reference); @f returns every op's results in order.

/// Every GEMM form on ragged sizes (no dimension a tile multiple, K not a
/// multiple of 16), batched with a broadcast 2-D side and a broadcast batch
/// dimension, and a gemm group with bias, scale, relu, residual and a bf16
/// second result.
inline constexpr const char *kSimtGemmCases = R"mlir(
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
)mlir";

/// Every movement op of the examples (GPT's head split and merge, the QKV
/// slices and concat, embeddings with i64 and i32 indices, the embedding
/// gradient) plus a strided slice, broadcast_to, and transposes that move
/// the innermost dimension (the shared-memory tile: i1, f32 with a batch
/// dimension, bf16 over several ragged tiles).
inline constexpr const char *kSimtMovementCases = R"mlir(
func.func @f(%x: tensor<2x6x3x4xbf16>, %q: tensor<2x6x9xf32>, %table: tensor<50x8xf32>,
             %ids: tensor<2x6xi64>, %g: tensor<2x6x8xf32>, %row: tensor<1x8xf32>,
             %ids32: tensor<5xi32>, %mask: tensor<3x4xi1>, %big: tensor<37x45xbf16>)
    -> (tensor<2x3x6x4xbf16>, tensor<2x6x12xbf16>, tensor<2x6x3xf32>, tensor<2x3x3xf32>,
        tensor<2x6x15xf32>, tensor<2x6x8xf32>, tensor<50x8xf32>, tensor<4x3x8xf32>,
        tensor<5x8xf32>, tensor<4x3xi1>, tensor<9x2x6xf32>, tensor<45x37xbf16>) {
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
  %10 = tg.transpose %q perm = [2, 0, 1] : tensor<2x6x9xf32> -> tensor<9x2x6xf32>
  %11 = tg.transpose %big perm = [1, 0] : tensor<37x45xbf16> -> tensor<45x37xbf16>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<2x3x6x4xbf16>, tensor<2x6x12xbf16>, tensor<2x6x3xf32>, tensor<2x3x3xf32>, tensor<2x6x15xf32>, tensor<2x6x8xf32>, tensor<50x8xf32>, tensor<4x3x8xf32>, tensor<5x8xf32>, tensor<4x3xi1>, tensor<9x2x6xf32>, tensor<45x37xbf16>
}
)mlir";

/// init's initialisers: normal and uniform draws, f32 and bf16.
inline constexpr const char *kSimtRandomCases = R"mlir(
func.func @f(%seed: tensor<i64>) -> (tensor<50x8xf32>, tensor<9x7xbf16>, tensor<5x3xf32>) {
  %0 = tg.random normal %seed {a = 0.000000e+00 : f64, b = 2.000000e-02 : f64, stream = 7 : i64} : tensor<i64> -> tensor<50x8xf32>
  %1 = tg.random uniform %seed {a = -1.000000e-01 : f64, b = 1.000000e-01 : f64, stream = 8 : i64} : tensor<i64> -> tensor<9x7xbf16>
  %2 = tg.random normal %seed {a = 1.000000e+00 : f64, b = 1.000000e+00 : f64, stream = 3 : i64} : tensor<i64> -> tensor<5x3xf32>
  return %0, %1, %2 : tensor<50x8xf32>, tensor<9x7xbf16>, tensor<5x3xf32>
}
)mlir";

/// Strided, padded, dilated and grouped convolutions with both gradients;
/// overlapping pooling windows, so max_pool2d_grad sums several windows.
inline constexpr const char *kSimtConvPoolCases = R"mlir(
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
)mlir";

/// Splat constants of every stored width.
inline constexpr const char *kSimtConstantCases = R"mlir(
func.func @f() -> (tensor<3x5xbf16>, tensor<4xi64>, tensor<3xi1>, tensor<7xf32>) {
  %0 = tg.constant dense<1.5> : tensor<3x5xbf16>
  %1 = tg.constant dense<-3> : tensor<4xi64>
  %2 = tg.constant dense<true> : tensor<3xi1>
  %3 = tg.constant dense<0.0> : tensor<7xf32>
  return %0, %1, %2, %3 : tensor<3x5xbf16>, tensor<4xi64>, tensor<3xi1>, tensor<7xf32>
}
)mlir";

/// Assembles `ptx` for `t` with ptxas -v: it assembles, with no spills, no
/// stack frame and no performance warnings (issue 15's rule for every
/// kernel TGC emits). Skipped loudly without the CUDA toolkit.
inline void checkPtxAssembles(const std::string &ptx, tg::nvptx::Target t) {
  if (!tg::nvptx::haveCudaTool("ptxas")) {
    WARN("SKIPPED: no ptxas at " << tg::nvptx::cudaHome()
                                  << "/bin; PTX not assembled");
    return;
  }
  tg::nvptx::PtxasReport r = tg::nvptx::assemblePtx(ptx, toString(t));
  INFO(r.log);
  REQUIRE(r.ok);
  CHECK(r.spillStores == 0);
  CHECK(r.spillLoads == 0);
  CHECK(r.stackFrame == 0);
  CHECK(r.perfWarnings.empty());
}

/// Compiles `kernels` for `t` and assembles it with ptxas -v.
inline void checkAssembles(mlir::ModuleOp kernels, tg::nvptx::Target t) {
  std::string text, ptx, err;
  llvm::raw_string_ostream os(text);
  kernels.print(os);
  bool ok = tg::nvptx::compileMLIRToPTX(text, t, ptx, err);
  INFO(err);
  REQUIRE(ok);
  CHECK(ptx.find("call.uni") == std::string::npos);
  checkPtxAssembles(ptx, t);
}

} // namespace tgtest

#endif // TG_TEST_NVPTX_SIMTTESTUTIL_H
