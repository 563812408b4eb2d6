//===- MemoryPlan.cpp - arena planning of a training step -------*- C++ -*-===//
//
// Inlining of calls, memory-aware list scheduling, liveness and in-place
// reuse; the best-fit offset search is MemoryPlanOffsets.cpp. See
// MemoryPlan.h.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"
#include "passes/MemoryPlanCollectives.h"
#include "passes/MemoryPlanScratch.h"
#include "passes/ScheduleHoist.h"
#include "passes/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <set>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::plan;

StringRef mlir::tg::kindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Param:
    return "params";
  case BufferKind::Optimizer:
    return "optimizer";
  case BufferKind::Input:
    return "inputs";
  case BufferKind::Gradient:
    return "gradients";
  case BufferKind::Activation:
    return "activations";
  case BufferKind::Workspace:
    return "workspace";
  case BufferKind::Scratch:
    return "scratch";
  }
  return "workspace";
}

int64_t MemoryPlan::bytesOf(BufferKind kind) const {
  if (kind == BufferKind::Gradient || kind == BufferKind::Activation ||
      kind == BufferKind::Workspace || kind == BufferKind::Scratch) {
    auto it = peakByKind.find(kind);
    return it == peakByKind.end() ? 0 : it->second;
  }
  return totalBytesOf(kind);
}

int64_t MemoryPlan::computeCopyBytes() const {
  int64_t sum = 0;
  for (const Buffer &b : buffers)
    if (b.computeCopy && !b.holder && b.aliasOf < 0)
      sum += b.bytes;
  return sum;
}

int64_t MemoryPlan::totalBytesOf(BufferKind kind) const {
  int64_t sum = 0;
  for (const Buffer &b : buffers)
    if (b.kind == kind && !b.holder && b.aliasOf < 0)
      sum += b.bytes;
  return sum;
}

static int64_t alignTo(int64_t v, int64_t a) { return (v + a - 1) / a * a; }


namespace {

/// Values marked while inlining: gradients, and the ops of gradient
/// functions, forward (what the forward results depend on) or backward
/// (the rest).
struct Marks {
  DenseSet<Value> gradients;
  DenseSet<Operation *> forwardOps;
  DenseSet<Operation *> backwardOps;
};

/// Inlines every func.call in `block` (recursively into nested regions) whose
/// callee has a single block. Records the gradient results of gradient
/// functions (forwardOfGradient) and the ops cloned from their forward part.
LogicalResult inlineCalls(Block &block, SymbolTable &symbols, Marks &marks,
                          unsigned depth = 0) {
  if (depth > 16)
    return failure();
  SmallVector<func::CallOp> calls;
  block.walk([&](func::CallOp call) { calls.push_back(call); });
  for (func::CallOp call : calls) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || !callee.getBody().hasOneBlock())
      return call.emitOpError("cannot be inlined for memory planning");
    // The forward part of a gradient function (@F_grad, or the micro-batch
    // clone that takes shared compute copies) is what the forward results
    // depend on: not a prefix of the body, since canonicalization hoists
    // the backward pass's constants and the clone has no copy casts.
    Block &body = callee.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    func::FuncOp fwd = forwardOfGradient(callee);
    unsigned numForward =
        fwd ? fwd.getNumResults() : ret.getNumOperands();
    DenseSet<Operation *> forward;
    if (fwd) {
      SmallVector<Value> work(ret.getOperands().take_front(numForward));
      while (!work.empty()) {
        Operation *def = work.pop_back_val().getDefiningOp();
        if (def && def->getBlock() == &body && forward.insert(def).second)
          llvm::append_range(work, def->getOperands());
      }
    }
    OpBuilder b(call);
    IRMapping map;
    map.map(body.getArguments(), call.getOperands());
    for (Operation &op : body.without_terminator()) {
      Operation *clone = b.clone(op, map);
      if (forward.contains(&op))
        marks.forwardOps.insert(clone);
      else if (fwd)
        marks.backwardOps.insert(clone);
    }
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      Value mapped = map.lookupOrDefault(v);
      if (i >= numForward)
        marks.gradients.insert(mapped);
      call.getResult(i).replaceAllUsesWith(mapped);
    }
    call.erase();
  }
  if (!calls.empty())
    return inlineCalls(block, symbols, marks, depth + 1);
  return success();
}

