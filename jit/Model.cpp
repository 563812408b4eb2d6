//===- Model.cpp - compile and train a model in-process ---------*- C++ -*-===//
//
// See include/tgc/Jit.h: frontend -> training pipeline -> CPU JIT, with the
// persistent tensors (roles param, state, step) kept by name between calls.
// Everything MLIR lives in Model::Impl, so the public header has none.
//
//===----------------------------------------------------------------------===//

#include "tgc/Jit.h"
#include "frontend/Sema.h"
#include "codegen/cpu/Jit.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGDialect.h"
#include "passes/Pipelines.h"
#include "tgc/Builder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tgc {

struct Model::Impl {
  /// Calls `entry` with its persistent arguments taken from `persistent`
  /// and the others from `given`; stores the persistent results back.
  bool call(const std::string &entry, const TensorMap &given,
            TensorMap &results, std::string &error);

  std::unique_ptr<tg::cpu::JitModule> jit;
  /// Each entry's arguments and results as (role, name), in order.
  using Tags = std::vector<std::pair<tg::Role, std::string>>;
  std::map<std::string, std::pair<Tags, Tags>> signatures;
  TensorMap persistent, inputs;
};

Model::Model(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Model::~Model() = default;
const TensorMap &Model::state() const { return impl->persistent; }
const TensorMap &Model::inputSpecs() const { return impl->inputs; }

namespace {
/// Makes TGC's dialects and their extensions available in `ctx`.
void addDialects(MLIRContext &ctx) {
  DialectRegistry registry;
  tg::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
}

bool isPersistent(tg::Role role) {
  return role == tg::Role::param || role == tg::Role::state ||
         role == tg::Role::step;
}
} // namespace

std::unique_ptr<Model> Model::compileGraph(Builder &builder,
                                           std::string &error) {
  // The module lives in the builder's context; the JIT keeps no MLIR, so the
  // context need not outlive this call.
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
  // As for artifacts: composites decomposed, @train_step planned, and its
  // code keeps every intermediate in the planned arena.
  PassManager pm(ctx);
  tg::TrainingPipelineOptions training;
  training.decompose = true;
  training.planMemory = true;
  tg::buildTrainingPipeline(pm, training);
  if (failed(pm.run(*module))) {
    error = "building the training step failed: " + diagnostics;
    return nullptr;
  }
  tg::cpu::CpuPipelineOptions cpu;
  cpu.arena = true;
  auto compiled = tg::cpu::JitModule::compile(*module, cpu);
  if (failed(compiled)) {
    error = "JIT compilation failed: " + diagnostics;
    return nullptr;
  }
  auto model = std::make_unique<Impl>();
  for (auto fn : module->getOps<func::FuncOp>()) {
    auto &[args, results] = model->signatures[fn.getName().str()];
    auto tag = [](DictionaryAttr attrs, tg::Role untagged) {
      auto role = attrs ? attrs.getAs<tg::RoleAttr>(tg::attr::role) : nullptr;
      auto name = attrs ? attrs.getAs<StringAttr>(tg::attr::name) : nullptr;
      return std::make_pair(role ? role.getValue() : untagged,
                            name ? name.getValue().str() : std::string());
    };
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      args.push_back(tag(fn.getArgAttrDict(i), tg::Role::input));
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      results.push_back(tag(fn.getResultAttrDict(i), tg::Role::output));
    if (fn.getName() == "train_step")
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (args[i].first == tg::Role::input) {
          auto t = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
          auto ht = tg::cpu::hostTypeOf(t.getElementType());
          model->inputs[args[i].second] =
              HostTensor::zeros(t.getShape().vec(), succeeded(ht) ? *ht : HostType::F32);
        }
  }
  model->jit = std::move(*compiled);
  return std::unique_ptr<Model>(new Model(std::move(model)));
}

std::unique_ptr<Model> Model::compileFile(
    const std::string &path,
    const std::vector<std::pair<std::string, std::string>> &defines,
    std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message();
    return nullptr;
  }
  SourceFile file(path, (*buffer)->getBuffer().str());
  DiagEngine diag(file);
  FrontendOptions opts;
  opts.defines = defines;
  std::unique_ptr<Builder> builder = parseAndElaborate(file, diag, opts);
  if (!builder) {
    llvm::raw_string_ostream os(error);
    diag.print(os);
    return nullptr;
  }
  return compileGraph(*builder, error);
}

bool Model::Impl::call(const std::string &entry, const TensorMap &given,
                 TensorMap &results, std::string &error) {
  auto it = signatures.find(entry);
  if (it == signatures.end()) {
    error = "the model has no entry point '" + entry + "'";
    return false;
  }
  std::vector<HostTensor> args;
  for (const auto &[role, name] : it->second.first) {
    const TensorMap &from = isPersistent(role) ? persistent : given;
    auto found = from.find(name);
    if (found == from.end()) {
      error = entry + ": missing " + (isPersistent(role) ? "state '" : "input '") +
              name + "'" + (isPersistent(role) ? " (call init first)" : "");
      return false;
    }
    args.push_back(found->second);
  }
  auto out = jit->run(entry, args, &error);
  if (failed(out))
    return false;
  results.clear();
  for (auto [i, tag] : llvm::enumerate(it->second.second))
    results[tag.second] = std::move((*out)[i]);
  // Persistent results are the next values of the persistent arguments.
  for (const auto &[role, name] : it->second.second)
    if (isPersistent(role))
      persistent[name] = results[name];
  return true;
}

bool Model::init(int64_t seed, std::string &error) {
  HostTensor s = HostTensor::zeros({}, HostType::I64);
  s.set(0, double(seed));
  TensorMap results;
  return impl->call("init", {{"seed", s}}, results, error);
}

bool Model::trainStep(const TensorMap &given, double &loss,
                      std::string &error) {
  TensorMap results;
  if (!impl->call("train_step", given, results, error))
    return false;
  loss = results["loss"].get(0);
  return true;
}

bool Model::eval(const TensorMap &given, TensorMap &outputs,
                 std::string &error) {
  // eval's parameters are arguments with role "param": the current state.
  return impl->call("eval", given, outputs, error);
}

} // namespace tgc
