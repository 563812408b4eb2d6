//===- tgc.cpp - the TGC compiler driver ------------------------*- C++ -*-===//
//
// `tgc MODEL.tg [--emit=tg|train] [--report=params|memory] [-o FILE]
// [-D k=v ...] [--memory-budget SIZE] [--target=cpu,sm_80,sm_90a]
// [--time-phases] [--jobs N]`. Reads a model, checks it, and prints
// the forward graph or the training module as tg IR, a parameter table, or
// the memory plan, or writes the compiled artifact. The command line is
// llvm::cl's (one parser for every LLVM-side tool); its messages are turned
// into one "tgc: error:" line. The training actions are in Training.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/Sema.h"
#include "codegen/registry/InitAll.h"
#include "driver/Training.h"
#include "passes/KernelReport.h"
#include "passes/PrecisionReport.h"
#include "codegen/artifact/CpuObject.h"
#include "codegen/artifact/Manifest.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace cl = llvm::cl;

namespace {

enum class Emit { None, TG, Train, Artifact };
enum class Report { None, Params, Memory, Precision, Kernels };
enum class Format { Table, Json, Svg };

cl::OptionCategory tgcCategory("tgc options");

/// Everything the command line can ask for, as llvm::cl options. Built once
/// in main() before parsing (like MLIR's MlirOptMain options).
struct DriverOptions {
  cl::opt<std::string> input{cl::Positional, cl::desc("MODEL.tg"),
                             cl::cat(tgcCategory)};
  cl::opt<std::string> output{
      "o", cl::desc("write output to FILE instead of stdout; a FILE ending in "
                    ".tgx gets the compiled artifact"),
      cl::value_desc("FILE"), cl::init("-"), cl::Prefix, cl::cat(tgcCategory)};
  // Kinds are strings checked in checkArgs(): llvm::cl prints a bad enum
  // value itself, in a form unlike every other tgc error.
  cl::opt<std::string> emitKind{
      "emit", cl::desc("what to print: tg (the forward graph as tg IR, the "
                       "default) or train (init/train_step/eval)"),
      cl::value_desc("tg|train"), cl::cat(tgcCategory)};
  cl::opt<std::string> reportKind{
      "report", cl::desc("print a report instead of IR: params (the "
                         "parameter table), memory (the plan of one step), precision "
                         "(every tensor's dtype and the rule that chose it) or "
                         "kernels (the fused step's kernels and roofline cost)"),
      cl::value_desc("params|memory|precision|kernels"), cl::cat(tgcCategory)};
  cl::opt<std::string> device{
      "device", cl::desc("device that --report=kernels prices the step on"),
      cl::value_desc("h200|a100|cpu"), cl::init("h200"), cl::cat(tgcCategory)};
  cl::opt<std::string> formatKind{
      "format", cl::desc("form of --report=memory or precision (default table)"),
      cl::value_desc("table|json|svg"), cl::init("table"),
      cl::cat(tgcCategory)};
  Emit emit = Emit::None;
  Report report = Report::None;
  Format format = Format::Table;
  cl::opt<std::string> memoryBudget{
      "memory-budget",
      cl::desc("fit the step into SIZE (e.g. 16GiB) by recomputing "
               "activations and splitting the batch into micro-batches"),
      cl::value_desc("SIZE"), cl::cat(tgcCategory)};
  cl::list<std::string> defines{
      "D", cl::desc("override a hyper-parameter (repeatable)"),
      cl::value_desc("NAME=VALUE"), cl::Prefix, cl::cat(tgcCategory)};
  cl::opt<unsigned> optLevel{
      "O", cl::desc("LLVM optimisation of the artifact's code, 0-3 "
                    "(default 3)"),
      cl::init(3), cl::Prefix, cl::cat(tgcCategory)};
  cl::opt<unsigned> jobs{
      "jobs",
      cl::desc("threads that optimise and generate the artifact's code "
               "(default: the machine's cores); the code is the same for "
               "every N"),
      cl::value_desc("N"), cl::init(0), cl::cat(tgcCategory)};
  cl::alias jobsShort{"j", cl::desc("alias for --jobs"), cl::aliasopt(jobs),
                      cl::Prefix};
  cl::opt<unsigned> partitions{
      "llvm-partitions",
      cl::desc("split the artifact's LLVM module into N partitions instead "
               "of the number its size gives (to measure)"),
      cl::value_desc("N"), cl::init(0), cl::Hidden, cl::cat(tgcCategory)};
  cl::opt<bool> noArena{"no-arena",
                        cl::desc("artifact without the planned arena: every "
                                 "buffer its own allocation (to check the "
                                 "planner)"),
                        cl::cat(tgcCategory)};
  cl::opt<bool> noFuse{
      "no-fuse",
      cl::desc("build the step without fusion groups (tg-fuse): every op "
               "its own loop nest and every intermediate planned, to compare"),
      cl::cat(tgcCategory)};
  cl::opt<bool> allowLarge{
      "allow-large",
      cl::desc("compile a step whose plan exceeds this machine's memory "
               "(for a larger machine)"),
      cl::cat(tgcCategory)};
  cl::opt<int64_t> ranks{
      "ranks",
      cl::desc("data-parallel training over N processes (mpirun -n N "
               "tg-run): the model's batch is each rank's, gradients are "
               "averaged over the ranks"),
      cl::value_desc("N"), cl::init(1), cl::cat(tgcCategory)};
  cl::opt<std::string> bucketSize{
      "bucket-size",
      cl::desc("gradient bytes per all_reduce with --ranks (default 25MiB)"),
      cl::value_desc("SIZE"), cl::init("25MiB"), cl::cat(tgcCategory)};
  cl::opt<std::string> targetList{
      "target",
      cl::desc("what the artifact holds code for, a comma-separated list of "
               "cpu, sm_80 and sm_90a (default cpu); GPU targets add the "
               "launch schedules, the fat binary and the sm_80 PTX"),
      cl::value_desc("LIST"), cl::init("cpu"), cl::cat(tgcCategory)};
  tgc::Targets targets;
  cl::opt<int64_t> zero{
      "zero",
      cl::desc("with --ranks N: 1 shards the optimizer state over the ranks "
               "(ZeRO stage 1: each rank keeps and updates 1/N of it); "
               "without --zero, --memory-budget may choose it, --zero 0 "
               "forbids it"),
      cl::value_desc("STAGE"), cl::init(0), cl::cat(tgcCategory)};
  cl::opt<bool> keepCollectives{
      "keep-collectives",
      cl::desc("with --ranks 1: keep the gradient all_reduces all the same, "
               "over a communicator of one rank, to measure what "
               "communicating costs (mpirun -n 1 tg-run)"),
      cl::cat(tgcCategory)};
  cl::opt<std::string> commDtype{
      "comm-dtype",
      cl::desc("with --ranks N: the element type the f32 gradients are "
               "all-reduced in: f32 (the default: f32 gradients), bf16 or "
               "f16 (half the bytes over NCCL; the CPU code rounds alike "
               "but sends f32 over MPI)"),
      cl::value_desc("TYPE"), cl::init("f32"), cl::cat(tgcCategory)};
  cl::opt<bool> timePhases{
      "time-phases",
      cl::desc("print where the compile's time went (frontend, training "
               "step passes, memory plan, lowering, LLVM optimisation and "
               "code generation, link) and its CPU time and peak memory, "
               "to stderr"),
      cl::cat(tgcCategory)};
  cl::opt<bool> debugInfo{"mlir-print-debuginfo",
                          cl::desc("print source locations in the IR"),
                          cl::cat(tgcCategory)};
};

/// Parses argv with llvm::cl; its messages become `error` (first line,
/// without the program name).
bool parseArgs(int argc, char **argv, std::string &error) {
  std::string messages;
  llvm::raw_string_ostream os(messages);
  cl::HideUnrelatedOptions(tgcCategory);
  if (!cl::ParseCommandLineOptions(argc, argv, "TGC, the training-graph "
                                   "compiler\n\n  tgc MODEL.tg [options]\n",
                                   &os)) {
    llvm::StringRef first = llvm::StringRef(messages).split('\n').first.trim();
    first.consume_front(llvm::sys::path::filename(argv[0]));
    first.consume_front(":");
    error = first.trim().str();
    return false;
  }
  return true;
}

/// Refuses, before any work, an output that would destroy something: the
/// input itself, or (for an artifact, written to a temporary file and
/// renamed over the target) anything but a regular file; and a folder we
/// cannot write to, so a long compile does not end in "cannot write".
bool checkOutputPath(const std::string &input, const std::string &output,
                     bool artifact, std::string &error) {
  namespace fs = llvm::sys::fs;
  if (output == "-")
    return true;
  if (input != "-" && fs::exists(output) && fs::equivalent(input, output)) {
    error = "-o " + output + " is the input file; refusing to overwrite it";
    return false;
  }
  fs::file_status st;
  if (!fs::status(output, st) && st.type() != fs::file_type::regular_file &&
      artifact) {
    error = "-o " + output + " is not a regular file; an artifact is written "
            "to a new file and renamed over it, which would replace it";
    return false;
  }
  llvm::SmallString<256> dir(output);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  if (artifact && ::access(dir.c_str(), W_OK) != 0) {
    error = "cannot write '" + output + "': the folder '" + dir.str().str() +
            "': " + std::strerror(errno);
    return false;
  }
  return true;
}

/// The checks that need the whole command line.
bool checkArgs(DriverOptions &opts, std::string &error) {
  if (opts.input.empty()) {
    error = "no input file (see tgc --help)";
    return false;
  }
  const std::string &e = opts.emitKind, &r = opts.reportKind,
                    &f = opts.formatKind;
  if (!e.empty() && e != "tg" && e != "train") {
    error = "unknown --emit kind '" + e + "' (supported: tg, train)";
    return false;
  }
  if (!r.empty() && r != "params" && r != "memory" && r != "precision" &&
      r != "kernels") {
    error = "unknown --report kind '" + r +
            "' (supported: params, memory, precision, kernels)";
    return false;
  }
  if (!mlir::tg::lookupDevice(opts.device)) {
    error = "unknown --device '" + opts.device +
            "' (supported: " + mlir::tg::deviceNames() + ")";
    return false;
  }
  if (f != "table" && f != "json" && f != "svg") {
    error = "unknown --format '" + f + "' (supported: table, json, svg)";
    return false;
  }
  opts.emit = e.empty() ? Emit::None : e == "tg" ? Emit::TG : Emit::Train;
  opts.report = r.empty()       ? Report::None
                : r == "params" ? Report::Params
                : r == "memory" ? Report::Memory
                : r == "kernels" ? Report::Kernels
                                : Report::Precision;
  opts.format = f == "table" ? Format::Table
                : f == "json" ? Format::Json
                              : Format::Svg;
  if ((opts.report == Report::Precision || opts.report == Report::Kernels) &&
      opts.format == Format::Svg) {
    error = "--format=svg is a form of --report=memory only";
    return false;
  }
  if (opts.optLevel > 3) {
    error = "-O" + std::to_string(opts.optLevel) + ": the levels are -O0 .. -O3";
    return false;
  }
  if (opts.jobs.getNumOccurrences() && opts.jobs == 0) {
    error = "--jobs expects a thread count of at least 1";
    return false;
  }
  if (opts.partitions.getNumOccurrences() && opts.partitions == 0) {
    error = "--llvm-partitions expects a count of at least 1";
    return false;
  }
  for (const std::string &d : opts.defines) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) {
      error = "-D expects NAME=VALUE, got '" + d + "'";
      return false;
    }
  }
  if (!opts.memoryBudget.empty() && !tgc::parseByteSize(opts.memoryBudget)) {
    error = "--memory-budget expects a size such as 16GiB or 512MiB, got '" +
            opts.memoryBudget + "'";
    return false;
  }
  bool artifact = llvm::StringRef(opts.output).ends_with(".tgx");
  if (artifact && opts.emit != Emit::None) {
    error = "-o " + opts.output + " writes a compiled artifact; it cannot "
            "also hold --emit output";
    return false;
  }
  if (artifact && opts.report != Report::None) {
    error = "reports go to stdout; drop -o " + opts.output + " or the --report";
    return false;
  }
  std::optional<tgc::Targets> targets = tgc::parseTargets(opts.targetList, error);
  if (!targets)
    return false;
  opts.targets = *targets;
  // --report=kernels lists the kernels of the GPU targets it is given,
  // --report=memory their plan.
  if (opts.targetList.getNumOccurrences() && !artifact &&
      opts.report != Report::Kernels && opts.report != Report::Memory) {
    error = "--target chooses the code of an artifact (or the kernels "
            "--report=kernels lists, the plan --report=memory prints); give "
            "-o MODEL.tgx";
    return false;
  }
  if (opts.report == Report::Memory && opts.targets.cpu &&
      !opts.targets.gpus.empty()) {
    error = "--report=memory prints one backend's plan: give --target=cpu "
            "or the GPU targets";
    return false;
  }
  if (artifact)
    opts.emit = Emit::Artifact;
  if (opts.emit == Emit::None && opts.report == Report::None)
    opts.emit = Emit::TG;
  return checkOutputPath(opts.input, opts.output, artifact, error);
}

