//===- JitTest.cpp - the in-process API -------------------------*- C++ -*-===//
//
// tgc::Model compiles examples/mlp.tg (and a model built with tgc::Builder)
// in-process, trains it on a fixed batch until the loss falls, evaluates it,
// and reports mistakes as messages.
//
//===----------------------------------------------------------------------===//

#include "tgc/Builder.h"
#include "tgc/Jit.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace {
std::string example(const char *name) {
  const char *src = std::getenv("TGC_SOURCE_DIR");
  return std::string(src ? src : ".") + "/examples/" + name;
}

/// A fixed batch: images in [0, 1), labels in [0, 10).
tgc::TensorMap batch(const tgc::TensorMap &specs) {
  tgc::TensorMap inputs;
  unsigned state = 12345;
  auto next = [&] {
    state = state * 1103515245u + 12345u;
    return double((state >> 8) & 0xffff) / 65536.0;
  };
  for (const auto &[name, spec] : specs) {
    tgc::HostTensor t = tgc::HostTensor::zeros(spec.shape, spec.type);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, spec.type == tgc::HostType::I64 ? double(int(next() * 10))
                                               : next());
    inputs[name] = t;
  }
  return inputs;
}
} // namespace

TEST_CASE("a .tg model compiles, trains and evaluates in-process", "[jit]") {
  std::string error;
  auto model = tgc::Model::compileFile(
      example("mlp.tg"), {{"batch", "16"}, {"hidden", "32"}}, error);
  INFO(error);
  REQUIRE(model);
  REQUIRE(model->init(7, error));
  CHECK(model->state().count("fc1.weight"));
  CHECK(model->state().count("fc1.weight.exp_avg"));
  tgc::TensorMap inputs = batch(model->inputSpecs());
  double first = 0, last = 0;
  for (int i = 0; i < 30; ++i) {
    REQUIRE(model->trainStep(inputs, last, error));
    if (i == 0)
      first = last;
  }
  CHECK(last < first); // memorising one batch
  CHECK(model->state().at("step").get(0) == 30);
  tgc::TensorMap outputs;
  REQUIRE(model->eval(inputs, outputs, error));
  REQUIRE(outputs.count("logits"));
  CHECK(outputs.at("logits").shape == std::vector<int64_t>{16, 10});
}

TEST_CASE("mistakes are messages", "[jit]") {
  std::string error;
  CHECK_FALSE(tgc::Model::compileFile(example("missing.tg"), {}, error));
  CHECK_THAT(error, Catch::Contains("cannot read"));
  error.clear();
  CHECK_FALSE(tgc::Model::compileFile(example("mlp.tg"), {{"nope", "1"}}, error));
  CHECK_FALSE(error.empty());
  auto model = tgc::Model::compileFile(example("mlp.tg"),
                                       {{"batch", "4"}, {"hidden", "8"}}, error);
  REQUIRE(model);
  double loss;
  CHECK_FALSE(model->trainStep(batch(model->inputSpecs()), loss, error));
  CHECK_THAT(error, Catch::Contains("call init first"));
}

TEST_CASE("a model built in C++ compiles and outlives its Builder", "[jit]") {
  std::string error;
  std::unique_ptr<tgc::Model> model;
  {
    tgc::Builder b("linear");
    tgc::Tensor x = b.input("x", {tgc::DType::F32, {8, 4}});
    tgc::Tensor y = b.input("y", {tgc::DType::F32, {8, 1}});
    tgc::Tensor w = b.param("w", {tgc::DType::F32, {4, 1}}, {"glorot_uniform", {}});
    tgc::Tensor bias = b.param("b", {tgc::DType::F32, {1}});
    b.minimize(b.mseLoss(x.matmul(w) + bias, y));
    tgc::ConfigValue opt = tgc::ConfigValue::ofDict();
    opt.dict = {{"kind", tgc::ConfigValue::ofString("sgd")},
                {"lr", tgc::ConfigValue::ofFloat(0.1)}};
    b.setTrain({{"optimizer", opt}});
    REQUIRE(b.ok());
    model = tgc::Model::compileGraph(b, error);
    INFO(error);
    REQUIRE(model);
  }
  // The Builder and its context are gone; the compiled model needs neither.
  REQUIRE(model->init(3, error));
  tgc::TensorMap inputs = batch(model->inputSpecs());
  double first = 0, last = 0;
  for (int i = 0; i < 20; ++i) {
    REQUIRE(model->trainStep(inputs, last, error));
    if (i == 0)
      first = last;
  }
  CHECK(last < first);

  // A Builder that has failed gives its message, not a module.
  tgc::Builder bad("bad");
  tgc::Tensor a = bad.input("a", {tgc::DType::F32, {2, 3}});
  bad.output("r", bad.matmul(a, a));
  CHECK_FALSE(tgc::Model::compileGraph(bad, error));
  CHECK_THAT(error, Catch::Contains("contraction dimensions differ"));
}

