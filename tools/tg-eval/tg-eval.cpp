//===- tg-eval.cpp - run tg IR on the reference evaluator -------*- C++ -*-===//
//
// A debugging aid: parses a .mlir file, fills one function's arguments with
// deterministic random data (floats uniform in [-1, 1), integers in
// [0, --int-max)), evaluates it with the reference evaluator and prints each
// result's type, first values and sum.
//
// With --init, arguments named (tg.name) like a result of the module's
// @init(seed) take that result instead, so a train_step starts from real
// parameters and optimizer state. With --steps N the function runs N times,
// each result feeding the argument of the same tg.name, and each step's
// results with tg.role "loss" are printed: a training run on the oracle.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/Evaluator.h"
#include "dialects/TGDialect.h"
#include "codegen/registry/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

/// tg-eval's own options: --help lists these, not the hundreds LLVM
/// registers in every tool that links it.
static cl::OptionCategory evalCategory("tg-eval options");

static cl::opt<std::string> inputFile(cl::Positional, cl::cat(evalCategory), cl::desc("<FILE.mlir>"),
                                      cl::Required);
static cl::opt<std::string> funcName("func", cl::cat(evalCategory),
                                     cl::desc("function to evaluate (default: "
                                              "@forward, else the first one)"));
static cl::opt<uint64_t> seed("seed", cl::cat(evalCategory), cl::desc("seed of the random arguments"),
                              cl::init(0));
static cl::opt<bool> f64("f64", cl::cat(evalCategory), cl::desc("evaluate in float64 throughout "
                                         "(no rounding to element types)"));
static cl::opt<int64_t> intMax("int-max", cl::cat(evalCategory),
                               cl::desc("integer arguments are drawn from "
                                        "[0, N)"),
                               cl::init(10));
static cl::opt<bool> useInit("init", cl::cat(evalCategory), cl::desc("take arguments from @init(seed) "
                                              "results of the same tg.name"));
static cl::opt<unsigned> steps("steps", cl::cat(evalCategory),
                               cl::desc("run N times, feeding results back "
                                        "into arguments of the same tg.name"),
                               cl::init(1));
static cl::opt<unsigned>
    showCount("show", cl::cat(evalCategory), cl::desc("values printed per result"), cl::init(8));
static cl::opt<uint64_t>
    maxSteps("max-steps", cl::cat(evalCategory),
             cl::desc("stop with an error after N ops and loop iterations "
                      "per evaluation"),
             cl::init(tg::ref::EvalOptions().maxSteps));
static cl::opt<uint64_t>
    maxWork("max-work", cl::cat(evalCategory),
            cl::desc("stop with an error before an op that would take the "
                     "evaluation past N element operations"),
            cl::init(tg::ref::EvalOptions().maxWork));

/// Prints a diagnostic as one line: "file:line:col: error: message".
static void printDiagnostic(Diagnostic &d) {
  if (auto loc = dyn_cast<FileLineColLoc>(d.getLocation()))
    llvm::errs() << loc.getFilename().getValue() << ":" << loc.getLine() << ":"
                 << loc.getColumn() << ": ";
  else
    llvm::errs() << "tg-eval: ";
  llvm::errs() << (d.getSeverity() == DiagnosticSeverity::Error ? "error: "
                                                                : "note: ")
               << d.str() << "\n";
}

