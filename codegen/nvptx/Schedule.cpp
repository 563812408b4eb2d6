//===- Schedule.cpp - planned entry points as GPU launch schedules -*- C++ -*-===//
//
// See Schedule.h. The schedule builder trusts the plan's attributes
// (tg.offset/tg.offsets in the arena, tg.alias_arg(s) in an argument's
// storage) for every value an op writes, and maps the function's arguments
// and constants itself; it never invents a buffer, so a value the plan did
// not place is an error at the op that needs it.
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/Schedule.h"
#include "codegen/nvptx/AttentionSm80.h"
#include "codegen/nvptx/Passes.h"
#include "codegen/nvptx/Toolchain.h"

#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"
#include "passes/Fusion.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace tg::nvptx {

LogicalResult decomposeRefusedAttention(ModuleOp module) {
  SmallVector<Operation *> refused;
  std::optional<std::string> why;
  module.walk([&](Operation *op) {
    if (!isAttentionOp(op))
      return;
    if (std::optional<std::string> r = attentionKernelRefusal(op)) {
      if (!why)
        why = r;
      refused.push_back(op);
    }
  });
  if (refused.empty())
    return success();
  refused.front()->emitRemark()
      << "no fused GPU attention kernel for " << refused.size()
      << " attention op(s) (the first: " << *why
      << "); they run decomposed, with [T, T] temporaries";
  RewritePatternSet patterns(module.getContext());
  mlir::tg::populateDecomposeCompositesPatterns(patterns,
                                                {"attention", "attention_grad"});
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  return applyOpPatternsGreedily(refused, std::move(patterns), config);
}

LogicalResult prepareGpuReport(ModuleOp module) {
  bool refused = false;
  module.walk([&](Operation *op) {
    refused |= isAttentionOp(op) && attentionKernelRefusal(op).has_value();
  });
  if (!refused)
    return success();
  // Attention is never inside a group (tg-fuse leaves it whole): inline
  // the groups so that its decomposed ops fuse with their neighbours, as
  // prepareGpuModule fuses them (decomposition first).
  mlir::tg::inlineFusedGroups(module);
  if (failed(decomposeRefusedAttention(module)))
    return failure();
  PassManager pm(module.getContext());
  pm.addPass(mlir::tg::createFusePass());
  return pm.run(module);
}

LogicalResult prepareGpuModule(ModuleOp module, ArrayRef<StringRef> entries,
                               ArrayRef<Target> targets,
                               llvm::StringMap<mlir::tg::MemoryPlan> *plans) {
  if (failed(decomposeRefusedAttention(module)))
    return failure();
  padShardsForNccl(module);
  PassManager pm(module.getContext());
  pm.addPass(mlir::tg::createFusePass());
  // The tensor-core GEMMs' tile configurations, per target (both: the
  // lowering reads the one of the target it builds for), as attributes the
  // schedule's lowering reads (tg-configure-gemms).
  pm.addPass(createConfigureGemmsPass());
  // Each op's kernel scratch (tg.scratch), for the plan to place: one plan
  // serves every target, so the largest over the targets built.
  SizeGpuScratchPassOptions sizing;
  for (Target t : targets)
    sizing.targets.push_back(toString(t));
  pm.addPass(createSizeGpuScratchPass(sizing));
  if (failed(pm.run(module)))
    return failure();
  // Every entry point gets its own plan (tgc plans train_step and eval for
  // the CPU the same way); init is planned too, so its random tensors have
  // arena slots.
  // The collectives run on the communication stream, overlapping the
  // kernels after them (runtime/cuda/CudaDevice.cpp): planned as early as
  // they can start, their buffers kept until their results are read.
  mlir::tg::PlanOptions opts;
  opts.asyncCollectives = true;
  opts.flatBuckets = false; // NCCL reads and writes the planned tensors
  for (StringRef name : entries) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn || fn.isExternal())
      continue;
    FailureOr<mlir::tg::MemoryPlan> plan = mlir::tg::planMemory(fn, opts);
    if (failed(plan))
      return failure();
    if (plans)
      plans->insert_or_assign(name, std::move(*plan));
  }
  // Blocks per row of few long rows (tg-configure-row-reductions), after
  // the plan: a row result the plan puts in place of an operand keeps its
  // row whole.
  PassManager rows(module.getContext());
  rows.addPass(createConfigureRowReductionsPass());
  return rows.run(module);
}

