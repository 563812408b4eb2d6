//===- tg-run.cpp - train, evaluate and cross-check a .tgx artifact -------===//
//
// The command-line face of libtgrt; it links neither MLIR nor LLVM.
//
//   tg-run MODEL.tgx --describe
//   tg-run MODEL.tgx --data fashion-mnist --epochs 3 [--batch-limit N]
//          [--save P] [--resume P] [--metrics m.csv] [--seed S]
//   tg-run MODEL.tgx --load P.safetensors --batch B.safetensors --steps N
//          [--save-params OUT.safetensors] [--save-grads G.safetensors]
//          [--print-loss]
//
// Every user mistake is one line, "tg-run: error: ...", and exit status 1.
// Outputs are checked before any work (writable, regular, not an input);
// Ctrl-C stops training at the next step boundary, saves, and exits 130.
// docs/runtime.md describes the modes and the data formats.
//
//===----------------------------------------------------------------------===//
#include "runtime/Checkpoint.h"
#include "runtime/Data.h"
#include "runtime/Executor.h"
#include "runtime/Safetensors.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace tgrt;

namespace {

[[noreturn]] void die(const std::string &msg) {
  std::fflush(stdout);
  std::fprintf(stderr, "tg-run: error: %s\n", msg.c_str());
  std::exit(1);
}

const char *kUsage =
    "usage: tg-run MODEL.tgx --describe\n"
    "       tg-run MODEL.tgx --data fashion-mnist|safetensors:P|u8:P|u16:P|u32:P\n"
    "              [--epochs N] [--batch-limit N] [--save P] [--resume P]\n"
    "              [--metrics m.csv] [--seed S] [--data-dir D]\n"
    "              [--init-from PRETRAINED.safetensors]\n"
    "       tg-run MODEL.tgx --load P.safetensors --batch B.safetensors\n"
    "              [--steps N] [--save-params OUT.safetensors]\n"
    "              [--save-grads G.safetensors] [--print-loss] [--seed S]\n"
    "              [--memory]\n"
    "  (--load may be left out: the parameters then come from init(--seed))\n";

struct Options {
  std::string model, data, dataDir = kFashionMnistDir, save, resume, metrics;
  std::string load, batch, saveParams, saveGrads, initFrom;
  int64_t epochs = 1, batchLimit = -1, steps = 1, seed = 0;
  bool describe = false, printLoss = false, memory = false;
};

int64_t parseInt(const std::string &flag, const std::string &s, int64_t min) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || s.empty() || *end || v < min)
    die(flag + " expects an integer >= " + std::to_string(min) + ", got '" +
        s + "'");
  return v;
}

