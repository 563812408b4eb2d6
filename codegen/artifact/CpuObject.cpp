//===- CpuObject.cpp - the CPU code of an artifact --------------*- C++ -*-===//
//
// See CpuObject.h. The wrapper of entry E passes the pointers of `void
// **buffers` (arguments, the arena, then results as out-parameters) to E,
// which takes one pointer per buffer, so the runtime needs no knowledge of
// MLIR's ABI.
//
//===----------------------------------------------------------------------===//

#include "codegen/artifact/CpuObject.h"
#include "codegen/artifact/Manifest.h"
#include "codegen/artifact/ParallelCodegen.h"
#include "codegen/cpu/Passes.h"
#include "runtime/Signature.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

using namespace mlir;

namespace {

/// Adds `llvm.func @tgx_<name>(ptr)` calling the entry `<name>`, which
/// takes one pointer per buffer (tg-pass-bare-pointers with entry points),
/// with the `buffers` pointers of docs/artifact.md in order.
LogicalResult addWrapper(ModuleOp module, StringRef name, size_t buffers) {
  MLIRContext *ctx = module.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!callee || callee.isExternal() ||
      !isa<LLVM::LLVMVoidType>(callee.getFunctionType().getReturnType()) ||
      llvm::any_of(callee.getArgumentTypes(),
                   [&](Type t) { return t != ptr; }))
    return module.emitError() << "artifact: the CPU pipeline produced no "
                                 "entry point '"
                              << name << "' taking one pointer per buffer";
  if (callee.getNumArguments() != buffers)
    return module.emitError() << "artifact: '" << name << "' takes "
                              << callee.getNumArguments()
                              << " buffers, expected " << buffers;
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr});
  auto fn = LLVM::LLVMFuncOp::create(b, loc, ("tgx_" + name).str(), fnType);
  b.setInsertionPointToStart(fn.addEntryBlock(b));
  SmallVector<Value> pointers;
  for (size_t i = 0; i < buffers; ++i) {
    Value slot =
        LLVM::GEPOp::create(b, loc, ptr, ptr, fn.getArgument(0),
                            ArrayRef<LLVM::GEPArg>{int32_t(i)});
    pointers.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
  }
  LLVM::CallOp::create(b, loc, callee, pointers);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return success();
}

/// Calls in the module of at least this many functions defined in it
/// (kernels, outlined nests) make a function or a loop glue, such as an
/// entry point or the micro-batch loop around a whole step: its work is in
/// its callees. A loop with a few calls (an attention tile loop) is
/// compute.
constexpr unsigned kGlueCalls = 64;

/// How many calls of functions defined in the module `blocks` make.
unsigned callsOfCode(ArrayRef<llvm::BasicBlock *> blocks) {
  unsigned calls = 0;
  for (llvm::BasicBlock *block : blocks)
    for (llvm::Instruction &inst : *block)
      if (auto *call = dyn_cast<llvm::CallBase>(&inst))
        if (llvm::Function *callee = call->getCalledFunction())
          calls += !callee->isDeclaration();
  return calls;
}