/// Gradient accumulation keeps gradients in loop-carried values: sums of
/// gradients, the loop's results, and their average are gradients too.
void markAccumulators(Block &block, Marks &marks) {
  block.walk([&](Operation *op) {
    auto isGrad = [&](Value v) {
      return marks.gradients.contains(v) ||
             (isa<BlockArgument>(v) &&
              isa<scf::ForOp>(v.getParentBlock()->getParentOp()));
    };
    if (isa<AddOp>(op) && isGrad(op->getOperand(0)) &&
        isGrad(op->getOperand(1)))
      marks.gradients.insert(op->getResult(0));
    else if (isa<DivOp>(op) && marks.gradients.contains(op->getOperand(0)) &&
             op->getResult(0).getType() == op->getOperand(0).getType())
      marks.gradients.insert(op->getResult(0));
    else if (auto loop = dyn_cast<scf::ForOp>(op))
      for (auto [result, yielded] :
           llvm::zip(loop.getResults(), loop.getYieldedValues()))
        if (marks.gradients.contains(yielded))
          marks.gradients.insert(result);
  });
}

/// The ready ops of a list scheduler, cheapest first: (cost, tie) keys
/// whose cost can change in place. `tie` identifies the op and breaks ties.
class ReadyQueue {
public:
  bool empty() const { return keys.empty(); }
  void push(int64_t cost, int64_t tie) {
    keys.insert({cost, tie});
    costOf[tie] = cost;
  }
  /// Removes the cheapest op and returns its tie.
  int64_t pop() {
    int64_t tie = keys.begin()->second;
    keys.erase(keys.begin());
    costOf.erase(tie);
    return tie;
  }
  /// Gives the op `tie`, if it is ready, a new cost.
  template <typename CostFn> void refresh(int64_t tie, CostFn cost) {
    auto it = costOf.find(tie);
    if (it == costOf.end())
      return;
    keys.erase({it->second, tie});
    it->second = cost();
    keys.insert({it->second, tie});
  }

private:
  std::set<std::pair<int64_t, int64_t>> keys;
  DenseMap<int64_t, int64_t> costOf;
};

/// Reorders the ops of `block` (terminator last) so that, at each point, the
/// ready op that adds the fewest live bytes runs next; ties keep the
/// original order, so plans are deterministic.
void scheduleBlock(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  DenseMap<Operation *, unsigned> order;
  for (auto [i, op] : llvm::enumerate(ops))
    order[op] = i;
  // Remaining uses of each value by unscheduled ops; pending producers.
  DenseMap<Value, unsigned> usesLeft;
  DenseMap<Operation *, unsigned> waiting;
  DenseMap<Operation *, SmallVector<Value>> reads;
  DenseMap<Operation *, SmallVector<Operation *>> consumers;
  for (Operation *op : ops) {
    reads[op] = readsOf(op);
    for (Value v : reads[op]) {
      ++usesLeft[v];
      Operation *def = v.getDefiningOp();
      def = def ? topLevel(def, block) : nullptr;
      if (def && def != op && order.count(def)) {
        ++waiting[op];
        consumers[def].push_back(op);
      }
    }
  }
  for (Value v : block.getTerminator()->getOperands())
    ++usesLeft[v];
  // Who reads each value, and the most times one op reads it: a reader's
  // cost changes only when the uses left drop to its own count.
  DenseMap<Value, SmallVector<unsigned>> readers;
  DenseMap<Value, unsigned> mostByOne;
  for (auto [i, op] : llvm::enumerate(ops)) {
    DenseMap<Value, unsigned> count;
    for (Value v : reads[op])
      ++count[v];
    for (auto [v, c] : count) {
      readers[v].push_back(i);
      mostByOne[v] = std::max(mostByOne[v], c);
    }
  }
  auto cost = [&](Operation *op) {
    int64_t delta = 0;
    for (Value r : op->getResults())
      delta += tensorBytes(r.getType());
    DenseMap<Value, unsigned> seen;
    for (Value v : reads[op])
      if (++seen[v] == usesLeft[v] && v.getDefiningOp())
        delta -= tensorBytes(v.getType());
    return delta;
  };
  ReadyQueue ready; // ties: the original index
  for (Operation *op : ops)
    if (!waiting.lookup(op))
      ready.push(cost(op), order[op]);
  Operation *terminator = block.getTerminator();
  while (!ready.empty()) {
    Operation *op = ops[ready.pop()];
    op->moveBefore(terminator);
    DenseSet<Value> changed;
    for (Value v : reads[op])
      if (--usesLeft[v] <= mostByOne[v])
        changed.insert(v);
    for (Operation *c : consumers[op])
      if (--waiting[c] == 0)
        ready.push(cost(c), order[c]);
    // Costs of ready ops change only where a value they read is about to
    // die; refreshing just those keeps scheduling linear in the block.
    for (Value v : changed)
      for (unsigned i : readers[v])
        ready.refresh(i, [&] { return cost(ops[i]); });
  }
}