/// CLI11 recognises the options; the values are checked here so that every
/// mistake reads as one of our lines. Each option takes 0 or 1 values so a
/// missing one is ours to report, and the last of a repeated option wins.
Options parseArgs(int argc, char **argv) {
  Options o;
  CLI::App app;
  app.set_help_flag();
  app.allow_extras();
  bool help = false;
  app.add_flag("-h,--help", help);
  app.add_flag("--describe", o.describe);
  app.add_flag("--print-loss", o.printLoss);
  app.add_flag("--memory", o.memory);
  app.add_option("model", o.model);
  std::string epochs, batchLimit, steps, seed;
  std::vector<std::pair<CLI::Option *, std::string *>> valued;
  auto value = [&](const char *name, std::string &into) {
    CLI::Option *opt = app.add_option(name, into)->expected(0, 1)->multi_option_policy(
        CLI::MultiOptionPolicy::TakeLast);
    valued.emplace_back(opt, &into);
  };
  value("--data", o.data);
  value("--data-dir", o.dataDir);
  value("--epochs", epochs);
  value("--batch-limit", batchLimit);
  value("--steps", steps);
  value("--seed", seed);
  value("--save", o.save);
  value("--resume", o.resume);
  value("--init-from", o.initFrom);
  value("--metrics", o.metrics);
  value("--load", o.load);
  value("--batch", o.batch);
  value("--save-params", o.saveParams);
  value("--save-grads", o.saveGrads);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    die(e.what());
  }
  if (help) {
    std::fputs(kUsage, stdout);
    std::exit(0);
  }
  for (const std::string &a : app.remaining())
    die(a.size() > 1 && a[0] == '-'
            ? "unknown option '" + a + "' (see tg-run --help)"
            : "unexpected argument '" + a + "'");
  for (auto &[opt, into] : valued)
    if (opt->count() && into->empty())
      die(opt->get_name() + " needs a value");
  if (!epochs.empty()) o.epochs = parseInt("--epochs", epochs, 1);
  if (!batchLimit.empty()) o.batchLimit = parseInt("--batch-limit", batchLimit, 1);
  if (!steps.empty()) o.steps = parseInt("--steps", steps, 0);
  if (!seed.empty()) o.seed = parseInt("--seed", seed, INT64_MIN);
  if (o.model.empty())
    die("no model given; usage: tg-run MODEL.tgx --describe | --data ... | "
        "--load ... --batch ...");
  int modes = o.describe + !o.data.empty() + (!o.load.empty() || !o.batch.empty());
  if (modes != 1)
    die(modes ? "choose one of --describe, --data, or --load/--batch"
              : "nothing to do: give --describe, --data, or --load and --batch");
  if (!o.initFrom.empty() && (!o.resume.empty() || !o.load.empty()))
    die("--init-from sets the parameters; it cannot go with --resume or --load");
  if (!o.load.empty() && o.batch.empty())
    die("--load needs --batch B.safetensors (the batch to train on)");
  return o;
}

//===----------------------------------------------------------------------===//
// Signals and files
//===----------------------------------------------------------------------===//

/// The signal that asked training to stop (0: none).
volatile sig_atomic_t gStop = 0;

/// The first SIGINT/SIGTERM/SIGHUP asks to stop at the next step boundary
/// (so the checkpoint written then is a consistent one); a second one quits
/// at once, removing the temporary file of a save in progress.
extern "C" void onStopSignal(int sig) {
  if (gStop) {
    removePendingTemporary();
    _exit(128 + sig);
  }
  gStop = sig;
}

void installSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    sigaction(sig, &sa, nullptr);
  // Past a file size limit, write() then fails with EFBIG, which we report,
  // instead of the process dying silently.
  std::signal(SIGXFSZ, SIG_IGN);
}

/// The input files of a run (the model, data, checkpoints and batches that
/// are read): an output must not be one of them.
std::vector<std::string> inputFiles(const Options &o) {
  std::vector<std::string> in{o.model, o.load, o.batch};
  const std::string &d = o.data;
  if (d == "fashion-mnist")
    for (const char *f : {"/train-images-idx3-ubyte.gz", "/train-labels-idx1-ubyte.gz",
                          "/t10k-images-idx3-ubyte.gz", "/t10k-labels-idx1-ubyte.gz"})
      in.push_back(o.dataDir + f);
  else if (size_t colon = d.find(':'); colon != std::string::npos)
    in.push_back(d.substr(colon + 1));
  else
    in.push_back(d);
  return in;
}

bool sameFile(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  if (a.empty() || b.empty())
    return false;
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0)
    return a == b;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/// Every output is checked before anything runs: writable, a regular file
/// or absent, not an input, not another output. --save may be the --resume
/// checkpoint (training continues in place; the write is atomic).
void checkOutputs(const Options &o) {
  std::vector<std::pair<const char *, std::string>> outs{
      {"--save", o.save}, {"--metrics", o.metrics},
      {"--save-params", o.saveParams}, {"--save-grads", o.saveGrads}};
  std::vector<std::string> ins = inputFiles(o);
  std::string err;
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto &[flag, path] = outs[i];
    if (path.empty())
      continue;
    for (const std::string &in : ins)
      if (sameFile(path, in))
        die(std::string(flag) + " '" + path + "' is an input of this run; "
            "refusing to overwrite it");
    for (size_t j = 0; j < i; ++j)
      if (sameFile(path, outs[j].second))
        die(std::string(flag) + " and " + outs[j].first + " name the same file '" +
            path + "'");
    if (!checkWritable(path, err))
      die(err);
  }
}

