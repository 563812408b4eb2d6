//===- Manifest.h - the interface a .tgx artifact declares ------*- C++ -*-===//
//
// The "manifest" section of an artifact (docs/artifact.md) names the model's
// entry points (init, train_step, eval, forward_grad, ...) and, for each,
// its arguments and results in order with name, role, dtype and shape. The
// runtime trusts nothing else about the compiled code: buffer sizes, the
// symbol names and the persistent state all follow from this.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_MANIFEST_H
#define TG_RUNTIME_MANIFEST_H

#include "runtime/Json.h"
#include "runtime/Tensor.h"

#include <string>
#include <string_view>
#include <vector>

namespace tgrt {

/// The manifest schema version this runtime understands.
inline constexpr int64_t kManifestFormat = 1;

/// One argument or result: tg.name, tg.role, element type, static shape.
struct TensorSpec {
  std::string name, role;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  /// ZeRO stage 1: set when this is one rank's flat shard (shape [s]) of a
  /// tensor of this shape, which checkpoints hold whole.
  std::vector<int64_t> fullShape;
  bool sharded = false;
  size_t byteSize() const { return numel * dtypeSize(dtype); }
  /// "x: f32[128,784]".
  std::string str() const;
};

/// One entry point: its C symbol is `tgx_<name>`.
struct EntrySpec {
  std::string name;
  std::vector<TensorSpec> args, results;
  /// The compiled code tolerates a result aliasing the argument of the same
  /// (role, name); the runtime then passes one buffer for both.
  bool inplace = false;
  /// Bytes of the arena the entry's planned values live in (0: none). The
  /// wrapper then takes one more buffer, right after the arguments.
  int64_t arenaBytes = 0;
};

/// The parsed, validated manifest.
struct Manifest {
  int64_t format = 0;
  std::string model;
  /// Processes a data-parallel train_step averages over (1: one process).
  int64_t ranks = 1;
  /// ZeRO stage (1: optimizer state sharded over the ranks; 0: replicated).
  int64_t zero = 0;
  std::vector<EntrySpec> entries;
  Json memory; ///< optional memory plan, kept as written
  Json raw;    ///< the whole document

  /// Parses and validates the manifest JSON; errors name the offending
  /// field ("manifest: entries.eval.args[1].dtype: unknown dtype 'f8'").
  static bool parse(std::string_view text, Manifest &out, std::string &err);
  const EntrySpec *entry(std::string_view name) const;
  /// The interface as JSON (what `tg-run --describe` prints): model, entry
  /// points, and the parameters, optimizer state, inputs and outputs.
  Json describe() const;
};

/// Roles whose tensors persist in the executor across calls.
bool isPersistentRole(std::string_view role);

} // namespace tgrt

#endif // TG_RUNTIME_MANIFEST_H