/// The phase timers of `--time-phases`: MLIR's timing manager (each pass
/// manager nests its passes under the phase that runs it), printed to
/// stderr with the process's CPU time and peak memory when tgc returns.
/// Phase times are wall-clock: on a loaded machine compare the CPU line.
class PhaseTimes {
public:
  explicit PhaseTimes(bool enabled) {
    manager.setEnabled(enabled);
    if (enabled)
      root = manager.getRootScope();
  }
  ~PhaseTimes() {
    if (!root)
      return;
    root.stop();
    manager.print();
    // Printed once: the manager would print an empty table on destruction.
    manager.setEnabled(false);
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    auto seconds = [](const timeval &t) { return t.tv_sec + t.tv_usec * 1e-6; };
    llvm::errs() << llvm::format(
        "tgc: CPU time %.2f s user + %.2f s system (the linker: %.2f s), "
        "peak memory %.0f MB\n",
        seconds(self.ru_utime), seconds(self.ru_stime),
        seconds(children.ru_utime) + seconds(children.ru_stime),
        self.ru_maxrss / 1024.0);
  }
  /// The root of the phase timers, or null when not timing.
  mlir::TimingScope *scope() { return root ? &root : nullptr; }

private:
  mlir::DefaultTimingManager manager;
  mlir::TimingScope root;
};

