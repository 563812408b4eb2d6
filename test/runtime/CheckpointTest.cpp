//===- CheckpointTest.cpp - pretrained weights into the tiny model --------===//
//
// initFromCheckpoint on TinyModel (parameters w, b; momentum state; step):
// what it loads, what it skips and what it refuses. The GPT-2 layout itself
// is checked end to end in lit-tests/tgc/gpt2-checkpoint.test.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "runtime/Checkpoint.h"
#include "runtime/Safetensors.h"

#include <catch2/catch.hpp>

using namespace tgrt;
using namespace tgrt::test;

namespace {
struct Tiny : LoadedTiny {
  TempDir dir;
  std::string path = dir.file("pretrained.safetensors");
  Tiny() {
    std::string err;
    REQUIRE(ex->init(3, err));
  }
  /// Writes `m` and runs initFromCheckpoint; "" on success, else the error.
  std::string load(const TensorMap &m) {
    std::string err;
    REQUIRE(writeSafetensors(path, m, err));
    return initFromCheckpoint(*ex, path, err) ? "" : err;
  }
};

Tensor filled(DType dtype, std::vector<int64_t> shape, double v) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  for (uint64_t i = 0; i < t.numel(); ++i)
    t.set(i, v);
  return t;
}
} // namespace

TEST_CASE("init-from sets the parameters and keeps the optimizer state",
          "[runtime][checkpoint]") {
  Tiny t;
  Tensor momentum = t.ex->state().at("w.momentum");
  TensorMap m{{"w", filled(DType::F32, {784, 10}, 0.25)},
              // A half-precision release is widened to the f32 parameter.
              {"b", filled(DType::F16, {10}, -1.5)},
              // Optimizer state of the same names is skipped, not loaded.
              {"w.momentum", filled(DType::F32, {784, 10}, 9)},
              // GPT-2's buffers are skipped.
              {"h.0.attn.bias", filled(DType::F32, {1, 1, 4, 4}, 1)},
              {"h.0.attn.masked_bias", filled(DType::F32, {}, -1e4)}};
  REQUIRE(t.load(m) == "");
  const TensorMap &s = t.ex->state();
  CHECK(s.at("w").at(783 * 10 + 9) == 0.25);
  CHECK(s.at("b").at(0) == -1.5);
  CHECK(s.at("w.momentum").bytes == momentum.bytes);
  CHECK(t.ex->step() == 0);
}

TEST_CASE("init-from refuses what it cannot place, by name",
          "[runtime][checkpoint]") {
  Tiny t;
  TensorMap m{{"w", filled(DType::F32, {784, 10}, 0)},
              {"b", filled(DType::F32, {10}, 0)}};
  m["lm_head.weight"] = filled(DType::F32, {3}, 0);
  CHECK(t.load(m) == t.path + ": tensor 'lm_head.weight' (f32[3]) is not a "
                              "parameter of the model");
  m.erase("lm_head.weight");
  m["w"] = filled(DType::F32, {10, 784}, 0); // transposed: Linear, not Conv1D
  CHECK(t.load(m) == t.path + ": tensor 'w' is f32[10,784] but the model's "
                              "parameter is f32[784,10]");
  m["w"] = filled(DType::I32, {784, 10}, 0);
  CHECK(t.load(m) == t.path + ": tensor 'w' is i32[784,10] but the model's "
                              "parameter is f32[784,10]");
  m.erase("w");
  CHECK(t.load(m) == t.path + ": parameter 'w' (f32[784,10]) is missing");
}

TEST_CASE("known buffers are GPT-2's attention buffers only",
          "[runtime][checkpoint]") {
  CHECK(isKnownBuffer("h.11.attn.bias"));
  CHECK(isKnownBuffer("h.0.attn.masked_bias"));
  CHECK_FALSE(isKnownBuffer("h.0.attn.c_attn.bias"));
  CHECK_FALSE(isKnownBuffer("attn.bias"));
  CHECK_FALSE(isKnownBuffer("h.0.mlp.bias"));
}