namespace {

/// Assigns buffers to the values of one entry function and records its
/// steps.
class EntryBuilder {
public:
  EntryBuilder(GpuSchedule &schedule, ModuleOp kernels, const LowerOpFn &lower)
      : schedule(schedule), kernels(kernels), lower(lower) {}

  FailureOr<EntrySchedule> build(func::FuncOp fn) {
    EntrySchedule entry;
    entry.name = fn.getName().str();
    if (auto plan = mlir::tg::getMemoryPlan(fn))
      entry.arenaBytes = plan.getTransientBytes();
    // Kernel scratch is a buffer of the plan (tg-size-gpu-scratch sizes it,
    // tg-plan-memory places it: tg.scratch_offset). An op planned without
    // it (a module planned by hand) gets the region after the planned
    // values, shared by every such op, and the arena grows by the largest
    // (scratchAt).
    scratchBase = (entry.arenaBytes + 255) / 256 * 256;
    for (BlockArgument a : fn.getArguments())
      where[a] = BufferRef{BufferRef::Kind::Arg, a.getArgNumber(), 0,
                           mlir::tg::tensorBytes(a.getType())};
    for (Operation &op : fn.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          FailureOr<BufferRef> r = bufferOf(v, &op, "result", i);
          if (failed(r))
            return failure();
          entry.results.push_back(*r);
        }
        continue;
      }
      if (failed(lowerOp(&op, entry)))
        return failure();
    }
    return entry;
  }

