//===- Trainer.h - the training loop of libtgrt -----------------*- C++ -*-===//
//
// Training an artifact is more than calling train_step: batches are cut from
// a data set and shuffled per epoch, progress is shown with samples/s and an
// ETA, the test split is evaluated for accuracy, a checkpoint is written
// after every epoch, a metrics CSV is kept, and a stop request (Ctrl-C) ends
// the run at a step boundary with a consistent checkpoint. The Trainer does
// all of it on an Executor, so tg-run is argument parsing and a program that
// embeds libtgrt trains the same way. Errors are returned as one line, never
// printed or exited on: the caller decides how to report them.
//
//   tgrt::DataSource data;
//   tgrt::Trainer trainer(*executor, options);
//   if (!tgrt::openDataSource("fashion-mnist", tgrt::kFashionMnistDir,
//                             *executor, data, err) || !trainer.start(err))
//     ...;
//   tgrt::TrainResult r = trainer.train(data);
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_TRAINER_H
#define TG_RUNTIME_TRAINER_H

#include "runtime/Executor.h"

#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace tgrt {

/// Training (and optionally test) rows for the inputs of an executor's
/// entries, cut into batches on demand.
struct DataSource {
  /// Fills `out` with the tensors of `inputs` (an entry's inputs) for rows
  /// [first, first + batch); false with a one-line `err`.
  using BatchFn = std::function<bool(const std::vector<TensorSpec> &inputs,
                                     int64_t first, TensorMap &out,
                                     std::string &err)>;
  int64_t trainRows = 0, testRows = 0;
  BatchFn train, test; ///< test: absent where the data has no test split
  Tensor testLabels;   ///< i64 [testRows], for accuracy
  /// Reorders the training rows for an epoch (absent: fixed order).
  std::function<void(uint64_t seed)> shuffle;
  /// The rows are tokens cut into (tokens, targets) windows of the model's
  /// [batch, seq] inputs, rather than one row per sample.
  bool tokenWindows = false;
};

/// Opens the training data `spec` names for the inputs of `ex`:
/// "fashion-mnist" (from `dataDir`), "safetensors:PATH" or "PATH.safetensors"
/// (tensors named after the inputs), "u8:PATH", "u16:PATH", "u32:PATH"
/// (flat token files). Integer values are checked against the model's index
/// ranges here, where they enter.
bool openDataSource(const std::string &spec, const std::string &dataDir,
                    const Executor &ex, DataSource &out, std::string &err);
/// The files opening `spec` reads (so that no output overwrites them).
std::vector<std::string> dataSourceFiles(const std::string &spec,
                                         const std::string &dataDir);

/// The tensors of `entry`'s inputs, by name, from `file` (a batch read
/// from `path`): shapes must match, dtypes of the same kind are converted,
/// integer values are range-checked.
bool entryInputs(const Executor &ex, std::string_view entry,
                 const TensorMap &file, const std::string &path, TensorMap &in,
                 std::string &err);

/// One line: the plan's memory of train_step (from the manifest) next to
/// what this process measured around the steps it ran: the runtime's two
/// allocations (the persistent block with parameters, optimizer state and
/// the staged batch; the arena) and the code's own allocations.
std::string memoryLine(const Executor &ex);

/// How to train.
struct TrainOptions {
  int64_t epochs = 1;
  int64_t batchLimit = -1; ///< at most this many steps per epoch (<= 0: all)
  /// Accuracy on the first this many samples of the test split (<= 0: all).
  int64_t testLimit = -1;
  /// The host waits for the losses every this many steps (at least 1):
  /// up to this many steps run ahead of the loss readback on an
  /// asynchronous device (CUDA), and their losses, progress lines and
  /// metrics rows come together. 1: each loss is taken while the next step
  /// runs. The values are the same for every setting.
  int64_t lossEvery = 1;
  int64_t seed = 0;        ///< for init(seed) and the order of every epoch
  std::string resume;      ///< a checkpoint to continue from
  std::string initFrom;    ///< pretrained parameters (initFromCheckpoint)
  std::string save;        ///< checkpoint written after every epoch
  std::string metrics;     ///< CSV: one row per step and per epoch
  std::string label;       ///< the model's name in errors (its path)
  FILE *out = stdout;      ///< progress and summaries; nullptr: silent
  bool liveProgress = false; ///< one progress line rewritten (a terminal)
  /// Ranks of a data-parallel job: each step trains on `ranks` times the
  /// model's batch, which samples/s counts.
  int ranks = 1;
  /// Non-zero asks to stop at the next step boundary (set by a signal
  /// handler; the value is the signal).
  const volatile std::sig_atomic_t *stop = nullptr;
};

/// One epoch's summary.
struct EpochStats {
  int64_t epoch = 0, steps = 0;
  double meanLoss = 0, seconds = 0, samplesPerSecond = 0;
  double accuracy = -1; ///< % on the test split; -1 where not measured
};

/// How a run ended.
struct TrainResult {
  enum Status { Finished, Stopped, Failed } status = Finished;
  /// Failed: the error; Stopped: where, and whether a checkpoint was saved
  /// ("interrupted at epoch 1 after step 3/10 (step counter 3); ...").
  std::string message;
  std::vector<EpochStats> epochs; ///< every completed epoch
};

/// Trains one executor.
class Trainer {
public:
  Trainer(Executor &ex, TrainOptions options)
      : ex_(ex), opts_(std::move(options)) {}

  /// The starting state: init(seed) where the model has it, then the
  /// --resume checkpoint, then the pretrained parameters.
  bool start(std::string &err);
  /// Runs the epochs on `data` (see the file comment).
  TrainResult train(DataSource &data);
  /// Runs `steps` train steps on one batch (a cross-check: its outputs are
  /// only meaningful whole, so a stop saves nothing); prints
  /// "step I loss L" per step when `printLoss`, and when `printTime` the
  /// time of steps 2..N (from the first step's loss to the last one's:
  /// loading, the first launch and graph capture are behind it).
  TrainResult repeat(const TensorMap &batch, int64_t steps, bool printLoss,
                     bool printTime = false);
  /// Accuracy (%) of `eval` on the test split of `data`; false with `err`
  /// set on an error, or with `err` empty when a stop was requested.
  bool testAccuracy(DataSource &data, double &accuracy, std::string &err);
  /// The test samples the accuracy is measured on (TrainOptions::testLimit).
  int64_t testRowsOf(const DataSource &data) const;

  /// Called after every epoch (e.g. to log elsewhere or to stop early).
  std::function<void(const EpochStats &)> onEpoch;

private:
  bool stopRequested() const { return opts_.stop && *opts_.stop; }
  __attribute__((format(printf, 2, 3))) void say(const char *fmt, ...);
  Executor &ex_;
  TrainOptions opts_;
};

} // namespace tgrt

#endif // TG_RUNTIME_TRAINER_H
