//===- Trainer.cpp - the training loop of libtgrt -------------------------===//
//
// The data sources (Fashion-MNIST, named safetensors rows, token files) and
// the epoch loop. Output goes to TrainOptions::out only; every failure is
// returned, so the loop can run inside a program that must not exit.
//
//===----------------------------------------------------------------------===//
#include "runtime/Trainer.h"
#include "runtime/Checkpoint.h"
#include "runtime/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <memory>
#include <random>

namespace tgrt {

namespace {

//===----------------------------------------------------------------------===//
// Data sources: fill an entry's inputs for rows [begin, begin + B).
//===----------------------------------------------------------------------===//

/// Permutes the rows of every tensor in `tensors` (all [N, ...]) alike.
void shuffleRows(std::vector<Tensor *> tensors, uint64_t seed) {
  if (tensors.empty() || tensors[0]->shape.empty())
    return;
  int64_t n = tensors[0]->shape[0];
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i)
    perm[i] = i;
  std::mt19937_64 rng(seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (Tensor *t : tensors) {
    size_t row = t->bytes.size() / size_t(n);
    std::vector<uint8_t> copy(t->bytes.begin(), t->bytes.end());
    auto *dst = static_cast<uint8_t *>(t->data());
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + i * row, copy.data() + perm[i] * row, row);
  }
}

int64_t batchSizeOf(const std::vector<TensorSpec> &inputs) {
  for (const TensorSpec &s : inputs)
    if (!s.shape.empty())
      return s.shape[0];
  return 0;
}

/// Fashion-MNIST: the one float input gets the images, the one integer input
/// the labels (either may be absent, e.g. eval without labels).
DataSource::BatchFn labelledBatches(std::shared_ptr<Dataset> d) {
  return [d](const std::vector<TensorSpec> &inputs, int64_t begin,
             TensorMap &out, std::string &err) {
    out.clear();
    for (const TensorSpec &s : inputs) {
      const Tensor &all = isFloat(s.dtype) ? d->inputs : d->labels;
      if (out.count(isFloat(s.dtype) ? "\x01" : "\x02")) {
        err = "cannot map fashion-mnist onto the model's inputs: more than "
              "one " + std::string(isFloat(s.dtype) ? "float" : "integer") +
              " input ('" + s.name + "')";
        return false;
      }
      if (s.shape.empty()) {
        err = "input '" + s.name + "' is a scalar; expected a batch";
        return false;
      }
      if (!sliceRows(all, begin, s.shape[0], s.dtype, s.shape, out[s.name], err)) {
        err = "input '" + s.name + "': " + err;
        return false;
      }
    }
    return true;
  };
}

/// The integer inputs of train_step and eval (the ones whose values index).
std::vector<TensorSpec> integerInputs(const Executor &ex) {
  std::vector<TensorSpec> out;
  for (const char *entry : {"train_step", "eval"})
    for (const TensorSpec &s : ex.inputsOf(entry))
      if (!isFloat(s.dtype) &&
          std::none_of(out.begin(), out.end(),
                       [&](const TensorSpec &t) { return t.name == s.name; }))
        out.push_back(s);
  return out;
}

bool fashionMnist(const std::string &dir, const Executor &ex, DataSource &s,
                  std::string &err) {
  auto train = std::make_shared<Dataset>(), test = std::make_shared<Dataset>();
  if (!loadFashionMnist(dir, true, *train, err) ||
      !loadFashionMnist(dir, false, *test, err)) {
    err += " (install Debian's dataset-fashion-mnist, or --data-dir)";
    return false;
  }
  // Labels 0-9 against a model with fewer classes train with a loss of 0.
  for (const TensorSpec &in : integerInputs(ex))
    for (const Dataset *d : {train.get(), test.get()})
      if (!checkIndices(d->labels, ex.indexRange(in.name), d->labelsPath, in.name, err))
        return false;
  s.trainRows = train->size();
  s.testRows = test->size();
  s.testLabels = test->labels;
  s.train = labelledBatches(train);
  s.test = labelledBatches(test);
  s.shuffle = [train](uint64_t seed) {
    shuffleRows({&train->inputs, &train->labels}, seed);
  };
  return true;
}

/// A safetensors file whose tensors are named after the model's inputs, all
/// with the same number of rows.
bool safetensorsData(const std::string &path, const Executor &ex,
                     DataSource &s, std::string &err) {
  auto all = std::make_shared<TensorMap>();
  if (!readSafetensors(path, *all, err))
    return false;
  for (const TensorSpec &in : integerInputs(ex)) {
    auto it = all->find(in.name);
    if (it == all->end())
      continue;
    std::string where = path + ": tensor '" + in.name + "'";
    if (it->second.dtype != in.dtype) {
      Tensor converted;
      if (!convertTensor(it->second, in.dtype, it->second.shape, converted, err)) {
        err = where + ": " + err;
        return false;
      }
      it->second = std::move(converted);
    }
    if (!checkIndices(it->second, ex.indexRange(in.name), where, in.name, err))
      return false;
  }
  for (const auto &[name, t] : *all) {
    if (t.shape.empty()) {
      err = path + ": tensor '" + name + "' is a scalar; expected rows";
      return false;
    }
    if (s.trainRows && t.shape[0] != s.trainRows) {
      err = path + ": tensor '" + name + "' has " + std::to_string(t.shape[0]) +
            " rows but the others have " + std::to_string(s.trainRows);
      return false;
    }
    s.trainRows = t.shape[0];
  }
  s.train = [all, path](const std::vector<TensorSpec> &inputs, int64_t begin,
                        TensorMap &out, std::string &err) {
    out.clear();
    for (const TensorSpec &spec : inputs) {
      auto it = all->find(spec.name);
      if (it == all->end()) {
        err = path + " has no tensor for the input '" + spec.name + "'";
        return false;
      }
      if (spec.shape.empty() ||
          !sliceRows(it->second, begin, spec.shape[0], spec.dtype, spec.shape,
                     out[spec.name], err)) {
        err = "input '" + spec.name + "': " + (spec.shape.empty() ? "scalar" : err);
        return false;
      }
    }
    return true;
  };
  return true;
}

/// A flat token file: the first two integer inputs get (tokens, targets).
bool tokenData(const std::string &path, int width, const Executor &ex,
               DataSource &s, std::string &err) {
  auto tok = std::make_shared<std::vector<uint32_t>>();
  if (!readTokenFile(path, width, *tok, err))
    return false;
  // Every token is both an input id and a target: both ranges apply.
  std::vector<TensorSpec> ints = integerInputs(ex);
  for (size_t i = 0; i < ints.size() && i < 2; ++i)
    if (!checkIndices(*tok, ex.indexRange(ints[i].name), path, ints[i].name, err))
      return false;
  s.tokenWindows = true;
  s.trainRows = static_cast<int64_t>(tok->size()); // refined per batch shape
  s.train = [tok](const std::vector<TensorSpec> &inputs, int64_t begin,
                  TensorMap &out, std::string &err) {
    out.clear();
    if (inputs.size() != 2 || isFloat(inputs[0].dtype) ||
        isFloat(inputs[1].dtype) || inputs[0].shape.size() != 2 ||
        inputs[0].shape != inputs[1].shape) {
      err = "token data needs a model with two integer [batch, seq] inputs "
            "(tokens, targets)";
      return false;
    }
    int64_t b = inputs[0].shape[0], t = inputs[0].shape[1];
    Tensor x, y;
    tokenBatch(*tok, begin / b, b, t, x, y);
    return convertTensor(x, inputs[0].dtype, inputs[0].shape, out[inputs[0].name], err) &&
           convertTensor(y, inputs[1].dtype, inputs[1].shape, out[inputs[1].name], err);
  };
  return true;
}

/// A spec's kind and path: ("safetensors", P) for "safetensors:P" and
/// "P.safetensors"; ("u8", P) ...; ("fashion-mnist", "") ; ("", spec) when
/// unknown.
std::pair<std::string, std::string> splitSpec(const std::string &d) {
  if (d == "fashion-mnist")
    return {d, ""};
  for (const char *kind : {"safetensors", "u8", "u16", "u32"}) {
    std::string prefix = std::string(kind) + ":";
    if (d.rfind(prefix, 0) == 0)
      return {kind, d.substr(prefix.size())};
  }
  if (d.size() > 12 && d.compare(d.size() - 12, 12, ".safetensors") == 0)
    return {"safetensors", d};
  return {"", d};
}

constexpr const char *kFashionMnistFiles[] = {
    "/train-images-idx3-ubyte.gz", "/train-labels-idx1-ubyte.gz",
    "/t10k-images-idx3-ubyte.gz", "/t10k-labels-idx1-ubyte.gz"};

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// The metrics CSV: every write error is reported, never a silently short
/// file (a full disk shows at the flush, at the latest at the close).
class MetricsFile {
public:
  ~MetricsFile() {
    if (f_)
      std::fclose(f_);
  }
  bool open(const std::string &p, std::string &err) {
    path_ = p;
    if (p.empty())
      return true;
    f_ = std::fopen(p.c_str(), "w");
    if (!f_)
      return fail(err);
    return row(err, "kind,epoch,step,loss,samples_per_s,test_accuracy\n");
  }
  __attribute__((format(printf, 3, 4))) bool row(std::string &err,
                                                 const char *fmt, ...) {
    if (!f_)
      return true;
    va_list args;
    va_start(args, fmt);
    int n = std::vfprintf(f_, fmt, args);
    va_end(args);
    return n >= 0 || fail(err);
  }
  bool flush(std::string &err) {
    return !f_ || (std::fflush(f_) == 0 && !std::ferror(f_)) || fail(err);
  }
  bool close(std::string &err) {
    if (!f_)
      return true;
    bool bad = std::ferror(f_);
    bad |= std::fclose(f_) != 0;
    f_ = nullptr;
    return !bad || fail(err);
  }

private:
  bool fail(std::string &err) {
    err = "cannot write '" + path_ + "': " + std::strerror(errno ? errno : EIO);
    return false;
  }
  std::string path_;
  FILE *f_ = nullptr;
};

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string clock(double s) {
  long t = std::lround(std::max(0.0, s));
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

TrainResult failed(std::string err) {
  TrainResult r;
  r.status = TrainResult::Failed;
  r.message = std::move(err);
  return r;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public functions
//===----------------------------------------------------------------------===//

bool openDataSource(const std::string &spec, const std::string &dataDir,
                    const Executor &ex, DataSource &out, std::string &err) {
  out = DataSource();
  auto [kind, path] = splitSpec(spec);
  if (kind == "fashion-mnist")
    return fashionMnist(dataDir, ex, out, err);
  if (kind == "safetensors")
    return safetensorsData(path, ex, out, err);
  if (kind == "u8") // bytes of any file: a text file, byte-level
    return tokenData(path, 1, ex, out, err);
  if (kind == "u16")
    return tokenData(path, 2, ex, out, err);
  if (kind == "u32")
    return tokenData(path, 4, ex, out, err);
  err = "unknown --data '" + spec +
        "' (expected fashion-mnist, safetensors:PATH, u8:PATH, u16:PATH or u32:PATH)";
  return false;
}

std::vector<std::string> dataSourceFiles(const std::string &spec,
                                         const std::string &dataDir) {
  auto [kind, path] = splitSpec(spec);
  if (kind != "fashion-mnist")
    return {path};
  std::vector<std::string> files;
  for (const char *f : kFashionMnistFiles)
    files.push_back(dataDir + f);
  return files;
}

bool entryInputs(const Executor &ex, std::string_view entry,
                 const TensorMap &file, const std::string &path, TensorMap &in,
                 std::string &err) {
  // Inputs by name; a tensor saved with another dtype of the same kind (i64
  // labels for an i32 input) is converted.
  in.clear();
  for (const TensorSpec &s : ex.inputsOf(entry)) {
    auto it = file.find(s.name);
    if (it == file.end()) {
      err = path + ": no tensor for the input '" + s.name + "' (" +
            dtypeName(s.dtype) + shapeString(s.shape) + ")";
      return false;
    }
    if (it->second.shape != s.shape) {
      err = path + ": tensor '" + s.name + "' is " +
            shapeString(it->second.shape) + " but the model expects " +
            dtypeName(s.dtype) + shapeString(s.shape);
      return false;
    }
    std::string where = path + ": tensor '" + s.name + "'";
    if (!convertTensor(it->second, s.dtype, s.shape, in[s.name], err)) {
      err = where + ": " + err;
      return false;
    }
    if (!checkIndices(in[s.name], ex.indexRange(s.name), where, s.name, err))
      return false;
  }
  return true;
}

/// ", N threads" where the CPU code runs the entries (docs/cpu-backend.md:
/// its parallel loops' thread count; 1 where it has none), else nothing.
static std::string threadsNote(const Executor &ex) {
  if (ex.deviceDescription().rfind("cpu", 0) != 0)
    return "";
  int n = ex.threads();
  return ", " + std::to_string(n) + (n == 1 ? " thread" : " threads");
}

std::string memoryLine(const Executor &ex) {
  const Json &plan = ex.manifest().memory;
  auto planned = [&](const char *key) -> int64_t {
    const Json *v = jsonGet(plan, key);
    return v ? jsonInt(*v).value_or(-1) : -1;
  };
  Executor::MemoryUse use = ex.memoryUse();
  int64_t persistent = use.persistentBytes;
  int64_t measured = persistent + use.arenaBytes + use.heapPeakBytes;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "memory: planned peak %" PRId64 " (persistent %" PRId64
                ", arena %" PRId64 "); measured %" PRId64 " (persistent %" PRId64
                ", arena %" PRId64 ", code heap peak %" PRId64 " in %" PRId64
                " allocations%s)",
                planned("peak_bytes"), planned("persistent_bytes"),
                planned("transient_bytes") +
                    std::max<int64_t>(0, planned("scratch_bytes")),
                measured, persistent, use.arenaBytes, use.heapPeakBytes,
                use.heapAllocations,
                use.heapCounted ? "" : ", not counted by this artifact");
  std::string line = buf;
  // A GPU's own allocations by its plan, next to what they measured: the
  // drop of its free memory across them (a real driver rounds each
  // allocation up to its page size).
  if (use.deviceBytes >= 0) {
    const DeviceMemory &p = use.devicePlan;
    std::snprintf(buf, sizeof buf,
                  "; device: planned %" PRId64 " (arena %" PRId64
                  ", block %" PRId64 ", constants %" PRId64
                  ", staging %" PRId64 "), measured %" PRId64,
                  p.total(), p.arena, p.block, p.constants, p.staging,
                  use.deviceBytes);
    line += buf;
  }
  return line;
}

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

void Trainer::say(const char *fmt, ...) {
  if (!opts_.out)
    return;
  va_list args;
  va_start(args, fmt);
  std::vfprintf(opts_.out, fmt, args);
  va_end(args);
  std::fflush(opts_.out);
}

bool Trainer::start(std::string &err) {
  if (ex_.hasEntry("init") && !ex_.init(opts_.seed, err))
    return false;
  if (!opts_.resume.empty() && !ex_.loadCheckpoint(opts_.resume, false, err))
    return false;
  return opts_.initFrom.empty() || initFromCheckpoint(ex_, opts_.initFrom, err);
}

bool Trainer::testAccuracy(DataSource &src, double &accuracy,
                           std::string &err) {
  err.clear();
  const TensorSpec *logits = ex_.logits();
  if (!logits || !src.test || src.testRows <= 0) {
    err = "no test split or no logits to measure accuracy on";
    return false;
  }
  std::vector<TensorSpec> evalInputs = ex_.inputsOf("eval");
  int64_t EB = batchSizeOf(evalInputs), correct = 0;
  int64_t classes = logits->shape[1];
  const int64_t *labels = src.testLabels.as<int64_t>();
  int64_t rows = testRowsOf(src);
  for (int64_t begin = 0; EB > 0 && begin < rows; begin += EB) {
    if (stopRequested())
      return false;
    TensorMap in, out;
    if (!src.test(evalInputs, begin, in, err) || !ex_.eval(in, out, err))
      return false;
    const Tensor &l = out.at(logits->name);
    for (int64_t r = 0; r < EB && begin + r < rows; ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (l.at(r * classes + c) > l.at(r * classes + best))
          best = c;
      correct += best == labels[begin + r];
    }
  }
  accuracy = 100.0 * correct / rows;
  return true;
}

int64_t Trainer::testRowsOf(const DataSource &src) const {
  return opts_.testLimit > 0 ? std::min(opts_.testLimit, src.testRows)
                             : src.testRows;
}

TrainResult Trainer::train(DataSource &src) {
  const std::string &label = opts_.label;
  if (!ex_.hasEntry("train_step"))
    return failed(label + ": the model has no entry point 'train_step'");
  std::vector<TensorSpec> inputs = ex_.inputsOf("train_step");
  int64_t B = batchSizeOf(inputs);
  if (B <= 0)
    return failed(label + ": train_step has no batched input");
  int64_t steps = src.trainRows / B;
  if (src.tokenWindows) {
    const TensorSpec &t = inputs.front();
    steps = t.shape.size() == 2 ? tokenBatches(src.trainRows, B, t.shape[1]) : 0;
  }
  if (steps <= 0)
    return failed("the data has fewer rows than one batch of " + std::to_string(B));
  if (opts_.batchLimit > 0)
    steps = std::min(steps, opts_.batchLimit);
  // Samples of one step over all ranks of a data-parallel job.
  int64_t G = B * std::max(1, opts_.ranks);

  std::string err;
  MetricsFile metrics;
  if (!metrics.open(opts_.metrics, err))
    return failed(err);
  const TensorSpec *logits = ex_.logits();
  bool tty = opts_.liveProgress;
  const std::string &model = ex_.manifest().model;
  say("%s: %" PRId64 " steps per epoch, batch %" PRId64 ", %zu tensors "
      "of state, starting at step %" PRId64 "%s\n",
      model.empty() ? label.c_str() : model.c_str(), steps, B,
      ex_.state().size(), ex_.step(), threadsNote(ex_).c_str());

  TrainResult result;
  // A stop at a step boundary: the checkpoint (if any steps ran), closed
  // metrics, and where it happened.
  auto stopped = [&](const std::string &where, bool ranSteps) {
    bool saved = ranSteps && !opts_.save.empty();
    if (saved && !ex_.saveCheckpoint(opts_.save, err))
      return failed(err);
    if (!metrics.close(err))
      return failed(err);
    result.status = TrainResult::Stopped;
    result.message = "interrupted " + where + " (step counter " +
                     std::to_string(ex_.step()) + ")" +
                     (saved ? "; checkpoint saved to '" + opts_.save + "'"
                            : "; nothing saved");
    return result;
  };
  if (stopRequested())
    return stopped("before the first step", false);

  for (int64_t epoch = 1; epoch <= opts_.epochs; ++epoch) {
    // A new order of the training set each epoch, reproducible from the seed.
    if (src.shuffle)
      src.shuffle(uint64_t(opts_.seed) * 1000003u + uint64_t(epoch));
    double start = now(), lastPrint = 0, sum = 0;
    // Steps start ahead of their losses (Executor::startStep); `taken`
    // counts the losses taken, which are what progress and metrics show.
    // The step counter is counted here: reading it from a GPU would wait
    // for the step.
    int64_t taken = 0, counter = ex_.step();
    bool counted = ex_.hasStepCounter();
    auto takeLosses = [&](size_t keep) -> bool {
      while (ex_.stepsInFlight() > keep) {
        double loss = 0;
        if (!ex_.takeLoss(loss, err))
          return false;
        int64_t i = taken++;
        counter += counted ? 1 : 0;
        if (epoch == 1 && i == 0)
          say("%s\n", memoryLine(ex_).c_str());
        if (!std::isfinite(loss)) {
          err = "the loss is " + std::to_string(loss) + " at step " +
                std::to_string(counter) + " (diverged)";
          return false;
        }
        sum += loss;
        double t = now() - start, rate = (i + 1) * G / std::max(t, 1e-9);
        double eta = (steps - i - 1) * G / std::max(rate, 1e-9);
        if (!metrics.row(err, "step,%" PRId64 ",%" PRId64 ",%.9g,%.1f,\n", epoch,
                         counter, loss, rate))
          return false;
        bool last = i + 1 == steps;
        if (tty && (t - lastPrint > 0.1 || last)) {
          say("\repoch %" PRId64 " step %" PRId64 "/%" PRId64
              " loss %.4f %.0f samples/s ETA %s   ",
              epoch, i + 1, steps, loss, rate, clock(eta).c_str());
          lastPrint = t;
        } else if (!tty && ((i + 1) % 100 == 0 || last)) {
          say("epoch %" PRId64 " step %" PRId64 "/%" PRId64
              " loss %.4f %.0f samples/s ETA %s\n",
              epoch, i + 1, steps, loss, rate, clock(eta).c_str());
        }
      }
      return true;
    };
    size_t every = size_t(std::max<int64_t>(1, opts_.lossEvery));
    for (int64_t i = 0; i < steps; ++i) {
      if (stopRequested()) {
        // The steps already started count: their losses are taken (and
        // logged) before the checkpoint.
        if (!takeLosses(0))
          return failed(err);
        if (tty)
          say("\n");
        return stopped("at epoch " + std::to_string(epoch) + " after step " +
                           std::to_string(i) + "/" + std::to_string(steps),
                       epoch > 1 || i > 0);
      }
      TensorMap batch;
      if (epoch == 1 && i == 0)
        ex_.resetHeapPeak();
      if (!src.train(inputs, i * B, batch, err) || !ex_.startStep(batch, err))
        return failed(err);
      // Every `every` steps the losses come down, all but the newest step's:
      // it keeps the GPU busy while the host waits and prints.
      if (ex_.stepsInFlight() > every && !takeLosses(1))
        return failed(err);
    }
    if (!takeLosses(0))
      return failed(err);
    EpochStats stats;
    stats.epoch = epoch;
    stats.steps = steps;
    stats.seconds = now() - start;
    stats.meanLoss = sum / steps;
    stats.samplesPerSecond = steps * G / std::max(stats.seconds, 1e-9);
    if (tty)
      say("\n");
    std::string acc = "";
    if (logits && src.test && src.testRows > 0) {
      if (!testAccuracy(src, stats.accuracy, err))
        return err.empty() ? stopped("at epoch " + std::to_string(epoch) +
                                         " during evaluation",
                                     true)
                           : failed(err);
      char buf[96];
      std::snprintf(buf, sizeof buf, ", test accuracy %.2f%% (%" PRId64 " samples)",
                    stats.accuracy, testRowsOf(src));
      acc = buf;
    }
    say("epoch %" PRId64 ": mean loss %.4f, %.1f s, %.0f samples/s%s\n", epoch,
        stats.meanLoss, stats.seconds, stats.samplesPerSecond, acc.c_str());
    if (!metrics.row(err, "epoch,%" PRId64 ",%" PRId64 ",%.9g,%.1f,", epoch,
                     ex_.step(), stats.meanLoss, stats.samplesPerSecond) ||
        (stats.accuracy >= 0 && !metrics.row(err, "%.4f", stats.accuracy)) ||
        !metrics.row(err, "\n") || !metrics.flush(err))
      return failed(err);
    if (!opts_.save.empty() && !ex_.saveCheckpoint(opts_.save, err))
      return failed(err);
    result.epochs.push_back(stats);
    if (onEpoch)
      onEpoch(stats);
  }
  if (!metrics.close(err))
    return failed(err);
  return result;
}

TrainResult Trainer::repeat(const TensorMap &batch, int64_t steps,
                            bool printLoss, bool printTime) {
  if (!ex_.hasEntry("train_step"))
    return failed(opts_.label + ": the model has no entry point 'train_step'");
  std::string err;
  ex_.resetHeapPeak();
  // As in train(): steps run ahead of their losses, taken every
  // `lossEvery` steps and printed in order.
  int64_t printed = 0;
  // The steady-state step time: from the first step's loss (load, first
  // launch and graph capture are behind it) to the last one's.
  double firstDone = 0;
  auto takeLosses = [&](size_t keep) -> bool {
    while (ex_.stepsInFlight() > keep) {
      double loss = 0;
      if (!ex_.takeLoss(loss, err))
        return false;
      if (printLoss)
        say("step %" PRId64 " loss %.9g\n", printed, loss);
      if (printed == 0)
        firstDone = now();
      ++printed;
    }
    return true;
  };
  size_t every = size_t(std::max<int64_t>(1, opts_.lossEvery));
  for (int64_t i = 0; i < steps; ++i) {
    if (stopRequested()) {
      if (!takeLosses(0))
        return failed(err);
      TrainResult r;
      r.status = TrainResult::Stopped;
      r.message = "interrupted after step " + std::to_string(i) + " of " +
                  std::to_string(steps) + "; nothing saved";
      return r;
    }
    if (!ex_.startStep(batch, err))
      return failed(err);
    if (ex_.stepsInFlight() > every && !takeLosses(1))
      return failed(err);
  }
  if (!takeLosses(0))
    return failed(err);
  if (printTime && printed > 1) {
    double seconds = now() - firstDone;
    say("time: steps 2-%" PRId64 " in %.6f s, %.3f ms/step%s\n", printed,
        seconds, 1e3 * seconds / double(printed - 1),
        threadsNote(ex_).c_str());
  }
  return TrainResult();
}

} // namespace tgrt
