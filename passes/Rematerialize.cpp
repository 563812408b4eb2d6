//===- Rematerialize.cpp - recompute activations in backward ----*- C++ -*-===//
//
// Trades FLOPs for memory: chosen activations of a gradient function are
// recomputed just before their first backward use instead of being kept
// alive across the whole forward pass. The choice is cost-driven: the
// activation that frees the most bytes per FLOP of replay goes first, so
// elementwise work, normalisations and attention scores are replayed before
// any large matmul is, and the outputs of expensive matmuls stay stored
// (cheap to keep per FLOP they would cost). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <queue>

namespace mlir::tg {
#define GEN_PASS_DEF_REMATERIALIZEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// True for the ops an `elementwise` replay may hold: element i of the
/// result reads element i of each (broadcast) operand, so a chain of them
/// is one kernel of a fused step.
bool isElementwiseReplay(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, NegOp,
             AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, ErfOp, CosOp, SinOp,
             SigmoidOp, ReluOp, SiluOp, GeluOp, CastOp>(op);
}

/// FLOPs of replaying `op`; -1 for ops that are not replayed: anything
/// outside the dialect, with regions, several results or side effects,
/// contractions unless `contractions`, and anything but elementwise ops,
/// transposes and reshapes when `elementwiseOnly`.
int64_t replayFlops(Operation *op, bool contractions, bool elementwiseOnly) {
  if (op->getNumRegions() || op->getNumResults() != 1 ||
      !isa<TGDialect>(op->getDialect()) || !isMemoryEffectFree(op) ||
      isa<Conv2dGradInputOp, Conv2dGradWeightOp, EmbeddingGradOp>(op))
    return -1;
  if (!contractions && isa<MatmulOp, Conv2dOp>(op))
    return -1;
  if (elementwiseOnly && !isElementwiseReplay(op) &&
      !isa<TransposeOp, ReshapeOp>(op))
    return -1;
  return opFlops(op);
}

/// One activation's replay: the forward ops to clone, in program order, and
/// earlier replays it can read instead of cloning again.
struct Replay {
  SmallVector<Operation *> chain;
  IRMapping reused;
  int64_t flops = 0;
  /// Kept values the chain reads (not constants or arguments).
  SmallVector<Value> leaves;
};

/// True if each transpose of `replay` writes the replayed value `act`
/// itself, or a value that only reshapes (views, tg-plan-memory) turn into
/// it. A transpose is a copy into a buffer of its own: as the result, that
/// buffer replaces the activation's; inside the chain, it would live
/// beside the result, and a free replay must cost no memory.
bool movesOnlyIntoResult(const Replay &replay, Value act) {
  DenseSet<Operation *> inChain(replay.chain.begin(), replay.chain.end());
  for (Operation *op : replay.chain) {
    if (!isa<TransposeOp>(op))
      continue;
    Value v = op->getResult(0);
    while (v != act) {
      SmallVector<Operation *> readers;
      for (Operation *user : v.getUsers())
        if (inChain.contains(user))
          readers.push_back(user);
      if (readers.size() != 1 || !isa<ReshapeOp>(readers.front()))
        return false;
      v = readers.front()->getResult(0);
    }
  }
  return true;
}

struct RematerializePass final
    : tg::impl::RematerializePassBase<RematerializePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // With micro-batches under mixed precision the step runs the gradient
    // function's clone that takes shared compute copies: replays go there
    // too, or the step's memory would not change.
    SmallVector<func::FuncOp, 2> fns = gradientFunctions(module, funcName);
    if (fns.empty()) {
      module.emitError() << "tg-rematerialize: no function named '"
                         << funcName << "'";
      return signalPassFailure();
    }
    func::FuncOp fwd = forwardOfGradient(fns.front());
    if (!fwd) {
      StringRef name = fns.front().getSymName();
      fns.front().emitOpError(
          "is not a gradient function: no forward function '")
          << name.drop_back(std::min<size_t>(5, name.size()))
          << "' beside it";
      return signalPassFailure();
    }
    for (func::FuncOp fn : fns)
      rematerialize(fn, fwd.getNumResults());
  }

  void rematerialize(func::FuncOp fn, unsigned numForwardResults) {
    Block &block = fn.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    Operation *ret = block.getTerminator();
    // The forward ops are those the forward results (the loss) depend on:
    // not a prefix of the block, since canonicalization hoists every
    // constant, the backward pass's included, to the top.
    DenseSet<Operation *> forward;
    SmallVector<Value> work(ret->getOperands().take_front(numForwardResults));
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (def && def->getBlock() == &block && forward.insert(def).second)
        llvm::append_range(work, def->getOperands());
    }
    auto backwardUsers = [&](Value v) {
      SmallVector<Operation *> users;
      for (Operation *u : v.getUsers())
        if (!forward.contains(u) && u != ret)
          users.push_back(u);
      return users;
    };
    auto firstOf = [](ArrayRef<Operation *> users) {
      return *llvm::min_element(users, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
    };

    DenseSet<Value> recomputed;
    // Replays made so far, per original value: a later replay may read one
    // that precedes its insertion point instead of cloning the op again.
    DenseMap<Value, SmallVector<Value, 1>> replays;
    int64_t savedBytes = 0, extraFlops = 0;
    // Widening casts first (mixed precision's fp32 operands of layer_norm
    // and cross_entropy): their narrow input is as good a kept value at half
    // the bytes, so a replay frees bytes for one FLOP per element. The
    // greedy below cannot find these: its chains end at values kept anyway,
    // and the narrow input is not one until the cast is replayed.
    for (Operation *op : ops) {
      auto cast = dyn_cast<CastOp>(op);
      if (!wideningCasts || !cast || !forward.contains(op) ||
          !dialect(op->getContext()).getPrecisionAttrHelper().getAttr(op) ||
          tensorBytes(cast.getType()) <= tensorBytes(cast.getInput().getType()))
        continue;
      SmallVector<Operation *> users = backwardUsers(cast);
      if (users.empty())
        continue;
      OpBuilder b(firstOf(users));
      Operation *clone = b.clone(*op);
      dialect(b.getContext()).getRecomputedAttrHelper().setAttr(
          clone, b.getUnitAttr());
      replays[cast].push_back(clone->getResult(0));
      for (Operation *user : users)
        user->replaceUsesOfWith(cast, clone->getResult(0));
      recomputed.insert(cast);
      savedBytes += tensorBytes(cast.getType());
      extraFlops += opFlops(op);
    }
    // Values the backward pass can read: kept activations, arguments and
    // constants.
    auto available = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return !def || isa<ConstantOp>(def) ||
             (!recomputed.contains(v) && !backwardUsers(v).empty());
    };
    // The replay of `act` before `at`, or failure if it needs an op that is
    // not replayed or a chain longer than maxDepth.
    auto plan = [&](Value act, Operation *at) -> FailureOr<Replay> {
      Replay r;
      DenseMap<Value, bool> seen;
      std::function<bool(Value, unsigned)> collect = [&](Value v,
                                                         unsigned depth) {
        if (v != act && available(v)) {
          Operation *def = v.getDefiningOp();
          if (def && !isa<ConstantOp>(def) && !llvm::is_contained(r.leaves, v))
            r.leaves.push_back(v);
          return true;
        }
        if (auto it = seen.find(v); it != seen.end())
          return it->second;
        if (auto it = replays.find(v); it != replays.end())
          for (Value earlier : llvm::reverse(it->second))
            if (earlier.getDefiningOp()->isBeforeInBlock(at)) {
              r.reused.map(v, earlier);
              return seen[v] = true;
            }
        Operation *def = v.getDefiningOp();
        int64_t f = def && forward.contains(def)
                        ? replayFlops(def, recomputeMatmuls, elementwiseOnly)
                        : -1;
        bool ok = f >= 0 && depth < maxDepth;
        for (Value operand : ok ? def->getOperands() : ValueRange())
          ok = ok && collect(operand, depth + 1);
        if (ok) {
          r.chain.push_back(def);
          r.flops += f;
        }
        return seen[v] = ok;
      };
      if (!collect(act, 0))
        return failure();
      llvm::sort(r.chain, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      return r;
    };

    // Candidates: forward values read by the backward pass, cheapest replay
    // per byte freed first (ties: program order, for determinism). Lazy
    // greedy: a candidate's cost is re-evaluated when it comes out, since
    // earlier choices make chains longer (or reusable).
    using Entry = std::pair<double, unsigned>; // (FLOPs per byte, index)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
    SmallVector<Value> candidates;
    auto ratio = [](int64_t flops, Value v) {
      return double(flops) / double(std::max<int64_t>(1, tensorBytes(v.getType())));
    };
    for (Operation *op : ops)
      if (forward.contains(op))
        for (Value r : op->getResults()) {
          SmallVector<Operation *> users = backwardUsers(r);
          if (users.empty() || llvm::is_contained(ret->getOperands(), r) ||
              isa<ConstantOp>(op) || tensorBytes(r.getType()) == 0)
            continue;
          FailureOr<Replay> replay = plan(r, firstOf(users));
          if (failed(replay))
            continue;
          queue.emplace(ratio(replay->flops, r), candidates.size());
          candidates.push_back(r);
        }

    while (!queue.empty()) {
      unsigned index = queue.top().second;
      Value act = candidates[index];
      queue.pop();
      if (savedBytes >= targetBytes && targetBytes > 0)
        break;
      SmallVector<Operation *> users = backwardUsers(act);
      if (users.empty())
        continue;
      Operation *first = firstOf(users);
      FailureOr<Replay> replay = plan(act, first);
      if (failed(replay))
        continue;
      double cost = ratio(replay->flops, act);
      if (cost > maxFlopsPerByte)
        continue;
      // A free replay reads only values that live past it anyway: one
      // whose last backward reader came before `first` would be kept
      // longer for it.
      if (elementwiseOnly &&
          llvm::any_of(replay->leaves, [&](Value leaf) {
            return llvm::none_of(backwardUsers(leaf), [&](Operation *u) {
              return first->isBeforeInBlock(u);
            });
          }))
        continue;
      if (elementwiseOnly && !movesOnlyIntoResult(*replay, act))
        continue;
      if (!queue.empty() && cost > queue.top().first) {
        queue.emplace(cost, index);
        continue;
      }
      OpBuilder b(first);
      IRMapping map = replay->reused;
      for (Operation *op : replay->chain) {
        Operation *clone = b.clone(*op, map);
        dialect(b.getContext()).getRecomputedAttrHelper().setAttr(
            clone, b.getUnitAttr());
        replays[op->getResult(0)].push_back(clone->getResult(0));
      }
      Value value = map.lookup(act);
      for (Operation *user : users)
        user->replaceUsesOfWith(act, value);
      recomputed.insert(act);
      savedBytes += tensorBytes(act.getType());
      extraFlops += replay->flops;
    }
    // A casts-only run (the training pipeline's level 0) that replayed
    // nothing leaves no record.
    // A later run (the free elementwise replays after decomposition) adds
    // to the record of an earlier one.
    auto record = dialect(&getContext()).getRematAttrHelper();
    if (RematAttr earlier = record.getAttr(fn);
        earlier && elementwiseOnly) {
      savedBytes += earlier.getBytes();
      extraFlops += earlier.getFlops();
    }
    if ((maxDepth > 0 && !elementwiseOnly) || savedBytes > 0)
      record.setAttr(fn, RematAttr::get(&getContext(), savedBytes, extraFlops,
                                        functionFlops(fn)));
  }
};

} // namespace
