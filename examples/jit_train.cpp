//===- jit_train.cpp - train a model from C++ with the JIT API --*- C++ -*-===//
//
// Usage: tgc-jit-example [MODEL.tg] [steps]. Compiles the model in-process,
// initialises it, trains it on one synthetic batch and prints the loss.
//
//===----------------------------------------------------------------------===//

#include "tgc/Jit.h"

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  std::string path = argc > 1 ? argv[1] : "examples/mlp.tg";
  int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  std::string error;
  auto model = tgc::Model::compileFile(path, {{"batch", "32"}}, error);
  if (!model || !model->init(1, error)) {
    std::fprintf(stderr, "tgc-jit-example: error: %s\n", error.c_str());
    return 1;
  }
  tgc::TensorMap inputs;
  for (const auto &[name, spec] : model->inputSpecs()) {
    tgc::HostTensor t = tgc::HostTensor::zeros(spec.shape, spec.type);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, spec.type == tgc::HostType::I64 ? double(i % 10)
                                               : double((i * 7919) % 100) / 100);
    inputs[name] = t;
  }
  for (int s = 0; s < steps; ++s) {
    double loss;
    if (!model->trainStep(inputs, loss, error)) {
      std::fprintf(stderr, "tgc-jit-example: error: %s\n", error.c_str());
      return 1;
    }
    std::printf("step %d loss %.6f\n", s, loss);
  }
  return 0;
}