std::string withCommas(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(i, ",");
  return s;
}

void printParams(mlir::ModuleOp module, llvm::raw_ostream &os) {
  std::vector<tgc::ParamInfo> params = tgc::listParams(module);
  size_t nameW = 4, shapeW = 5;
  std::vector<std::string> shapes;
  for (const tgc::ParamInfo &p : params) {
    std::string s = p.type.str();
    s = s.substr(s.find('['));
    nameW = std::max(nameW, p.name.size());
    shapeW = std::max(shapeW, s.size());
    shapes.push_back(s);
  }
  int64_t total = 0, bytes = 0;
  os << llvm::left_justify("name", nameW) << "  "
     << llvm::left_justify("shape", shapeW) << "  dtype  "
     << llvm::right_justify("count", 12) << "\n";
  for (size_t i = 0; i < params.size(); ++i) {
    const tgc::ParamInfo &p = params[i];
    os << llvm::left_justify(p.name, nameW) << "  "
       << llvm::left_justify(shapes[i], shapeW) << "  "
       << llvm::left_justify(tgc::dtypeName(p.type.dtype), 5) << "  "
       << llvm::right_justify(std::to_string(p.count), 12) << "\n";
    // Saturate rather than overflow on absurd (but legal) models.
    int64_t b = 0;
    if (__builtin_add_overflow(total, p.count, &total) ||
        __builtin_mul_overflow(p.count, p.type.dtype == tgc::DType::F32 ? 4 : 2, &b) ||
        __builtin_add_overflow(bytes, b, &bytes))
      total = bytes = INT64_MAX;
  }
  os << "total: " << total << " parameters (" << withCommas(total) << ") in "
     << params.size() << " tensors, "
     << llvm::format("%.1f", bytes / (1024.0 * 1024.0)) << " MiB\n";
}

} // namespace

