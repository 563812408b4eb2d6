//===- Jit.cpp - run tg functions on the CPU through the JIT ----*- C++ -*-===//
//
// See Jit.h. A memref descriptor of rank r is laid out as
// { T *allocated, T *aligned, int64_t offset, int64_t sizes[r],
//   int64_t strides[r] }, which is what the C interface wrappers take.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Jit.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <mutex>

using namespace mlir;
using namespace mlir::tg::cpu;

FailureOr<HostType> mlir::tg::cpu::hostTypeOf(Type t) {
  if (t.isF32()) return HostType::F32;
  if (t.isF64()) return HostType::F64;
  if (t.isF16()) return HostType::F16;
  if (t.isBF16()) return HostType::BF16;
  if (t.isInteger(32)) return HostType::I32;
  if (t.isInteger(64)) return HostType::I64;
  if (t.isInteger(1)) return HostType::I1;
  return failure();
}

JitModule::~JitModule() = default;

namespace {
/// The rank count of the collectives of the call running on this thread
/// (JitModule::run sets it): the support functions below take no context.
thread_local int64_t tRanks = 1;

// The support functions of CommToCalls.cpp, for one process in which every
// rank holds the same values (the reference evaluator's convention), so a
// data-parallel step computes what each of its ranks would. `comm` is the
// communicator id of the collective; the only one tgc emits is the world
// (0), whose rank count is `tRanks`.

/// A bucket summed over `tRanks` equal ranks, then scaled (1/ranks: a mean).
void jitAllReduce(int64_t, float *data, int64_t n, float scale) {
  float factor = static_cast<float>(tRanks) * scale;
  for (int64_t i = 0; i < n; ++i)
    data[i] *= factor;
}
/// Rank 0's row summed over the ranks, then scaled.
void jitReduceScatter(int64_t comm, float *data, int64_t block, float scale) {
  jitAllReduce(comm, data, block, scale);
}
/// Every rank's row is rank 0's.
void jitAllGather(int64_t, float *data, int64_t block) {
  for (int64_t r = 1; r < tRanks; ++r)
    std::copy(data, data + block, data + r * block);
}
int64_t jitRank(int64_t) { return 0; }

/// The one rank count of `module`'s collectives (1 without any), or failure
/// with an error when they disagree.
FailureOr<int64_t> collectiveRanks(ModuleOp module) {
  int64_t ranks = 1;
  Operation *first = nullptr;
  WalkResult walk = module.walk([&](Operation *op) {
    // Every collective runs over a communicator made by tg.comm_world.
    auto world = dyn_cast<tg::CommWorldOp>(op);
    if (!world)
      return WalkResult::advance();
    int64_t n = world.getComm().getType().getRanks();
    if (first && n != ranks) {
      op->emitError() << "JIT: communicators of " << n << " ranks and of "
                      << ranks << " in one module";
      return WalkResult::interrupt();
    }
    first = op;
    ranks = n;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return ranks;
}
} // namespace

FailureOr<std::unique_ptr<JitModule>>
JitModule::compile(ModuleOp module, const CpuPipelineOptions &options,
                   unsigned optLevel) {
  static std::once_flag initTarget;
  std::call_once(initTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerCpuDialects(registry);
  ctx->appendDialectRegistry(registry);

  std::unique_ptr<JitModule> jit(new JitModule());
  FailureOr<int64_t> ranks = collectiveRanks(module);
  if (failed(ranks))
    return failure();
  jit->ranks = *ranks;
  auto describe = [&](Type t, Location loc) -> FailureOr<HostTensor> {
    auto tensor = dyn_cast<RankedTensorType>(t);
    FailureOr<HostType> ht = tensor ? hostTypeOf(tensor.getElementType())
                                    : FailureOr<HostType>(failure());
    if (failed(ht) || !tensor.hasStaticShape())
      return emitError(loc) << "JIT: unsupported argument or result type " << t;
    HostTensor d;
    d.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    d.type = *ht;
    return d;
  };
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn.isPublic() || fn.isDeclaration())
      continue;
    Signature sig;
    for (Type t : fn.getArgumentTypes()) {
      FailureOr<HostTensor> d = describe(t, fn.getLoc());
      if (failed(d))
        return failure();
      sig.args.push_back(std::move(*d));
    }
    for (Type t : fn.getResultTypes()) {
      FailureOr<HostTensor> d = describe(t, fn.getLoc());
      if (failed(d))
        return failure();
      sig.results.push_back(std::move(*d));
    }
    jit->signatures[fn.getName()] = std::move(sig);
  }

  OwningOpRef<ModuleOp> lowered(cast<ModuleOp>(module->clone()));
  PassManager pm(ctx);
  CpuPipelineOptions opts = options;
  opts.entryPoints.clear(); // every public function gets a C interface
  buildCpuPipeline(pm, opts);
  if (failed(pm.run(*lowered)))
    return failure();
  for (auto &[name, sig] : jit->signatures)
    sig.arenaBytes = loweredArenaBytes(*lowered, name);

  // The host's target machine, so that LLVM's vectorisers know the vector
  // width (without it the cost model assumes scalar code).
  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder)
    return emitError(module.getLoc())
           << "JIT: " << llvm::toString(tmBuilder.takeError());
  auto tm = tmBuilder->createTargetMachine();
  if (!tm)
    return emitError(module.getLoc())
           << "JIT: " << llvm::toString(tm.takeError());
  std::function<llvm::Error(llvm::Module *)> transformer =
      makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, tm->get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  SmallVector<StringRef> libs;
  static constexpr llvm::StringLiteral runnerUtils =
      "/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so";
  static constexpr llvm::StringLiteral openblas =
      "/usr/lib/x86_64-linux-gnu/libopenblas.so.0";
  if (llvm::sys::fs::exists(runnerUtils))
    libs.push_back(runnerUtils);
  if (options.blas)
    libs.push_back(openblas);
  // Parallel loops (tg-parallelize-loops) call the LLVM OpenMP runtime; it
  // is loaded into the process (RTLD_GLOBAL), where the JIT's symbol
  // lookup finds it, and runs on OpenMP's default thread count (the
  // cores this process may use, or OMP_NUM_THREADS).
  bool usesOpenMP = false;
  lowered->walk([&](omp::ParallelOp) {
    usesOpenMP = true;
    return WalkResult::interrupt();
  });
  std::string ompError;
  if (usesOpenMP &&
      llvm::sys::DynamicLibrary::LoadLibraryPermanently("libomp.so.5",
                                                        &ompError))
    return emitError(module.getLoc())
           << "JIT: the code has parallel loops and needs the LLVM OpenMP "
              "runtime (libomp.so.5, Debian's libomp5-14): "
           << ompError;
  engineOptions.sharedLibPaths = libs;
  auto engine = ExecutionEngine::create(*lowered, engineOptions);
  if (!engine) {
    std::string message = llvm::toString(engine.takeError());
    return emitError(module.getLoc()) << "JIT: " << message;
  }
  jit->engine = std::move(*engine);
  jit->engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto add = [&](const char *name, auto *fn) {
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                                 llvm::JITSymbolFlags::Exported};
    };
    add("tgx_all_reduce_f32", &jitAllReduce);
    add("tgx_reduce_scatter_f32", &jitReduceScatter);
    add("tgx_all_gather_f32", &jitAllGather);
    add("tgx_rank", &jitRank);
    return symbols;
  });
  return jit;
}