TEST_CASE("a JIT model trains with the runtime's loop and writes what "
          "tg-run reads", "[jit]") {
  std::string error;
  auto model = tgc::Model::compileFile(
      example("mlp.tg"), {{"batch", "32"}, {"hidden", "32"}}, error);
  INFO(error);
  REQUIRE(model);
  // Without init: train starts from init(seed), as tg-run does.
  tgc::TrainSettings settings;
  settings.stepsPerEpoch = 40;
  settings.seed = 5;
  std::vector<tgc::EpochSummary> epochs;
  REQUIRE(model->train(settings, epochs, error));
  REQUIRE(epochs.size() == 1);
  CHECK(epochs[0].steps == 40);
  CHECK(epochs[0].meanLoss > 0);
  CHECK(epochs[0].accuracy > 15); // 40 steps of Fashion-MNIST: above chance (10%)
  CHECK(model->state().at("step").get(0) == 40);

  // A checkpoint round-trips into a second model: same predictions.
  char dir[] = "/tmp/tgc-jit-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string ckpt = std::string(dir) + "/m.safetensors";
  std::string tgx = std::string(dir) + "/m.tgx";
  REQUIRE(model->saveCheckpoint(ckpt, error));
  REQUIRE(model->writeArtifact(tgx, error));
  auto twin = tgc::Model::compileFile(
      example("mlp.tg"), {{"batch", "32"}, {"hidden", "32"}}, error);
  REQUIRE(twin);
  tgc::TensorMap inputs = batch(model->inputSpecs()), a, b;
  CHECK_FALSE(twin->eval(inputs, b, error));
  CHECK_THAT(error, Catch::Contains("call init first"));
  REQUIRE(twin->loadCheckpoint(ckpt, error));
  REQUIRE(model->eval(inputs, a, error));
  REQUIRE(twin->eval(inputs, b, error));
  CHECK(a.at("logits").bytes == b.at("logits").bytes);
  CHECK(twin->state().at("step").get(0) == 40);

  // Bad data is a message naming it, not a crash.
  settings.data = std::string(dir) + "/missing.safetensors";
  CHECK_FALSE(model->train(settings, epochs, error));
  CHECK_THAT(error, Catch::Contains("missing.safetensors"));
  std::remove(ckpt.c_str());
  std::remove(tgx.c_str());
  rmdir(dir);
}

TEST_CASE("a JIT model honours its train block's memory budget as tgc does",
          "[jit]") {
  // LeNet at batch 64 plans 4.35 MiB (2026-12-02: pooling masks, offset
  // orders); two micro-batches of 32 peak at 3.46 MiB and four of 16 at
  // 2.94 MiB, so a budget of 3.3 MiB is met by four accumulated
  // micro-batches of 16 (tgc prints the same choice).
  std::FILE *in = std::fopen(example("cnn.tg").c_str(), "rb");
  REQUIRE(in);
  std::string source;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;)
    source.append(buf, n);
  std::fclose(in);
  const std::string anchor = "precision = fp32";
  size_t at = source.find(anchor);
  REQUIRE(at != std::string::npos);
  std::string budgeted = source;
  budgeted.insert(at + anchor.size(), "\n  memory_budget = 3.3MiB");
  char path[] = "/tmp/tgc-jit-budget-XXXXXX.tg";
  int fd = mkstemps(path, 3);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, budgeted.data(), budgeted.size()) ==
          ssize_t(budgeted.size()));
  close(fd);

  std::string error;
  auto fitted = tgc::Model::compileFile(path, {}, error);
  std::remove(path);
  INFO(error);
  REQUIRE(fitted);
  CHECK_THAT(fitted->budgetNote(),
             Catch::Contains("split each batch of 64 into 4 micro-batches of 16"));
  auto plain = tgc::Model::compileFile(example("cnn.tg"), {}, error);
  REQUIRE(plain);
  CHECK(plain->budgetNote().empty());

  // The same batch of 64 through both: accumulating four micro-batches of
  // 16 is the full-batch step up to rounding.
  REQUIRE(fitted->init(3, error));
  REQUIRE(plain->init(3, error));
  tgc::TensorMap inputs = batch(plain->inputSpecs());
  for (int step = 0; step < 3; ++step) {
    double a = 0, b = 0;
    REQUIRE(plain->trainStep(inputs, a, error));
    REQUIRE(fitted->trainStep(inputs, b, error));
    CHECK(b == Approx(a).epsilon(1e-5));
  }
}

