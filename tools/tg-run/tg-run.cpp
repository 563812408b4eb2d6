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
// The training loop and the data sources are libtgrt's Trainer
// (runtime/Trainer.h); this file parses arguments and reports.
// docs/runtime.md describes the modes and the data formats.
//
// Started by mpirun (or srun), each process is one rank of a data-parallel
// job (docs/data-parallel.md): it reads its own shard of every global batch,
// the compiled step averages the gradients over the ranks, and rank 0 alone
// prints and writes.
//
//===----------------------------------------------------------------------===//
#include "runtime/Data.h"
#include "runtime/Safetensors.h"
#include "runtime/Trainer.h"
#include "tools/tg-run/Mpi.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

using namespace tgrt;

namespace {

/// The data-parallel job this process is a rank of (nullptr: alone).
std::unique_ptr<Communicator> gComm;
/// Until training starts every rank makes the same checks on the same
/// arguments, so only rank 0 reports them: one line per job, not one per
/// rank. Afterwards an error is this rank's own and names it.
bool gSameOnAllRanks = true;

[[noreturn]] void die(const std::string &msg) {
  std::fflush(stdout);
  if (!gComm)
    std::fprintf(stderr, "tg-run: error: %s\n", msg.c_str());
  else if (!gSameOnAllRanks)
    std::fprintf(stderr, "tg-run: error: rank %d of %d: %s\n", gComm->rank(),
                 gComm->size(), msg.c_str());
  else if (gComm->rank() == 0)
    std::fprintf(stderr, "tg-run: error: %s\n", msg.c_str());
  if (!gComm)
    std::exit(1);
  // Without MPI_Finalize: the launcher then ends the other ranks too.
  std::fflush(stderr);
  _exit(1);
}

bool isRoot() { return !gComm || gComm->rank() == 0; }

const char *kUsage =
    "usage: tg-run MODEL.tgx --describe\n"
    "       tg-run MODEL.tgx --data fashion-mnist|safetensors:P|u8:P|u16:P|u32:P\n"
    "              [--epochs N] [--batch-limit N] [--test-limit N]\n"
    "              [--save P] [--resume P]\n"
    "              [--metrics m.csv] [--seed S] [--data-dir D]\n"
    "              [--init-from PRETRAINED.safetensors]\n"
    "       tg-run MODEL.tgx --load P.safetensors --batch B.safetensors\n"
    "              [--steps N] [--save-params OUT.safetensors]\n"
    "              [--save-grads G.safetensors] [--print-loss] [--seed S]\n"
    "              [--print-time] [--memory] [--threads N]\n"
    "  (--load may be left out: the parameters then come from init(--seed))\n"
    "  --device auto|cpu|cuda|emulator: where the entry points run (default\n"
    "  auto: cuda when a GPU and code for it exist, else cpu; the emulator\n"
    "  runs the artifact's GPU code (sm_80, else sm_90a) on the PTX emulator)\n"
    "  --loss-every N: wait for the losses every N steps (default 1); on the\n"
    "  GPU up to N steps run ahead of the loss readback\n"
    "  --print-time: after the steps, the steady-state time per step (from\n"
    "  the first step's loss to the last one's)\n"
    "  --threads N: threads of the CPU code's parallel loops (default 1; the\n"
    "  machine's cores pay only when nothing else runs); the first progress line and --print-time\n"
    "  say how many run\n"
    "  mpirun -n N tg-run ... [--comm-timeout SECONDS]: data-parallel, for a\n"
    "  model compiled with tgc --ranks N\n";

struct Options {
  std::string model, data, dataDir = kFashionMnistDir, save, resume, metrics;
  std::string load, batch, saveParams, saveGrads, initFrom;
  DeviceKind device = DeviceKind::Auto;
  bool deviceGiven = false; ///< --device was given: say which one runs
  int64_t epochs = 1, batchLimit = -1, testLimit = -1, steps = 1, seed = 0,
          lossEvery = 1;
  int64_t threads = 1; ///< --threads
  int64_t commTimeout = 300; ///< seconds a collective may wait
  bool describe = false, printLoss = false, printTime = false, memory = false;
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
  app.add_flag("--print-time", o.printTime);
  app.add_flag("--memory", o.memory);
  app.add_option("model", o.model);
  std::string epochs, batchLimit, testLimit, steps, seed, commTimeout, device,
      lossEvery, threads;
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
  value("--test-limit", testLimit);
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
  value("--comm-timeout", commTimeout);
  value("--device", device);
  value("--loss-every", lossEvery);
  value("--threads", threads);
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
  if (!testLimit.empty()) o.testLimit = parseInt("--test-limit", testLimit, 1);
  if (!steps.empty()) o.steps = parseInt("--steps", steps, 0);
  if (!lossEvery.empty()) o.lossEvery = parseInt("--loss-every", lossEvery, 1);
  if (!threads.empty()) {
    o.threads = parseInt("--threads", threads, 1);
    if (o.threads > 4096)
      die("--threads expects at most 4096, got " + threads);
  }
  if (!seed.empty()) o.seed = parseInt("--seed", seed, INT64_MIN);
  if (!commTimeout.empty())
    o.commTimeout = parseInt("--comm-timeout", commTimeout, 1);
  o.deviceGiven = !device.empty();
  if (device == "emulator")
    o.device = DeviceKind::Emulator;
  else if (device == "cuda")
    o.device = DeviceKind::Cuda;
  else if (device == "cpu")
    o.device = DeviceKind::Cpu;
  else if (!device.empty() && device != "auto")
    die("unknown --device '" + device + "' (supported: auto, cpu, cuda, emulator)");
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
  if (!o.data.empty())
    for (std::string &f : dataSourceFiles(o.data, o.dataDir))
      in.push_back(std::move(f));
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

//===----------------------------------------------------------------------===//
// Modes
//===----------------------------------------------------------------------===//

std::unique_ptr<Executor> loadModel(const Options &o,
                                    std::unique_ptr<Artifact> &artifact) {
  const std::string &path = o.model;
  std::string err;
  // A file may be missing or broken on one node only: this rank's error.
  gSameOnAllRanks = false;
  artifact = Artifact::open(path, err);
  if (!artifact)
    die(err);
  auto ex = Executor::load(*artifact, err, o.device);
  if (!ex)
    die(err);
  ex->setThreads(int(o.threads));
  gSameOnAllRanks = true;
  if (gComm) {
    // Every rank must run the same code on the same interface, or the
    // gradients they average would not belong together.
    std::string bytes;
    if (!readFile(path, bytes, err))
      die(err);
    uint64_t hash = 1469598103934665603ull; // FNV-1a
    for (unsigned char c : bytes)
      hash = (hash ^ c) * 1099511628211ull;
    if (!tgrun::sameOnAllRanks(hash))
      die(path + ": the ranks of this job run different artifacts (their "
                 "hashes differ); give every rank the same MODEL.tgx");
  }
  // Under --device auto each rank chooses for itself (a node without a GPU,
  // a plan too big for one GPU): ranks on the CPU and on CUDA would run
  // different collectives (MPI, NCCL) that never meet, so the job stops.
  std::string what = ex->deviceDescription();
  bool gpu = what.rfind("cpu", 0) != 0;
  if (gComm && !tgrun::sameOnAllRanks(gpu ? 1 : 0))
    die(path + ": the ranks of this job chose different devices (--device "
               "auto: a GPU on some, the CPU on others; rank 0: " + what +
        "); give every rank --device cpu or --device cuda");
  if (!ex->setCommunicator(gComm.get(), err)) {
    // A multi-rank artifact run alone on a machine without MPI: say what
    // is missing rather than "start it with mpirun", which is missing too.
    if (!gComm && ex->manifest().ranks > 1)
      if (std::string why = tgrun::mpiProblem(); !why.empty())
        err = path + ": " + why;
    // Auto that chose the GPU does not fall back to the CPU when NCCL is
    // missing: the job would silently run another, far slower path.
    if (gComm && gpu && o.device == DeviceKind::Auto)
      err += "; --device auto chose " + what +
             " and does not fall back: --device cpu runs the job on the CPU "
             "over MPI";
    die(err);
  }
  return ex;
}

/// With --device, the first line of the output says what runs the model,
/// once the checks of the arguments and data have passed (an error stays
/// one line).
void announceDevice(const Options &o, const Executor &ex) {
  // By default the line appears when a GPU was chosen; a CPU fallback of
  // the default is silent (the output of CPU-only runs stays as it was).
  std::string what = ex.deviceDescription();
  bool gpu = what.rfind("cpu", 0) != 0;
  if ((o.deviceGiven || gpu) && isRoot())
    std::printf("device: %s\n", what.c_str());
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
  if (isRoot())
    std::printf("%s\n", dumpJson(m.describe(), 2).c_str());
  return 0;
}

/// Reports how a Trainer run ended: an error exits 1, a stop 128 + the
/// signal.
int finish(const TrainResult &r) {
  if (r.status == TrainResult::Failed)
    die(r.message);
  if (r.status == TrainResult::Stopped) {
    std::fflush(stdout);
    std::fprintf(stderr, "tg-run: %s\n", r.message.c_str());
    std::exit(128 + gStop);
  }
  return 0;
}

TrainOptions trainOptions(const Options &o, const Executor &ex) {
  TrainOptions t;
  t.epochs = o.epochs;
  t.batchLimit = o.batchLimit;
  t.testLimit = o.testLimit;
  t.lossEvery = o.lossEvery;
  t.seed = o.seed;
  t.resume = o.resume;
  t.initFrom = o.initFrom;
  t.save = o.save;
  t.metrics = o.metrics;
  t.label = o.model;
  t.liveProgress = isatty(fileno(stdout));
  t.stop = &gStop;
  t.ranks = gComm ? gComm->size() : 1;
  if (!isRoot()) {
    // The replicas are identical: rank 0 alone reports and writes. With
    // sharded optimizer state (ZeRO) every rank saves: the checkpoint
    // gathers the shards, and Executor::saveCheckpoint writes on rank 0.
    t.out = nullptr;
    if (!ex.manifest().zero)
      t.save.clear();
    t.metrics.clear();
  }
  return t;
}

/// Rank r of N reads, of global batch i (N * B rows), rows
/// [i N B + r B, i N B + (r + 1) B): the union of the shards is the batch a
/// single process with batch N B reads, in the same order. A token file's
/// rows are windows of seq tokens, consecutive in the file, so the same
/// row arithmetic picks rank r's windows of global batch i.
void shardData(DataSource &data, const Executor &ex) {
  int64_t B = 0, seq = 0;
  for (const TensorSpec &s : ex.inputsOf("train_step"))
    if (!s.shape.empty()) {
      B = s.shape[0];
      seq = s.shape.size() == 2 ? s.shape[1] : 0;
    }
  int64_t n = gComm->size(), r = gComm->rank();
  std::string global = "one global batch of " + std::to_string(n * B) +
                       " (" + std::to_string(n) + " ranks x " +
                       std::to_string(B) + ")";
  if (data.tokenWindows) {
    // trainRows counts tokens; a process with batch N B has
    // floor((tokens - 1) / (N B seq)) steps (each window's targets reach
    // one token further), and (tokens - 1) / N + 1 tokens give a rank of
    // batch B that many.
    if (B <= 0 || seq <= 0 || tokenBatches(data.trainRows, n * B, seq) < 1)
      die("the token file has fewer tokens than " + global + " windows of " +
          std::to_string(seq) + " tokens and one more");
    data.trainRows = (data.trainRows - 1) / n + 1;
  } else {
    if (B <= 0 || data.trainRows < n * B)
      die("the data has fewer rows than " + global);
    data.trainRows = data.trainRows / n; // this rank's steps x B
  }
  data.train = [all = data.train, B, n, r](const std::vector<TensorSpec> &in,
                                           int64_t first, TensorMap &out,
                                           std::string &err) {
    return all(in, first / B * n * B + r * B, out, err);
  };
}

int train(const Options &o) {
  std::unique_ptr<Artifact> artifact;
  auto ex = loadModel(o, artifact);
  if (!ex->hasEntry("train_step"))
    die(o.model + ": the model has no entry point 'train_step'");
  DataSource data;
  std::string err;
  Trainer trainer(*ex, trainOptions(o, *ex));
  if (!openDataSource(o.data, o.dataDir, *ex, data, err) || !trainer.start(err))
    die(err);
  if (gComm)
    shardData(data, *ex);
  announceDevice(o, *ex);
  gSameOnAllRanks = false;
  return finish(trainer.train(data));
}

/// A data-parallel cross-check: --batch holds the global batch, N times the
/// rows of the model's batch (tgc --ranks N compiles each rank's); rank r
/// keeps its r-th block of rows.
void shardBatch(const Executor &ex, const std::string &path, TensorMap &file) {
  int64_t n = gComm->size(), r = gComm->rank();
  for (const TensorSpec &s : ex.inputsOf("train_step")) {
    auto it = file.find(s.name);
    if (it == file.end() || s.shape.empty() || it->second.shape.empty())
      continue; // entryInputs reports it
    Tensor &t = it->second;
    int64_t rows = t.shape[0], per = s.shape[0];
    if (rows != n * per)
      die(path + ": tensor '" + s.name + "' has " + std::to_string(rows) +
          " rows, but " + std::to_string(n) + " ranks of the model's " +
          std::to_string(per) + " rows need " + std::to_string(n * per) +
          (rows % n ? " (the batch is not divisible by the rank count)" : ""));
    std::vector<int64_t> shape = t.shape;
    shape[0] = per;
    Tensor part;
    std::string err;
    if (!sliceRows(t, r * per, per, t.dtype, shape, part, err))
      die(err);
    t = std::move(part);
  }
}

/// Cross-check mode: parameters from --load, one batch from --batch.
int crossCheck(const Options &o) {
  std::unique_ptr<Artifact> artifact;
  auto ex = loadModel(o, artifact);
  std::string err;
  TrainOptions options = trainOptions(o, *ex);
  options.resume = o.load;
  Trainer trainer(*ex, options);
  if (!trainer.start(err))
    die(err);
  TensorMap file, in;
  if (!readSafetensors(o.batch, file, err))
    die(err);
  if (gComm)
    shardBatch(*ex, o.batch, file);
  announceDevice(o, *ex);
  if (!o.saveGrads.empty()) {
    if (!ex->hasEntry("forward_grad"))
      die(o.model + ": --save-grads needs a 'forward_grad' entry point, which "
                    "this artifact does not have");
    TensorMap out, grads;
    if (!entryInputs(*ex, "forward_grad", file, o.batch, in, err) ||
        !ex->call("forward_grad", in, out, err))
      die(err);
    for (const TensorSpec &s : ex->manifest().entry("forward_grad")->results)
      if (s.role == "grad")
        grads[s.name] = std::move(out.at(s.name));
    if (isRoot() && !writeSafetensors(o.saveGrads, grads, err))
      die(err);
  }
  if (o.steps > 0) {
    if (!ex->hasEntry("train_step"))
      die(o.model + ": the model has no entry point 'train_step'");
    if (!entryInputs(*ex, "train_step", file, o.batch, in, err))
      die(err);
    gSameOnAllRanks = false;
    finish(trainer.repeat(in, o.steps, o.printLoss && isRoot(),
                          o.printTime && isRoot()));
    if (o.memory)
      std::printf("%s\n", memoryLine(*ex).c_str());
  }
  if (!o.saveParams.empty() && isRoot()) {
    if (!ex->syncState(err))
      die(err);
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
    std::string err;
    // MPI first, so that every later error is reported once per job.
    if (tgrun::launchedByMpi()) {
      gComm = tgrun::startMpi(&gStop, err);
      // Every rank fails alike before there is a communicator to agree on
      // who reports: the launcher's rank 0 does (one line per job).
      if (!gComm && tgrun::launcherRank() != 0)
        std::exit(1);
      if (!gComm)
        die(err);
    }
    Options o = parseArgs(argc, argv);
    tgrun::setCommTimeout(double(o.commTimeout));
    int status = 0;
    if (o.describe)
      status = describe(o);
    else {
      checkOutputs(o);
      status = !o.data.empty() ? train(o) : crossCheck(o);
    }
    if (gComm)
      tgrun::finishMpi();
    return status;
  } catch (const std::bad_alloc &) {
    die("out of memory");
  } catch (const std::exception &e) {
    die(std::string("internal error: ") + e.what());
  }
}