int main(int argc, char **argv) {
  // Temporary files registered with RemoveFileOnSignal go on Ctrl-C too.
  llvm::sys::PrintStackTraceOnErrorSignal(argv[0]);
  DriverOptions opts;
  std::string error;
  if (!parseArgs(argc, argv, error) || !checkArgs(opts, error)) {
    // Empty: llvm::cl printed its one line itself (a missing value).
    if (!error.empty())
      llvm::errs() << "tgc: error: " << error << "\n";
    return 1;
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(opts.input, /*IsText=*/true);
  if (!buffer) {
    llvm::errs() << "tgc: error: cannot read '" << opts.input
                 << "': " << buffer.getError().message() << "\n";
    return 1;
  }
  PhaseTimes times(opts.timePhases);
  mlir::TimingScope *timing = times.scope();
  tgc::SourceFile file(opts.input, (*buffer)->getBuffer().str());
  mlir::DialectRegistry registry;
  mlir::tg::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);

  // Front end: source -> tg module. The memory-budget search calls it again
  // with a smaller batch.
  tgc::Defines defines;
  for (const std::string &d : opts.defines) {
    size_t eq = d.find('=');
    defines.emplace_back(d.substr(0, eq), d.substr(eq + 1));
  }
  tgc::CompileFn compile =
      tgc::frontendCompileFn(file, std::move(defines), ctx, "tgc", llvm::errs());
  if (timing)
    compile = [frontend = std::move(compile), timing](const tgc::Defines &d) {
      mlir::TimingScope scope = timing->nest("frontend");
      return frontend(d);
    };

  std::optional<int64_t> bucketBytes = tgc::parseByteSize(opts.bucketSize);
  if (opts.ranks < 1 || opts.ranks > 1048576 || !bucketBytes) {
    llvm::errs() << "tgc: error: "
                 << (bucketBytes ? "--ranks must be from 1 to 1048576, got " +
                                       std::to_string(opts.ranks)
                                 : "--bucket-size expects a size like 25MiB, "
                                   "got '" + opts.bucketSize + "'")
                 << "\n";
    return 1;
  }
  if (opts.zero != 0 && opts.zero != 1) {
    llvm::errs() << "tgc: error: --zero must be 0 or 1 (ZeRO stage 1 shards "
                    "the optimizer state), got "
                 << opts.zero << "\n";
    return 1;
  }
  if (opts.commDtype != "f32" && opts.commDtype != "bf16" &&
      opts.commDtype != "f16") {
    llvm::errs() << "tgc: error: --comm-dtype is f32, bf16 or f16, not '"
                 << opts.commDtype << "'\n";
    return 1;
  }
  if (opts.commDtype != "f32" && opts.ranks == 1 && !opts.keepCollectives) {
    llvm::errs() << "tgc: error: --comm-dtype " << opts.commDtype
                 << " sets the type of the gradients' all_reduce, which "
                    "only a data-parallel job has; give --ranks N with N > 1 "
                    "(or --keep-collectives)\n";
    return 1;
  }
  // MPI has no bf16 or f16 datatype: the CPU code rounds as the type but
  // all-reduces f32 (codegen/cpu/CommToCalls.cpp), which saves no bytes.
  if (opts.commDtype != "f32" && opts.targets.cpu)
    llvm::errs() << "tgc: note: --comm-dtype " << opts.commDtype
                 << " on the CPU: MPI has no " << opts.commDtype
                 << " type, so the CPU code rounds each rank's gradients and "
                    "their mean to " << opts.commDtype
                 << " but all-reduces them as f32 (no bytes saved; NCCL, on "
                    "GPU targets, carries " << opts.commDtype << ")\n";
  if (opts.zero == 1 && opts.ranks == 1) {
    llvm::errs() << "tgc: error: --zero 1 shards the optimizer state over "
                    "the ranks of a data-parallel job; give --ranks N with "
                    "N > 1\n";
    return 1;
  }
  // An explicit --zero 0 keeps the budget fitter from sharding.
  tgc::BuildSettings settings;
  settings.ranks = opts.ranks;
  settings.bucketBytes = *bucketBytes;
  settings.zero = opts.zero;
  settings.keepCollectives = opts.keepCollectives;
  settings.commDtype = opts.commDtype;
  settings.mayShard = opts.zero.getNumOccurrences() == 0;
  // The step is fused (docs/fusion.md): the plan, the budget fit, the
  // printed training module and the artifact are all of the fused step.
  settings.fuse = !opts.noFuse;
  settings.optimizerGroup = !opts.targets.gpus.empty();
  settings.timing = timing;

  // Training actions plan the step, and a budget may change the batch.
  bool training = opts.emit == Emit::Train ||
                  opts.emit == Emit::Artifact ||
                  opts.report == Report::Memory ||
                  !opts.memoryBudget.empty();
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::optional<tgc::BudgetFit> fit;
  if (training) {
    std::optional<int64_t> budget;
    if (!opts.memoryBudget.empty())
      budget = tgc::parseByteSize(opts.memoryBudget);
    fit = tgc::fitBudget(compile, budget, settings, error);
    if (!fit) {
      if (!error.empty())
        llvm::errs() << "tgc: error: " << error << "\n";
      return 1;
    }
    if (!fit->note.empty())
      llvm::errs() << "tgc: note: " << fit->note << "\n";
    module = std::move(fit->module);
  } else {
    module = compile({});
  }
  if (!module)
    return 1;
  // The precision report names every op's dtype: of the unfused step,
  // whose ops are not hidden in groups (fusion changes no dtype).
  tgc::BuildSettings unfused = settings;
  unfused.fuse = false;
  if ((opts.emit == Emit::Train || opts.emit == Emit::Artifact ||
       opts.report == Report::Precision ||
       (opts.report == Report::Memory && !opts.targets.gpus.empty())) &&
      !module->lookupSymbol("train_step") &&
      !tgc::buildTraining(*module, opts.report == Report::Precision
                                       ? unfused
                                       : settings))
    return 1;
  // The kernels are those of the fused step (tg-fuse after the pipeline),
  // whatever --no-fuse says: the report prints the unfused totals beside.
  tgc::BuildSettings fused = settings;
  fused.fuse = true;
  fused.optimizerGroup = true;
  if (opts.report == Report::Kernels && !tgc::buildTraining(*module, fused))
    return 1;
  if (opts.emit == Emit::Artifact) {
    // Refused before any code is generated: a plan no machine here can run
    // would only fill the disk and the memory of the compile.
    int64_t physical = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    if (!opts.allowLarge && physical > 0 && fit->plan.peakBytes() > physical) {
      llvm::errs() << "tgc: error: the training step needs "
                   << mlir::tg::formatBytes(fit->plan.peakBytes())
                   << ", more than this machine's "
                   << mlir::tg::formatBytes(physical)
                   << " of memory; give --memory-budget to fit it, or "
                      "--allow-large to compile it for a larger machine\n";
      return 1;
    }
    mlir::tg::CpuObjectOptions cpu;
    cpu.optLevel = opts.optLevel;
    cpu.jobs = opts.jobs;
    cpu.partitions = opts.partitions;
    cpu.arena = !opts.noArena;
    cpu.timing = timing;
    return tgc::writeArtifactFile(*module, fit->plan, opts.output, cpu,
                                  opts.targets)
               ? 0
               : 1;
  }

  std::error_code ec;
  llvm::ToolOutputFile out(opts.output, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    llvm::errs() << "tgc: error: cannot write '" << opts.output
                 << "': " << ec.message() << "\n";
    return 1;
  }
  if (opts.report == Report::Params)
    printParams(*module, out.os());
  if (opts.report == Report::Memory) {
    // The plan is the CPU artifact's, its ops' scratch included, or with
    // GPU targets the GPU step's (its own fusion and plan, the kernels'
    // scratch included: the artifact's arena_bytes).
    std::optional<mlir::tg::MemoryPlan> gpuPlan;
    if (!opts.targets.gpus.empty()) {
      gpuPlan = tgc::planGpuStep(*module, opts.targets.gpus);
      if (!gpuPlan)
        return 1;
    }
    const mlir::tg::MemoryPlan &plan = gpuPlan ? *gpuPlan : fit->plan;
    if (opts.format == Format::Json)
      mlir::tg::printMemoryJson(plan, out.os());
    else if (opts.format == Format::Svg)
      mlir::tg::printMemorySvg(plan, out.os());
    else
      mlir::tg::printMemoryTable(plan, out.os());
  }
  if (opts.report == Report::Kernels) {
    // A GPU target runs the attention its fused kernels refuse decomposed.
    if (!opts.targets.gpus.empty() && !tgc::prepareGpuKernelReport(*module))
      return 1;
    auto step = module->lookupSymbol<mlir::func::FuncOp>("train_step");
    mlir::tg::KernelReport kernels =
        mlir::tg::buildKernelReport(step, *mlir::tg::lookupDevice(opts.device));
    if (opts.format == Format::Json)
      mlir::tg::printKernelJson(kernels, out.os());
    else
      mlir::tg::printKernelTable(kernels, out.os());
  }
  if (opts.report == Report::Precision) {
    if (opts.format == Format::Json)
      mlir::tg::printPrecisionJson(*module, "forward", out.os());
    else
      mlir::tg::printPrecisionTable(*module, "forward", out.os());
  }
  if (opts.emit != Emit::None) {
    mlir::OpPrintingFlags flags;
    if (opts.debugInfo)
      flags.enableDebugInfo();
    module->print(out.os(), flags);
    out.os() << "\n";
  }
  out.keep();
  return 0;
}
