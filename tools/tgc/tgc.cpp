//===- tgc.cpp - the TGC compiler driver ------------------------*- C++ -*-===//
//
// `tgc MODEL.tg [--emit=tg|train] [--report=params|memory] [-o FILE]
// [-D k=v ...] [--memory-budget SIZE]`. Reads a model, checks it, and prints
// the forward graph or the training module as tg IR, a parameter table, or
// the memory plan. Options live in one struct parsed by one function; the
// training actions are in Training.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontend/MLIRGen.h"
#include "frontend/Sema.h"
#include "passes/InitAll.h"
#include "tools/tgc/Training.h"
#include "codegen/artifact/CpuObject.h"
#include "codegen/artifact/Manifest.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

/// Everything the command line can ask for.
struct DriverOptions {
  enum class Emit { None, TG, Train, Artifact };
  enum class Report { None, Params, Memory };
  enum class Format { Table, Json, Svg };

  std::string input;
  std::string output = "-";
  Emit emit = Emit::None;
  Report report = Report::None;
  Format format = Format::Table;
  std::optional<int64_t> memoryBudget;
  bool debugInfo = false;
  bool help = false;
  mlir::tg::CpuObjectOptions cpu;
  std::vector<std::pair<std::string, std::string>> defines;
};

const char *kUsage =
    "usage: tgc MODEL.tg [options]\n"
    "  --emit=tg              print the forward graph as tg IR (default)\n"
    "  --emit=train           print init/train_step/eval built from the train block\n"
    "  --report=params        print the parameter table and total\n"
    "  --report=memory        print the memory plan of one training step\n"
    "  --format=table|json|svg  form of --report=memory (default table)\n"
    "  --memory-budget SIZE   fit the step into SIZE (e.g. 16GiB) by splitting\n"
    "                         the batch into accumulated micro-batches\n"
    "  -o FILE                write output to FILE instead of stdout; a FILE\n"
    "                         ending in .tgx gets the compiled artifact\n"
    "  -D NAME=VALUE          override a hyper-parameter (repeatable)\n"
    "  -O0 .. -O3             LLVM optimisation of the artifact's code (default -O3)\n"
    "  --no-arena             artifact without the planned arena: every buffer\n"
    "                         its own allocation (to check the planner)\n"
    "  --mlir-print-debuginfo print source locations in the IR\n"
    "  --help                 show this text\n";

/// Parses argv into `opts`; on a mistake returns false with `error` set.
bool parseArgs(int argc, char **argv, DriverOptions &opts, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string &flag, std::string &out) {
      if (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0) {
        out = a.substr(flag.size());
        if (out[0] == '=')
          out = out.substr(1);
        return true;
      }
      if (a == flag) {
        if (i + 1 >= argc) {
          error = "option '" + flag + "' needs a value";
          return false;
        }
        out = argv[++i];
        return true;
      }
      return false;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      opts.help = true;
    } else if (a.rfind("--emit=", 0) == 0) {
      v = a.substr(7);
      if (v != "tg" && v != "train") {
        error = "unknown --emit kind '" + v + "' (supported: tg, train)";
        return false;
      }
      opts.emit = v == "tg" ? DriverOptions::Emit::TG : DriverOptions::Emit::Train;
    } else if (a.rfind("--report=", 0) == 0) {
      v = a.substr(9);
      if (v != "params" && v != "memory") {
        error = "unknown --report kind '" + v + "' (supported: params, memory)";
        return false;
      }
      opts.report = v == "params" ? DriverOptions::Report::Params
                                  : DriverOptions::Report::Memory;
    } else if (a.rfind("--format=", 0) == 0) {
      v = a.substr(9);
      if (v == "table")
        opts.format = DriverOptions::Format::Table;
      else if (v == "json")
        opts.format = DriverOptions::Format::Json;
      else if (v == "svg")
        opts.format = DriverOptions::Format::Svg;
      else {
        error = "unknown --format '" + v + "' (supported: table, json, svg)";
        return false;
      }
    } else if (a.rfind("--memory-budget", 0) == 0) {
      if (!value("--memory-budget", v))
        return false;
      opts.memoryBudget = tgc::parseByteSize(v);
      if (!opts.memoryBudget) {
        error = "--memory-budget expects a size such as 16GiB or 512MiB, "
                "got '" + v + "'";
        return false;
      }
    } else if (a == "--no-arena") {
      opts.cpu.arena = false;
    } else if (a.size() == 3 && a[0] == '-' && a[1] == 'O' && a[2] >= '0' &&
               a[2] <= '3') {
      opts.cpu.optLevel = a[2] - '0';
    } else if (a == "--mlir-print-debuginfo") {
      opts.debugInfo = true;
    } else if (a.rfind("-o", 0) == 0 && a.rfind("--", 0) != 0) {
      if (!value("-o", opts.output))
        return false;
    } else if (a.rfind("-D", 0) == 0) {
      if (!value("-D", v))
        return false;
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        error = "-D expects NAME=VALUE, got '" + v + "'";
        return false;
      }
      opts.defines.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      error = "unknown option '" + a + "' (see tgc --help)";
      return false;
    } else if (opts.input.empty()) {
      opts.input = a;
    } else {
      error = "more than one input file ('" + opts.input + "' and '" + a + "')";
      return false;
    }
  }
  if (!opts.help && opts.input.empty()) {
    error = "no input file (see tgc --help)";
    return false;
  }
  bool artifact = llvm::StringRef(opts.output).ends_with(".tgx");
  if (artifact && opts.emit != DriverOptions::Emit::None) {
    error = "-o " + opts.output + " writes a compiled artifact; it cannot "
            "also hold --emit output";
    return false;
  }
  if (artifact && opts.report != DriverOptions::Report::None) {
    error = "reports go to stdout; drop -o " + opts.output + " or the --report";
    return false;
  }
  if (artifact)
    opts.emit = DriverOptions::Emit::Artifact;
  if (opts.emit == DriverOptions::Emit::None &&
      opts.report == DriverOptions::Report::None)
    opts.emit = DriverOptions::Emit::TG;
  return true;
}