private:
  /// The plan's place for result `i` of `op`, if it has one.
  std::optional<BufferRef> planned(Operation *op, unsigned i) {
    int64_t bytes = mlir::tg::tensorBytes(op->getResult(i).getType());
    auto aliasArgs = op->getAttrOfType<DenseI64ArrayAttr>(mlir::tg::attr::aliasArgs);
    auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(mlir::tg::attr::offsets);
    if (aliasArgs && i < aliasArgs.size() && aliasArgs[i] >= 0)
      return BufferRef{BufferRef::Kind::Arg, aliasArgs[i], 0, bytes};
    if (offsets && i < offsets.size() && offsets[i] >= 0)
      return BufferRef{BufferRef::Kind::Arena, 0, offsets[i], bytes};
    if (op->getNumResults() == 1) {
      if (auto a = op->getAttrOfType<IntegerAttr>(mlir::tg::attr::aliasArg))
        return BufferRef{BufferRef::Kind::Arg, a.getInt(), 0, bytes};
      if (auto o = op->getAttrOfType<IntegerAttr>(mlir::tg::attr::offset))
        return BufferRef{BufferRef::Kind::Arena, 0, o.getInt(), bytes};
    }
    return std::nullopt;
  }

  /// The buffer `v` lives in when `user` reads it (its `what` #`i`).
  FailureOr<BufferRef> bufferOf(Value v, Operation *user, StringRef what,
                                unsigned i) {
    auto it = where.find(v);
    if (it != where.end())
      return it->second;
    return user->emitOpError()
           << what << " #" << i
           << " has no buffer in the GPU memory plan (the value is not "
              "placed by tg-plan-memory), so no kernel can read it";
  }

  /// A constant becomes one of the schedule's constants (deduplicated).
  LogicalResult addConstant(mlir::tg::ConstantOp c) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return c.emitOpError() << "has a constant the GPU schedule cannot hold "
                                "(not dense elements)";
    ScheduleConstant k;
    Type elt = dense.getElementType();
    if (elt.isInteger(1)) {
      // i1 is one byte per element in every buffer (docs/artifact.md).
      if (dense.isSplat()) {
        k.element.assign(1, char(dense.getSplatValue<bool>()));
      } else {
        for (bool b : dense.getValues<bool>())
          k.element.push_back(char(b));
      }
    } else {
      ArrayRef<char> raw = dense.getRawData();
      k.element.assign(raw.begin(), raw.end());
    }
    k.repeat = dense.isSplat() ? dense.getNumElements() : 1;
    int64_t index = -1;
    for (auto [j, e] : llvm::enumerate(schedule.constants))
      if (e.element == k.element && e.repeat == k.repeat)
        index = int64_t(j);
    if (index < 0) {
      index = int64_t(schedule.constants.size());
      schedule.constants.push_back(k);
    }
    where[c.getResult()] =
        BufferRef{BufferRef::Kind::Const, index, 0, k.bytes()};
    return success();
  }

  LogicalResult lowerOp(Operation *op, EntrySchedule &entry) {
    if (auto c = dyn_cast<mlir::tg::ConstantOp>(op))
      return addConstant(c);
    if (op->getNumResults() == 1 && op->getResult(0).getType().isIndex())
      return evaluateIndex(op);
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return unroll(loop, entry);
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
      return lowerSlice(slice, entry);
    if (isCollectiveOp(op))
      return lowerCollective(op, entry);
    if (isa<mlir::tg::CommWorldOp>(op))
      return success(); // a communicator: the collectives name it
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (std::optional<BufferRef> r = planned(op, i))
        where[op->getResult(i)] = *r;
    FailureOr<std::vector<KernelLaunch>> launches =
        lower(op, schedule.target, kernels);
    if (failed(launches))
      return failure(); // the generator's located error
    if (launches->empty())
      return viewOrCopy(op, entry);
    for (KernelLaunch &l : *launches) {
      ScheduleStep step;
      for (auto [i, p] : llvm::enumerate(l.params)) {
        if (p.kind == KernelParam::Kind::Scratch) {
          FailureOr<int64_t> base = scratchAt(op, l, entry);
          if (failed(base))
            return failure();
          step.params.push_back(BufferRef{BufferRef::Kind::Arena, 0, *base,
                                          int64_t(l.scratchBytes)});
          continue;
        }
        // A staged TMA descriptor (kernel = "wgmma_staged") describes the
        // operand's realigned copy in the op's scratch.
        if (p.kind == KernelParam::Kind::TensorMap && p.map.staged) {
          int64_t bytes = int64_t(p.map.stagedBytes());
          if (p.map.scratchOffset + p.map.stagedBytes() > l.scratchBytes)
            return op->emitOpError()
                   << "kernel '" << l.symbol << "' parameter #" << i
                   << " maps " << bytes << " bytes at scratch offset "
                   << p.map.scratchOffset << ", past the launch's "
                   << l.scratchBytes << " bytes of scratch";
          FailureOr<int64_t> base = scratchAt(op, l, entry);
          if (failed(base))
            return failure();
          step.params.push_back(BufferRef{BufferRef::Kind::Arena, 0,
                                          *base + int64_t(p.map.scratchOffset),
                                          bytes});
          continue;
        }
        // A TMA descriptor (sm_90a GEMMs) describes an operand's buffer.
        bool operand = p.kind != KernelParam::Kind::Result;
        unsigned n = operand ? op->getNumOperands() : op->getNumResults();
        if (p.index >= n)
          return op->emitOpError()
                 << "kernel '" << l.symbol << "' parameter #" << i << " names "
                 << (operand ? "operand" : "result") << " #" << p.index
                 << ", which the op does not have";
        Value v = operand ? op->getOperand(p.index) : op->getResult(p.index);
        FailureOr<BufferRef> b =
            bufferOf(v, op, operand ? "operand" : "result", p.index);
        if (failed(b))
          return failure();
        step.params.push_back(*b);
      }
      step.launch = std::move(l);
      entry.steps.push_back(std::move(step));
    }
    return success();
  }

  /// Where launch `l` of `op` finds its scratch: the plan's place for the
  /// op's (tg.scratch_offset), or, for an op tg-size-gpu-scratch did not
  /// size, the region after the planned values, which the arena then
  /// covers. A launch that needs more than its op's tg.scratch is an
  /// error: the plan may have put other values right after it.
  FailureOr<int64_t> scratchAt(Operation *op, const KernelLaunch &l,
                               EntrySchedule &entry) {
    IntegerAttr bytes = mlir::tg::getScratchBytes(op);
    IntegerAttr at = mlir::tg::getScratchOffset(op);
    if (bytes && at) {
      if (int64_t(l.scratchBytes) > bytes.getInt())
        return op->emitOpError()
               << "kernel '" << l.symbol << "' needs " << l.scratchBytes
               << " bytes of scratch, more than the op's planned tg.scratch "
                  "of "
               << bytes.getInt() << " (tg-size-gpu-scratch)";
      return at.getInt();
    }
    entry.arenaBytes =
        std::max(entry.arenaBytes, scratchBase + int64_t(l.scratchBytes));
    return scratchBase;
  }

  /// A collective (data parallelism): one step, its results where the
  /// plan put them (ScheduleCollectives.cpp).
  LogicalResult lowerCollective(Operation *op, EntrySchedule &entry) {
    FailureOr<CollectiveStep> c = buildCollectiveStep(
        op, [&](unsigned i) { return bufferOf(op->getOperand(i), op, "operand", i); },
        [&](unsigned i) { return planned(op, i); });
    if (failed(c))
      return failure();
    for (auto [i, r] : llvm::enumerate(op->getResults()))
      where[r] = c->dsts[i];
    ScheduleStep step;
    step.collective = std::move(*c);
    entry.steps.push_back(std::move(step));
    return success();
  }

  /// An op without kernels moves no data: its one result is its one
  /// operand's bytes (a reshape). Where the plan placed the result apart
  /// from the operand, the operand's buffer may be reused while the result
  /// is alive, so the bytes are copied to the planned place.
  LogicalResult viewOrCopy(Operation *op, EntrySchedule &entry) {
    if (op->getNumResults() == 0)
      return success();
    if (op->getNumResults() != 1 || op->getNumOperands() != 1 ||
        mlir::tg::tensorBytes(op->getResult(0).getType()) !=
            mlir::tg::tensorBytes(op->getOperand(0).getType()))
      return op->emitOpError()
             << "the GPU backend generated no kernel for this op, and its "
                "results are not a view of its operand";
    FailureOr<BufferRef> src = bufferOf(op->getOperand(0), op, "operand", 0);
    if (failed(src))
      return failure();
    Value result = op->getResult(0);
    auto it = where.find(result);
    if (it == where.end()) {
      where[result] = *src;
      return success();
    }
    if (it->second == *src)
      return success();
    ScheduleStep copy;
    copy.isCopy = true;
    copy.src = *src;
    copy.dst = it->second;
    entry.steps.push_back(std::move(copy));
    return success();
  }

  /// The value of an index computation (the accumulation loop's micro-batch
  /// offset: constants, +, -, * of the induction variable).
  LogicalResult evaluateIndex(Operation *op) {
    auto known = [&](Value v) -> std::optional<int64_t> {
      auto it = indices.find(v);
      return it == indices.end() ? std::nullopt
                                 : std::optional<int64_t>(it->second);
    };
    std::optional<int64_t> value;
    if (auto c = dyn_cast<arith::ConstantIndexOp>(op))
      value = c.value();
    else if (op->getNumOperands() == 2) {
      std::optional<int64_t> a = known(op->getOperand(0)),
                             b = known(op->getOperand(1));
      if (a && b && isa<arith::AddIOp>(op))
        value = *a + *b;
      else if (a && b && isa<arith::SubIOp>(op))
        value = *a - *b;
      else if (a && b && isa<arith::MulIOp>(op))
        value = *a * *b;
    }
    if (!value)
      return op->emitOpError() << "computes an index the GPU schedule cannot "
                                  "evaluate at compile time";
    indices[op->getResult(0)] = *value;
    return success();
  }

  /// A contiguous slice (the accumulation loop's micro-batch of an input):
  /// a view of its source at the slice's byte offset, or a copy to the slot
  /// the plan gave it.
  LogicalResult lowerSlice(tensor::ExtractSliceOp slice, EntrySchedule &entry) {
    RankedTensorType src = slice.getSourceType();
    ArrayRef<int64_t> shape = src.getShape();
    SmallVector<int64_t> offsets;
    for (OpFoldResult o : slice.getMixedOffsets()) {
      if (auto a = dyn_cast<Attribute>(o)) {
        offsets.push_back(cast<IntegerAttr>(a).getInt());
        continue;
      }
      auto it = indices.find(cast<Value>(o));
      if (it == indices.end())
        return slice.emitOpError() << "has an offset the GPU schedule cannot "
                                      "evaluate at compile time";
      offsets.push_back(it->second);
    }
    SmallVector<int64_t> sizes(slice.getStaticSizes());
    // Contiguous: after the first dimension of more than one element, every
    // dimension is whole; strides are 1.
    bool contiguous = llvm::all_of(slice.getStaticStrides(),
                                   [](int64_t s) { return s == 1; });
    bool whole = false;
    int64_t linear = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (whole && (sizes[d] != shape[d] || offsets[d] != 0))
        contiguous = false;
      whole |= sizes[d] != 1;
      linear = linear * shape[d] + offsets[d];
    }
    if (!contiguous || ShapedType::isDynamicShape(sizes))
      return slice.emitOpError() << "is not a contiguous slice, which the GPU "
                                    "schedule cannot view";
    FailureOr<BufferRef> base = bufferOf(slice.getSource(), slice, "operand", 0);
    if (failed(base))
      return failure();
    BufferRef view = *base;
    view.offset += linear * mlir::tg::tensorBytes(RankedTensorType::get(
                                {1}, src.getElementType()));
    view.bytes = mlir::tg::tensorBytes(slice.getType());
    std::optional<BufferRef> slot = planned(slice, 0);
    if (!slot || *slot == view) {
      where[slice.getResult()] = view;
      return success();
    }
    where[slice.getResult()] = *slot;
    ScheduleStep copy;
    copy.isCopy = true;
    copy.src = view;
    copy.dst = *slot;
    entry.steps.push_back(std::move(copy));
    return success();
  }

  /// Copies each of `moves` (source, destination); refused where one's
  /// destination is another's source, which the order would clobber.
  LogicalResult moveAll(Operation *op,
                        ArrayRef<std::pair<BufferRef, BufferRef>> moves,
                        EntrySchedule &entry) {
    auto overlap = [](const BufferRef &a, const BufferRef &b) {
      return a.kind == b.kind && a.index == b.index &&
             a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
    };
    for (auto [i, m] : llvm::enumerate(moves))
      for (auto [j, n] : llvm::enumerate(moves))
        if (i != j && overlap(m.second, n.first))
          return op->emitOpError()
                 << "carries values through each other's buffers, which the "
                    "GPU schedule cannot order";
    for (const auto &[src, dst] : moves)
      if (!(src == dst)) {
        ScheduleStep copy;
        copy.isCopy = true;
        copy.src = src;
        copy.dst = dst;
        entry.steps.push_back(std::move(copy));
      }
    return success();
  }

  /// The accumulation loop, unrolled: each carried value lives in the slot
  /// the plan gave the loop's result (the next value is computed over the
  /// current one, or copied there at the end of an iteration).
  LogicalResult unroll(scf::ForOp loop, EntrySchedule &entry) {
    auto bound = [&](Value v) -> std::optional<int64_t> {
      auto it = indices.find(v);
      return it == indices.end() ? std::nullopt
                                 : std::optional<int64_t>(it->second);
    };
    std::optional<int64_t> lb = bound(loop.getLowerBound()),
                           ub = bound(loop.getUpperBound()),
                           step = bound(loop.getStep());
    if (!lb || !ub || !step || *step <= 0)
      return loop.emitOpError()
             << "has bounds the GPU schedule cannot evaluate at compile time";
    SmallVector<BufferRef> slots;
    for (unsigned k = 0; k < loop.getNumResults(); ++k) {
      std::optional<BufferRef> slot = planned(loop, k);
      if (!slot)
        return loop.emitOpError() << "result #" << k
                                  << " has no buffer in the GPU memory plan";
      slots.push_back(*slot);
    }
    SmallVector<std::pair<BufferRef, BufferRef>> moves;
    for (auto [k, init] : llvm::enumerate(loop.getInitArgs())) {
      FailureOr<BufferRef> b = bufferOf(init, loop, "operand", k);
      if (failed(b))
        return failure();
      moves.push_back({*b, slots[k]});
    }
    if (failed(moveAll(loop, moves, entry)))
      return failure();
    Block *body = loop.getBody();
    SmallVector<size_t> starts;
    for (int64_t iv = *lb; iv < *ub; iv += *step) {
      starts.push_back(entry.steps.size());
      indices[loop.getInductionVar()] = iv;
      for (auto [k, arg] : llvm::enumerate(loop.getRegionIterArgs()))
        where[arg] = slots[k];
      for (Operation &op : body->without_terminator())
        if (failed(lowerOp(&op, entry)))
          return failure();
      moves.clear();
      auto yield = cast<scf::YieldOp>(body->getTerminator());
      for (auto [k, v] : llvm::enumerate(yield.getOperands())) {
        FailureOr<BufferRef> b = bufferOf(v, yield, "operand", k);
        if (failed(b))
          return failure();
        moves.push_back({*b, slots[k]});
      }
      if (failed(moveAll(loop, moves, entry)))
        return failure();
    }
    for (auto [k, r] : llvm::enumerate(loop.getResults()))
      where[r] = slots[k];
    // Iterations of equal length are a candidate for the manifest's
    // "repeat" (scheduleJson checks that they differ only by strides).
    starts.push_back(entry.steps.size());
    size_t length = starts.size() > 1 ? starts[1] - starts[0] : 0;
    bool even = length > 0;
    for (size_t i = 1; even && i < starts.size(); ++i)
      even = starts[i] - starts[i - 1] == length;
    if (even && starts.size() > 2)
      entry.repeats.push_back({starts[0], length, int64_t(starts.size() - 1)});
    return success();
  }

  GpuSchedule &schedule;
  /// Arena offset of the scratch of the ops planned without it.
  int64_t scratchBase = 0;
  ModuleOp kernels;
  const LowerOpFn &lower;
  llvm::DenseMap<Value, BufferRef> where;
  llvm::DenseMap<Value, int64_t> indices; ///< index values, when known
};

