//===- Model.cpp - compile and train a model in-process ---------*- C++ -*-===//
//
// See include/tgc/Jit.h: frontend -> training pipeline -> the artifact tgc
// would write (codegen/artifact, built in memory; with the GPU step of the
// driver's buildGpuSections for a GPU device) -> the runtime's Executor on
// the chosen device, and its Trainer. Everything MLIR and runtime lives in Model::Impl, so the
// public header has neither.
//
//===----------------------------------------------------------------------===//

#include "tgc/Jit.h"
#include "codegen/artifact/Manifest.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGDialect.h"
#include "driver/Training.h"
#include "frontend/Sema.h"
#include "passes/Pipelines.h"
#include "runtime/Artifact.h"
#include "runtime/Data.h"
#include "runtime/Executor.h"
#include "runtime/Trainer.h"
#include "tgc/Builder.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tgc {

namespace {
/// A compiled model loaded by the runtime.
struct Loaded {
  std::unique_ptr<tgrt::Artifact> artifact;
  std::unique_ptr<tgrt::Executor> executor;
  std::string label; ///< the model's file, or "<graph>"
  /// Why Device::Auto runs on the CPU without GPU code (no driver, no
  /// device); empty otherwise.
  std::string noGpu;
};
} // namespace

struct Model::Impl {
  explicit Impl(Loaded loaded)
      : artifact(std::move(loaded.artifact)),
        executor(std::move(loaded.executor)), label(std::move(loaded.label)),
        noGpu(std::move(loaded.noGpu)) {
    for (const tgrt::TensorSpec &s : executor->inputsOf("train_step"))
      inputs[s.name] = HostTensor::zeros(s.shape, s.dtype);
  }
  /// Fails with "call init first" until the state is set.
  bool ready(const char *entry, std::string &error) const;
  /// Marks the state() copy stale: it is made again only when asked for,
  /// so a training step copies no parameters.
  void stateChanged() { stateStale = true; }

  std::unique_ptr<tgrt::Artifact> artifact;
  std::unique_ptr<tgrt::Executor> executor;
  std::string label;
  bool initialised = false;
  mutable bool stateStale = true;
  mutable TensorMap stateCopy;
  TensorMap inputs;
  std::string budgetNote; ///< what the budget fit chose, or empty
  std::string noGpu;      ///< Loaded::noGpu
};

