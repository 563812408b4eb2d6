//===- Manifest.cpp - the interface of a compiled model ---------*- C++ -*-===//
//
// See Manifest.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/artifact/Manifest.h"
#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"
#include "runtime/Artifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

StringRef mlir::tg::artifactDTypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isBF16())
    return "bf16";
  if (t.isF16())
    return "f16";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(64))
    return "i64";
  if (t.isInteger(1))
    return "i1";
  return "";
}

/// The values an integer argument may hold, from what its value indexes:
/// cross_entropy's labels (or, decomposed, one_hot's indices) the class
/// dimension (its ignore_index, or the constant of `labels != c`, allowed), embedding's indices the table's rows; through
/// reshape, slice, transpose, cast and the micro-batch's extract_slice. `bound` stays 0 when nothing is indexed.
/// The manifest's spelling of a role: the enum's own name ("param", ...).
static std::string roleName(DictionaryAttr attrs, bool isArg) {
  auto role = attrs ? attrs.getAs<tg::RoleAttr>(tg::attr::role) : nullptr;
  return tg::stringifyRole(role ? role.getValue()
                                : (isArg ? tg::Role::input : tg::Role::output))
      .str();
}

static void indexRange(Value arg, int64_t &bound,
                       std::optional<int64_t> &ignore) {
  auto tighten = [&](int64_t b) { bound = bound ? std::min(bound, b) : b; };
  SmallVector<Value> work{arg};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *op = use.getOwner();
      if (auto ce = dyn_cast<tg::CrossEntropyOp>(op);
          ce && use.get() == ce.getLabels()) {
        tighten(cast<RankedTensorType>(ce.getLogits().getType()).getShape().back());
        ignore = ce.getIgnoreIndex();
      } else if (auto em = dyn_cast<tg::EmbeddingOp>(op);
                 em && use.get() == em.getIndices()) {
        tighten(cast<RankedTensorType>(em.getTable().getType()).getShape().front());
      } else if (auto oh = dyn_cast<tg::OneHotOp>(op)) {
        // cross_entropy after differentiation: one_hot over the classes.
        tighten(cast<RankedTensorType>(oh.getType()).getShape().back());
      } else if (auto cmp = dyn_cast<tg::CmpOp>(op);
                 cmp && cmp.getPredicate() == tg::CmpPredicate::ne &&
                 use.get() == cmp.getLhs()) {
        // ... and its ignore_index: labels != constant.
        auto c = cmp.getRhs().getDefiningOp<tg::ConstantOp>();
        auto v = c ? dyn_cast<DenseIntElementsAttr>(c.getValue()) : nullptr;
        if (v && v.isSplat())
          ignore = v.getSplatValue<APInt>().getSExtValue();
      } else if (isa<tg::ReshapeOp, tg::SliceOp, tg::TransposeOp, tg::CastOp,
                     tensor::ExtractSliceOp>(op)) {
        work.push_back(op->getResult(0));
      }
    }
  }
}

FailureOr<llvm::json::Object>
mlir::tg::buildManifest(ModuleOp module, const llvm::json::Object *memory) {
  llvm::json::Object entries;
  auto arenas = module->getAttrOfType<DictionaryAttr>(attr::arenaBytes);
  for (StringRef name : kEntryPoints) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn)
      continue;
    auto describe = [&](Type type, DictionaryAttr attrs, unsigned index,
                        bool isArg) -> FailureOr<llvm::json::Value> {
      auto tensor = dyn_cast<RankedTensorType>(type);
      StringRef dtype = tensor ? artifactDTypeName(tensor.getElementType()) : "";
      if (dtype.empty() || !tensor.hasStaticShape())
        return fn.emitOpError() << (isArg ? "argument #" : "result #") << index
                                << " has type " << type
                                << ", which a .tgx artifact cannot hold";
      auto str = [&](StringRef key, StringRef fallback) {
        auto a = attrs ? attrs.getAs<StringAttr>(key) : StringAttr();
        return a ? a.getValue().str() : fallback.str();
      };
      llvm::json::Array shape;
      for (int64_t d : tensor.getShape())
        shape.push_back(d);
      std::string fallbackName = (isArg ? "arg" : "result") + std::to_string(index);
      llvm::json::Object desc{{"name", str(attr::name, fallbackName)},
                              {"role", roleName(attrs, isArg)},
                              {"dtype", dtype},
                              {"shape", std::move(shape)}};
      // ZeRO stage 1: one rank's shard; checkpoints hold the whole tensor.
      if (auto full = attrs ? attrs.getAs<DenseI64ArrayAttr>(attr::shardOf)
                            : DenseI64ArrayAttr())
        desc["full_shape"] = llvm::json::Array(full.asArrayRef());
      // The runtime checks the data against these before a step: an index
      // out of range would train silently with a loss of 0.
      if (isArg && isa<IntegerType>(tensor.getElementType()) && !fn.isExternal()) {
        int64_t bound = 0;
        std::optional<int64_t> ignore;
        indexRange(fn.getArgument(index), bound, ignore);
        if (bound > 0)
          desc["index_bound"] = bound;
        if (bound > 0 && ignore)
          desc["ignore_index"] = *ignore;
      }
      return llvm::json::Value(std::move(desc));
    };
    llvm::json::Array args, results;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto v = describe(fn.getArgumentTypes()[i], fn.getArgAttrDict(i), i, true);
      if (failed(v))
        return failure();
      args.push_back(std::move(*v));
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      auto v = describe(fn.getResultTypes()[i], fn.getResultAttrDict(i), i, false);
      if (failed(v))
        return failure();
      results.push_back(std::move(*v));
    }
    llvm::json::Object entry{{"args", std::move(args)},
                             {"results", std::move(results)}};
    // An entry whose code keeps the plan (the backend recorded its arena)
    // takes the arena after its arguments, and updates parameters and state
    // in their own storage (docs/artifact.md).
    if (auto bytes = arenas ? arenas.getAs<IntegerAttr>(name) : IntegerAttr()) {
      entry["arena_bytes"] = bytes.getInt();
      entry["inplace"] = true;
    }
    entries[name] = std::move(entry);
  }
  llvm::json::Object manifest{{"format", 1}, {"entries", std::move(entries)}};
  if (auto model = module->getAttrOfType<StringAttr>(attr::model))
    manifest["model"] = model.getValue().str();
  // A data-parallel train_step (tg-data-parallel) runs on exactly this many
  // processes; the runtime checks its job against it.
  if (auto ranks = dialect(module->getContext()).getRanksAttrHelper().getAttr(
          module))
    manifest["ranks"] = ranks.getInt();
  if (auto zero = dialect(module->getContext()).getZeroAttrHelper().getAttr(
          module))
    manifest["zero"] = zero.getInt();
  if (memory)
    manifest["memory"] = llvm::json::Object(*memory);
  return manifest;
}

bool mlir::tg::writeArtifact(
    const llvm::json::Object &manifest, StringRef cpuSo,
    ArrayRef<std::pair<std::string, std::string>> sections,
    const std::string &path, std::string &error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object(manifest)));
  tgrt::ArtifactWriter writer;
  if (!writer.addSection("manifest", text, error))
    return false;
  // A GPU-only artifact (tgc --target=sm_80) has no CPU code.
  if (!cpuSo.empty() &&
      !writer.addSection("cpu.so", std::string_view(cpuSo.data(), cpuSo.size()),
                         error))
    return false;
  for (const auto &[name, bytes] : sections)
    if (!writer.addSection(name, bytes, error))
      return false;
  return writer.write(path, error);
}