/// The metrics CSV: every write error is reported, never a silently short
/// file (a full disk shows at the flush, at the latest at the close).
struct MetricsFile {
  std::string path;
  FILE *f = nullptr;
  void open(const std::string &p) {
    path = p;
    if (p.empty())
      return;
    f = std::fopen(p.c_str(), "w");
    if (!f)
      fail();
    row("kind,epoch,step,loss,samples_per_s,test_accuracy\n");
  }
  __attribute__((format(printf, 2, 3))) void row(const char *fmt, ...) {
    if (!f)
      return;
    va_list args;
    va_start(args, fmt);
    int n = std::vfprintf(f, fmt, args);
    va_end(args);
    if (n < 0)
      fail();
  }
  void flush() {
    if (f && (std::fflush(f) != 0 || std::ferror(f)))
      fail();
  }
  void close() {
    if (!f)
      return;
    bool bad = std::ferror(f);
    bad |= std::fclose(f) != 0;
    f = nullptr;
    if (bad)
      fail();
  }
  [[noreturn]] void fail() {
    die("cannot write '" + path + "': " + std::strerror(errno ? errno : EIO));
  }
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

//===----------------------------------------------------------------------===//
// Data sources: fill an entry's inputs for rows [begin, begin + B).
//===----------------------------------------------------------------------===//

using BatchFn = std::function<bool(const std::vector<TensorSpec> &, int64_t,
                                   TensorMap &, std::string &)>;

struct Source {
  int64_t trainRows = 0, testRows = 0;
  BatchFn train, test;  ///< (inputs of the entry, first row, out, err)
  Tensor testLabels;    ///< i64 [testRows], for accuracy
  /// Reorders the training rows for an epoch (absent: fixed order).
  std::function<void(uint64_t seed)> shuffle;
};

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
BatchFn labelledBatches(std::shared_ptr<Dataset> d) {
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

Source fashionMnist(const Options &o, const Executor &ex) {
  auto train = std::make_shared<Dataset>(), test = std::make_shared<Dataset>();
  std::string err;
  if (!loadFashionMnist(o.dataDir, true, *train, err) ||
      !loadFashionMnist(o.dataDir, false, *test, err))
    die(err + " (install Debian's dataset-fashion-mnist, or --data-dir)");
  // Labels 0-9 against a model with fewer classes train with a loss of 0.
  for (const TensorSpec &in : integerInputs(ex))
    for (const Dataset *d : {train.get(), test.get()})
      if (!checkIndices(d->labels, ex.indexRange(in.name), d->labelsPath, in.name, err))
        die(err);
  Source s;
  s.trainRows = train->size();
  s.testRows = test->size();
  s.testLabels = test->labels;
  s.train = labelledBatches(train);
  s.test = labelledBatches(test);
  s.shuffle = [train](uint64_t seed) {
    shuffleRows({&train->inputs, &train->labels}, seed);
  };
  return s;
}

/// A safetensors file whose tensors are named after the model's inputs, all
/// with the same number of rows.
Source safetensorsData(const std::string &path, const Executor &ex) {
  auto all = std::make_shared<TensorMap>();
  std::string err;
  if (!readSafetensors(path, *all, err))
    die(err);
  for (const TensorSpec &in : integerInputs(ex)) {
    auto it = all->find(in.name);
    if (it == all->end())
      continue;
    std::string where = path + ": tensor '" + in.name + "'";
    if (it->second.dtype != in.dtype) {
      Tensor converted;
      if (!convertTensor(it->second, in.dtype, it->second.shape, converted, err))
        die(where + ": " + err);
      it->second = std::move(converted);
    }
    if (!checkIndices(it->second, ex.indexRange(in.name), where, in.name, err))
      die(err);
  }
  Source s;
  for (const auto &[name, t] : *all) {
    if (t.shape.empty())
      die(path + ": tensor '" + name + "' is a scalar; expected rows");
    if (s.trainRows && t.shape[0] != s.trainRows)
      die(path + ": tensor '" + name + "' has " + std::to_string(t.shape[0]) +
          " rows but the others have " + std::to_string(s.trainRows));
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
  return s;
}

/// A flat token file: the first two integer inputs get (tokens, targets).
Source tokenData(const std::string &path, int width, const Executor &ex) {
  auto tok = std::make_shared<std::vector<uint32_t>>();
  std::string err;
  if (!readTokenFile(path, width, *tok, err))
    die(err);
  // Every token is both an input id and a target: both ranges apply.
  std::vector<TensorSpec> ints = integerInputs(ex);
  for (size_t i = 0; i < ints.size() && i < 2; ++i)
    if (!checkIndices(*tok, ex.indexRange(ints[i].name), path, ints[i].name, err))
      die(err);
  Source s;
  s.trainRows = static_cast<int64_t>(tok->size()); // refined per batch shape
  s.train = [tok, path](const std::vector<TensorSpec> &inputs, int64_t begin,
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
  return s;
}

Source openData(const Options &o, const Executor &ex) {
  const std::string &d = o.data;
  auto after = [&](const char *p) { return d.substr(std::strlen(p)); };
  if (d == "fashion-mnist")
    return fashionMnist(o, ex);
  if (d.rfind("safetensors:", 0) == 0)
    return safetensorsData(after("safetensors:"), ex);
  if (d.size() > 12 && d.compare(d.size() - 12, 12, ".safetensors") == 0)
    return safetensorsData(d, ex);
  if (d.rfind("u8:", 0) == 0) // bytes of any file: a text file, byte-level
    return tokenData(after("u8:"), 1, ex);
  if (d.rfind("u16:", 0) == 0)
    return tokenData(after("u16:"), 2, ex);
  if (d.rfind("u32:", 0) == 0)
    return tokenData(after("u32:"), 4, ex);
  die("unknown --data '" + d +
      "' (expected fashion-mnist, safetensors:PATH, u8:PATH, u16:PATH or u32:PATH)");
}

//===----------------------------------------------------------------------===//
// Modes
//===----------------------------------------------------------------------===//

std::unique_ptr<Executor> loadModel(const std::string &path,
                                    std::unique_ptr<Artifact> &artifact) {
  std::string err;
  artifact = Artifact::open(path, err);
  if (!artifact)
    die(err);
  auto ex = Executor::load(*artifact, err);
  if (!ex)
    die(err);
  return ex;
}

int describe(const Options &o) {
  std::unique_ptr<Artifact> artifact;
  std::string err;
  artifact = Artifact::open(o.model, err);
  if (!artifact)
    die(err);
  Manifest m;
  if (!Manifest::parse(artifact->section("manifest"), m, err))
    die(o.model + ": " + err);
  std::printf("%s\n", dumpJson(m.describe(), 2).c_str());
  return 0;
}

/// One line: the plan's memory of train_step (from the manifest) next to
/// what this process measured around the steps it ran: the runtime's two
/// allocations (the persistent block with parameters, optimizer state and
/// the staged batch; the arena) and the code's own allocations.
void printMemory(const Executor &ex) {
  const Json &plan = ex.manifest().memory;
  auto planned = [&](const char *key) -> int64_t {
    const Json *v = jsonGet(plan, key);
    return v ? jsonInt(*v).value_or(-1) : -1;
  };
  Executor::MemoryUse use = ex.memoryUse();
  int64_t persistent = use.persistentBytes;
  int64_t measured = persistent + use.arenaBytes + use.heapPeakBytes;
  std::printf("memory: planned peak %" PRId64 " (persistent %" PRId64
              ", arena %" PRId64 "); measured %" PRId64 " (persistent %" PRId64
              ", arena %" PRId64 ", code heap peak %" PRId64 " in %" PRId64
              " allocations%s)\n",
              planned("peak_bytes"), planned("persistent_bytes"),
              planned("transient_bytes") + std::max<int64_t>(0, planned("scratch_bytes")),
              measured, persistent, use.arenaBytes,
              use.heapPeakBytes, use.heapAllocations,
              use.heapCounted ? "" : ", not counted by this artifact");
  std::fflush(stdout);
}

/// Saves the checkpoint if --save was given (the state after a whole step).
void saveIfAsked(const Options &o, const Executor &ex) {
  std::string err;
  if (!o.save.empty() && !ex.saveCheckpoint(o.save, err))
    die(err);
}

/// Stops after a SIGINT/SIGTERM/SIGHUP at a step boundary: the checkpoint
/// (if any steps ran), one line saying where, and exit 128 + the signal.
[[noreturn]] void stopOnSignal(const Options &o, const Executor &ex,
                               MetricsFile &metrics, const std::string &where,
                               bool ranSteps) {
  if (ranSteps)
    saveIfAsked(o, ex);
  metrics.close();
  std::fflush(stdout);
  std::fprintf(stderr, "tg-run: interrupted %s (step counter %" PRId64 ")%s\n",
               where.c_str(), ex.step(),
               ranSteps && !o.save.empty()
                   ? ("; checkpoint saved to '" + o.save + "'").c_str()
                   : "; nothing saved");
  std::exit(128 + gStop);
}

/// Accuracy (%) of `eval` on the test split, or -1 if interrupted.
double testAccuracy(Executor &ex, Source &src, const TensorSpec &logits) {
  std::vector<TensorSpec> evalInputs = ex.inputsOf("eval");
  int64_t EB = batchSizeOf(evalInputs), correct = 0;
  int64_t classes = logits.shape[1];
  std::string err;
  for (int64_t begin = 0; EB > 0 && begin < src.testRows; begin += EB) {
    if (gStop)
      return -1;
    TensorMap in, out;
    if (!src.test(evalInputs, begin, in, err) || !ex.eval(in, out, err))
      die(err);
    const Tensor &l = out.at(logits.name);
    for (int64_t r = 0; r < EB && begin + r < src.testRows; ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (l.at(r * classes + c) > l.at(r * classes + best))
          best = c;
      correct += best == src.testLabels.as<int64_t>()[begin + r];
    }
  }
  return 100.0 * correct / src.testRows;
}

int train(const Options &o) {
  std::unique_ptr<Artifact> artifact;
  auto ex = loadModel(o.model, artifact);
  if (!ex->hasEntry("train_step"))
    die(o.model + ": the model has no entry point 'train_step'");
  Source src = openData(o, *ex);
  std::string err;
  if (ex->hasEntry("init") && !ex->init(o.seed, err))
    die(err);
  if (!o.resume.empty() && !ex->loadCheckpoint(o.resume, false, err))
    die(err);
  if (!o.initFrom.empty() && !initFromCheckpoint(*ex, o.initFrom, err))
    die(err);

  std::vector<TensorSpec> inputs = ex->inputsOf("train_step");
  int64_t B = batchSizeOf(inputs);
  if (B <= 0)
    die(o.model + ": train_step has no batched input");
  int64_t steps = src.trainRows / B;
  if (o.data.rfind("u8:", 0) == 0 || o.data.rfind("u16:", 0) == 0 ||
      o.data.rfind("u32:", 0) == 0) {
    const TensorSpec &t = inputs.front();
    steps = t.shape.size() == 2 ? tokenBatches(src.trainRows, B, t.shape[1]) : 0;
  }
  if (steps <= 0)
    die("the data has fewer rows than one batch of " + std::to_string(B));
  if (o.batchLimit > 0)
    steps = std::min(steps, o.batchLimit);

  MetricsFile metrics;
  metrics.open(o.metrics);
  const TensorSpec *logits = ex->logits();
  bool tty = isatty(fileno(stdout));
  std::printf("%s: %" PRId64 " steps per epoch, batch %" PRId64 ", %zu tensors "
              "of state, starting at step %" PRId64 "\n",
              ex->manifest().model.empty() ? o.model.c_str()
                                           : ex->manifest().model.c_str(),
              steps, B, ex->state().size(), ex->step());
  std::fflush(stdout);
  if (gStop)
    stopOnSignal(o, *ex, metrics, "before the first step", false);

  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    // A new order of the training set each epoch, reproducible from --seed.
    if (src.shuffle)
      src.shuffle(uint64_t(o.seed) * 1000003u + uint64_t(epoch));
    double start = now(), lastPrint = 0, sum = 0;
    for (int64_t i = 0; i < steps; ++i) {
      if (gStop) {
        if (tty)
          std::printf("\n");
        stopOnSignal(o, *ex, metrics,
                     "at epoch " + std::to_string(epoch) + " after step " +
                         std::to_string(i) + "/" + std::to_string(steps),
                     epoch > 1 || i > 0);
      }
      TensorMap batch;
      double loss = 0;
      bool first = epoch == 1 && i == 0;
      if (first)
        ex->resetHeapPeak();
      if (!src.train(inputs, i * B, batch, err) || !ex->trainStep(batch, loss, err))
        die(err);
      if (first)
        printMemory(*ex);
      if (!std::isfinite(loss))
        die("the loss is " + std::to_string(loss) + " at step " +
            std::to_string(ex->step()) + " (diverged)");
      sum += loss;
      double t = now() - start, rate = (i + 1) * B / std::max(t, 1e-9);
      double eta = (steps - i - 1) * B / std::max(rate, 1e-9);
      metrics.row("step,%" PRId64 ",%" PRId64 ",%.9g,%.1f,\n", epoch, ex->step(),
                  loss, rate);
      bool last = i + 1 == steps;
      if (tty && (t - lastPrint > 0.1 || last)) {
        std::printf("\repoch %" PRId64 " step %" PRId64 "/%" PRId64
                    " loss %.4f %.0f samples/s ETA %s   ",
                    epoch, i + 1, steps, loss, rate, clock(eta).c_str());
        std::fflush(stdout);
        lastPrint = t;
      } else if (!tty && ((i + 1) % 100 == 0 || last)) {
        std::printf("epoch %" PRId64 " step %" PRId64 "/%" PRId64
                    " loss %.4f %.0f samples/s ETA %s\n",
                    epoch, i + 1, steps, loss, rate, clock(eta).c_str());
        std::fflush(stdout);
      }
    }
    double secs = now() - start;
    if (tty)
      std::printf("\n");
    std::string acc = "";
    double accuracy = -1;
    if (logits && src.test && src.testRows > 0) {
      accuracy = testAccuracy(*ex, src, *logits);
      if (accuracy < 0)
        stopOnSignal(o, *ex, metrics,
                     "at epoch " + std::to_string(epoch) + " during evaluation",
                     true);
      char buf[96];
      std::snprintf(buf, sizeof buf, ", test accuracy %.2f%% (%" PRId64 " samples)",
                    accuracy, src.testRows);
      acc = buf;
    }
    std::printf("epoch %" PRId64 ": mean loss %.4f, %.1f s, %.0f samples/s%s\n",
                epoch, sum / steps, secs, steps * B / std::max(secs, 1e-9),
                acc.c_str());
    std::fflush(stdout);
    metrics.row("epoch,%" PRId64 ",%" PRId64 ",%.9g,%.1f,", epoch, ex->step(),
                sum / steps, steps * B / std::max(secs, 1e-9));
    if (accuracy >= 0)
      metrics.row("%.4f", accuracy);
    metrics.row("\n");
    metrics.flush();
    saveIfAsked(o, *ex);
  }
  metrics.close();
  return 0;
}

/// Cross-check mode: parameters from --load, one batch from --batch.
int crossCheck(const Options &o) {
  std::unique_ptr<Artifact> artifact;
  auto ex = loadModel(o.model, artifact);
  std::string err;
  if (ex->hasEntry("init") && !ex->init(o.seed, err))
    die(err);
  if (!o.load.empty() && !ex->loadCheckpoint(o.load, false, err))
    die(err);
  if (!o.initFrom.empty() && !initFromCheckpoint(*ex, o.initFrom, err))
    die(err);
  TensorMap file;
  if (!readSafetensors(o.batch, file, err))
    die(err);
  // Inputs by name; a tensor saved with another dtype of the same kind (i64
  // labels for an i32 input) is converted.
  auto inputsFor = [&](std::string_view entry) {
    TensorMap in;
    for (const TensorSpec &s : ex->inputsOf(entry)) {
      auto it = file.find(s.name);
      if (it == file.end())
        die(o.batch + ": no tensor for the input '" + s.name + "' (" +
            dtypeName(s.dtype) + shapeString(s.shape) + ")");
      if (it->second.shape != s.shape)
        die(o.batch + ": tensor '" + s.name + "' is " +
            shapeString(it->second.shape) + " but the model expects " +
            dtypeName(s.dtype) + shapeString(s.shape));
      std::string where = o.batch + ": tensor '" + s.name + "'";
      if (!convertTensor(it->second, s.dtype, s.shape, in[s.name], err))
        die(where + ": " + err);
      if (!checkIndices(in[s.name], ex->indexRange(s.name), where, s.name, err))
        die(err);
    }
    return in;
  };
  if (!o.saveGrads.empty()) {
    if (!ex->hasEntry("forward_grad"))
      die(o.model + ": --save-grads needs a 'forward_grad' entry point, which "
                    "this artifact does not have");
    TensorMap out, grads;
    if (!ex->call("forward_grad", inputsFor("forward_grad"), out, err))
      die(err);
    for (const TensorSpec &s : ex->manifest().entry("forward_grad")->results)
      if (s.role == "grad")
        grads[s.name] = std::move(out.at(s.name));
    if (!writeSafetensors(o.saveGrads, grads, err))
      die(err);
  }
  if (o.steps > 0) {
    if (!ex->hasEntry("train_step"))
      die(o.model + ": the model has no entry point 'train_step'");
    TensorMap in = inputsFor("train_step");
    ex->resetHeapPeak();
    for (int64_t i = 0; i < o.steps; ++i) {
      // A cross-check's outputs are only meaningful whole: write none.
      if (gStop) {
        std::fflush(stdout);
        std::fprintf(stderr, "tg-run: interrupted after step %" PRId64 " of %" PRId64
                             "; nothing saved\n", i, o.steps);
        std::exit(128 + gStop);
      }
      double loss = 0;
      if (!ex->trainStep(in, loss, err))
        die(err);
      if (o.printLoss)
        std::printf("step %" PRId64 " loss %.9g\n", i, loss);
    }
    if (o.memory)
      printMemory(*ex);
  }
  if (!o.saveParams.empty()) {
    TensorMap params;
    for (const auto &[name, t] : ex->state())
      if (ex->roleOf(name) == "param")
        params[name] = t;
    if (!writeSafetensors(o.saveParams, params, err))
      die(err);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  installSignalHandlers();
  // The last line of defence: an allocation that fails despite the checks
  // of sizes read from files is still one line, not an abort.
  try {
    Options o = parseArgs(argc, argv);
    if (o.describe)
      return describe(o);
    checkOutputs(o);
    if (!o.data.empty())
      return train(o);
    return crossCheck(o);
  } catch (const std::bad_alloc &) {
    die("out of memory");
  } catch (const std::exception &e) {
    die(std::string("internal error: ") + e.what());
  }
}