/// The mirror of scheduleBlock: builds the order from the end, each time
/// placing (as late as possible) the op whose placement adds the fewest live
/// bytes going backwards. Ops that only prepare late work (an optimizer's
/// first products) then run just before they are needed.
void scheduleBlockBottomUp(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  DenseMap<Operation *, unsigned> order;
  for (auto [i, op] : llvm::enumerate(ops))
    order[op] = i;
  DenseMap<Operation *, SmallVector<Value>> reads;
  DenseMap<Operation *, unsigned> usersLeft; // unscheduled users in block
  DenseMap<Operation *, SmallVector<Operation *>> producers;
  for (Operation *op : ops) {
    reads[op] = readsOf(op);
    for (Value v : reads[op]) {
      Operation *def = v.getDefiningOp();
      def = def ? topLevel(def, block) : nullptr;
      if (def && def != op && order.count(def)) {
        ++usersLeft[def];
        producers[op].push_back(def);
      }
    }
  }
  DenseSet<Value> live; // values read by an already placed op or returned
  for (Value v : block.getTerminator()->getOperands())
    live.insert(v);
  DenseMap<Value, SmallVector<unsigned>> readers;
  for (auto [i, op] : llvm::enumerate(ops))
    for (Value v : reads[op])
      if (readers[v].empty() || readers[v].back() != i)
        readers[v].push_back(i);
  auto cost = [&](Operation *op) {
    int64_t delta = 0;
    for (Value r : op->getResults())
      if (live.contains(r))
        delta -= tensorBytes(r.getType());
    DenseSet<Value> seen;
    for (Value v : reads[op])
      if (v.getDefiningOp() && !live.contains(v) && seen.insert(v).second)
        delta += tensorBytes(v.getType());
    return delta;
  };
  // Ties: -original index, so later ops come first.
  ReadyQueue ready;
  for (Operation *op : ops)
    if (!usersLeft.lookup(op))
      ready.push(cost(op), -int64_t(order[op]));
  SmallVector<Operation *> reversed;
  while (!ready.empty()) {
    Operation *op = ops[-ready.pop()];
    reversed.push_back(op);
    SmallVector<Value> newlyLive;
    for (Value v : reads[op])
      if (live.insert(v).second)
        newlyLive.push_back(v);
    for (Operation *p : producers[op])
      if (--usersLeft[p] == 0)
        ready.push(cost(p), -int64_t(order[p]));
    // Only readers of a value that just became live change their cost.
    for (Value v : newlyLive)
      for (unsigned i : readers[v])
        ready.refresh(-int64_t(i), [&] { return cost(ops[i]); });
  }
  Operation *terminator = block.getTerminator();
  for (Operation *op : llvm::reverse(reversed))
    op->moveBefore(terminator);
}

/// True if `op` reads element i of its operands only to write element i of
/// its result, so the result may overwrite an operand `v` of its own type.
bool writesInPlaceOver(Operation *op, Value v) {
  if (op->getNumResults() != 1 || v.getType() != op->getResult(0).getType())
    return false;
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, NegOp,
             AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, ErfOp, CosOp, SinOp,
             SigmoidOp, ReluOp, SiluOp, GeluOp, SelectOp>(op);
}

/// True if result `r` of `op` may overwrite its operand `v`: for a single
/// op as above; for a fusion group when every op of the body that depends
/// on `v` reads it index by index (elementwise, `v`'s shape), and every
/// read of `v` comes no later than the op that computes `r`, so the group
/// is also right when a backend runs its body op by op.
bool writesInPlaceOver(Operation *op, Value v, Value r) {
  auto fused = dyn_cast<FusedOp>(op);
  if (!fused)
    return writesInPlaceOver(op, v);
  // The GPU GEMM generators write no result over an input, not even one
  // that only their epilogue reads element by element (KernelGen.h: "a
  // GEMM writing over its own input" is refused), so a GEMM group's
  // results get buffers of their own.
  if (v.getType() != r.getType() || fused.getKind() == KernelKind::gemm)
    return false;
  Block &body = fused.getBodyBlock();
  Value written =
      fused.getYield().getValues()[cast<OpResult>(r).getResultNumber()];
  Operation *def = written.getDefiningOp();
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  for (auto [in, arg] : llvm::zip(fused.getInputs(), body.getArguments())) {
    if (in != v)
      continue;
    DenseSet<Value> dependent{arg};
    for (Operation &inner : body.without_terminator()) {
      bool reads = llvm::is_contained(inner.getOperands(), arg);
      if (reads && def->isBeforeInBlock(&inner))
        return false;
      if (reads && &inner == def && !writesInPlaceOver(def, arg))
        return false;
      if (llvm::none_of(inner.getOperands(),
                        [&](Value o) { return dependent.contains(o); }))
        continue;
      // A sum of the result itself, that the group only returns, reads
      // what the buffer holds and adds no pass over the input (the GELU
      // derivative's product and the bias gradient summed from it: 4 MiB
      // of the 2-layer GPT's peak, docs/memory.md).
      if (isa<SumOp, MeanOp>(inner) && def->isBeforeInBlock(&inner) &&
          llvm::all_of(inner.getOperands(),
                       [&](Value o) { return o == written; }) &&
          llvm::all_of(inner.getUsers(),
                       [](Operation *user) { return isa<YieldOp>(user); }))
        continue;
      if (!(writesInPlaceOver(&inner, inner.getResult(0)) ||
            isa<CastOp, CmpOp>(inner)) ||
          cast<RankedTensorType>(inner.getResult(0).getType()).getShape() !=
              shape)
        return false;
      dependent.insert(inner.getResult(0));
    }
  }
  return true;
}

