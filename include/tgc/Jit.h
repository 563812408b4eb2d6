//===- Jit.h - compile and train a model in-process -------------*- C++ -*-===//
//
// The in-process (JIT) API: compile a `.tg` file or a graph built with
// tgc::Builder to a training step for the CPU, then initialise, train and
// evaluate it on host buffers. Parameters and optimizer state live inside
// the Model between calls, named as in the model (docs/training.md).
//
//   std::string error;
//   auto model = tgc::Model::compileFile("examples/mlp.tg", {{"batch", "32"}}, error);
//   model->init(/*seed=*/1, error);
//   float loss;
//   model->trainStep({{"images", images}, {"labels", labels}}, loss, error);
//
//===----------------------------------------------------------------------===//

#ifndef TGC_JIT_H
#define TGC_JIT_H

#include "tgc/HostTensor.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

class Builder;

/// Tensors keyed by their tg.name.
using TensorMap = std::map<std::string, HostTensor>;

/// A model compiled for the CPU in this process.
class Model {
public:
  ~Model();

  /// Compiles a `.tg` file with `-D` overrides. Null on error, with the
  /// frontend's or compiler's messages in `error`.
  static std::unique_ptr<Model>
  compileFile(const std::string &path,
              const std::vector<std::pair<std::string, std::string>> &defines,
              std::string &error);
  /// Compiles a graph built in C++ (it must have a loss and a train block).
  static std::unique_ptr<Model> compileGraph(Builder &builder,
                                             std::string &error);

  /// Sets parameters (from their initializers) and optimizer state from a
  /// seed; the step counter restarts at 0.
  bool init(int64_t seed, std::string &error);
  /// One training step on `inputs` (by input name); updates the parameters
  /// and optimizer state and returns the loss.
  bool trainStep(const TensorMap &inputs, double &loss, std::string &error);
  /// The forward function on `inputs`: every result by name (the loss and
  /// the outputs).
  bool eval(const TensorMap &inputs, TensorMap &outputs, std::string &error);

  /// Parameters, optimizer state and the step counter, by name.
  const TensorMap &state() const;
  /// Names and types of the inputs of a training step.
  const TensorMap &inputSpecs() const;

private:
  /// The JIT-compiled module and the tensors kept between
  /// calls (jit/Model.cpp); hidden so that this header needs no MLIR.
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace tgc

#endif // TGC_JIT_H