/// Moves each top-level loop nest of a long function into a function of its
/// own (never inlined back). A training step lowers to one function of
/// thousands of sequential loop nests, and LLVM's ScalarEvolution walks the
/// chain of blocks above each loop when it asks whether a loop is guarded:
/// quadratic in the function's length (a 2-layer GPT: ~2 minutes at -O1
/// or -O3). Outlined, every query stays within one op's loops. A glue
/// function (kGlueCalls) has its loops outlined however few, and a glue
/// loop is not moved but its inner loops are: what is left of the function
/// is then glue (keepGlueUnoptimized). Returns the number of loops
/// outlined.
unsigned outlineLoopNests(llvm::Module &module, unsigned minLoops) {
  unsigned outlined = 0;
  SmallVector<llvm::Function *> functions;
  for (llvm::Function &f : module)
    if (!f.isDeclaration())
      functions.push_back(&f);
  for (llvm::Function *f : functions) {
    llvm::DominatorTree dt(*f);
    llvm::LoopInfo loops(dt);
    SmallVector<llvm::BasicBlock *> all(llvm::make_pointer_range(*f));
    bool glue = callsOfCode(all) >= kGlueCalls;
    SmallVector<SmallVector<llvm::BasicBlock *>> nests;
    SmallVector<llvm::Loop *> work(loops.begin(), loops.end());
    while (!work.empty()) {
      llvm::Loop *loop = work.pop_back_val();
      if (glue && callsOfCode(loop->getBlocks()) >= kGlueCalls)
        work.append(loop->begin(), loop->end());
      else
        nests.emplace_back(loop->blocks().begin(), loop->blocks().end());
    }
    if (nests.size() < minLoops && !glue)
      continue;
    for (auto &blocks : nests) {
      llvm::CodeExtractor extractor(blocks, &dt, /*AggregateArgs=*/false,
                                    nullptr, nullptr, nullptr,
                                    /*AllowVarArgs=*/false,
                                    /*AllowAlloca=*/false, nullptr, "nest");
      if (!extractor.isEligible())
        continue;
      llvm::CodeExtractorAnalysisCache cache(*f);
      if (llvm::Function *nest = extractor.extractCodeRegion(cache)) {
        nest->addFnAttr(llvm::Attribute::NoInline);
        ++outlined;
      }
    }
  }
  return outlined;
}

/// Marks `optnone` every function of at least `minInstructions` whose every
/// loop (if any) is glue (kGlueCalls), after outlineLoopNests: the entry
/// points and the `tgx_` wrappers, long lines of kernel calls (one pointer
/// per buffer since tg-pass-bare-pointers; GPT-2 small's train_step was
/// 82,000 lines of LLVM IR with expanded memref descriptors). Optimised, each is a few basic blocks of tens of thousands
/// of instructions, and LLVM's optimisation, instruction scheduling and
/// alias queries are superlinear in a block's length. The glue runs once
/// per call of an entry (per micro-batch), for microseconds against a step
/// of milliseconds; the kernels it calls keep every optimisation. Returns
/// how many it marked.
unsigned keepGlueUnoptimized(llvm::Module &module, unsigned minInstructions) {
  unsigned marked = 0;
  for (llvm::Function &f : module) {
    if (f.isDeclaration() || f.getInstructionCount() < minInstructions ||
        f.hasFnAttribute(llvm::Attribute::AlwaysInline))
      continue;
    llvm::DominatorTree dt(f);
    llvm::LoopInfo loops(dt);
    if (!llvm::all_of(loops.getLoopsInPreorder(),
                      [](llvm::Loop *loop) {
                        return callsOfCode(loop->getBlocks()) >= kGlueCalls;
                      }))
      continue;
    f.addFnAttr(llvm::Attribute::OptimizeNone);
    f.addFnAttr(llvm::Attribute::NoInline);
    ++marked;
  }
  return marked;
}

/// The temporary files of one compile: created unique in the system's
/// temporary folder, removed when the compile ends on any path, and on
/// SIGINT/SIGTERM (llvm::sys::RemoveFileOnSignal), so no `tgc-cpu-*` file
/// outlives tgc.
class TempFiles {
public:
  TempFiles() = default;
  TempFiles(const TempFiles &) = delete;
  TempFiles &operator=(const TempFiles &) = delete;
  ~TempFiles() {
    for (const std::string &p : paths) {
      llvm::sys::fs::remove(p);
      llvm::sys::DontRemoveFileOnSignal(p);
    }
  }
  /// A new empty file `tgc-cpu-XXXXXX.<suffix>` in the temporary directory.
  bool create(StringRef suffix, std::string &path, std::string &error) {
    // The name is registered for removal on SIGINT/SIGTERM before the file
    // exists, so a signal at any moment (on any of tgc's threads) finds it
    // registered; blocking the signals instead only sends them to another
    // thread, whose handler would not know the file yet.
    SmallString<128> dir, model, p;
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, dir);
    model = dir;
    llvm::sys::path::append(model, "tgc-cpu-%%%%%%%%." + suffix);
    std::error_code ec;
    for (int attempt = 0; attempt < 128; ++attempt) {
      llvm::sys::fs::createUniquePath(model, p, /*MakeAbsolute=*/false);
      llvm::sys::RemoveFileOnSignal(p);
      int fd = -1;
      ec = llvm::sys::fs::openFileForWrite(p, fd, llvm::sys::fs::CD_CreateNew);
      if (!ec) {
        llvm::sys::Process::SafelyCloseFileDescriptor(fd);
        paths.push_back(p.str().str());
        path = paths.back();
        return true;
      }
      llvm::sys::DontRemoveFileOnSignal(p);
      if (ec != std::errc::file_exists)
        break;
    }
    error = "cannot create a temporary file in " + dir.str().str() + ": " +
            ec.message();
    return false;
  }