/// True if `op` may write its result over the transient value `v`.
bool canReuse(Operation *op, Value v, Value r) {
  if (!v.getDefiningOp() || isa<ConstantOp>(v.getDefiningOp()))
    return false;
  return writesInPlaceOver(op, v, r);
}



/// Gradients are what *_grad functions return; activations are forward
/// values that the backward pass reads; everything else is workspace. A
/// forward value read only by ops outside the gradient function (the loss,
/// read by the step's results or by the micro-batch loop's running sum) is
/// not saved for the backward pass: counting it as an activation put the
/// 4-byte loss in every step's activations.
BufferKind kindOf(Value v, const Marks &marks) {
  if (marks.gradients.contains(v))
    return BufferKind::Gradient;
  Operation *def = v.getDefiningOp();
  if (def && marks.forwardOps.contains(def))
    for (Operation *user : v.getUsers())
      if (marks.backwardOps.contains(user))
        return BufferKind::Activation;
  return BufferKind::Workspace;
}

/// The transient buffers of one block: values planned over the block's own
/// schedule, offsets relative to the block's region. Ops with regions (the
/// accumulation loop) get one buffer holding their body's region; the
/// body's buffers follow it, flagged `nested`, offsets shifted into it.
struct BlockPlan {
  std::vector<Buffer> buffers;
  int64_t size = 0, naive = 0, steps = 0;
  int64_t lowerBound = 0; ///< most bytes live at once (loops: their bound)
  std::map<BufferKind, int64_t> peakByKind; ///< live bytes at that moment
};

/// Lets a result that carries an argument's next value (same tg.name, e.g.
/// an updated parameter) live in that argument's storage when the argument
/// is no longer read once the result's buffer is first written, so updates
/// happen in place instead of doubling the parameters and optimizer state.
void aliasUpdatesToArguments(func::FuncOp fn, Block &block,
                             std::vector<Buffer> &buffers,
                             const DenseMap<Value, size_t> &bufferOf,
                             const DenseMap<Operation *, int64_t> &step,
                             const DenseSet<size_t> &viewed) {
  auto ret = block.getTerminator();
  DenseMap<StringRef, unsigned> argByName;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto name = fn.getArgAttrOfType<StringAttr>(i, attr::name))
      argByName[name.getValue()] = i;
  DenseMap<size_t, unsigned> claims; // buffer -> number of results in it
  for (Value v : ret->getOperands())
    if (bufferOf.count(v))
      ++claims[bufferOf.lookup(v)];
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto name = fn.getResultAttrOfType<StringAttr>(i, attr::name);
    if (!name || !argByName.count(name.getValue()) || !bufferOf.count(v))
      continue;
    unsigned argIndex = argByName[name.getValue()];
    // The argument's next value has its role too: forward_grad's gradient
    // of `w` (role grad) is named `w` like the parameter it must not
    // overwrite.
    if (fn.getResultAttrOfType<RoleAttr>(i, attr::role) !=
        fn.getArgAttrOfType<RoleAttr>(argIndex, attr::role))
      continue;
    BlockArgument arg = block.getArgument(argIndex);
    size_t id = bufferOf.lookup(v);
    Buffer &buf = buffers[id];
    // A buffer with views holds values of other shapes than the
    // argument's, which the backends place in it by type.
    if (claims[id] != 1 || buf.bytes != tensorBytes(arg.getType()) ||
        buf.nested || viewed.contains(id))
      continue;
    // Every read of the argument must come before the buffer's first write,
    // or be that write itself by an elementwise op.
    bool safe = true;
    for (OpOperand &use : arg.getUses()) {
      Operation *user = topLevel(use.getOwner(), block);
      if (user == ret)
        continue;
      int64_t at = step.lookup(user);
      safe &= at < buf.start ||
              (at == buf.start && writesInPlaceOver(user, arg, v));
    }
    if (safe) {
      buf.persistent = true;
      buf.aliasOf = argIndex;
    }
  }
}

BlockPlan planBlockInOrder(Block &block, const Marks &marks,
                           const PlanOptions &opts, func::FuncOp aliasTo);

