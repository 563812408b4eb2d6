//===- BenchTest.cpp - time the MLP train step on the JIT -------*- C++ -*-===//
//
// Hidden (tag [.bench]); bench/cpu_jit_mlp.sh runs it. Builds the
// examples/mlp.tg network by hand (784-256-10, AdamW, batch 128), runs
// @init once and times @train_step. Prints samples/s; asserts only that
// the loss is finite.
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <chrono>
#include <cstdio>

using namespace cputest;

namespace {
std::string mlp(int batch) {
  std::string b = std::to_string(batch);
  return R"(
module attributes {tg.train = {optimizer = {kind = "adamw", lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}}} {
func.func @forward(%x: tensor<)" + b + R"(x784xf32> {tg.name = "images", tg.role = #tg.role<input>},
                   %y: tensor<)" + b + R"(xi64> {tg.name = "labels", tg.role = #tg.role<input>},
                   %w1: tensor<784x256xf32> {tg.name = "fc1.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>},
                   %b1: tensor<256xf32> {tg.name = "fc1.bias", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %w2: tensor<256x10xf32> {tg.name = "fc2.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>},
                   %b2: tensor<10xf32> {tg.name = "fc2.bias", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w1 : tensor<)" + b + R"(x784xf32>, tensor<784x256xf32> -> tensor<)" + b + R"(x256xf32>
  %1 = tg.add %0, %b1 : tensor<)" + b + R"(x256xf32>, tensor<256xf32> -> tensor<)" + b + R"(x256xf32>
  %2 = tg.relu %1 : tensor<)" + b + R"(x256xf32>
  %3 = tg.matmul %2, %w2 : tensor<)" + b + R"(x256xf32>, tensor<256x10xf32> -> tensor<)" + b + R"(x10xf32>
  %4 = tg.add %3, %b2 : tensor<)" + b + R"(x10xf32>, tensor<10xf32> -> tensor<)" + b + R"(x10xf32>
  %5 = tg.cross_entropy %4, %y : tensor<)" + b + R"(x10xf32>, tensor<)" + b + R"(xi64> -> tensor<f32>
  return %5 : tensor<f32>
}
}
)";
}
} // namespace

TEST_CASE("MLP train step throughput", "[.bench]") {
  const int batch = 128, steps = 20;
  Harness h;
  h.parse(mlp(batch));
  mlir::PassManager pm(&h.ctx);
  pm.addPass(mlir::tg::createBuildTrainStepPass());
  REQUIRE(mlir::succeeded(pm.run(*h.module)));
  for (bool blas : {false, true}) {
    mlir::tg::cpu::CpuPipelineOptions options;
    options.blas = blas;
    auto t0 = std::chrono::steady_clock::now();
    auto compiled = mlir::tg::cpu::JitModule::compile(*h.module, options);
    REQUIRE(mlir::succeeded(compiled));
    auto &jit = *compiled;
    auto t1 = std::chrono::steady_clock::now();
    std::vector<HostTensor> state =
        h.jitRun(*jit, {Tensor::fromValues({}, DType::I64, {1})}, "init");
    auto args = h.randomArgs({{14, {0, 10}}}, 3, "train_step");
    std::vector<HostTensor> inputs = {toHost(args[args.size() - 2]),
                                      toHost(args.back())};
    double loss = 0;
    std::chrono::steady_clock::time_point start;
    for (int s = -2; s < steps; ++s) { // two warm-up steps
      if (s == 0)
        start = std::chrono::steady_clock::now();
      std::vector<HostTensor> callArgs = state;
      callArgs.insert(callArgs.end(), inputs.begin(), inputs.end());
      auto out = jit->run("train_step", callArgs);
      REQUIRE(mlir::succeeded(out));
      loss = (*out)[0].get(0);
      state.assign(out->begin() + 1, out->end());
    }
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf("mlp 784-256-10 adamw batch %d, %s: compile %.2f s, %.2f "
                "ms/step, %.0f samples/s, loss %.4f\n",
                batch, blas ? "cblas_sgemm" : "JIT loops  ",
                std::chrono::duration<double>(t1 - t0).count(),
                1e3 * secs / steps, batch * steps / secs, loss);
    CHECK(std::isfinite(loss));
  }
}