llvm::json::Array dims(const std::array<uint32_t, 3> &d) {
  return llvm::json::Array{d[0], d[1], d[2]};
}

llvm::json::Value refJson(const BufferRef &r, int64_t stride = 0) {
  static const char *kinds[] = {"arg", "arena", "const"};
  llvm::json::Object o{{"buffer", kinds[int(r.kind)]},
                       {"offset", r.offset},
                       {"bytes", r.bytes}};
  if (r.kind != BufferRef::Kind::Arena)
    o["index"] = r.index;
  if (stride)
    o["stride"] = stride;
  return llvm::json::Value(std::move(o));
}

/// The buffers of a step, in a fixed order (a launch's params; a copy's
/// source and destination).
SmallVector<const BufferRef *> refsOf(const ScheduleStep &st) {
  SmallVector<const BufferRef *> refs;
  if (st.isCopy)
    return {&st.src, &st.dst};
  for (const BufferRef &p : st.params)
    refs.push_back(&p);
  return refs;
}

/// Whether `a` and `b` are the same step but for their buffer offsets.
bool sameButOffsets(const ScheduleStep &a, const ScheduleStep &b) {
  if (a.isCopy != b.isCopy || !a.collective.op.empty() ||
      !b.collective.op.empty())
    return false;
  if (!a.isCopy &&
      (a.launch.symbol != b.launch.symbol || a.launch.grid != b.launch.grid ||
       a.launch.block != b.launch.block ||
       a.launch.dynamicSharedBytes != b.launch.dynamicSharedBytes ||
       a.params.size() != b.params.size()))
    return false;
  SmallVector<const BufferRef *> ra = refsOf(a), rb = refsOf(b);
  for (auto [x, y] : llvm::zip(ra, rb))
    if (x->kind != y->kind || x->index != y->index || x->bytes != y->bytes)
      return false;
  if (!a.isCopy)
    for (auto [x, y] : llvm::zip(a.launch.params, b.launch.params))
      if (x.kind != y.kind || (x.kind == KernelParam::Kind::TensorMap &&
                               x.map.driverArgs() != y.map.driverArgs()))
        return false;
  return true;
}

