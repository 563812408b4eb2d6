//===- Schedule.h - planned entry points as GPU launch schedules -*- C++ -*-===//
//
// The GPU step of `tgc --target=sm_80,...`: the training module is fused and
// planned for the GPU (its own plan, every entry point), each top-level op
// of each entry point becomes kernel launches (KernelGen.h), and every
// kernel parameter and every function result is mapped to a buffer: an
// argument of the entry, an offset in the entry's arena, or a constant of
// the schedule. The result is a schedule the runtime replays without
// deciding anything (docs/artifact.md, "GPU schedule"), plus one kernels
// module per target, lowered to PTX, assembled and bundled into the fat
// binary.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_SCHEDULE_H
#define TG_CODEGEN_NVPTX_SCHEDULE_H

#include "codegen/nvptx/KernelGen.h"
#include "passes/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tg::nvptx {

/// Where a tensor lives while an entry point runs.
struct BufferRef {
  enum class Kind { Arg, Arena, Const };
  Kind kind = Kind::Arena;
  /// The argument (Arg) or the schedule's constant (Const); 0 for Arena.
  int64_t index = 0;
  /// Byte offset in that buffer (the arena offset for Arena).
  int64_t offset = 0;
  /// Bytes of the tensor (dense, row-major; i1 one byte per element).
  int64_t bytes = 0;
  bool operator==(const BufferRef &o) const {
    return kind == o.kind && index == o.index && offset == o.offset &&
           bytes == o.bytes;
  }
};

/// A collective step of a data-parallel step (ScheduleCollectives.cpp):
/// one bucket of tg.all_reduce / tg.reduce_scatter / tg.all_gather, one
/// NCCL call per tensor on the step's stream, or tg.shard, this rank's part
/// of a buffer every rank holds (a copy at a rank-dependent offset).
struct CollectiveStep {
  /// "all_reduce", "reduce_scatter", "all_gather", "shard"; empty: the
  /// step is a launch or a copy.
  std::string op;
  std::string reduce; ///< "sum" or "mean" (all_reduce, reduce_scatter)
  std::string dtype;  ///< "f32", "bf16" or "f16"
  /// The communicator's id (0: tg.comm_world, the job's world).
  int64_t comm = 0;
  /// Per tensor: elements each rank receives (all_reduce), receives as its
  /// shard (reduce_scatter, shard) or sends (all_gather); where it is read
  /// and where it is written.
  std::vector<int64_t> counts;
  std::vector<BufferRef> srcs, dsts;
};

/// One step of an entry's schedule: a kernel launch, a copy between
/// buffers (a reshape whose result the plan placed apart from its operand),
/// or a collective (`collective.op` set).
struct ScheduleStep {
  bool isCopy = false;
  KernelLaunch launch;            ///< a launch (params unused: see below)
  std::vector<BufferRef> params;  ///< one per kernel parameter
  BufferRef src, dst;             ///< a copy
  CollectiveStep collective;      ///< a collective
};

/// Steps [begin, begin + length * count) are `count` iterations of one
/// loop body (an unrolled accumulation loop), `length` steps each.
struct RepeatedSteps {
  size_t begin = 0, length = 0;
  int64_t count = 0;
};

/// The schedule of one entry point for one target.
struct EntrySchedule {
  std::string name;
  /// The GPU plan's transient bytes, then (256-byte aligned) the largest
  /// kernel scratch of one op (KernelParam::Kind::Scratch).
  int64_t arenaBytes = 0;
  std::vector<ScheduleStep> steps;
  /// Where `steps` repeats a loop body; the manifest writes such a run as
  /// one "repeat" step when the iterations differ only by buffer offsets
  /// that grow by a fixed stride (docs/artifact.md).
  std::vector<RepeatedSteps> repeats;
  std::vector<BufferRef> results; ///< where each function result lives
};

/// A constant the schedule reads: `element` (raw little-endian bytes of one
/// element, or of the whole tensor) repeated `repeat` times.
struct ScheduleConstant {
  std::string element;
  int64_t repeat = 1;
  int64_t bytes() const { return int64_t(element.size()) * repeat; }
};

/// Every entry point of one target.
struct GpuSchedule {
  Target target = Target::SM80;
  std::vector<EntrySchedule> entries;
  std::vector<ScheduleConstant> constants;
};

/// Lowers one top-level op to launches (lowerOpToKernels; tests pass their
/// own).
using LowerOpFn = std::function<mlir::FailureOr<std::vector<KernelLaunch>>(
    mlir::Operation *, Target, mlir::ModuleOp)>;

/// Decomposes the attention ops of `module` that no fused GPU kernel takes
/// (f32, other head dims), with one remark at the first that says why and
/// how many; they then run as today's ops. Success when there are none.
mlir::LogicalResult decomposeRefusedAttention(mlir::ModuleOp module);

/// The step a GPU target runs, for `tgc --report=kernels --target=...`:
/// `module`'s training module after the pipeline with fusion groups
/// (tg-fuse); where decomposeRefusedAttention changes anything (its
/// remark), the groups are inlined and the step fused again, so the
/// report lists the kernels that run.
mlir::LogicalResult prepareGpuReport(mlir::ModuleOp module);

