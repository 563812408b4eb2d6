//===- LossScaleTest.cpp - fp16 dynamic loss scaling ------------*- C++ -*-===//
//
// precision = fp16 through tg-assign-precision and tg-build-train-step, run
// on the reference evaluator and on the CPU JIT: gradients that underflow to
// zero in fp16 without scaling match the fp32 gradients with it; a step with
// an inf skips the update bit for bit and halves the scale; `interval`
// finite steps double it (PyTorch GradScaler's rules).
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <functional>

using namespace cputest;

namespace {

/// x @ w + b, then MSE against targets of about 1e-7: with w = b = 0 the gradient
/// of the prediction is -y / 16 (about 1e-8), below half of fp16's
/// smallest subnormal (6e-8), so it rounds to zero unless the loss is
/// scaled. `%ATTRS%` is the train block.
const char *kModel = R"(
module attributes {tg.train = {%ATTRS%}} {
func.func @forward(%x: tensor<8x16xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %y: tensor<8x4xf32> {tg.name = "y", tg.role = #tg.role<input>},
                   %w: tensor<16x4xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>},
                   %b: tensor<4xf32> {tg.name = "b", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %1 = tg.add %0, %b : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %2 = tg.mse_loss %1, %y : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<f32>
  return %2 : tensor<f32>
}
}
)";

/// One side of the comparison: the reference evaluator or the JIT, each
/// returning results as reference tensors (f16/f32 values widened exactly).
using Run = std::function<std::vector<Tensor>(llvm::StringRef,
                                              llvm::ArrayRef<Tensor>)>;

/// Builds the training module for `attrs` and calls `check` once with the
/// reference evaluator and once with the JIT.
void onBothBackends(Harness &h, const std::string &attrs,
                    bool withPrecision,
                    const std::function<void(const Run &)> &check) {
  std::string ir = kModel;
  ir.replace(ir.find("%ATTRS%"), 7, attrs);
  h.parse(ir);
  mlir::PassManager pm(&h.ctx);
  if (withPrecision)
    pm.addPass(mlir::tg::createAssignPrecisionPass());
  pm.addPass(mlir::tg::createBuildTrainStepPass());
  {
    INFO(h.diagnostics);
    REQUIRE(mlir::succeeded(pm.run(*h.module)));
  }
  SECTION("reference evaluator") {
    check([&](llvm::StringRef fn, llvm::ArrayRef<Tensor> args) {
      return h.reference(args, fn);
    });
  }
  SECTION("CPU JIT") {
    auto jit = h.compile();
    check([&](llvm::StringRef fn, llvm::ArrayRef<Tensor> args) {
      std::vector<Tensor> out;
      for (const HostTensor &r : h.jitRun(*jit, args, fn)) {
        Tensor t;
        t.shape.assign(r.shape.begin(), r.shape.end());
        t.dtype = r.type == HostType::I64 ? DType::I64
                  : r.type == HostType::F16 ? DType::F16
                                            : DType::F32;
        for (int64_t i = 0; i < r.numElements(); ++i)
          t.data.push_back(r.get(i));
        out.push_back(t);
      }
      return out;
    });
  }
}

/// Inputs: x in [0.5, 1.5) (so no sum cancels), targets in [1e-7, 2e-7).
std::vector<Tensor> inputs() {
  return {Tensor::random({8, 16}, DType::F32, 3, 0, 0.5, 1.5),
          Tensor::random({8, 4}, DType::F32, 3, 1, 1e-7, 2e-7)};
}

/// The fp32 gradients of (w, b) at w = b = 0, from the same model
/// without mixed precision, on the reference evaluator.
std::vector<Tensor> fp32Gradients() {
  Harness h;
  std::string ir = kModel;
  ir.replace(ir.find("%ATTRS%"), 7, "");
  h.parse(ir);
  mlir::PassManager pm(&h.ctx);
  pm.addPass(mlir::tg::createBuildTrainStepPass());
  REQUIRE(mlir::succeeded(pm.run(*h.module)));
  std::vector<Tensor> args = inputs();
  args.push_back(Tensor::filled({16, 4}, DType::F32, 0.0));
  args.push_back(Tensor::filled({4}, DType::F32, 0.0));
  std::vector<Tensor> out = h.reference(args, "forward_grad");
  return {out[1], out[2]};
}

/// Every element of `got` within `rel` of `want`, and `want` not all zero.
void requireClose(const Tensor &got, const Tensor &want, double rel) {
  REQUIRE(got.numElements() == want.numElements());
  double norm = 0;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(got.data[i] - want.data[i]) <=
          rel * std::fabs(want.data[i]));
    norm += std::fabs(want.data[i]);
  }
  CHECK(norm > 0);
}

/// The arguments of @train_step: `state` (params, scaler state, step) from
/// @init or a previous step, then the inputs.
std::vector<Tensor> stepArgs(llvm::ArrayRef<Tensor> state,
                             llvm::ArrayRef<Tensor> in) {
  std::vector<Tensor> args(state.begin(), state.end());
  args.insert(args.end(), in.begin(), in.end());
  return args;
}

} // namespace