/// A TMA descriptor as the manifest writes it (docs/artifact.md, "Tensor
/// maps"): every argument of cuTensorMapEncodeTiled but the address, in
/// the driver's order (innermost dimension first).
llvm::json::Object tensorMapJson(const TensorMapParam &p) {
  namespace cu = ::tg::rt::cuda;
  cu::TensorMapArgs a = p.driverArgs();
  llvm::json::Array dims, strides, box, elementStrides;
  for (unsigned i = 0; i < a.rank; ++i) {
    dims.push_back(a.dims[i]);
    box.push_back(a.box[i]);
    elementStrides.push_back(a.elementStrides[i]);
    if (i + 1 < a.rank)
      strides.push_back(a.strides[i]);
  }
  return llvm::json::Object{
      {"dtype", cu::kTensorMapTypeNames[a.dataType]},
      {"dims", std::move(dims)},
      {"strides", std::move(strides)},
      {"box", std::move(box)},
      {"element_strides", std::move(elementStrides)},
      {"interleave", cu::kTensorMapInterleaveNames[a.interleave]},
      {"swizzle", cu::kTensorMapSwizzleNames[a.swizzle]},
      {"l2_promotion", cu::kTensorMapL2Names[a.l2Promotion]},
      {"oob_fill", cu::kTensorMapFillNames[a.oobFill]}};
}