/// Plans `block` under the top-down and the bottom-up schedule and keeps
/// the one with the smaller region (the top-down one on ties).
BlockPlan planBlock(Block &block, const Marks &marks, const PlanOptions &opts,
                    func::FuncOp aliasTo = {}) {
  if (!opts.reorder)
    return planBlockInOrder(block, marks, opts, aliasTo);
  auto currentOrder = [&] {
    SmallVector<Operation *> order;
    for (Operation &op : block.without_terminator())
      order.push_back(&op);
    return order;
  };
  auto apply = [&](ArrayRef<Operation *> order) {
    for (Operation *op : order)
      op->moveBefore(block.getTerminator());
  };
  scheduleBlock(block);
  hoistShrinkingOps(block);
  sinkReplays(block);
  if (opts.asyncCollectives)
    hoistCollectives(block);
  SmallVector<Operation *> topDown = currentOrder();
  BlockPlan first = planBlockInOrder(block, marks, opts, aliasTo);
  scheduleBlockBottomUp(block);
  hoistShrinkingOps(block);
  sinkReplays(block);
  if (opts.asyncCollectives)
    hoistCollectives(block);
  BlockPlan second = planBlockInOrder(block, marks, opts, aliasTo);
  if (second.size < first.size)
    return second;
  // Restore the top-down order; replanning rewrites its attributes.
  apply(topDown);
  return planBlockInOrder(block, marks, opts, aliasTo);
}

