//===- GradCheck.cpp - finite-difference gradient checks --------*- C++ -*-===//
//
// See GradCheck.h.
//
//===----------------------------------------------------------------------===//

#include "test/autodiff/GradCheck.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace tgtest {

llvm::SmallVector<Tensor> evalF64(Harness &h, llvm::StringRef name,
                                  llvm::ArrayRef<Tensor> args) {
  auto results = h.eval(args, /*f64=*/true, name);
  INFO(h.diagnostics);
  REQUIRE(succeeded(results));
  return *results;
}

unsigned checkGradients(const std::string &ir, const GradCheckOptions &opts) {
  Harness h;
  h.parse(ir);
  PassManager pm(&h.ctx);
  tg::AutodiffPassOptions adOpts;
  adOpts.wrtInputs = true;
  pm.addPass(tg::createAutodiffPass(adOpts));
  {
    INFO(h.diagnostics);
    REQUIRE(succeeded(pm.run(*h.module)));
  }
  auto fwd = h.module->lookupSymbol<func::FuncOp>("forward");
  REQUIRE(fwd);

  // Random arguments; float ones are the variables.
  SmallVector<Tensor> args;
  SmallVector<unsigned> vars;
  for (auto [i, type] : llvm::enumerate(fwd.getArgumentTypes())) {
    auto tensor = cast<RankedTensorType>(type);
    auto dtype = tg::ref::dtypeOf(tensor.getElementType());
    REQUIRE(succeeded(dtype));
    bool isFloat = tg::ref::isFloat(*dtype);
    args.push_back(Tensor::random(tensor.getShape(), *dtype, opts.seed, i,
                                  isFloat ? opts.lo : 0,
                                  isFloat ? opts.hi : double(opts.intHi)));
    if (isFloat)
      vars.push_back(i);
  }

  SmallVector<Tensor> ad = evalF64(h, "forward_grad", args);
  unsigned first = fwd.getNumResults(), probes = 0;
  auto loss = [&](ArrayRef<Tensor> at) {
    return evalF64(h, "forward", at)[0].data[0];
  };
  for (auto [k, arg] : llvm::enumerate(vars)) {
    const Tensor &grad = ad[first + k];
    REQUIRE(grad.shape == args[arg].shape);
    int64_t n = args[arg].numElements();
    int64_t stride = std::max<int64_t>(1, n / opts.maxProbes);
    for (int64_t e = 0; e < n; e += stride, ++probes) {
      double x = args[arg].data[e];
      double step = 1e-6 * std::max(1.0, std::abs(x));
      SmallVector<Tensor> plus(args), minus(args);
      plus[arg].data[e] = x + step;
      minus[arg].data[e] = x - step;
      double fd = (loss(plus) - loss(minus)) / (2 * step);
      double got = grad.data[e];
      INFO("argument #" << arg << " element " << e << ": finite difference "
                        << fd << ", autodiff " << got);
      CHECK(std::abs(fd - got) <= opts.tolerance * (1 + std::abs(fd)));
    }
  }
  return probes;
}

} // namespace tgtest