/// The strides of `r` (one per buffer of each step of the first
/// iteration), if every iteration k of `steps` is the first with each
/// offset advanced by k * stride.
std::optional<std::vector<std::vector<int64_t>>>
repeatStrides(const std::vector<ScheduleStep> &steps, const RepeatedSteps &r) {
  std::vector<std::vector<int64_t>> strides(r.length);
  for (size_t j = 0; j < r.length; ++j) {
    const ScheduleStep &first = steps[r.begin + j];
    const ScheduleStep &second = steps[r.begin + r.length + j];
    if (!sameButOffsets(first, second))
      return std::nullopt;
    SmallVector<const BufferRef *> a = refsOf(first), b = refsOf(second);
    for (auto [x, y] : llvm::zip(a, b))
      strides[j].push_back(y->offset - x->offset);
    for (int64_t k = 2; k < r.count; ++k) {
      const ScheduleStep &kth = steps[r.begin + size_t(k) * r.length + j];
      if (!sameButOffsets(first, kth))
        return std::nullopt;
      SmallVector<const BufferRef *> c = refsOf(kth);
      for (auto [i, pair] : llvm::enumerate(llvm::zip(a, c)))
        if (std::get<1>(pair)->offset !=
            std::get<0>(pair)->offset + k * strides[j][i])
          return std::nullopt;
    }
  }
  return strides;
}

