//===- ParallelCodegen.cpp - LLVM optimisation and codegen on all cores ---===//
//
// See ParallelCodegen.h. The module is cut into clusters of functions and
// globals that must stay together for the optimisation to stay what it was
// on the whole module (a function with everything it may inline or fold:
// its callees, its outlined loop nests, the globals it reads), except that
// a glue function (optnone, keepGlueUnoptimized) is not tied to the kernels
// it calls: nothing is inlined into it. Clusters go to a number of
// partitions fixed by the module's size, glue and code apart, largest first
// onto the least loaded one (by estimated cost), so that the huge glue
// functions are spread and the threads end together. Locals referenced from
// another partition become hidden globals (visible across the objects, not
// outside the shared object). Each partition is cloned, written as bitcode
// and parsed into a fresh LLVMContext on its worker thread (an LLVMContext
// is not thread-safe), as llvm::splitCodeGen does.
//
//===----------------------------------------------------------------------===//

#include "codegen/artifact/ParallelCodegen.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Scalar/InstSimplifyPass.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <numeric>
#include <time.h>

using namespace mlir;

namespace {

/// Estimated work of one partition (functionCost): each partition should
/// be a fraction of the compile, so that the threads end together, and
/// big enough that its fixed cost (the cloned declarations, the bitcode,
/// a target machine, one more object to link) stays small. 16,000 is
/// ~1.7 s of CPU of kernels, ~1.2 s of glue (2026-12-02, GPT-2 small,
/// TGC_PARTITION_STATS, loaded).
constexpr uint64_t kCostPerPartition = 16000;
/// Code partitions at most: enough to balance the largest clusters on a
/// few cores, few enough that each object's fixed cost stays small.
constexpr unsigned kMaxPartitions = 8;
/// Glue partitions at most.
constexpr unsigned kMaxGluePartitions = 4;
/// An optnone instruction costs this fraction of an optimised one (no IR
/// passes, -O0 code generation; measured ~1/5 to 1/3 of a kernel's).
constexpr uint64_t kGlueDiscount = 4;

/// Estimated cost of optimising and compiling `f`.
uint64_t functionCost(const llvm::Function &f) {
  if (f.isDeclaration())
    return 0;
  uint64_t n = f.getInstructionCount();
  return f.hasOptNone() ? n / kGlueDiscount : n;
}

/// Calls `fn` on every global value `value` refers to, looking through
/// constant expressions and aggregates (each constant once, in `seen`).
void forEachGlobal(const llvm::Value *value,
                   llvm::SmallPtrSetImpl<const llvm::Constant *> &seen,
                   llvm::function_ref<void(const llvm::GlobalValue *)> fn) {
  if (auto *gv = dyn_cast<llvm::GlobalValue>(value)) {
    fn(gv);
    return;
  }
  auto *c = dyn_cast<llvm::Constant>(value);
  if (!c || !seen.insert(c).second)
    return;
  for (const llvm::Value *op : c->operands())
    forEachGlobal(op, seen, fn);
}

/// Calls `fn(user, used)` for every reference of a global value by a
/// defined function's instructions or a global's initializer.
void forEachReference(
    const llvm::Module &module,
    llvm::function_ref<void(const llvm::GlobalValue *,
                            const llvm::GlobalValue *)>
        fn) {
  for (const llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    llvm::SmallPtrSet<const llvm::Constant *, 32> seen;
    for (const llvm::BasicBlock &block : f)
      for (const llvm::Instruction &inst : block)
        for (const llvm::Value *op : inst.operands())
          forEachGlobal(op, seen,
                        [&](const llvm::GlobalValue *gv) { fn(&f, gv); });
  }
  for (const llvm::GlobalVariable &g : module.globals()) {
    if (!g.hasInitializer())
      continue;
    llvm::SmallPtrSet<const llvm::Constant *, 32> seen;
    forEachGlobal(g.getInitializer(), seen,
                  [&](const llvm::GlobalValue *gv) { fn(&g, gv); });
  }
  for (const llvm::GlobalAlias &a : module.aliases()) {
    llvm::SmallPtrSet<const llvm::Constant *, 32> seen;
    forEachGlobal(a.getAliasee(), seen,
                  [&](const llvm::GlobalValue *gv) { fn(&a, gv); });
  }
}

/// Where every global value defined in a module goes, a function of the
/// module alone.
struct Partitioning {
  /// Partitions; the first `gluePartitions` hold only glue.
  unsigned count = 1;
  unsigned gluePartitions = 0;
  /// Estimated cost and defined functions of each partition.
  std::vector<uint64_t> cost;
  std::vector<unsigned> functions;
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> partitionOf;
};

/// Splits `module` into clusters (see the file comment) and the clusters
/// into partitions: glue clusters (every function optnone) into partitions
/// of their own, which code generation compiles at -O0 too (fast register
/// allocation: the greedy allocator on a glue function's blocks of tens of
/// thousands of instructions was most of its cost), the others into code
/// partitions; in each kind, largest first onto the least loaded partition.
/// `forced` (0: from the module's size) sets the total number.
Partitioning partitionModule(const llvm::Module &module, unsigned forced) {
  // Module order numbers every global value: ties break by it.
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> order;
  for (const llvm::GlobalValue &gv : module.global_values())
    order.try_emplace(&gv, order.size());
  llvm::EquivalenceClasses<const llvm::GlobalValue *> classes;
  for (const llvm::GlobalValue &gv : module.global_values())
    if (!gv.isDeclaration())
      classes.insert(&gv);
  forEachReference(module, [&](const llvm::GlobalValue *user,
                               const llvm::GlobalValue *used) {
    if (used->isDeclaration() || user == used)
      return;
    // Glue (optnone) inlines nothing: the kernels and nests it calls may
    // go elsewhere. Everything else stays with what it refers to.
    auto *fn = dyn_cast<llvm::Function>(user);
    if (fn && fn->hasOptNone() && isa<llvm::Function>(used))
      return;
    classes.unionSets(user, used);
  });
  // Members of one comdat are kept or dropped together.
  llvm::DenseMap<const llvm::Comdat *, const llvm::GlobalValue *> comdats;
  for (const llvm::GlobalValue &gv : module.global_values())
    if (const llvm::Comdat *c = gv.getComdat(); c && !gv.isDeclaration()) {
      auto [it, inserted] = comdats.try_emplace(c, &gv);
      if (!inserted)
        classes.unionSets(it->second, &gv);
    }

  struct Cluster {
    unsigned first;
    uint64_t cost;
    bool glue;
    SmallVector<const llvm::GlobalValue *> members;
  };
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> clusterOf;
  std::vector<Cluster> clusters;
  for (const llvm::GlobalValue &gv : module.global_values()) {
    if (gv.isDeclaration())
      continue;
    const llvm::GlobalValue *leader = classes.getLeaderValue(&gv);
    auto [it, inserted] = clusterOf.try_emplace(leader, clusters.size());
    if (inserted)
      clusters.push_back({order.lookup(&gv), 0, false, {}});
    Cluster &c = clusters[it->second];
    c.members.push_back(&gv);
    if (auto *f = dyn_cast<llvm::Function>(&gv)) {
      c.glue = (c.cost == 0 || c.glue) && f->hasOptNone();
      c.cost += functionCost(*f);
    }
  }
  uint64_t glueCost = 0, codeCost = 0;
  for (const Cluster &c : clusters)
    (c.glue ? glueCost : codeCost) += c.cost;
  auto parts = [](uint64_t cost, unsigned most) {
    return unsigned(std::clamp<uint64_t>(
        (cost + kCostPerPartition - 1) / kCostPerPartition, 1, most));
  };
  Partitioning result;
  unsigned glueParts = 0, codeParts = 1;
  if (forced > 1) {
    glueParts = glueCost && codeCost ? 1 : codeCost ? 0 : forced;
    codeParts = forced - glueParts;
  } else if (forced == 0 && glueCost + codeCost > kCostPerPartition) {
    glueParts = glueCost ? parts(glueCost, kMaxGluePartitions) : 0;
    codeParts = codeCost ? parts(codeCost, kMaxPartitions) : 0;
  }
  result.count = glueParts + codeParts;
  result.gluePartitions = glueParts;
  result.cost.assign(result.count, 0);
  result.functions.assign(result.count, 0);
  // Largest first onto the least loaded partition of its kind (ties: the
  // lowest); with one partition of each kind missing, both kinds share.
  std::vector<unsigned> byCost(clusters.size());
  std::iota(byCost.begin(), byCost.end(), 0);
  std::sort(byCost.begin(), byCost.end(), [&](unsigned a, unsigned b) {
    if (clusters[a].cost != clusters[b].cost)
      return clusters[a].cost > clusters[b].cost;
    return clusters[a].first < clusters[b].first;
  });
  for (unsigned c : byCost) {
    bool glue = clusters[c].glue && glueParts > 0;
    auto begin = result.cost.begin() + (glue || codeParts == 0 ? 0 : glueParts);
    auto end = glue ? result.cost.begin() + glueParts : result.cost.end();
    unsigned p = std::min_element(begin, end) - result.cost.begin();
    result.cost[p] += clusters[c].cost;
    for (const llvm::GlobalValue *gv : clusters[c].members) {
      result.partitionOf[gv] = p;
      result.functions[p] += isa<llvm::Function>(gv);
    }
  }
  return result;
}

/// Gives every local referenced from another partition hidden external
/// linkage (and a name if it has none), and keeps a discardable definition
/// referenced elsewhere from being dropped.
void exposeAcrossPartitions(
    llvm::Module &module,
    const llvm::DenseMap<const llvm::GlobalValue *, unsigned> &partitionOf) {
  llvm::SmallPtrSet<const llvm::GlobalValue *, 32> crossed;
  forEachReference(module, [&](const llvm::GlobalValue *user,
                               const llvm::GlobalValue *used) {
    if (used->isDeclaration())
      return;
    if (partitionOf.lookup(user) != partitionOf.lookup(used))
      crossed.insert(used);
  });
  unsigned unnamed = 0;
  for (llvm::GlobalValue &gv : module.global_values()) {
    if (!crossed.count(&gv))
      continue;
    if (!gv.hasName())
      gv.setName("tgx.unnamed." + std::to_string(unnamed++));
    if (gv.hasLocalLinkage()) {
      gv.setLinkage(llvm::GlobalValue::ExternalLinkage);
      gv.setVisibility(llvm::GlobalValue::HiddenVisibility);
    } else if (gv.hasLinkOnceLinkage()) {
      gv.setLinkage(gv.hasLinkOnceODRLinkage()
                        ? llvm::GlobalValue::WeakODRLinkage
                        : llvm::GlobalValue::WeakAnyLinkage);
    } else if (gv.hasAvailableExternallyLinkage()) {
      // Its definition is elsewhere: only the declaration is needed.
      continue;
    }
    gv.setDSOLocal(true);
  }
}

/// What one worker makes of one partition.
struct PartitionResult {
  SmallVector<char, 0> object;
  std::string error;
  /// CPU seconds of this partition's optimisation and code generation.
  double optimizing = 0, generating = 0;
};

/// CPU seconds of the calling thread.
double threadCpu() {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/// Records the first error LLVM reports in a context (instead of the
/// default handler's print and exit).
void recordError(const llvm::DiagnosticInfo *info, void *context) {
  auto *error = static_cast<std::string *>(context);
  if (info->getSeverity() != llvm::DS_Error || !error->empty())
    return;
  llvm::raw_string_ostream os(*error);
  llvm::DiagnosticPrinterRawOStream printer(os);
  info->print(printer);
}

/// Folds the glue's descriptor traffic with InstSimplify, the one pass it
/// gets (linear): the memref descriptors the entries build and take apart
/// again (insertvalue then extractvalue of the same field) fold to the
/// values themselves. GPT-2 small's train_step goes from 63,775 to 7,423
/// instructions, and the glue's -O0 code generation from 2.7 to 1.4 s of
/// CPU (loaded). The functions stay noinline; the partition's code
/// generation is -O0 whatever their attributes say.
void simplifyGlue(llvm::Module &module, llvm::TargetMachine &machine) {
  for (llvm::Function &f : module)
    f.removeFnAttr(llvm::Attribute::OptimizeNone);
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::FunctionPassManager simplify;
  simplify.addPass(llvm::InstSimplifyPass());
  llvm::ModulePassManager pm;
  pm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(simplify)));
  pm.run(module, modules);
}

