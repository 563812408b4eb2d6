//===- Jit.h - compile and train a model in-process -------------*- C++ -*-===//
//
// The in-process (JIT) API: compile a `.tg` file or a graph built with
// tgc::Builder to a training step for the CPU or the GPU, then initialise,
// train and evaluate it on host buffers. Parameters and optimizer state live
// inside the Model between calls, named as in the model (docs/training.md).
//
// A Model is the artifact tgc would write, loaded in this process by the
// runtime that tg-run uses: the same code, manifest checks, memory plan,
// checkpoints and training loop (runtime/Trainer), so a model trained here
// and one trained by tg-run behave alike.
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

/// How Model::train trains (the options of `tg-run` that concern training).
struct TrainSettings {
  /// The data, as `tg-run --data` takes it: "fashion-mnist",
  /// "PATH.safetensors", "u8:PATH", "u16:PATH", "u32:PATH".
  std::string data = "fashion-mnist";
  std::string dataDir; ///< Fashion-MNIST's folder ("": Debian's)
  int64_t epochs = 1;
  int64_t stepsPerEpoch = -1; ///< at most this many steps (<= 0: all)
  int64_t seed = 0;           ///< the order of every epoch
  std::string save;           ///< checkpoint written after every epoch
  std::string metrics;        ///< CSV, one row per step and per epoch
  bool progress = false;      ///< print progress lines to stdout
  /// Take the losses every this many steps (tg-run --loss-every): on the
  /// GPU up to this many steps run ahead of the loss readback.
  int64_t lossEvery = 1;
};

/// Where a Model's entry points run, as `tg-run --device` chooses.
enum class Device {
  Cpu,      ///< the CPU code (the default)
  Emulator, ///< the sm_80 GPU code on the PTX emulator (slow; for tests)
  Cuda,     ///< the GPU code on CUDA device 0 (docs/runtime.md)
  Auto,     ///< Cuda where a GPU and its driver are present, else the CPU
};

/// How Model::compileFile/compileGraph compile.
struct CompileOptions {
  /// Where the model runs. Every device but Cpu also compiles the GPU
  /// step in memory as `tgc --target=sm_80,sm_90a,cpu` would (the emulator:
  /// sm_80 only), which needs the CUDA toolkit's ptxas and fatbinary.
  Device device = Device::Cpu;
};

/// One epoch of Model::train.
struct EpochSummary {
  int64_t epoch = 0, steps = 0;
  double meanLoss = 0, seconds = 0, samplesPerSecond = 0;
  double accuracy = -1; ///< % on the test split; -1 where not measured
};

/// A model compiled in this process, for the CPU or the GPU.
class Model {
public:
  ~Model();

  /// Compiles a `.tg` file with `-D` overrides. Null on error, with the
  /// frontend's or compiler's messages in `error`.
  static std::unique_ptr<Model>
  compileFile(const std::string &path,
              const std::vector<std::pair<std::string, std::string>> &defines,
              std::string &error, const CompileOptions &options = {});
  /// Compiles a graph built in C++ (it must have a loss and a train block).
  static std::unique_ptr<Model> compileGraph(Builder &builder,
                                             std::string &error,
                                             const CompileOptions &options = {});

  /// What runs the entry points, as tg-run's first line says it: "cpu",
  /// "emulator (PTX sm_80)", "cuda (NVIDIA H200, sm_90; cubin sm_90a)",
  /// "cpu (no CUDA: ...)" for Auto without a GPU.
  std::string device() const;

  /// Sets parameters (from their initializers) and optimizer state from a
  /// seed; the step counter restarts at 0.
  bool init(int64_t seed, std::string &error);
  /// One training step on `inputs` (by input name); updates the parameters
  /// and optimizer state and returns the loss.
  bool trainStep(const TensorMap &inputs, double &loss, std::string &error);
  /// The forward function on `inputs`: every result by name (the loss and
  /// the outputs).
  bool eval(const TensorMap &inputs, TensorMap &outputs, std::string &error);

  /// Trains for `settings.epochs` epochs with the runtime's training loop
  /// (shuffling, test accuracy, checkpoints, metrics), starting from the
  /// current state (init(settings.seed) first if init was never called).
  bool train(const TrainSettings &settings, std::vector<EpochSummary> &epochs,
             std::string &error);

  /// Writes parameters, optimizer state and `step` as safetensors, in the
  /// format and names of `tg-run --save`.
  bool saveCheckpoint(const std::string &path, std::string &error) const;
  /// Loads a checkpoint written by saveCheckpoint or `tg-run --save`.
  bool loadCheckpoint(const std::string &path, std::string &error);
  /// Writes the compiled model as a `.tgx` artifact that `tg-run` trains.
  bool writeArtifact(const std::string &path, std::string &error) const;

  /// Parameters, optimizer state and the step counter, by name (a copy
  /// made when the state last changed).
  const TensorMap &state() const;
  /// Names and types of the inputs of a training step.
  const TensorMap &inputSpecs() const;
  /// What fitting the train block's `memory_budget` chose (recomputation,
  /// micro-batches, bf16) and its cost, as tgc's note says it; empty when the
  /// model has no budget or meets it as written.
  const std::string &budgetNote() const;

private:
  /// The loaded artifact and its executor (jit/Model.cpp); hidden so that
  /// this header needs neither MLIR nor the runtime's headers.
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace tgc

#endif // TGC_JIT_H
