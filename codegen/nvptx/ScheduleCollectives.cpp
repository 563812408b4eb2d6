//===- ScheduleCollectives.cpp - collectives in the GPU schedule -*- C++ -*-===//
//
// A data-parallel step (tgc --ranks N, docs/data-parallel.md) on the GPU.
// Each bucket of tg.all_reduce / tg.reduce_scatter / tg.all_gather becomes
// one collective step of the schedule, in order with the kernels, that the
// CUDA runtime runs as ncclAllReduce / ncclReduceScatter / ncclAllGather, one
// call per tensor of the bucket inside one NCCL group, on a communication
// stream that overlaps the kernels after it (runtime/cuda/Nccl.cpp,
// CudaDevice.cpp; the plan keeps its buffers until its results are read,
// PlanOptions::asyncCollectives). tg.shard becomes a copy from an offset of
// rank x its bytes, which only the runtime knows. Every collective names
// its communicator (the first operand): the step records its id, 0 for
// tg.comm_world, which the runtime maps to its NCCL communicator.
//
// NCCL communicates buffers as they are, so a tensor's shards must fill
// ranks x shard elements exactly; padShardsForNccl pads the others at the
// IR level, before the memory plan, so that the plan sizes and places the
// padded buffers like any other value (the CPU backend pads in its own
// flat bucket buffer instead, codegen/cpu/CommToCalls.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/Schedule.h"

#include "dialects/TGBuilder.h"
#include "dialects/TGOps.h"
#include "passes/MemoryPlan.h"

using namespace mlir;
using namespace mlir::tg;