/// A collective's manifest step (docs/artifact.md, "Collectives").
llvm::json::Object collectiveJson(const CollectiveStep &c) {
  llvm::json::Array tensors;
  for (size_t i = 0; i < c.counts.size(); ++i)
    tensors.push_back(llvm::json::Object{{"count", c.counts[i]},
                                         {"src", refJson(c.srcs[i])},
                                         {"dst", refJson(c.dsts[i])}});
  llvm::json::Object o{{"op", c.op},
                       {"dtype", c.dtype},
                       {"comm", c.comm},
                       {"tensors", std::move(tensors)}};
  if (!c.reduce.empty())
    o["reduce"] = c.reduce;
  return o;
}

/// A step of the manifest, its buffers advanced by `strides` per
/// iteration when it is in a repeat.
llvm::json::Object stepJson(const ScheduleStep &st,
                            ArrayRef<int64_t> strides = {}) {
  if (!st.collective.op.empty())
    return collectiveJson(st.collective);
  auto stride = [&](size_t i) { return i < strides.size() ? strides[i] : 0; };
  if (st.isCopy)
    return llvm::json::Object{{"op", "copy"},
                              {"src", refJson(st.src, stride(0))},
                              {"dst", refJson(st.dst, stride(1))}};
  llvm::json::Array params;
  for (auto [i, p] : llvm::enumerate(st.params)) {
    llvm::json::Value ref = refJson(p, stride(i));
    if (i < st.launch.params.size() &&
        st.launch.params[i].kind == KernelParam::Kind::TensorMap)
      (*ref.getAsObject())["tensor_map"] = tensorMapJson(st.launch.params[i].map);
    params.push_back(std::move(ref));
  }
  return llvm::json::Object{{"op", "launch"},
                            {"kernel", st.launch.symbol},
                            {"grid", dims(st.launch.grid)},
                            {"block", dims(st.launch.block)},
                            {"shared_bytes", st.launch.dynamicSharedBytes},
                            {"params", std::move(params)}};
}

} // namespace

FailureOr<GpuSchedule> buildGpuSchedule(ModuleOp module, Target t,
                                        ModuleOp kernels,
                                        ArrayRef<StringRef> entries,
                                        const LowerOpFn &lower) {
  // The generators build llvm/nvvm/scf/arith ops in the model's context.
  module.getContext()
      ->loadDialect<LLVM::LLVMDialect, NVVM::NVVMDialect, scf::SCFDialect,
                    arith::ArithDialect, cf::ControlFlowDialect>();
  GpuSchedule schedule;
  schedule.target = t;
  for (StringRef name : entries) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn || fn.isExternal())
      continue;
    if (!llvm::hasSingleElement(fn.getBody()))
      return fn.emitOpError() << "has control flow between its ops, which the "
                                 "GPU schedule cannot express";
    EntryBuilder builder(schedule, kernels, lower);
    FailureOr<EntrySchedule> e = builder.build(fn);
    if (failed(e))
      return failure();
    schedule.entries.push_back(std::move(*e));
  }
  return schedule;
}