private:
  SmallVector<std::string> paths;
};

/// Writes `data` to `path`; every write error is reported.
bool writeWhole(const std::string &path, StringRef data, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (!ec) {
    os << data;
    os.close();
    ec = os.error();
    os.clear_error();
  }
  if (ec)
    error = "cannot write " + path + ": " + ec.message();
  return !ec;
}

/// Adds the `tgx_signature` table (runtime/Signature.h) to `lowered`: what
/// the code's entry points take and return, from the same IR the code came
/// from, so the loader can check a manifest against the code.
LogicalResult addSignature(ModuleOp module, ModuleOp lowered,
                           const std::map<std::string, int64_t> &arenas,
                           std::string &error) {
  std::vector<tgrt::SignatureEntry> table;
  auto buffer = [&](Type type, tgrt::SignatureBuffer &out) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    std::optional<tgc::DType> dtype;
    if (!tensor || !tensor.hasStaticShape() ||
        !(dtype = tgc::parseDType(
              tg::artifactDTypeName(tensor.getElementType())))) {
      llvm::raw_string_ostream os(error);
      os << "an entry point has a buffer of type " << type
         << ", which an artifact cannot hold";
      return false;
    }
    out.dtype = *dtype;
    out.bytes = uint64_t(tensor.getNumElements()) * tgrt::dtypeSize(out.dtype);
    return true;
  };
  for (StringRef name : tg::kEntryPoints) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn)
      continue;
    tgrt::SignatureEntry e;
    e.name = name.str();
    e.args.resize(fn.getNumArguments());
    e.results.resize(fn.getNumResults());
    for (auto [t, b] : llvm::zip(fn.getArgumentTypes(), e.args))
      if (!buffer(t, b))
        return failure();
    for (auto [t, b] : llvm::zip(fn.getResultTypes(), e.results))
      if (!buffer(t, b))
        return failure();
    auto arena = arenas.find(e.name);
    e.arenaBytes = arena == arenas.end() ? 0 : arena->second;
    table.push_back(std::move(e));
  }
  std::string text = tgrt::renderSignature(table);
  text.push_back('\0');
  OpBuilder b(lowered.getContext());
  b.setInsertionPointToEnd(lowered.getBody());
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  LLVM::GlobalOp::create(b, lowered.getLoc(), type, /*isConstant=*/true,
                         LLVM::Linkage::External, tgrt::kSignatureSymbol,
                         b.getStringAttr(text));
  return success();
}

/// The object code of support/tgx_support.c, compiled by the build (see
/// codegen/artifact/CMakeLists.txt): the functions lowered code calls
/// (counted allocation, memrefCopy), linked into every shared object so that
/// an artifact needs no MLIR library.
StringRef supportObject() {
  static const unsigned char bytes[] = {
#include "TgxSupportObject.inc"
  };
  return StringRef(reinterpret_cast<const char *>(bytes), sizeof bytes);
}

/// Finds a program: PATH first, then Debian's versioned names.
std::string findProgram(ArrayRef<StringRef> names) {
  for (StringRef n : names)
    if (auto p = llvm::sys::findProgramByName(n))
      return *p;
  return "";
}

} // namespace

