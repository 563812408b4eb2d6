//===- EvalTestUtil.h - reference test helpers ------------------*- C++ -*-===//
//
// Parses IR from a string into a context with every TGC dialect, evaluates
// one of its functions, and collects diagnostics for the error tests.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TEST_REFERENCE_EVALTESTUTIL_H
#define TGC_TEST_REFERENCE_EVALTESTUTIL_H

#include "codegen/reference/Evaluator.h"
#include "codegen/registry/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <cmath>

namespace tgtest {
using mlir::tg::ref::DType;
using mlir::tg::ref::Tensor;

/// A context with TGC's dialects whose diagnostics are collected.
struct Harness {
  mlir::MLIRContext ctx;
  std::string diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  /// `extra` registers more dialects and interfaces (a backend's).
  explicit Harness(void (*extra)(mlir::DialectRegistry &) = nullptr) {
    mlir::DialectRegistry registry;
    mlir::tg::registerAllDialects(registry);
    if (extra)
      extra(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    ctx.getDiagEngine().registerHandler(
        [this](mlir::Diagnostic &d) { diagnostics += d.str() + "\n"; });
  }

  /// Parses `ir` as the current module; fails the test if it does not parse.
  void parse(llvm::StringRef ir) {
    module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
    INFO(diagnostics);
    REQUIRE(module);
  }

  /// Evaluates @`name` of the current module.
  mlir::FailureOr<llvm::SmallVector<Tensor>> eval(llvm::ArrayRef<Tensor> args,
                                                  bool f64 = false,
                                                  llvm::StringRef name = "f") {
    auto fn = module->lookupSymbol<mlir::func::FuncOp>(name);
    REQUIRE(fn);
    mlir::tg::ref::EvalOptions opts;
    opts.roundToDtype = !f64;
    return mlir::tg::ref::evaluate(fn, args, opts);
  }

  /// Parses `ir` and evaluates @f, requiring success; returns result 0.
  Tensor run(llvm::StringRef ir, llvm::ArrayRef<Tensor> args,
             bool f64 = false) {
    parse(ir);
    auto results = eval(args, f64);
    INFO(diagnostics);
    REQUIRE(mlir::succeeded(results));
    return (*results)[0];
  }
};

/// One random tensor per (ranked tensor) type of `types`, drawn from `seed`
/// and the argument's index: the arguments of a random graph's @f.
inline llvm::SmallVector<Tensor> randomArgs(mlir::TypeRange types,
                                            DType dtype, uint64_t seed) {
  llvm::SmallVector<Tensor> args;
  for (auto [i, type] : llvm::enumerate(types))
    args.push_back(Tensor::random(
        mlir::cast<mlir::RankedTensorType>(type).getShape(), dtype, seed, i));
  return args;
}

inline Tensor t(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<double> values,
                DType dtype = DType::F32) {
  return Tensor::fromValues(shape, dtype, values);
}

/// Checks shape and values (relative/absolute tolerance `tol`; NaN == NaN).
inline void checkTensor(const Tensor &got, llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<double> want, double tol = 1e-6) {
  REQUIRE(llvm::ArrayRef<int64_t>(got.shape) == shape);
  REQUIRE(got.data.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got.data[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got.data[i]));
    else if (std::isinf(want[i]))
      CHECK(got.data[i] == want[i]);
    else
      CHECK(got.data[i] == Approx(want[i]).epsilon(tol).margin(tol));
  }
}
} // namespace tgtest

#endif // TGC_TEST_REFERENCE_EVALTESTUTIL_H