namespace tg::nvptx {

bool isCollectiveOp(Operation *op) {
  return isa<AllReduceOp, ReduceScatterOp, AllGatherOp, ShardOp>(op);
}

namespace {

/// Whether two buffer ranges share a byte.
bool overlaps(const BufferRef &a, const BufferRef &b) {
  return a.kind == b.kind && a.index == b.index &&
         a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

/// The collective's name, reduction and rank count.
void describe(Operation *op, CollectiveStep &c, int64_t &ranks) {
  if (auto o = dyn_cast<AllReduceOp>(op)) {
    c.op = "all_reduce", c.reduce = o.getOp().str(), ranks = o.getRanks();
  } else if (auto o = dyn_cast<ReduceScatterOp>(op)) {
    c.op = "reduce_scatter", c.reduce = o.getOp().str(), ranks = o.getRanks();
  } else if (auto o = dyn_cast<AllGatherOp>(op)) {
    c.op = "all_gather", ranks = o.getRanks();
  } else {
    c.op = "shard", ranks = cast<ShardOp>(op).getRanks();
  }
}

} // namespace

FailureOr<CollectiveStep> buildCollectiveStep(
    Operation *op, llvm::function_ref<FailureOr<BufferRef>(unsigned)> operand,
    llvm::function_ref<std::optional<BufferRef>(unsigned)> result) {
  CollectiveStep c;
  int64_t ranks = 1;
  describe(op, c, ranks);
  // Operand 0 is the communicator; the tensors follow.
  if (!op->getOperand(0).getDefiningOp<CommWorldOp>())
    return op->emitOpError("the GPU backend runs collectives over "
                           "tg.comm_world's communicator only");
  c.comm = 0;
  Type elt = cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  if (elt.isF32())
    c.dtype = "f32";
  else if (elt.isBF16())
    c.dtype = "bf16";
  else if (elt.isF16())
    c.dtype = "f16";
  else
    return op->emitOpError() << "NCCL communicates f32, bf16 or f16 tensors, not "
                             << elt;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    FailureOr<BufferRef> src = operand(i + 1);
    if (failed(src))
      return failure();
    std::optional<BufferRef> dst = result(i);
    if (!dst)
      return op->emitOpError() << "result #" << i
                               << " has no buffer in the GPU memory plan";
    auto in = cast<RankedTensorType>(op->getOperand(i + 1).getType());
    auto out = cast<RankedTensorType>(op->getResult(i).getType());
    // Elements per rank; the sharded side moves ranks times as many.
    int64_t count = c.op == "all_gather" ? in.getNumElements()
                                         : out.getNumElements();
    int64_t whole = c.op == "all_gather" ? out.getNumElements()
                                         : in.getNumElements();
    if (c.op != "all_reduce" && whole != ranks * count)
      return op->emitOpError()
             << "tensor #" << i << " has " << whole << " elements, not " << ranks
             << " shards of " << count
             << ": NCCL needs the shards padded (padShardsForNccl)";
    // In place (the same range) or apart: NCCL's other overlaps are
    // undefined; an all_reduce alone runs in place.
    if (overlaps(*src, *dst) && !(c.op == "all_reduce" && *src == *dst))
      return op->emitOpError() << "tensor #" << i
                               << "'s source and destination overlap, which "
                                  "NCCL cannot run";
    c.counts.push_back(count);
    c.srcs.push_back(*src);
    c.dsts.push_back(*dst);
  }
  // One group runs the bucket's calls concurrently: no call may write what
  // another reads or writes.
  for (size_t i = 0; i < c.dsts.size(); ++i)
    for (size_t j = 0; j < c.dsts.size(); ++j)
      if (i != j && (overlaps(c.dsts[i], c.srcs[j]) ||
                     overlaps(c.dsts[i], c.dsts[j])))
        return op->emitOpError()
               << "tensor #" << i << " is written over tensor #" << j
               << " of the same bucket, which one NCCL group cannot order";
  return c;
}

void padShardsForNccl(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<ReduceScatterOp, AllGatherOp, ShardOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op);
    TensorBuilder t{b, op->getLoc()};
    int64_t ranks = cast<CommType>(op->getOperand(0).getType()).getRanks();
    auto paddedType = [&](RankedTensorType whole) {
      return RankedTensorType::get({ranks * shardElements(whole, ranks)},
                                   whole.getElementType());
    };
    if (!isa<AllGatherOp>(op)) {
      // The whole tensor read flat, then zeros up to ranks x shard.
      for (OpOperand &use : op->getOpOperands()) {
        auto whole = dyn_cast<RankedTensorType>(use.get().getType());
        if (!whole)
          continue; // the communicator
        RankedTensorType padded = paddedType(whole);
        int64_t n = whole.getNumElements(), extra = padded.getNumElements() - n;
        if (extra == 0)
          continue;
        Value flat = t.reshape(
            use.get(), RankedTensorType::get({n}, whole.getElementType()));
        Value zeros = t.filled(
            RankedTensorType::get({extra}, whole.getElementType()), 0.0);
        use.set(ConcatOp::create(b, op->getLoc(), ValueRange{flat, zeros}, 0));
      }
      continue;
    }
    // tg.all_gather: gather ranks x shard elements, keep the first n.
    auto gather = cast<AllGatherOp>(op);
    SmallVector<Type> types;
    bool ragged = false;
    for (Type r : gather.getResultTypes()) {
      auto whole = cast<RankedTensorType>(r);
      RankedTensorType padded = paddedType(whole);
      ragged |= padded.getNumElements() != whole.getNumElements();
      types.push_back(padded.getNumElements() != whole.getNumElements()
                          ? Type(padded)
                          : r);
    }
    if (!ragged)
      continue;
    auto wide = AllGatherOp::create(b, op->getLoc(), types, gather.getComm(),
                                    gather.getInputs(),
                                    gather.getBucketOffsetAttr());
    b.setInsertionPointAfter(wide);
    for (auto [i, r] : llvm::enumerate(gather.getResults())) {
      Value v = wide.getResult(i);
      auto whole = cast<RankedTensorType>(r.getType());
      if (v.getType() != whole) {
        int64_t n = whole.getNumElements();
        v = SliceOp::create(b, op->getLoc(), v, ArrayRef<int64_t>{0},
                            ArrayRef<int64_t>{n}, ArrayRef<int64_t>{1});
        v = t.reshape(v, whole);
      }
      r.replaceAllUsesWith(v);
    }
    op->erase();
  }
}

} // namespace tg::nvptx