/// Fuses (tg-fuse) `module`, a training module after the training pipeline
/// (decomposed, unfused, unplanned), in place, configures its GEMMs, sizes
/// its ops' kernel scratch for `targets` (tg-size-gpu-scratch; none given:
/// both) and plans each of its `entries` that it has for the GPU
/// (tg.memory on each: the arena of its schedule, the scratch inside;
/// each plan also into `plans` when given). Fails with diagnostics on the
/// IR.
mlir::LogicalResult
prepareGpuModule(mlir::ModuleOp module, llvm::ArrayRef<llvm::StringRef> entries,
                 llvm::ArrayRef<Target> targets = {},
                 llvm::StringMap<mlir::tg::MemoryPlan> *plans = nullptr);

/// The GPU plan of `entry` (prepareGpuModule on a copy of `module` for
/// `targets`): what `tgc --report=memory --target=sm_...` prints, the
/// kernels' op scratch in its `op scratch` row.
mlir::FailureOr<mlir::tg::MemoryPlan>
planGpuEntry(mlir::ModuleOp module, llvm::ArrayRef<Target> targets,
             llvm::StringRef entry);

/// The schedule of each of `entries` that `module` (prepared by
/// prepareGpuModule) has, for target `t`; the kernels go into `kernels` (a
/// module in the same context). Fails with a located diagnostic on the op
/// no generator takes or a value without a buffer.
mlir::FailureOr<GpuSchedule>
buildGpuSchedule(mlir::ModuleOp module, Target t, mlir::ModuleOp kernels,
                 llvm::ArrayRef<llvm::StringRef> entries,
                 const LowerOpFn &lower = lowerOpToKernels);

/// The manifest's form of a schedule (docs/artifact.md).
llvm::json::Object scheduleJson(const GpuSchedule &s);

/// Whether `op` is a collective the schedule runs as a CollectiveStep
/// (tg.all_reduce, tg.reduce_scatter, tg.all_gather, tg.shard).
bool isCollectiveOp(mlir::Operation *op);

/// The collective step of `op` (isCollectiveOp), with each operand's
/// buffer from `operand` and each result's from `result` (the plan's);
/// fails with a located error where a buffer is missing or NCCL could not
/// take the layout (a shard's operand not padded to ranks x its shard,
/// partially overlapping buffers).
mlir::FailureOr<CollectiveStep> buildCollectiveStep(
    mlir::Operation *op,
    llvm::function_ref<mlir::FailureOr<BufferRef>(unsigned)> operand,
    llvm::function_ref<std::optional<BufferRef>(unsigned)> result);

/// Rewrites the collectives of `module` so that NCCL can run them on its
/// buffers as they are: a tensor of n elements shared out over `ranks`
/// shards of s = ceil(n / ranks) is communicated as ranks * s elements, so
/// where n < ranks * s the operand of tg.reduce_scatter and tg.shard is
/// padded with zeros (tg.concat) and tg.all_gather gathers ranks * s
/// elements and keeps the first n (tg.slice). Tensors the ranks divide are
/// left alone.
void padShardsForNccl(mlir::ModuleOp module);

/// Lowers `kernels` (llvm.func kernels with scf/arith/nvvm inside, in any
/// context) to PTX for `t`. False and a one-line `error` on failure.
bool compileKernelsToPTX(mlir::ModuleOp kernels, Target t, std::string &ptx,
                         std::string &error);

/// What the GPU backend adds to an artifact.
struct GpuArtifact {
  llvm::json::Object manifest; ///< the manifest's "gpu" member
  std::string fatbin;          ///< the "gpu.fatbin" section
  std::string ptxSm80;         ///< the "gpu.sm_80.ptx" section ("" if none)
  /// The "gpu.sm_90a.ptx" section ("" if none): sm_90a code cannot be
  /// JIT-compiled for later GPUs, so the fat binary holds only its cubin;
  /// this text is what `tg-run --device emulator` and the tests' fake
  /// driver (TG_FAKE_CUDA_PTX) run.
  std::string ptxSm90a;
};

/// The whole GPU step for `targets`: prepareGpuModule on a copy of
/// `module`, a schedule and a kernels module per target, PTX, ptxas and
/// fatbinary. With `assemble` false the fat binary is not built (no CUDA
/// toolkit needed: for tests of the schedule). On failure `error` has one
/// line, or is empty where a diagnostic was emitted on the IR.
mlir::FailureOr<GpuArtifact> buildGpuArtifact(mlir::ModuleOp module,
                                              llvm::ArrayRef<Target> targets,
                                              llvm::ArrayRef<llvm::StringRef> entries,
                                              std::string &error,
                                              bool assemble = true,
                                              const LowerOpFn &lower =
                                                  lowerOpToKernels);

} // namespace tg::nvptx

#endif // TG_CODEGEN_NVPTX_SCHEDULE_H
