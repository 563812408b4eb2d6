//===- CpuTestUtil.h - JIT against the reference evaluator ------*- C++ -*-===//
//
// Parses a module, fills the arguments of @f with random values, runs @f on
// the reference evaluator and through the CPU JIT, and compares every
// result with a tolerance chosen by element type.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TEST_CPU_CPUTESTUTIL_H
#define TGC_TEST_CPU_CPUTESTUTIL_H

#include "codegen/cpu/Jit.h"
#include "test/reference/EvalTestUtil.h"

#include <cmath>
#include <map>

namespace cputest {
using mlir::tg::cpu::HostTensor;
using mlir::tg::cpu::HostType;
using mlir::tg::ref::DType;
using mlir::tg::ref::Tensor;

inline HostType hostType(DType d) {
  switch (d) {
  case DType::F32: return HostType::F32;
  case DType::F64: return HostType::F64;
  case DType::F16: return HostType::F16;
  case DType::BF16: return HostType::BF16;
  case DType::I32: return HostType::I32;
  case DType::I64: return HostType::I64;
  case DType::I1: return HostType::I1;
  case DType::Index: break;
  }
  FAIL("no host type for index");
  return HostType::I64;
}

inline HostTensor toHost(const Tensor &t) {
  HostTensor h = HostTensor::zeros({t.shape.begin(), t.shape.end()}, hostType(t.dtype));
  for (int64_t i = 0; i < t.numElements(); ++i)
    h.set(i, t.data[i]);
  return h;
}

/// Relative and absolute tolerance for comparing JIT results of `dtype`
/// against the reference (which computes in f64 and rounds once per op).
inline double tolerance(DType dtype) {
  switch (dtype) {
  case DType::F32: return 2e-5;
  case DType::F16: return 2e-3;
  case DType::BF16: return 2e-2;
  default: return 0;
  }
}

/// The value range of one argument's random fill.
struct Range {
  double lo = -2, hi = 2;
};

/// The evaluator tests' harness (context, diagnostics, parse) with the CPU
/// dialects, plus random arguments, the JIT and comparisons.
struct Harness : tgtest::Harness {
  Harness() : tgtest::Harness(mlir::tg::cpu::registerCpuDialects) {}

  /// Random arguments for @name: argument i is filled uniformly from
  /// ranges[i] (default [-2, 2); integers from [ceil(lo), ceil(hi))).
  std::vector<Tensor> randomArgs(std::map<unsigned, Range> ranges = {},
                                 uint64_t seed = 1, llvm::StringRef name = "f") {
    auto fn = module->lookupSymbol<mlir::func::FuncOp>(name);
    REQUIRE(fn);
    std::vector<Tensor> args;
    for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
      auto type = llvm::cast<mlir::RankedTensorType>(t);
      auto dtype = mlir::tg::ref::dtypeOf(type.getElementType());
      REQUIRE(mlir::succeeded(dtype));
      Range r = ranges.count(i) ? ranges[i] : Range{};
      args.push_back(Tensor::random(type.getShape(), *dtype, seed, i, r.lo, r.hi));
    }
    return args;
  }

  std::vector<Tensor> reference(llvm::ArrayRef<Tensor> args,
                                llvm::StringRef name = "f") {
    auto fn = module->lookupSymbol<mlir::func::FuncOp>(name);
    auto results = mlir::tg::ref::evaluate(fn, args);
    INFO(diagnostics);
    REQUIRE(mlir::succeeded(results));
    return std::vector<Tensor>(results->begin(), results->end());
  }

  std::unique_ptr<mlir::tg::cpu::JitModule>
  compile(const mlir::tg::cpu::CpuPipelineOptions &options = {}) {
    auto jit = mlir::tg::cpu::JitModule::compile(*module, options);
    INFO(diagnostics);
    REQUIRE(mlir::succeeded(jit));
    return std::move(*jit);
  }

  std::vector<HostTensor> jitRun(mlir::tg::cpu::JitModule &jit,
                                 llvm::ArrayRef<Tensor> args,
                                 llvm::StringRef name = "f") {
    std::vector<HostTensor> host;
    for (const Tensor &a : args)
      host.push_back(toHost(a));
    std::string error;
    auto results = jit.run(name, host, &error);
    INFO(error);
    REQUIRE(mlir::succeeded(results));
    return *results;
  }

  /// Parses `ir`, and checks @f on random arguments: JIT == reference.
  void check(llvm::StringRef ir, std::map<unsigned, Range> ranges = {},
             double tolScale = 1,
             const mlir::tg::cpu::CpuPipelineOptions &options = {}) {
    parse(ir);
    std::vector<Tensor> args = randomArgs(ranges);
    std::vector<Tensor> want = reference(args);
    auto jit = compile(options);
    std::vector<HostTensor> got = jitRun(*jit, args);
    compare(got, want, tolScale);
  }

  static void compare(llvm::ArrayRef<HostTensor> got,
                      llvm::ArrayRef<Tensor> want, double tolScale = 1) {
    REQUIRE(got.size() == want.size());
    for (size_t r = 0; r < want.size(); ++r) {
      REQUIRE(llvm::ArrayRef<int64_t>(got[r].shape) ==
              llvm::ArrayRef<int64_t>(want[r].shape));
      double tol = tolerance(want[r].dtype) * tolScale;
      int64_t bad = 0;
      for (int64_t i = 0; i < want[r].numElements() && bad < 5; ++i) {
        double g = got[r].get(i), w = want[r].data[i];
        bool ok = std::isnan(w) ? std::isnan(g)
                  : std::isinf(w) ? g == w
                                  : std::fabs(g - w) <= tol * (1 + std::fabs(w));
        if (!ok) {
          ++bad;
          UNSCOPED_INFO("result " << r << " element " << i << ": jit " << g
                                  << ", reference " << w);
        }
      }
      CHECK(bad == 0);
    }
  }
};

/// `func.func @f(<args>) -> <result> { <body> return %r : <result> }`.
inline std::string fn(const std::string &args, const std::string &result,
                      const std::string &body) {
  return "func.func @f(" + args + ") -> " + result + " {\n" + body +
         "\n  return %r : " + result + "\n}";
}

} // namespace cputest

#endif // TGC_TEST_CPU_CPUTESTUTIL_H