/// Optimises and compiles `module` (in a context of this thread) to an
/// object file.
void compilePartition(llvm::Module &module,
                      const tg::ParallelCodegenOptions &opts, bool glue,
                      TimingScope *parent, PartitionResult &result) {
  // -O0 is fast instruction selection and register allocation too: the
  // default level's greedy allocator dominated -O0 compiles.
  std::unique_ptr<llvm::TargetMachine> machine =
      opts.makeMachine(glue || opts.optLevel == 0
                           ? llvm::CodeGenOptLevel::None
                           : llvm::CodeGenOptLevel::Default);
  if (!machine) {
    result.error = "no LLVM target machine for " + module.getTargetTriple().str();
    return;
  }
  TimingScope optimizing =
      parent ? parent->nest("LLVM optimisation") : TimingScope();
  double start = threadCpu();
  // Glue is optnone, but the module passes of -O1..-O3 still walk it (5 s
  // on GPT-2 small's glue): its pipeline is -O0's, and so is its code
  // generation (fast instruction selection and register allocation).
  unsigned level = glue ? 0 : std::min(opts.optLevel, 3u);
  llvm::Error err = makeOptimizingTransformer(level, 0, machine.get())(&module);
  if (glue && !err)
    simplifyGlue(module, *machine);
  result.optimizing = threadCpu() - start;
  optimizing.stop();
  if (err) {
    result.error = "LLVM optimisation failed: " + llvm::toString(std::move(err));
    return;
  }
  TimingScope generating =
      parent ? parent->nest("LLVM code generation") : TimingScope();
  start = threadCpu();
  llvm::raw_svector_ostream os(result.object);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile)) {
    result.error = "cannot emit an object file for " +
                   module.getTargetTriple().str();
    return;
  }
  codegen.run(module);
  result.generating = threadCpu() - start;
}

} // namespace