namespace {
/// A memref descriptor of a row-major buffer, as int64 words.
std::vector<int64_t> descriptor(HostTensor &t) {
  auto ptr = reinterpret_cast<int64_t>(t.bytes.data());
  std::vector<int64_t> d = {ptr, ptr, 0};
  d.insert(d.end(), t.shape.begin(), t.shape.end());
  std::vector<int64_t> strides(t.shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(t.shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * t.shape[i + 1];
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
}
} // namespace

int64_t JitModule::arenaBytes(StringRef function) const {
  auto it = signatures.find(function);
  return it == signatures.end() ? 0 : it->second.arenaBytes;
}

FailureOr<std::vector<HostTensor>>
JitModule::run(StringRef function, ArrayRef<HostTensor> args,
               std::string *error, uint8_t poison) {
  auto fail = [&](const Twine &message) -> FailureOr<std::vector<HostTensor>> {
    if (error)
      *error = message.str();
    return failure();
  };
  auto it = signatures.find(function);
  if (it == signatures.end())
    return fail("no public function named '" + function + "'");
  const Signature &sig = it->second;
  if (args.size() != sig.args.size())
    return fail("'" + function + "' takes " + Twine(sig.args.size()) +
                " arguments, got " + Twine(args.size()));
  std::vector<HostTensor> buffers;
  for (auto [i, arg] : llvm::enumerate(args)) {
    const HostTensor &want = sig.args[i];
    if (arg.shape != want.shape || arg.type != want.type ||
        arg.bytes.size() != want.numElements() * tgc::dtypeSize(want.type))
      return fail("argument " + Twine(i) + " of '" + function +
                  "' does not match its type");
    buffers.push_back(arg);
  }
  // The arena: an i8 buffer, 256-byte aligned like the runtime's.
  size_t first = buffers.size();
  if (sig.arenaBytes > 0) {
    HostTensor arena;
    arena.shape = {sig.arenaBytes + 256};
    arena.type = HostType::I1; // one byte per element
    arena.bytes.assign(sig.arenaBytes + 256, poison);
    buffers.push_back(std::move(arena));
  }
  for (const HostTensor &r : sig.results)
    buffers.push_back(HostTensor::zeros(r.shape, r.type));

  std::vector<std::vector<int64_t>> descs;
  for (HostTensor &b : buffers)
    descs.push_back(descriptor(b));
  if (sig.arenaBytes > 0) {
    auto base = reinterpret_cast<int64_t>(buffers[first].bytes.data());
    int64_t aligned = (base + 255) / 256 * 256;
    descs[first] = {aligned, aligned, 0, sig.arenaBytes, 1};
  }
  std::vector<void *> pointers, slots;
  for (auto &d : descs)
    pointers.push_back(d.data());
  for (void *&p : pointers)
    slots.push_back(&p);
  tRanks = ranks;
  if (llvm::Error err =
          engine->invokePacked(("_mlir_ciface_" + function).str(), slots))
    return fail(llvm::toString(std::move(err)));
  size_t results = args.size() + (sig.arenaBytes > 0 ? 1 : 0);
  return std::vector<HostTensor>(buffers.begin() + results, buffers.end());
}