std::string withCommas(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(i, ",");
  return s;
}

void printParams(const tgc::Graph &g, llvm::raw_ostream &os) {
  std::vector<tgc::ParamInfo> params = tgc::listParams(g);
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
  DriverOptions opts;
  std::string error;
  if (!parseArgs(argc, argv, opts, error)) {
    llvm::errs() << "tgc: error: " << error << "\n";
    return 1;
  }
  if (opts.help) {
    llvm::outs() << kUsage;
    return 0;
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(opts.input, /*IsText=*/true);
  if (!buffer) {
    llvm::errs() << "tgc: error: cannot read '" << opts.input
                 << "': " << buffer.getError().message() << "\n";
    return 1;
  }
  tgc::SourceFile file(opts.input, (*buffer)->getBuffer().str());
  mlir::DialectRegistry registry;
  mlir::tg::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);

  // Front end: source -> forward graph -> tg module. The memory-budget
  // search calls it again with a smaller batch.
  std::unique_ptr<tgc::Builder> builder;
  tgc::CompileFn compile =
      [&](const std::vector<std::pair<std::string, std::string>> &extra)
      -> mlir::OwningOpRef<mlir::ModuleOp> {
    tgc::DiagEngine diag(file);
    tgc::FrontendOptions fopts;
    fopts.defines = opts.defines;
    for (const auto &d : extra)
      fopts.defines.push_back(d);
    builder = tgc::parseAndElaborate(file, diag, fopts);
    if (!builder) {
      diag.print(llvm::errs());
      return nullptr;
    }
    std::vector<std::string> errors;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        tgc::mlirGen(ctx, builder->graph(), errors);
    if (!module) {
      for (const std::string &e : errors)
        llvm::errs() << "tgc: error: " << e << "\n";
      llvm::errs() << "tgc: error: internal error: the generated IR does not "
                      "verify; please report this model\n";
    }
    return module;
  };

  // Training actions plan the step, and a budget may change the batch.
  bool training = opts.emit == DriverOptions::Emit::Train ||
                  opts.emit == DriverOptions::Emit::Artifact ||
                  opts.report == DriverOptions::Report::Memory ||
                  opts.memoryBudget;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::optional<tgc::BudgetFit> fit;
  if (training) {
    fit = tgc::fitBudget(compile, opts.memoryBudget);
    if (!fit)
      return 1;
    if (!fit->note.empty())
      llvm::errs() << fit->note << "\n";
    module = std::move(fit->module);
  } else {
    module = compile({});
  }
  if (!module)
    return 1;
  if ((opts.emit == DriverOptions::Emit::Train ||
       opts.emit == DriverOptions::Emit::Artifact) &&
      !tgc::buildTraining(*module, fit && fit->remat))
    return 1;
  if (opts.emit == DriverOptions::Emit::Artifact)
    return tgc::writeArtifactFile(*module, fit->plan, opts.output, opts.cpu)
               ? 0
               : 1;

  std::error_code ec;
  llvm::ToolOutputFile out(opts.output, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    llvm::errs() << "tgc: error: cannot write '" << opts.output
                 << "': " << ec.message() << "\n";
    return 1;
  }
  if (opts.report == DriverOptions::Report::Params)
    printParams(builder->graph(), out.os());
  if (opts.report == DriverOptions::Report::Memory) {
    // The report is the CPU artifact's: its ops' scratch included.
    mlir::FailureOr<int64_t> scratch = tgc::cpuScratchBytes(*module, fit->remat);
    if (mlir::failed(scratch))
      return 1;
    fit->plan.scratchBytes = *scratch;
    if (opts.format == DriverOptions::Format::Json)
      mlir::tg::printMemoryJson(fit->plan, out.os());
    else if (opts.format == DriverOptions::Format::Svg)
      mlir::tg::printMemorySvg(fit->plan, out.os());
    else
      mlir::tg::printMemoryTable(fit->plan, out.os());
  }
  if (opts.emit != DriverOptions::Emit::None) {
    mlir::OpPrintingFlags flags;
    if (opts.debugInfo)
      flags.enableDebugInfo();
    module->print(out.os(), flags);
    out.os() << "\n";
  }
  out.keep();
  return 0;
}
