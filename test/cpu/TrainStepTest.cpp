//===- TrainStepTest.cpp - a whole training step on the CPU -----*- C++ -*-===//
//
// A tiny MLP through tg-build-train-step (AdamW, clipping, cosine schedule,
// two accumulated micro-batches: func.call, scf.for and extract_slice in
// @train_step), then @init and three @train_step calls on the JIT and on
// the reference evaluator, each feeding its own results back.
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace cputest;

namespace {
const char *kMlp = R"(
module attributes {tg.train = {accumulate = 2 : i64, clip_grad_norm = 1.0 : f64, optimizer = {kind = "adamw", lr = 1.0e-2 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}, schedule = {kind = "cosine", steps = 100 : i64, warmup = 2 : i64, min_lr = 0.0 : f64}}} {
func.func @forward(%x: tensor<4x12xf32> {tg.name = "images", tg.role = "input"},
                   %y: tensor<4xi64> {tg.name = "labels", tg.role = "input"},
                   %w1: tensor<12x8xf32> {tg.name = "fc1.weight", tg.role = "param", tg.init = #tg.init<glorot_uniform>},
                   %b1: tensor<8xf32> {tg.name = "fc1.bias", tg.role = "param", tg.init = #tg.init<normal(0.0, 0.1)>},
                   %w2: tensor<8x3xf32> {tg.name = "fc2.weight", tg.role = "param", tg.init = #tg.init<glorot_uniform>},
                   %b2: tensor<3xf32> {tg.name = "fc2.bias", tg.role = "param", tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.name = "loss", tg.role = "loss"}) {
  %0 = tg.matmul %x, %w1 : tensor<4x12xf32>, tensor<12x8xf32> -> tensor<4x8xf32>
  %1 = tg.add %0, %b1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %2 = tg.relu %1 : tensor<4x8xf32>
  %3 = tg.matmul %2, %w2 : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  %4 = tg.add %3, %b2 : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %5 = tg.cross_entropy %4, %y : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  return %5 : tensor<f32>
}
}
)";
} // namespace

TEST_CASE("MLP init and three train steps match the reference",
          "[cpu][train]") {
  Harness h;
  h.parse(kMlp);
  mlir::PassManager pm(&h.ctx);
  pm.addPass(mlir::tg::createBuildTrainStepPass());
  {
    INFO(h.diagnostics);
    REQUIRE(mlir::succeeded(pm.run(*h.module)));
  }
  auto jit = h.compile();

  Tensor seed = Tensor::fromValues({}, DType::I64, {1234});
  std::vector<Tensor> refState = h.reference({seed}, "init");
  std::vector<HostTensor> jitState = h.jitRun(*jit, {seed}, "init");
  Harness::compare(jitState, refState, 5);

  auto fnArgs = h.randomArgs({{14, {0, 3}}}, 7, "train_step");
  // The inputs: the last two arguments (8 images, 8 labels).
  std::vector<Tensor> inputs(fnArgs.end() - 2, fnArgs.end());
  // Both sides start from the reference's initial state so that the steps
  // are compared on their own.
  std::vector<HostTensor> jitCarry;
  for (const Tensor &t : refState)
    jitCarry.push_back(toHost(t));
  std::vector<Tensor> refCarry = refState;
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    std::vector<Tensor> refArgs = refCarry;
    refArgs.insert(refArgs.end(), inputs.begin(), inputs.end());
    std::vector<Tensor> want = h.reference(refArgs, "train_step");

    std::vector<HostTensor> hostArgs = jitCarry;
    for (const Tensor &t : inputs)
      hostArgs.push_back(toHost(t));
    std::string error;
    auto got = jit->run("train_step", hostArgs, &error);
    INFO(error);
    REQUIRE(mlir::succeeded(got));
    Harness::compare(*got, want, 50);
    INFO("loss jit " << (*got)[0].get(0) << " reference " << want[0].data[0]);
    refCarry.assign(want.begin() + 1, want.end());
    jitCarry.assign(got->begin() + 1, got->end());
  }
}
