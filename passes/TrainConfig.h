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
  std::string precision = "fp32"; ///< fp32, bf16 or fp16

  /// Dynamic loss scaling (fp16), with the defaults of PyTorch's GradScaler.
  struct LossScale {
    double init = 65536.0, growth = 2.0, backoff = 0.5;
    int64_t interval = 2000;
  };
  /// Set for precision = fp16 (defaults unless the block's `loss_scale`
  /// says otherwise); unset means the loss is not scaled.
  std::optional<LossScale> lossScale;

  /// Reads `tg.train` from `module`; errors name the offending key.
  static FailureOr<TrainConfig> read(ModuleOp module);

  /// Names of the per-parameter optimizer state slots, in order.
  SmallVector<StringRef> stateSlots() const;
};

/// Names of the loss scaler's state tensors (role state, after the
/// per-parameter slots): the scale (f32) and the count of finite steps since
/// it last changed (i64), as GradScaler's `scale` and `_growth_tracker`.
inline constexpr StringLiteral kLossScaleName = "loss_scale";
inline constexpr StringLiteral kGrowthTrackerName = "loss_scale.growth_tracker";

/// Emits GradScaler's update: `finite` (tensor<i1>) says whether every
/// gradient of the step was finite. Returns the next scale and tracker.
std::pair<Value, Value> buildLossScaleUpdate(TensorBuilder &t,
                                             const TrainConfig::LossScale &ls,
                                             Value finite, Value scale,
                                             Value tracker);

/// Emits a tensor<i1> that is true when every element of every tensor of
/// `grads` is finite: one reduction per gradient of `g * 0` (0 for a finite
/// element, NaN for inf or NaN), summed, compared with itself.
/// `globalSum`, when set, turns the local sum into the sum over every rank
/// (gradients that are per-rank shards, ZeRO stage 1).
Value buildAllFinite(TensorBuilder &t, ArrayRef<Value> grads,
                     function_ref<Value(Value)> globalSum = {});

/// Emits the learning rate for the 0-based `step` (a tensor<f32>).
Value buildLearningRate(TensorBuilder &t, const TrainConfig &cfg, Value step);

/// Scales `grads` in place so that their global L2 norm is at most `maxNorm`.
/// `globalSum`, when set, turns the local sum of squares into the sum over
/// every rank (gradients that are per-rank shards, ZeRO stage 1).
void buildClipByGlobalNorm(TensorBuilder &t, MutableArrayRef<Value> grads,
                           double maxNorm,
                           function_ref<Value(Value)> globalSum = {});

/// Emits one optimizer update of `param` given its gradient and its state
/// (one value per slot of cfg.stateSlots()); `t1` is the 1-based step as a
/// tensor<f32>. Returns the new parameter and overwrites `state`.
Value buildOptimizerUpdate(TensorBuilder &t, const TrainConfig &cfg,
                           Value param, Value grad,
                           MutableArrayRef<Value> state, Value lr, Value t1);

/// The parameters, optimizer state and step count after one update.
struct StepUpdate {
  SmallVector<Value> params, state;
  Value step;
};

/// Emits one step's update from its gradients: the loss scaler's finite
/// check, clipping, the learning rate and the optimizer on every parameter.
/// `state` is train_step's state: slot s of parameter i at
/// `s * params.size() + i`, then the loss scaler's two tensors when
/// cfg.lossScale. `step` is the 0-based step count (tensor<i64>).
/// `globalSum` is as for buildClipByGlobalNorm: set when `params`, `grads`
/// and the per-parameter state are per-rank shards.
StepUpdate buildStepUpdate(TensorBuilder &t, const TrainConfig &cfg,
                           ValueRange params, ArrayRef<Value> grads,
                           ValueRange state, Value step,
                           function_ref<Value(Value)> globalSum = {});

/// Emits the initial value of a parameter of `type` from its #tg.init, using
/// Philox stream `stream` of `seed`.
Value buildInitializer(TensorBuilder &t, InitializerAttr init,
                       RankedTensorType type, Value seed, int64_t stream);

} // namespace mlir::tg

#endif // TGC_PASSES_TRAINCONFIG_H