TEST_CASE("fp16: gradients that underflow without loss scaling match fp32 "
          "with it",
          "[cpu][train][precision][fp16]") {
  std::vector<Tensor> want = fp32Gradients();
  Harness h;
  onBothBackends(h, R"(precision = "fp16", optimizer = {kind = "sgd", lr = 1.0 : f64})", true, [&](const Run &run) {
    // forward_grad(x, y, w, b, loss_scale) -> loss, dw, db (unscaled).
    auto grads = [&](double scale) {
      std::vector<Tensor> args = inputs();
      args.push_back(Tensor::filled({16, 4}, DType::F32, 0.0));
      args.push_back(Tensor::filled({4}, DType::F32, 0.0));
      args.push_back(Tensor::filled({}, DType::F32, scale));
      return run("forward_grad", args);
    };
    std::vector<Tensor> unscaled = grads(1.0);
    for (int r : {1, 2})
      for (double g : unscaled[r].data)
        CHECK(g == 0.0); // every one flushed to zero in fp16
    std::vector<Tensor> scaled = grads(65536.0);
    requireClose(scaled[1], want[0], 1e-2);
    requireClose(scaled[2], want[1], 1e-2);

    // The step scales with its own state: init's 65536, then SGD(lr = 1)
    // moves w by exactly -dw.
    std::vector<Tensor> state = run("init", {Tensor::fromValues({}, DType::I64, {1})});
    REQUIRE(state.size() == 5); // w, b, loss_scale, growth_tracker, step
    CHECK(state[2].data[0] == 65536.0);
    CHECK(state[3].data[0] == 0.0);
    std::vector<Tensor> next = run("train_step", stepArgs(state, inputs()));
    Tensor minusW = next[1];
    for (double &v : minusW.data)
      v = -v;
    requireClose(minusW, want[0], 1e-2);
    CHECK(next[3].data[0] == 65536.0); // finite: the scale stays
    CHECK(next[4].data[0] == 1.0);     // one finite step counted
    CHECK(next[5].data[0] == 1.0);     // step
  });
}

TEST_CASE("fp16: a step with an inf gradient updates nothing and halves the "
          "scale",
          "[cpu][train][precision][fp16]") {
  Harness h;
  // Adam: per-parameter state that must stay bit-identical too; two
  // accumulated micro-batches, the inf in the second one only.
  onBothBackends(
      h,
      R"(precision = "fp16", accumulate = 2 : i64, clip_grad_norm = 1.0 : f64, optimizer = {kind = "adam", lr = 1.0e-3 : f64})",
      true, [&](const Run &run) {
        std::vector<Tensor> in = {
            Tensor::random({16, 16}, DType::F32, 5, 0, -1, 1),
            Tensor::random({16, 4}, DType::F32, 5, 1, -1, 1)};
        std::vector<Tensor> state =
            run("init", {Tensor::fromValues({}, DType::I64, {1})});
        // w, b, w.exp_avg, b.exp_avg, w.exp_avg_sq, b.exp_avg_sq,
        // loss_scale, growth_tracker, step.
        REQUIRE(state.size() == 9);
        // One finite step, so that the state is not all zeros.
        std::vector<Tensor> out = run("train_step", stepArgs(state, in));
        state.assign(out.begin() + 1, out.end());
        CHECK(state[6].data[0] == 65536.0);
        CHECK(state[7].data[0] == 1.0);
        CHECK(state[8].data[0] == 1.0);

        std::vector<Tensor> bad = in;
        bad[0].data[9 * 16 + 3] = std::numeric_limits<double>::infinity();
        out = run("train_step", stepArgs(state, bad));
        for (size_t i = 0; i < 6; ++i) {
          INFO("tensor " << i);
          CHECK(out[1 + i].data == state[i].data); // bit-identical
        }
        CHECK(out[7].data[0] == 32768.0); // halved
        CHECK(out[8].data[0] == 0.0);     // the count restarts
        CHECK(out[9].data[0] == 1.0);     // the step did not happen

        // A NaN in the first micro-batch is caught as well.
        bad = in;
        bad[1].data[0] = std::numeric_limits<double>::quiet_NaN();
        out = run("train_step", stepArgs(state, bad));
        for (size_t i = 0; i < 6; ++i)
          CHECK(out[1 + i].data == state[i].data);
        CHECK(out[7].data[0] == 32768.0);
      });
}

TEST_CASE("fp16: the scale grows after `interval` finite steps, and an "
          "overflowing scale backs off",
          "[cpu][train][precision][fp16]") {
  Harness h;
  onBothBackends(
      h,
      R"(precision = "fp16", loss_scale = {kind = "dynamic", init = 1.0e+38 : f64, growth = 4.0 : f64, backoff = 2.5e-01 : f64, interval = 3 : i64})",
      true, [&](const Run &run) {
        std::vector<Tensor> in = {
            Tensor::random({8, 16}, DType::F32, 9, 0, -1, 1),
            Tensor::random({8, 4}, DType::F32, 9, 1, -1, 1)};
        std::vector<Tensor> state =
            run("init", {Tensor::fromValues({}, DType::I64, {1})});
        // 1e38 times an O(1) gradient overflows fp16: skipped, scale / 4,
        // until the scaled gradients fit.
        double scale = double(float(1.0e38));
        CHECK(state[2].data[0] == scale);
        int skipped = 0;
        std::vector<Tensor> out;
        do {
          out = run("train_step", stepArgs(state, in));
          state.assign(out.begin() + 1, out.end());
          if (state[4].data[0] == 0.0) { // step count: still nothing done
            scale = double(float(scale * 0.25));
            CHECK(state[2].data[0] == scale);
            ++skipped;
          }
        } while (state[4].data[0] == 0.0 && skipped < 80);
        CHECK(skipped > 50); // 1e38 / 4^k must fall below ~1e4
        double settled = state[2].data[0];
        CHECK(state[3].data[0] == 1.0);
        for (int i = 0; i < 2; ++i) {
          out = run("train_step", stepArgs(state, in));
          state.assign(out.begin() + 1, out.end());
        }
        CHECK(state[2].data[0] == settled * 4); // the third finite step grows
        CHECK(state[3].data[0] == 0.0);
        CHECK(state[4].data[0] == 3.0);
      });
}