BlockPlan planBlockInOrder(Block &block, const Marks &marks,
                           const PlanOptions &opts, func::FuncOp aliasTo) {
  BlockPlan plan;
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator()) {
    ops.push_back(&op);
    // Attributes of an earlier plan of this block (planBlock tries two
    // schedules) must not survive into this one.
    for (StringRef stale :
         {attr::offset, attr::offsets, attr::aliasArg, attr::aliasArgs,
          attr::bytes, attr::scratchOffset})
      op.removeAttr(stale);
    setBucketOffset(&op, std::nullopt);
  }
  DenseMap<Operation *, int64_t> step;
  for (auto [i, op] : llvm::enumerate(ops))
    step[op] = i;
  int64_t n = ops.size();
  plan.steps = n;
  auto at = [&](Operation *user) {
    return user == block.getTerminator() ? n : step[user];
  };
  // A collective runs on the GPU's communication stream while the ops
  // after it compute, until the first op that reads its results
  // (docs/data-parallel.md, "Overlap on the GPU"), so what it reads stays
  // live until then: a later op's result placed on its bucket's gradients
  // would make the runtime wait for it there, not at its first reader.
  auto inFlightUntil = [&](Operation *user) {
    int64_t end = at(user);
    if (!opts.asyncCollectives || !isCommunication(user))
      return end;
    int64_t first = n;
    for (Value r : user->getResults())
      for (Operation *reader : r.getUsers())
        first = std::min(first, at(topLevel(reader, block)));
    return std::max(end, first);
  };
  auto lastUse = [&](Value v) {
    Operation *def = v.getDefiningOp();
    int64_t end = def ? step.lookup(def) : 0;
    for (OpOperand &use : v.getUses())
      end = std::max(end, inFlightUntil(topLevel(use.getOwner(), block)));
    return end;
  };
  // The op that reads `v` last, as the report names it; "" when that is
  // the terminator (a returned value).
  auto lastReader = [&](Value v) -> std::string {
    Operation *last = nullptr;
    int64_t end = -1;
    for (OpOperand &use : v.getUses()) {
      Operation *user = topLevel(use.getOwner(), block);
      int64_t at = user == block.getTerminator() ? n : step[user];
      if (at > end) {
        end = at;
        last = user;
      }
    }
    // A reshape read only by one op (a weight gradient's folded rows) is
    // that op's view of the value: name the op.
    while (last && isa<ReshapeOp>(last) && last->getResult(0).hasOneUse()) {
      v = last->getResult(0);
      last = topLevel(*v.getUsers().begin(), block);
    }
    if (!last || last == block.getTerminator())
      return "";
    auto describe = [](Operation *op) {
      std::string loc = locString(op->getLoc());
      return op->getName().getStringRef().str() +
             (loc.empty() ? "" : " (" + loc + ")");
    };
    auto fused = dyn_cast<FusedOp>(last);
    if (!fused)
      return describe(last);
    // A fusion group is one kernel, but what needs the value is the op of
    // its body that reads it last (through reshapes, as above).
    Operation *inner = nullptr;
    for (auto [in, arg] :
         llvm::zip(fused.getInputs(), fused.getBodyBlock().getArguments())) {
      if (in != v)
        continue;
      for (Operation *user : arg.getUsers()) {
        while (isa<ReshapeOp>(user) && user->getResult(0).hasOneUse())
          user = *user->getResult(0).getUsers().begin();
        if (!inner || inner->isBeforeInBlock(user))
          inner = user;
      }
    }
    if (!inner || isa<YieldOp>(inner))
      return describe(last);
    return describe(inner) + " in " + describe(last);
  };
  DenseMap<Value, size_t> bufferOf;
  DenseMap<size_t, Value> endsWith; // buffer -> the value read last from it
  std::vector<std::pair<Operation *, size_t>> scratchOf; // op -> its scratch
  DenseSet<size_t> viewed; // buffers that a reshape reads as a view
  // Nested regions, planned separately and placed after offsets are known.
  std::vector<std::pair<size_t, BlockPlan>> nestedPlans;
  // The collectives' flat bucket buffers (PlanOptions::flatBuckets).
  SmallVector<std::pair<Operation *, size_t>> buckets;
  Builder b(block.getParentOp()->getContext());
  for (Operation *op : ops) {
    if (isa<ConstantOp, arith::ConstantOp>(op))
      continue; // constants live in the code, not the arena
    // A fusion group's body is one kernel: only its results are buffers.
    if (op->getNumRegions() == 1 && op->getRegion(0).hasOneBlock() &&
        !isa<FusedOp>(op)) {
      BlockPlan inner = planBlock(op->getRegion(0).front(), marks, opts);
      Buffer loop;
      loop.op = op->getName().getStringRef().str();
      loop.loc = locString(op->getLoc());
      loop.name = loop.op + " body";
      loop.holder = true;
      loop.bytes = inner.size;
      loop.start = loop.end = step[op];
      nestedPlans.push_back({plan.buffers.size(), std::move(inner)});
      plan.buffers.push_back(loop);
    }
    for (Value r : op->getResults()) {
      if (!isa<RankedTensorType>(r.getType()))
        continue;
      // `r` lives in buffer `id` too: the buffer lives until `r`'s last
      // read and holds the more important of the two kinds.
      auto share = [&](size_t id) {
        Buffer &shared = plan.buffers[id];
        if (lastUse(r) >= shared.end)
          endsWith[id] = r;
        shared.end = std::max(shared.end, lastUse(r));
        BufferKind k = kindOf(r, marks);
        if (k == BufferKind::Gradient ||
            (k == BufferKind::Activation &&
             shared.kind == BufferKind::Workspace))
          shared.kind = k;
        bufferOf[r] = id;
      };
      // A reshape of a planned value is a view of it: buffers are dense
      // and row-major, so the reshaped value has the same bytes in the same
      // order. It gets its operand's place (the same tg.offset or
      // tg.alias_arg, which is how the backends recognise a view), and the
      // operand's buffer lives on while the view is read, which costs
      // nothing the copy's own buffer would not have. A reshape of an
      // argument keeps its copy: an argument updated in place must not
      // change under a view read after the update.
      if (isa<ReshapeOp>(op) && bufferOf.count(op->getOperand(0))) {
        size_t id = bufferOf[op->getOperand(0)];
        viewed.insert(id);
        share(id);
        continue;
      }
      // Reuse a dying elementwise operand's buffer.
      if (opts.inPlace) {
        Value victim;
        // Another operand in the same buffer (a view of `v`, or what `v`
        // is a view of) may be read at other indices than the ones written.
        auto readsOnlyThrough = [&](Value v) {
          return llvm::none_of(op->getOperands(), [&](Value o) {
            return o != v && bufferOf.count(o) && bufferOf[o] == bufferOf[v];
          });
        };
        for (Value v : op->getOperands())
          if (bufferOf.count(v) && canReuse(op, v, r) &&
              plan.buffers[bufferOf[v]].end == step[op] &&
              readsOnlyThrough(v)) {
            victim = v;
            break;
          }
        if (victim) {
          share(bufferOf[victim]);
          continue;
        }
      }
      Buffer buf;
      buf.op = op->getName().getStringRef().str();
      buf.loc = locString(op->getLoc());
      buf.name = buf.op + "#" + std::to_string(step[op]);
      buf.bytes = tensorBytes(r.getType());
      buf.start = step[op];
      buf.end = lastUse(r);
      buf.kind = kindOf(r, marks);
      if (auto rule = dialect(op->getContext()).getPrecisionAttrHelper().getAttr(op))
        buf.computeCopy = isa<CastOp>(op) && rule.getValue() == kComputeCopyRule;
      bufferOf[r] = plan.buffers.size();
      endsWith[plan.buffers.size()] = r;
      plan.buffers.push_back(buf);
    }
    // A collective's bucket buffer is filled from its operands and read
    // into its results while it runs: workspace live at its step alone,
    // apart from both (their buffers are live at that step too).
    if (int64_t bytes = opts.flatBuckets ? flatBucketBytes(op) : 0) {
      Buffer buf;
      buf.op = op->getName().getStringRef().str();
      buf.loc = locString(op->getLoc());
      buf.name = "bucket buffer of " + buf.op + "#" + std::to_string(step[op]);
      buf.bytes = bytes;
      buf.start = buf.end = step[op];
      buf.kind = BufferKind::Workspace;
      buckets.push_back({op, plan.buffers.size()});
      plan.buffers.push_back(buf);
    }
    addScratchBuffer(op, step[op], plan.buffers, scratchOf);
  }
  for (auto [id, v] : endsWith)
    if (plan.buffers[id].kind == BufferKind::Activation)
      plan.buffers[id].neededBy = lastReader(v);
  if (aliasTo)
    aliasUpdatesToArguments(aliasTo, block, plan.buffers, bufferOf, step,
                            viewed);
  for (const Buffer &buf : plan.buffers)
    if (!buf.persistent)
      plan.naive += buf.bytes;
  plan.size = assignOffsets(plan.buffers, opts.alignment);
  for (auto [op, id] : buckets)
    setBucketOffset(op, plan.buffers[id].offset);
  recordScratchOffsets(scratchOf, plan.buffers);
  for (auto [v, id] : bufferOf)
    if (Operation *def = v.getDefiningOp()) {
      const Buffer &buf = plan.buffers[id];
      // In-place updates name the argument they overwrite instead.
      TGDialect &tgd = dialect(b.getContext());
      if (def->getNumResults() == 1) {
        if (buf.aliasOf >= 0)
          tgd.getAliasArgAttrHelper().setAttr(def,
                                              b.getI64IntegerAttr(buf.aliasOf));
        else
          tgd.getOffsetAttrHelper().setAttr(def,
                                            b.getI64IntegerAttr(buf.offset));
        tgd.getBytesAttrHelper().setAttr(def, b.getI64IntegerAttr(buf.bytes));
      } else {
        // A multi-result op (a fusion group, the accumulation loop) has one
        // offset per result; a tg.offset or tg.alias_arg beside them would
        // be some one result's, and a backend reading it would put every
        // result there.
        tgd.getOffsetAttrHelper().removeAttr(def);
        tgd.getAliasArgAttrHelper().removeAttr(def);
        SmallVector<int64_t> offs(def->getNumResults(), -1);
        if (auto old = tgd.getOffsetsAttrHelper().getAttr(def))
          if (old.size() == static_cast<int64_t>(offs.size()))
            offs.assign(old.asArrayRef().begin(), old.asArrayRef().end());
        offs[cast<OpResult>(v).getResultNumber()] =
            buf.aliasOf >= 0 ? -1 : buf.offset;
        tgd.getOffsetsAttrHelper().setAttr(def, b.getDenseI64ArrayAttr(offs));
        SmallVector<int64_t> aliases(def->getNumResults(), -1);
        if (auto old = tgd.getAliasArgsAttrHelper().getAttr(def))
          if (old.size() == static_cast<int64_t>(aliases.size()))
            aliases.assign(old.asArrayRef().begin(), old.asArrayRef().end());
        aliases[cast<OpResult>(v).getResultNumber()] = buf.aliasOf;
        tgd.getAliasArgsAttrHelper().setAttr(def,
                                             b.getDenseI64ArrayAttr(aliases));
      }
    }
  // The moment with the most live bytes: the lower bound, and what is live
  // then, by kind (a loop contributes its body's own worst moment).
  std::vector<int64_t> live(n + 2, 0);
  DenseMap<size_t, const BlockPlan *> innerOf;
  for (auto &[id, inner] : nestedPlans)
    innerOf[id] = &inner;
  auto weight = [&](size_t id) {
    const Buffer &buf = plan.buffers[id];
    if (const BlockPlan *inner = innerOf.lookup(id))
      return inner->lowerBound;
    return alignTo(std::max<int64_t>(buf.bytes, 1), opts.alignment);
  };
  // Differences at each buffer's first and after its last step, summed
  // up: linear in buffers plus steps, however long the lifetimes.
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const Buffer &buf = plan.buffers[id];
    if (buf.persistent || buf.start > n)
      continue;
    live[buf.start] += weight(id);
    live[std::min<int64_t>(buf.end, n) + 1] -= weight(id);
  }
  for (size_t t = 1; t < live.size(); ++t)
    live[t] += live[t - 1];
  int64_t worst = std::max_element(live.begin(), live.end()) - live.begin();
  plan.lowerBound = live[worst];
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    Buffer &buf = plan.buffers[id];
    if (buf.persistent || buf.start > worst || buf.end < worst)
      continue;
    buf.atPeak = true;
    if (const BlockPlan *inner = innerOf.lookup(id))
      for (auto [kind, bytes] : inner->peakByKind)
        plan.peakByKind[kind] += bytes;
    else
      plan.peakByKind[buf.kind] += buf.bytes;
  }
  for (auto &[id, inner] : nestedPlans) {
    int64_t base = plan.buffers[id].offset;
    plan.naive += inner.naive - plan.buffers[id].bytes;
    // The body's attributes were relative to its own region: make them
    // absolute, so that a backend reads every tg.offset as an arena offset.
    // (A holder starts at its loop's step, and ops are indexed by step.)
    auto offsetAttr = dialect(b.getContext()).getOffsetAttrHelper();
    auto offsetsAttr = dialect(b.getContext()).getOffsetsAttrHelper();
    ops[plan.buffers[id].start]->getRegion(0).walk([&](Operation *inner) {
      if (auto off = offsetAttr.getAttr(inner))
        offsetAttr.setAttr(inner, b.getI64IntegerAttr(off.getInt() + base));
      if (auto off = getScratchOffset(inner))
        setScratchOffset(inner, off.getInt() + base);
      if (auto offs = offsetsAttr.getAttr(inner)) {
        SmallVector<int64_t> shifted(offs.asArrayRef());
        for (int64_t &o : shifted)
          if (o >= 0)
            o += base;
        offsetsAttr.setAttr(inner, b.getDenseI64ArrayAttr(shifted));
      }
      if (std::optional<int64_t> bucket = bucketOffsetOf(inner))
        setBucketOffset(inner, *bucket + base);
    });
    for (Buffer buf : inner.buffers) {
      buf.offset += base;
      buf.start = buf.end = plan.buffers[id].start;
      buf.nested = true;
      plan.buffers.push_back(buf);
    }
  }
  return plan;
}

} // namespace