Model::Model(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Model::~Model() = default;
const TensorMap &Model::inputSpecs() const { return impl->inputs; }
const std::string &Model::budgetNote() const { return impl->budgetNote; }

namespace {
/// Makes TGC's dialects and their extensions available in `ctx`.
void addDialects(MLIRContext &ctx) {
  DialectRegistry registry;
  tg::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
}

HostTensor toHost(const tgrt::Tensor &t) {
  HostTensor h;
  h.shape = t.shape;
  h.type = t.dtype;
  h.bytes.assign(t.bytes.begin(), t.bytes.end());
  return h;
}

tgrt::Tensor toRuntime(const HostTensor &h) {
  tgrt::Tensor t;
  t.shape = h.shape;
  t.dtype = h.type;
  t.bytes.assign(h.bytes.begin(), h.bytes.end());
  return t;
}

tgrt::TensorMap toRuntime(const TensorMap &m) {
  tgrt::TensorMap out;
  for (const auto &[name, t] : m)
    out[name] = toRuntime(t);
  return out;
}

tgrt::DeviceKind deviceKind(Device d) {
  switch (d) {
  case Device::Cpu:
    return tgrt::DeviceKind::Cpu;
  case Device::Emulator:
    return tgrt::DeviceKind::Emulator;
  case Device::Cuda:
    return tgrt::DeviceKind::Cuda;
  case Device::Auto:
    return tgrt::DeviceKind::Auto;
  }
  return tgrt::DeviceKind::Cpu;
}

/// The sections of an artifact besides its manifest.
const char *const kCodeSections[] = {"cpu.so", "gpu.fatbin", "gpu.sm_80.ptx"};

} // namespace

const TensorMap &Model::state() const {
  if (impl->stateStale) {
    impl->stateCopy.clear();
    for (const auto &[name, t] : impl->executor->state())
      impl->stateCopy[name] = toHost(t);
    impl->stateStale = false;
  }
  return impl->stateCopy;
}

namespace {
/// The model of `module` (a forward model, or a training step the budget
/// fit built and planned as `plan`), compiled exactly as tgc compiles an
/// artifact: composites decomposed, @train_step planned, its code keeping
/// every intermediate in the arena, then loaded by the runtime on `device`.
/// A GPU device adds the GPU step as `tgc --target=sm_80,sm_90a,cpu` builds
/// it (the emulator: sm_80); Auto without a CUDA device compiles none and
/// runs on the CPU.
std::optional<Loaded> loadModule(ModuleOp module, const tg::MemoryPlan *plan,
                                 const std::string &diagnostics, Device device,
                                 std::string &error) {
  Loaded loaded;
  if (device == Device::Auto) {
    loaded.noGpu = tgrt::cudaUnavailable();
    if (!loaded.noGpu.empty())
      device = Device::Cpu;
  }
  // The GPU step first, from the training module as tgc hands it over (not
  // planned for the CPU); buildGpuSections works on its own copy.
  llvm::json::Object gpuManifest;
  std::vector<std::pair<std::string, std::string>> gpuSections;
  if (device != Device::Cpu) {
    OwningOpRef<ModuleOp> copy;
    if (!module.lookupSymbol("train_step")) {
      copy = cast<ModuleOp>(module->clone());
      // The GPU step keeps attention whole for the fused kernels (the
      // default, as for the CPU); the CPU code is built from `module` apart.
      if (!buildTraining(*copy, BuildSettings())) {
        error = "building the training step failed: " + diagnostics;
        return std::nullopt;
      }
    }
    std::vector<std::string> gpus = {"sm_80"};
    if (device != Device::Emulator)
      gpus.push_back("sm_90a");
    if (!buildGpuSections(copy ? *copy : module, gpus, gpuManifest, gpuSections,
                          error)) {
      // Empty: a located diagnostic was printed on stderr.
      error = "compiling for the GPU failed: " +
              (error.empty() ? std::string("see the error above") : error);
      return std::nullopt;
    }
  }
  if (!module.lookupSymbol("train_step")) {
    PassManager pm(module.getContext());
    tg::TrainingPipelineOptions training;
    training.decompose = true;
    training.planMemory = true;
    tg::buildTrainingPipeline(pm, training);
    if (failed(pm.run(module))) {
      error = "building the training step failed: " + diagnostics;
      return std::nullopt;
    }
  }
  std::string why;
  FailureOr<tg::CpuArtifact> sections =
      tg::buildCpuArtifact(module, tg::CpuObjectOptions(), plan, why);
  if (failed(sections)) {
    error = "compiling for the CPU failed: " + (why.empty() ? diagnostics : why);
    return std::nullopt;
  }
  tgrt::ArtifactWriter writer;
  if (!gpuSections.empty())
    sections->manifest["gpu"] = std::move(gpuManifest);
  std::string manifest =
      llvm::formatv("{0}", llvm::json::Value(std::move(sections->manifest)));
  if (!writer.addSection("manifest", manifest, error) ||
      !writer.addSection("cpu.so", sections->cpuSo, error))
    return std::nullopt;
  for (const auto &[name, bytes] : gpuSections)
    if (!writer.addSection(name, bytes, error))
      return std::nullopt;
  auto model = module->getAttrOfType<StringAttr>(tg::attr::model);
  loaded.label = model ? model.getValue().str() : "<graph>";
  loaded.artifact =
      tgrt::Artifact::fromBytes(writer.bytes(), loaded.label, error);
  if (!loaded.artifact)
    return std::nullopt;
  loaded.executor =
      tgrt::Executor::load(*loaded.artifact, error, deviceKind(device));
  if (!loaded.executor)
    return std::nullopt;
  return loaded;
}
} // namespace

std::unique_ptr<Model> Model::compileGraph(Builder &builder,
                                           std::string &error,
                                           const CompileOptions &options) {
  // The module lives in the builder's context; the model keeps no MLIR, so
  // the context need not outlive this call.
  std::string diagnostics;
  MLIRContext *ctx = &builder.context();
  addDialects(*ctx);
  ScopedDiagnosticHandler collect(ctx, [&diagnostics](Diagnostic &d) {
    diagnostics += d.str() + "\n";
  });
  OwningOpRef<ModuleOp> module = builder.build();
  if (!module) {
    for (const std::string &e : builder.errors())
      diagnostics += e + "\n";
    error = "the graph does not verify: " + diagnostics;
    return nullptr;
  }
  std::optional<Loaded> loaded =
      loadModule(*module, nullptr, diagnostics, options.device, error);
  if (!loaded)
    return nullptr;
  return std::unique_ptr<Model>(
      new Model(std::make_unique<Impl>(std::move(*loaded))));
}

std::unique_ptr<Model> Model::compileFile(
    const std::string &path,
    const std::vector<std::pair<std::string, std::string>> &defines,
    std::string &error, const CompileOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message();
    return nullptr;
  }
  SourceFile file(path, (*buffer)->getBuffer().str());
  MLIRContext ctx;
  addDialects(ctx);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler collect(&ctx, [&os](Diagnostic &d) {
    os << d.str() << "\n";
  });
  CompileFn compile = frontendCompileFn(file, defines, ctx, "tgc", os);
  OwningOpRef<ModuleOp> module = compile({});
  if (!module) {
    error = diagnostics;
    return nullptr;
  }
  // A train block's memory_budget is fitted as tgc fits it (recomputation,
  // micro-batches, bf16), not ignored.
  auto train = (*module)->getAttrOfType<DictionaryAttr>(tg::attr::train);
  std::optional<BudgetFit> fit;
  if (train && train.get("memory_budget")) {
    std::string why;
    BuildSettings settings;
    fit = fitBudget(compile, std::nullopt, settings, why);
    if (!fit) {
      error = why.empty() ? diagnostics : why;
      return nullptr;
    }
    module = std::move(fit->module);
  }
  std::optional<Loaded> loaded =
      loadModule(*module, fit ? &fit->plan : nullptr, diagnostics,
                 options.device, error);
  if (!loaded)
    return nullptr;
  auto impl = std::make_unique<Impl>(std::move(*loaded));
  if (fit)
    impl->budgetNote = fit->note;
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

std::string Model::device() const {
  return impl->noGpu.empty() ? impl->executor->deviceDescription()
                             : "cpu (no CUDA: " + impl->noGpu + ")";
}

bool Model::Impl::ready(const char *entry, std::string &error) const {
  if (initialised)
    return true;
  error = std::string(entry) +
          ": parameters and optimizer state are not set (call init first)";
  return false;
}


bool Model::init(int64_t seed, std::string &error) {
  if (!impl->executor->init(seed, error))
    return false;
  impl->initialised = true;
  impl->stateChanged();
  return true;
}

bool Model::trainStep(const TensorMap &given, double &loss,
                      std::string &error) {
  if (!impl->ready("train_step", error) ||
      !impl->executor->trainStep(toRuntime(given), loss, error))
    return false;
  impl->stateChanged();
  return true;
}

bool Model::eval(const TensorMap &given, TensorMap &outputs,
                 std::string &error) {
  tgrt::TensorMap out;
  if (!impl->ready("eval", error) ||
      !impl->executor->eval(toRuntime(given), out, error))
    return false;
  outputs.clear();
  for (const auto &[name, t] : out)
    outputs[name] = toHost(t);
  return true;
}

bool Model::train(const TrainSettings &settings,
                  std::vector<EpochSummary> &epochs, std::string &error) {
  tgrt::TrainOptions options;
  options.epochs = settings.epochs;
  options.batchLimit = settings.stepsPerEpoch;
  options.lossEvery = settings.lossEvery;
  options.seed = settings.seed;
  options.save = settings.save;
  options.metrics = settings.metrics;
  options.label = impl->label;
  options.out = settings.progress ? stdout : nullptr;
  tgrt::Trainer trainer(*impl->executor, options);
  tgrt::DataSource data;
  std::string dir =
      settings.dataDir.empty() ? tgrt::kFashionMnistDir : settings.dataDir;
  if (!tgrt::openDataSource(settings.data, dir, *impl->executor, data, error))
    return false;
  if (!impl->initialised && !trainer.start(error))
    return false;
  impl->initialised = true;
  tgrt::TrainResult result = trainer.train(data);
  impl->stateChanged();
  epochs.clear();
  for (const tgrt::EpochStats &e : result.epochs)
    epochs.push_back({e.epoch, e.steps, e.meanLoss, e.seconds,
                      e.samplesPerSecond, e.accuracy});
  if (result.status == tgrt::TrainResult::Finished)
    return true;
  error = result.message;
  return false;
}

bool Model::saveCheckpoint(const std::string &path, std::string &error) const {
  return impl->ready("saveCheckpoint", error) &&
         impl->executor->saveCheckpoint(path, error);
}

bool Model::loadCheckpoint(const std::string &path, std::string &error) {
  if (!impl->executor->loadCheckpoint(path, /*paramsOnly=*/false, error))
    return false;
  impl->initialised = true;
  impl->stateChanged();
  return true;
}

bool Model::writeArtifact(const std::string &path, std::string &error) const {
  tgrt::ArtifactWriter writer;
  if (!writer.addSection("manifest", impl->artifact->section("manifest"), error))
    return false;
  for (const char *name : kCodeSections)
    if (impl->artifact->has(name) &&
        !writer.addSection(name, impl->artifact->section(name), error))
      return false;
  return writer.write(path, error);
}

} // namespace tgc