static void printTensor(unsigned i, const tg::ref::Tensor &t) {
  llvm::outs() << "result " << i << ": " << t.typeString() << " [";
  double sum = 0;
  for (int64_t k = 0; k < t.numElements(); ++k) {
    sum += t.data[k];
    if (k < showCount)
      llvm::outs() << (k ? ", " : "") << llvm::format("%.6g", t.data[k]);
  }
  if (t.numElements() > showCount)
    llvm::outs() << ", ...";
  llvm::outs() << "] sum = " << llvm::format("%.9g", sum) << "\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(evalCategory);
  cl::ParseCommandLineOptions(argc, argv, "TGC reference evaluator\n");

  DialectRegistry registry;
  tg::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.getDiagEngine().registerHandler(printDiagnostic);

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputFile, &ctx);
  if (!module)
    return 1;

  func::FuncOp fn;
  if (!funcName.empty()) {
    fn = module->lookupSymbol<func::FuncOp>(funcName);
  } else {
    fn = module->lookupSymbol<func::FuncOp>("forward");
    for (auto f : module->getOps<func::FuncOp>())
      if (!fn && !f.isExternal())
        fn = f;
  }
  if (!fn) {
    llvm::errs() << "tg-eval: error: no function "
                 << (funcName.empty() ? std::string("to evaluate")
                                      : "named '" + funcName + "'")
                 << " in " << inputFile << "\n";
    return 1;
  }

  tg::ref::EvalOptions opts;
  opts.roundToDtype = !f64;
  opts.maxSteps = maxSteps;
  opts.maxWork = maxWork;

  // Before any argument is made: a dynamic or huge type is a located error.
  if (failed(tg::ref::checkEvaluable(fn, opts)))
    return 1;
  SmallVector<tg::ref::Tensor> args;
  for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes())) {
    auto shaped = dyn_cast<RankedTensorType>(type);
    FailureOr<tg::ref::DType> dtype =
        tg::ref::dtypeOf(shaped ? shaped.getElementType() : type);
    if (failed(dtype)) {
      fn.emitError("tg-eval cannot make random data for argument #")
          << i << " of type " << type;
      return 1;
    }
    bool isInt = !tg::ref::isFloat(*dtype);
    args.push_back(tg::ref::Tensor::random(
        shaped ? shaped.getShape() : ArrayRef<int64_t>(), *dtype, seed, i,
        isInt ? 0 : -1, isInt ? static_cast<double>(intMax) : 1));
  }

  if (useInit) {
    auto initFn = module->lookupSymbol<func::FuncOp>("init");
    if (!initFn || initFn.getNumArguments() != 1) {
      llvm::errs() << "tg-eval: error: --init needs a function @init(seed) in "
                   << inputFile << "\n";
      return 1;
    }
    tg::ref::Tensor seedArg = tg::ref::Tensor::filled(
        {}, tg::ref::DType::I64, static_cast<double>(seed));
    FailureOr<SmallVector<tg::ref::Tensor>> state =
        tg::ref::evaluate(initFn, {seedArg}, opts);
    if (failed(state))
      return 1;
    for (unsigned r = 0; r < initFn.getNumResults(); ++r)
      if (auto name = initFn.getResultAttrOfType<StringAttr>(r, tg::attr::name))
        for (unsigned a = 0; a < fn.getNumArguments(); ++a)
          if (fn.getArgAttrOfType<StringAttr>(a, tg::attr::name) == name)
            args[a] = (*state)[r];
  }

  FailureOr<SmallVector<tg::ref::Tensor>> results;
  for (unsigned step = 0; step < std::max(1u, unsigned(steps)); ++step) {
    results = tg::ref::evaluate(fn, args, opts);
    if (failed(results))
      return 1;
    for (unsigned r = 0; r < fn.getNumResults(); ++r) {
      auto name = fn.getResultAttrOfType<StringAttr>(r, tg::attr::name);
      if (steps > 1 && tg::getResultRole(fn, r) == tg::Role::loss)
        llvm::outs() << "step " << step << ": " << name.getValue() << " = "
                     << llvm::format("%.9g", (*results)[r].data[0]) << "\n";
      for (unsigned a = 0; name && a < fn.getNumArguments(); ++a)
        if (fn.getArgAttrOfType<StringAttr>(a, tg::attr::name) == name)
          args[a] = (*results)[r];
    }
  }
  for (auto [i, t] : llvm::enumerate(*results))
    printTensor(i, t);
  return 0;
}