llvm::json::Object scheduleJson(const GpuSchedule &s) {
  llvm::json::Array constants;
  for (const ScheduleConstant &c : s.constants)
    constants.push_back(llvm::json::Object{
        {"hex", llvm::toHex(c.element, /*LowerCase=*/true)},
        {"repeat", c.repeat}});
  llvm::json::Object entries;
  for (const EntrySchedule &e : s.entries) {
    llvm::json::Array steps, results;
    // An unrolled accumulation loop of GPT-2 small is 64 x 1,200 launches
    // that differ only in which micro-batch rows they read: one "repeat"
    // step keeps the manifest at the size of one iteration.
    std::vector<RepeatedSteps> repeats = e.repeats;
    llvm::sort(repeats, [](const RepeatedSteps &a, const RepeatedSteps &b) {
      return a.begin < b.begin;
    });
    auto next = repeats.begin();
    for (size_t i = 0; i < e.steps.size();) {
      while (next != repeats.end() && next->begin < i)
        ++next; // inside a repeat already written
      if (next != repeats.end() && next->begin == i) {
        const RepeatedSteps &r = *next++;
        if (auto strides = repeatStrides(e.steps, r)) {
          llvm::json::Array body;
          for (size_t j = 0; j < r.length; ++j)
            body.push_back(stepJson(e.steps[i + j], (*strides)[j]));
          steps.push_back(llvm::json::Object{{"op", "repeat"},
                                             {"count", r.count},
                                             {"steps", std::move(body)}});
          i += r.length * size_t(r.count);
          continue;
        }
      }
      steps.push_back(stepJson(e.steps[i]));
      ++i;
    }
    for (const BufferRef &r : e.results)
      results.push_back(refJson(r));
    entries[e.name] = llvm::json::Object{{"arena_bytes", e.arenaBytes},
                                         {"steps", std::move(steps)},
                                         {"results", std::move(results)}};
  }
  return llvm::json::Object{{"constants", std::move(constants)},
                            {"entries", std::move(entries)}};
}

FailureOr<GpuArtifact> buildGpuArtifact(ModuleOp module,
                                        ArrayRef<Target> targets,
                                        ArrayRef<StringRef> entries,
                                        std::string &error, bool assemble,
                                        const LowerOpFn &lower) {
  OwningOpRef<ModuleOp> gpu = cast<ModuleOp>(module->clone());
  if (failed(prepareGpuModule(*gpu, entries, targets)))
    return failure();
  GpuArtifact out;
  llvm::json::Object schedules;
  llvm::json::Array targetNames;
  std::vector<std::pair<std::string, std::string>> archPtx;
  for (Target t : targets) {
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
    FailureOr<GpuSchedule> s = buildGpuSchedule(*gpu, t, *kernels, entries, lower);
    if (failed(s))
      return failure();
    std::string ptx;
    if (!compileKernelsToPTX(*kernels, t, ptx, error))
      return failure();
    (t == Target::SM80 ? out.ptxSm80 : out.ptxSm90a) = ptx;
    archPtx.push_back({toString(t), std::move(ptx)});
    schedules[toString(t)] = scheduleJson(*s);
    targetNames.push_back(toString(t));
  }
  if (assemble && !buildFatbinFromPtx(archPtx, out.fatbin, error))
    return failure();
  out.manifest = llvm::json::Object{{"targets", std::move(targetNames)},
                                    {"schedules", std::move(schedules)}};
  return out;
}

FailureOr<mlir::tg::MemoryPlan> planGpuEntry(ModuleOp module,
                                             ArrayRef<Target> targets,
                                             StringRef entry) {
  OwningOpRef<ModuleOp> gpu = cast<ModuleOp>(module->clone());
  llvm::StringMap<mlir::tg::MemoryPlan> plans;
  if (failed(prepareGpuModule(*gpu, {entry}, targets, &plans)))
    return failure();
  auto it = plans.find(entry);
  if (it == plans.end())
    return module.emitError() << "has no function '" << entry << "' to plan";
  return std::move(it->second);
}

} // namespace tg::nvptx