FailureOr<SmallVector<SmallVector<char, 0>>>
mlir::tg::emitObjectsInParallel(std::unique_ptr<llvm::Module> module,
                                const ParallelCodegenOptions &opts,
                                std::string &error) {
  auto nest = [&](StringRef name) {
    return opts.timing ? opts.timing->nest(name) : TimingScope();
  };
  // Split, and each partition written as bitcode: worker threads read it
  // into contexts of their own.
  TimingScope splitting = nest("splitting into partitions");
  Partitioning parts = partitionModule(*module, opts.partitions);
  std::vector<SmallVector<char, 0>> bitcode(parts.count);
  if (parts.count > 1) {
    exposeAcrossPartitions(*module, parts.partitionOf);
    for (unsigned p = 0; p < parts.count; ++p) {
      llvm::ValueToValueMapTy map;
      std::unique_ptr<llvm::Module> part = llvm::CloneModule(
          *module, map, [&](const llvm::GlobalValue *gv) {
            auto it = parts.partitionOf.find(gv);
            return it != parts.partitionOf.end() && it->second == p;
          });
      llvm::raw_svector_ostream os(bitcode[p]);
      llvm::WriteBitcodeToFile(*part, os);
    }
    module.reset();
  }
  splitting.stop();

  unsigned threads = std::min(
      llvm::hardware_concurrency(opts.jobs).compute_thread_count(), parts.count);
  std::string name = "LLVM optimisation and code generation (" +
                     std::to_string(parts.count) + " partition" +
                     (parts.count == 1 ? "" : "s");
  if (parts.gluePartitions)
    name += ", " + std::to_string(parts.gluePartitions) + " of glue";
  name += ", " + std::to_string(threads) + " thread" +
          (threads == 1 ? ")" : "s)");
  TimingScope phase = nest(name);
  TimingScope *parent = opts.timing ? &phase : nullptr;
  std::vector<PartitionResult> results(parts.count);
  if (parts.count == 1) {
    // The module as it is, in its own context, on this thread.
    llvm::LLVMContext &ctx = module->getContext();
    auto previous = ctx.getDiagnosticHandlerCallBack();
    void *previousContext = ctx.getDiagnosticContext();
    ctx.setDiagnosticHandlerCallBack(recordError, &results[0].error);
    compilePartition(*module, opts, /*glue=*/false, parent, results[0]);
    ctx.setDiagnosticHandlerCallBack(previous, previousContext);
  } else {
    // The costliest partitions start first; each thread takes the next.
    std::vector<unsigned> byCost(parts.count);
    std::iota(byCost.begin(), byCost.end(), 0);
    std::sort(byCost.begin(), byCost.end(), [&](unsigned a, unsigned b) {
      return parts.cost[a] != parts.cost[b] ? parts.cost[a] > parts.cost[b]
                                            : a < b;
    });
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
    for (unsigned p : byCost)
      pool.async([&, p] {
        PartitionResult &result = results[p];
        llvm::LLVMContext ctx;
        ctx.setDiagnosticHandlerCallBack(recordError, &result.error);
        llvm::Expected<std::unique_ptr<llvm::Module>> part =
            llvm::parseBitcodeFile(
                llvm::MemoryBufferRef(
                    StringRef(bitcode[p].data(), bitcode[p].size()),
                    "tgx.partition" + std::to_string(p)),
                ctx);
        if (!part) {
          result.error = "cannot read the partition back: " +
                         llvm::toString(part.takeError());
          return;
        }
        bitcode[p] = {};
        compilePartition(**part, opts, p < parts.gluePartitions, parent,
                         result);
      });
    pool.wait();
  }
  // TGC_PARTITION_STATS=1: what each partition cost (docs/cpu-backend.md).
  if (const char *stats = getenv("TGC_PARTITION_STATS"); stats && *stats)
    for (auto [p, r] : llvm::enumerate(results))
      llvm::errs() << llvm::format(
          "tgc: partition %u (%s, %u functions, cost %llu): optimisation "
          "%.2f s, code generation %.2f s CPU, %zu bytes of object\n",
          unsigned(p), p < parts.gluePartitions ? "glue" : "code",
          parts.functions[p], (unsigned long long)parts.cost[p], r.optimizing,
          r.generating, r.object.size());
  SmallVector<SmallVector<char, 0>> objects;
  for (auto [p, result] : llvm::enumerate(results)) {
    if (!result.error.empty()) {
      error = (parts.count == 1 ? "" : "partition " + std::to_string(p) + ": ") +
              result.error;
      // One line: LLVM's messages may span several.
      error = error.substr(0, error.find('\n'));
      return failure();
    }
    objects.push_back(std::move(result.object));
  }
  return objects;
}
