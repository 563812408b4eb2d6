//===- MemoryPlan.h - arena planning of a training step ---------*- C++ -*-===//
//
// The buffers of a function (one per tensor value), their lifetimes over a
// schedule, their offsets in one arena, and the report TGC prints before
// anything runs. tg-plan-memory computes a plan and stores it as IR
// attributes; tgc --report=memory reads it back through this API.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_MEMORYPLAN_H
#define TGC_PASSES_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::tg {

/// What a buffer holds, for the report.
/// Scratch: what a backend's lowering of one op allocates for itself while
/// the op runs (tg.scratch), planned live at the op's step only.
enum class BufferKind {
  Param,
  Optimizer,
  Input,
  Gradient,
  Activation,
  Workspace,
  Scratch
};

/// Name used in reports and JSON ("params", "gradients", ...).
llvm::StringRef kindName(BufferKind kind);

/// One buffer of the plan: a tensor value (or several values that share
/// storage in place), live over schedule steps [start, end].
struct Buffer {
  std::string name; ///< tg.name, or the producing op's name
  std::string op;   ///< producing op ("arg" for arguments)
  std::string loc;  ///< file:line:col of the producing op, if known
  BufferKind kind = BufferKind::Workspace;
  int64_t bytes = 0, offset = 0, start = 0, end = 0;
  bool persistent = false; ///< lives in the persistent region
  bool nested = false;     ///< inside a loop body; [start, end] is the loop's
  bool holder = false;     ///< reserves a loop body's region (not a value)
  int64_t aliasOf = -1;    ///< an argument whose storage this result reuses
  bool computeCopy = false; ///< a parameter's low-precision compute copy
  /// For an activation: the op that reads it last, which keeps it alive
  /// from the forward pass ("tg.matmul (model.tg:13:12)"); "" otherwise.
  std::string neededBy;
  bool atPeak = false; ///< live at the schedule's worst moment (top level)
};

/// A complete plan of one function.
struct MemoryPlan {
  std::vector<Buffer> buffers;
  int64_t persistentBytes = 0; ///< params, optimizer state, inputs, step
  int64_t transientBytes = 0;  ///< the reused region
  int64_t lowerBoundBytes = 0; ///< most bytes live at once (transient)
  int64_t naiveBytes = 0;      ///< sum of every transient buffer
  int64_t steps = 0;           ///< length of the schedule

  /// Transient bytes live at the worst moment of the schedule, by kind.
  std::map<BufferKind, int64_t> peakByKind;

  /// Op scratch that a backend's lowering allocates outside the plan (an
  /// op tg-size-scratch could not size, or whose buffers exceed its
  /// tg.scratch), appended after the transient region; 0 until a backend
  /// reports it (tgc fills it in for the CPU). Planned op scratch is
  /// BufferKind::Scratch, inside the transient region.
  int64_t scratchBytes = 0;

  /// Data parallelism (tg-data-parallel): the plan is each rank's; with
  /// ZeRO stage 1 its optimizer state is the rank's 1/ranks shard.
  int64_t ranks = 1, zero = 0;
  /// The largest flat buffer a collective communicates (a bucket: an
  /// all_reduce's tensors, or ranks x a reduce_scatter's or all_gather's
  /// shards), which the CPU backend packs in its planned place in the
  /// arena (PlanOptions::flatBuckets, without which it is 0; a workspace
  /// buffer of the plan).
  int64_t bucketBufferBytes = 0;

  /// Bytes of the parameters' low-precision compute copies (tg.cast with
  /// the compute-copy rule), each buffer once: the mixed-precision share of
  /// the transient buffers, beside the fp32 masters of BufferKind::Param.
  int64_t computeCopyBytes() const;

  int64_t peakBytes() const {
    return persistentBytes + transientBytes + scratchBytes;
  }
  /// Bytes of `kind` in the report: persistent kinds in full, transient
  /// kinds (gradients, activations, workspace, scratch) as live at the
  /// worst moment,
  /// so that the rows add up to the lower bound.
  int64_t bytesOf(BufferKind kind) const;
  /// Sum of every buffer of `kind`, as if none were ever freed.
  int64_t totalBytesOf(BufferKind kind) const;
};

/// Options of the planner.
struct PlanOptions {
  int64_t alignment = 256;
  bool reorder = true; ///< memory-aware list scheduling
  bool inPlace = true; ///< elementwise results reuse a dying operand
  /// Collectives overlap the ops after them (the GPU's communication
  /// stream, docs/data-parallel.md): each is issued as soon as what it
  /// reads is computed, and what it reads stays live until the first op
  /// that reads its results (where the runtime waits for it).
  bool asyncCollectives = false;
  /// Each communicating collective packs its bucket into one flat buffer
  /// (the CPU backend, codegen/cpu/CommToCalls.cpp): plan it as workspace
  /// live while the collective runs, its offset the op's `bucket_offset`.
  /// The GPU backend communicates the planned tensors themselves.
  bool flatBuckets = true;
};

/// Inlines calls, reorders `fn`'s body to keep the peak low, assigns
/// offsets, and records the plan as attributes: `tg.offset`/`tg.bytes` on
/// ops, `tg.memory` (a dictionary summary) on the function. Returns the plan.
FailureOr<MemoryPlan> planMemory(func::FuncOp fn, const PlanOptions &opts);

/// Offsets for `buffers` (bytes/start/end set; persistent ones skipped):
/// greedy by size, best fit, `alignment`-aligned. Returns the region size.
int64_t assignOffsets(std::vector<Buffer> &buffers, int64_t alignment);

/// "1.50 GiB", "12.00 MiB", "512 B": sizes as the reports print them.
std::string formatBytes(int64_t bytes);

/// `file:line:col` of `loc` (the first such location of a fused or named
/// one), or "" when it has none.
std::string locString(Location loc);

/// The report's totals (no buffer list) as a JSON object: what
/// --format=json starts with and what an artifact's manifest records.
llvm::json::Object memorySummaryJson(const MemoryPlan &plan);

/// The report printers of tgc --report=memory.
void printMemoryTable(const MemoryPlan &plan, llvm::raw_ostream &os);
void printMemoryJson(const MemoryPlan &plan, llvm::raw_ostream &os);
void printMemorySvg(const MemoryPlan &plan, llvm::raw_ostream &os);

} // namespace mlir::tg

#endif // TGC_PASSES_MEMORYPLAN_H