FailureOr<MemoryPlan> mlir::tg::planMemory(func::FuncOp fn,
                                           const PlanOptions &opts) {
  auto module = fn->getParentOfType<ModuleOp>();
  SymbolTable symbols(module);
  Block &block = fn.getBody().front();
  Marks marks;
  if (failed(inlineCalls(block, symbols, marks)))
    return failure();
  markAccumulators(block, marks);

  MemoryPlan plan;
  Builder b(fn.getContext());
  // Persistent region: arguments, in order.
  int64_t offset = 0;
  for (BlockArgument arg : block.getArguments()) {
    Buffer buf;
    auto role = fn.getArgAttrOfType<RoleAttr>(arg.getArgNumber(), attr::role);
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr::name);
    buf.name = name ? name.str() : ("arg" + Twine(arg.getArgNumber())).str();
    buf.op = "argument";
    Role r = role ? role.getValue() : Role::input;
    buf.kind = r == Role::param                          ? BufferKind::Param
               : (r == Role::state || r == Role::step) ? BufferKind::Optimizer
                                                       : BufferKind::Input;
    buf.bytes = tensorBytes(arg.getType());
    buf.persistent = true;
    buf.offset = offset;
    buf.end = -1;
    offset += alignTo(std::max<int64_t>(buf.bytes, 1), opts.alignment);
    plan.buffers.push_back(buf);
  }
  plan.persistentBytes = offset;

  BlockPlan top = planBlock(block, marks, opts, fn);
  plan.steps = top.steps;
  plan.transientBytes = top.size;
  plan.naiveBytes = top.naive;
  for (Buffer &buf : top.buffers) {
    if (buf.aliasOf >= 0)
      buf.offset = plan.buffers[buf.aliasOf].offset;
    plan.buffers.push_back(buf);
  }

  plan.lowerBoundBytes = top.lowerBound;
  for (auto [kind, bytes] : top.peakByKind)
    plan.peakByKind[kind] = bytes;

  TGDialect &tg = dialect(fn.getContext());
  if (auto ranks = tg.getRanksAttrHelper().getAttr(module))
    plan.ranks = ranks.getInt();
  if (auto zero = tg.getZeroAttrHelper().getAttr(module))
    plan.zero = zero.getInt();
  if (opts.flatBuckets)
    fn.walk([&](Operation *op) {
      plan.bucketBufferBytes =
          std::max(plan.bucketBufferBytes, flatBucketBytes(op));
    });

  auto summary = MemoryPlanAttr::get(
      fn.getContext(), plan.bytesOf(BufferKind::Param),
      plan.bytesOf(BufferKind::Optimizer), plan.bytesOf(BufferKind::Input),
      plan.bytesOf(BufferKind::Gradient), plan.bytesOf(BufferKind::Activation),
      // #tg.memory has no field for planned op scratch: it is workspace.
      plan.bytesOf(BufferKind::Workspace) + plan.bytesOf(BufferKind::Scratch),
      plan.persistentBytes,
      plan.transientBytes, plan.peakBytes(),
      plan.persistentBytes + plan.lowerBoundBytes,
      plan.persistentBytes + plan.naiveBytes);
  dialect(fn.getContext()).getMemoryAttrHelper().setAttr(fn, summary);
  return plan;
}

std::string mlir::tg::locString(Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    return (fl.getFilename().getValue() + ":" + Twine(fl.getLine()) + ":" +
            Twine(fl.getColumn()))
        .str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string s = locString(l); !s.empty())
        return s;
  if (auto name = dyn_cast<NameLoc>(loc))
    return locString(name.getChildLoc());
  return "";
}
