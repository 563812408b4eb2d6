//===- TrainConfig.h - the train block, read from tg.train ------*- C++ -*-===//
//
// The optimizer, schedule, clipping and accumulation settings of a model's
// `train` block, parsed once from the module attribute `tg.train` and turned
// into tg ops by the training-step pass.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_TRAINCONFIG_H
#define TGC_PASSES_TRAINCONFIG_H

#include "dialects/TGBuilder.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir::tg {

/// Settings of the `train` block (see docs/training.md for the semantics).
struct TrainConfig {
  std::string optimizer = "sgd"; ///< sgd, momentum, adam or adamw
  double lr = 0.01, momentum = 0.9, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0.0;
  bool nesterov = false;
  std::string schedule = "constant"; ///< constant, warmup or cosine
  int64_t scheduleSteps = 0, warmup = 0;
  double minLr = 0.0;
  std::optional<double> clipGradNorm;
  int64_t accumulate = 1;
  std::optional<int64_t> batch;

  /// Reads `tg.train` from `module`; errors name the offending key.
  static FailureOr<TrainConfig> read(ModuleOp module);

  /// Names of the per-parameter optimizer state slots, in order.
  SmallVector<StringRef> stateSlots() const;
};

/// Emits the learning rate for the 0-based `step` (a tensor<f32>).
Value buildLearningRate(TensorBuilder &t, const TrainConfig &cfg, Value step);

/// Scales `grads` in place so that their global L2 norm is at most `maxNorm`.
void buildClipByGlobalNorm(TensorBuilder &t, MutableArrayRef<Value> grads,
                           double maxNorm);

/// Emits one optimizer update of `param` given its gradient and its state
/// (one value per slot of cfg.stateSlots()); `t1` is the 1-based step as a
/// tensor<f32>. Returns the new parameter and overwrites `state`.
Value buildOptimizerUpdate(TensorBuilder &t, const TrainConfig &cfg,
                           Value param, Value grad,
                           MutableArrayRef<Value> state, Value lr, Value t1);

/// Emits the initial value of a parameter of `type` from its #tg.init, using
/// Philox stream `stream` of `seed`.
Value buildInitializer(TensorBuilder &t, InitializerAttr init,
                       RankedTensorType type, Value seed, int64_t stream);

} // namespace mlir::tg

#endif // TGC_PASSES_TRAINCONFIG_H