FailureOr<std::string>
mlir::tg::buildCpuSharedObject(ModuleOp module, std::string &error,
                               const CpuObjectOptions &opts) {
  static std::once_flag initTarget;
  std::call_once(initTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  cpu::registerCpuDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);

  // Shapes of every entry's buffers: arguments, then results.
  std::vector<std::pair<std::string, SmallVector<SmallVector<int64_t>>>> entries;
  cpu::CpuPipelineOptions options;
  for (StringRef name : kEntryPoints) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn)
      continue;
    // Buffers in the order of the lowered entry's arguments: arguments, the
    // arena of a planned entry (tg-bind-arena appends it), results.
    SmallVector<SmallVector<int64_t>> shapes;
    for (Type t : fn.getArgumentTypes())
      shapes.emplace_back(cast<RankedTensorType>(t).getShape());
    if (tg::MemoryPlanAttr memory = opts.arena ? tg::getMemoryPlan(fn) : nullptr)
      if (memory.getTransientBytes() > 0)
        shapes.push_back({memory.getTransientBytes()});
    for (Type t : fn.getResultTypes())
      shapes.emplace_back(cast<RankedTensorType>(t).getShape());
    entries.push_back({name.str(), shapes});
    options.entryPoints.push_back(name.str());
  }

  options.arena = opts.arena;
  options.genericAllocations = true;
  options.barePointerEntryPoints = true;
  OwningOpRef<ModuleOp> lowered(cast<ModuleOp>(module->clone()));
  // Only functions an entry point can call become code: the model's
  // `forward` (no entry point; eval is its copy, and train_step's call of
  // forward_grad is inlined by its plan) would be lowered and compiled for
  // nothing, unplanned, as long as eval.
  for (auto fn : llvm::make_early_inc_range(lowered->getOps<func::FuncOp>()))
    if (!llvm::is_contained(kEntryPoints, fn.getSymName()) &&
        SymbolTable::symbolKnownUseEmpty(fn, *lowered))
      fn.erase();
  auto nest = [&](StringRef name) {
    return opts.timing ? opts.timing->nest(name) : TimingScope();
  };
  PassManager pm(ctx);
  cpu::buildCpuPipeline(pm, options);
  TimingScope lowering = nest("lowering to the LLVM dialect");
  if (lowering)
    pm.enableTiming(lowering);
  if (failed(pm.run(*lowered))) {
    error = "lowering to the CPU failed (see the diagnostics above)";
    return failure();
  }
  // The arena grew by the ops' scratch (tg-plan-scratch): its descriptor
  // takes the final size, and `module` records every planned entry's arena
  // (tg.arena_bytes, by entry name) for the manifest.
  std::map<std::string, int64_t> arenas;
  NamedAttrList recorded;
  Builder b(ctx);
  for (auto &[name, shapes] : entries) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    MemoryPlanAttr memory = opts.arena ? getMemoryPlan(fn) : nullptr;
    if (!memory)
      continue;
    int64_t size = cpu::loweredArenaBytes(*lowered, name);
    if (size) {
      shapes[fn.getNumArguments()] = {size};
      arenas[name] = size;
    }
    recorded.set(name, b.getI64IntegerAttr(size ? size : memory.getTransientBytes()));
  }
  if (!recorded.empty())
    module->setAttr(attr::arenaBytes, recorded.getDictionary(ctx));
  if (failed(addSignature(module, *lowered, arenas, error)))
    return failure();
  for (auto &[name, shapes] : entries) {
    if (failed(addWrapper(*lowered, name, shapes.size()))) {
      error = "cannot wrap entry point '" + name + "'";
      return failure();
    }
  }

  lowering.stop();
  TimingScope translating = nest("translation to LLVM IR");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*lowered, llvmContext, "tgx");
  translating.stop();
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  // Parallel loops (tg-parallelize-loops) call the LLVM OpenMP runtime:
  // the shared object then needs libomp.so.5, and says how many parallel
  // regions it has (tgx_parallel_loops), so the runtime knows whether
  // setting a thread count means anything.
  uint64_t parallelLoops = 0;
  if (llvm::Function *fork = llvmModule->getFunction("__kmpc_fork_call"))
    for (llvm::User *user : fork->users())
      parallelLoops += isa<llvm::CallBase>(user);
  if (parallelLoops > 0) {
    auto *i64Type = llvm::Type::getInt64Ty(llvmContext);
    new llvm::GlobalVariable(*llvmModule, i64Type, /*isConstant=*/true,
                             llvm::GlobalValue::ExternalLinkage,
                             llvm::ConstantInt::get(i64Type, parallelLoops),
                             "tgx_parallel_loops");
  }
  std::string triple = llvm::sys::getProcessTriple();
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(llvm::Triple(triple), lookupError);
  if (!target) {
    error = "no LLVM target for " + triple + ": " + lookupError;
    return failure();
  }
  llvm::TargetOptions targetOptions;
  auto makeMachine = [=](llvm::CodeGenOptLevel level) {
    return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
        llvm::Triple(triple), llvm::sys::getHostCPUName(), "", targetOptions,
        llvm::Reloc::PIC_, std::nullopt, level));
  };
  std::unique_ptr<llvm::TargetMachine> machine =
      makeMachine(llvm::CodeGenOptLevel::Default);
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(llvm::Triple(triple));
  if (opts.optLevel > 0) {
    TimingScope outlining = nest("outlining loop nests");
    outlineLoopNests(*llvmModule, /*minLoops=*/64);
    // Glue at -O0 (below), kernels and nests at the level asked for.
    keepGlueUnoptimized(*llvmModule, /*minInstructions=*/1000);
  }

  // Object files (in memory, so their size is checked before anything is
  // written), one per partition of the module, optimised and generated on
  // all cores (ParallelCodegen.h); then a shared object linked from them
  // and the support object by the system's compiler driver (which knows
  // the C library's startup files).
  ParallelCodegenOptions parallel;
  parallel.optLevel = opts.optLevel;
  parallel.jobs = opts.jobs;
  parallel.partitions = opts.partitions;
  parallel.timing = opts.timing;
  parallel.makeMachine = makeMachine;
  FailureOr<SmallVector<SmallVector<char, 0>>> objects =
      emitObjectsInParallel(std::move(llvmModule), parallel, error);
  if (failed(objects))
    return failure();
  uint64_t codeBytes = 0;
  for (const SmallVector<char, 0> &object : *objects)
    codeBytes += object.size();
  if (codeBytes > opts.maxCodeBytes) {
    error = "the generated code is " + std::to_string(codeBytes) +
            " bytes, over the limit of " + std::to_string(opts.maxCodeBytes) +
            " (a model this large is not supported)";
    return failure();
  }
  TimingScope linking = nest("linking the shared object");
  TempFiles temps;
  std::string support, so;
  std::vector<std::string> objs(objects->size());
  for (auto [path, object] : llvm::zip(objs, *objects))
    if (!temps.create("o", path, error) ||
        !writeWhole(path, StringRef(object.data(), object.size()), error))
      return failure();
  if (!temps.create("o", support, error) || !temps.create("so", so, error) ||
      !writeWhole(support, supportObject(), error))
    return failure();
  std::string driver = findProgram({"clang-22", "clang", "cc"});
  if (driver.empty()) {
    error = "no C compiler driver (clang-22, clang or cc) to link the shared "
            "object";
    return failure();
  }
  std::string errMsg;
  SmallVector<StringRef> argv{driver, "-shared", "-o", so};
  argv.append(objs.begin(), objs.end());
  argv.append({support, "-lm"});
  // By soname, from the system's library path (Debian's libomp5 package):
  // the loader finds it there when the runtime dlopens cpu.so.
  if (parallelLoops > 0)
    argv.push_back("-l:libomp.so.5");
  if (llvm::sys::ExecuteAndWait(driver, argv, std::nullopt, {}, 120, 0,
                                &errMsg) != 0) {
    error = "linking the shared object with " + driver + " failed" +
            (errMsg.empty() ? "" : ": " + errMsg);
    return failure();
  }
  auto bytes = llvm::MemoryBuffer::getFile(so);
  if (!bytes) {
    error = "cannot read the linked shared object";
    return failure();
  }
  return (*bytes)->getBuffer().str();
}