#ifdef TG_FAKE_CUDA_EMU_PATH
namespace {
/// Trains examples/mlp.tg (small) `steps` steps on one batch on `device`;
/// the losses, then the final state.
std::vector<double> trainOn(tgc::Device device, int steps, tgc::TensorMap &state,
                            std::string &described) {
  std::string error;
  tgc::CompileOptions options;
  options.device = device;
  auto model = tgc::Model::compileFile(
      example("mlp.tg"), {{"batch", "8"}, {"hidden", "32"}, {"pixels", "16"}},
      error, options);
  INFO(error);
  REQUIRE(model);
  described = model->device();
  REQUIRE(model->init(7, error));
  tgc::TensorMap inputs = batch(model->inputSpecs());
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    double loss = 0;
    REQUIRE(model->trainStep(inputs, loss, error));
    losses.push_back(loss);
  }
  state = model->state();
  return losses;
}

void checkClose(const std::vector<double> &a, const std::vector<double> &b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(std::abs(a[i] - b[i]) <= 1e-5 + 1e-4 * std::abs(a[i]));
}
} // namespace

// The GPU step is built in memory (as tgc --target builds it, so the CUDA
// toolkit is needed) and run through the runtime's GPU devices: the PTX
// emulator, and CUDA on the fake driver that runs the PTX on the emulator.
TEST_CASE("a JIT model runs on the GPU devices like on the CPU", "[jit][gpu]") {
  if (access("/usr/local/cuda/bin/ptxas", X_OK) != 0) {
    WARN("SKIPPED: no CUDA toolkit (ptxas) to build the GPU step");
    return;
  }
  // Auto finds the fake driver: the driver library is chosen once per
  // process, so this is set before any test opens it.
  setenv("TG_CUDA_LIBRARY", TG_FAKE_CUDA_EMU_PATH, 1);
  tgc::TensorMap cpuState, emuState, cudaState;
  std::string cpu, emu, cuda;
  std::vector<double> onCpu = trainOn(tgc::Device::Cpu, 3, cpuState, cpu);
  std::vector<double> onEmu = trainOn(tgc::Device::Emulator, 3, emuState, emu);
  std::vector<double> onCuda = trainOn(tgc::Device::Auto, 3, cudaState, cuda);
  CHECK(cpu == "cpu");
  CHECK_THAT(emu, Catch::StartsWith("emulator"));
  CHECK_THAT(cuda, Catch::StartsWith("cuda (TGC fake GPU (PTX emulator), sm_80"));
  checkClose(onCpu, onEmu);
  checkClose(onCpu, onCuda);
  // The state comes back from the device: the step counter and the weights.
  CHECK(cudaState.at("step").get(0) == 3);
  const tgc::HostTensor &w = cpuState.at("fc1.weight");
  const tgc::HostTensor &wCuda = cudaState.at("fc1.weight");
  REQUIRE(w.numElements() == wCuda.numElements());
  double worst = 0;
  for (int64_t i = 0; i < w.numElements(); ++i)
    worst = std::max(worst, std::abs(w.get(i) - wCuda.get(i)));
  CHECK(worst < 1e-5);
}
#endif
