//===- Rematerialize.cpp - recompute activations in backward ----*- C++ -*-===//
//
// Trades FLOPs for memory: chosen activations of a gradient function are
// recomputed just before their first backward use instead of being kept
// alive across the whole forward pass. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"

namespace mlir::tg {
#define GEN_PASS_DEF_REMATERIALIZEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

int64_t elementsOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getNumElements() : 0;
}

int64_t bytesOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return 0;
  return t.getNumElements() *
         std::max<int64_t>(1, t.getElementType().getIntOrFloatBitWidth() / 8);
}

/// FLOPs of recomputing `op`; -1 for ops too expensive to recompute.
int64_t recomputeFlops(Operation *op) {
  if (isa<MatmulOp, Conv2dOp, Conv2dGradInputOp, Conv2dGradWeightOp,
          EmbeddingGradOp>(op) ||
      op->getNumRegions() || op->getNumResults() != 1 ||
      !isa<TGDialect>(op->getDialect()))
    return -1;
  int64_t n = elementsOf(op->getResult(0));
  for (Value v : op->getOperands())
    n = std::max(n, elementsOf(v));
  // Normalisations and softmax read their input a few times.
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp, GeluOp>(op))
    return 8 * n;
  return n;
}

struct RematerializePass final
    : tg::impl::RematerializePassBase<RematerializePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(funcName);
    if (!fn) {
      module.emitError() << "tg-rematerialize: no function named '"
                         << funcName << "'";
      return signalPassFailure();
    }
    StringRef name = fn.getSymName();
    auto fwd = name.ends_with("_grad")
                   ? module.lookupSymbol<func::FuncOp>(name.drop_back(5))
                   : func::FuncOp();
    if (!fwd) {
      fn.emitOpError("is not a gradient function: no forward function '")
          << name.drop_back(std::min<size_t>(5, name.size()))
          << "' beside it";
      return signalPassFailure();
    }
    rematerialize(fn, fwd.getBody().front().getOperations().size() - 1);
  }

  void rematerialize(func::FuncOp fn, size_t numForward) {
    Block &block = fn.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    DenseSet<Operation *> forward(ops.begin(),
                                  ops.begin() + std::min(numForward, ops.size()));
    Operation *ret = block.getTerminator();
    auto backwardUsers = [&](Value v) {
      SmallVector<Operation *> users;
      for (Operation *u : v.getUsers())
        if (!forward.contains(u) && u != ret)
          users.push_back(u);
      return users;
    };
    // Activations, largest first (ties: program order, for determinism).
    SmallVector<Value> activations;
    for (Operation *op : ops)
      if (forward.contains(op))
        for (Value r : op->getResults())
          if (!backwardUsers(r).empty() && !llvm::is_contained(ret->getOperands(), r))
            activations.push_back(r);
    DenseMap<Value, unsigned> position;
    for (auto [i, v] : llvm::enumerate(activations))
      position[v] = i;
    llvm::sort(activations, [&](Value a, Value b) {
      if (bytesOf(a) != bytesOf(b))
        return bytesOf(a) > bytesOf(b);
      return position[a] < position[b];
    });

    DenseSet<Value> recomputed;
    // Values the backward pass can read: kept activations, arguments and
    // constants.
    auto available = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return !def || isa<ConstantOp>(def) ||
             (!recomputed.contains(v) && !backwardUsers(v).empty());
    };
    int64_t savedBytes = 0, extraFlops = 0;
    for (Value act : activations) {
      // The chain of forward ops to replay, in program order.
      SmallVector<Operation *> chain;
      int64_t flops = 0;
      std::function<bool(Value, unsigned)> collect = [&](Value v,
                                                         unsigned depth) {
        if (available(v) && v != act)
          return true;
        Operation *def = v.getDefiningOp();
        int64_t f = def ? recomputeFlops(def) : -1;
        if (f < 0 || depth >= maxDepth || !forward.contains(def))
          return false;
        for (Value operand : def->getOperands())
          if (!collect(operand, depth + 1))
            return false;
        if (!llvm::is_contained(chain, def)) {
          chain.push_back(def);
          flops += f;
        }
        return true;
      };
      if (!collect(act, 0) ||
          double(flops) > maxFlopsPerByte * double(bytesOf(act)))
        continue;
      llvm::sort(chain, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      // Replay the chain before the first backward use.
      SmallVector<Operation *> users = backwardUsers(act);
      Operation *first = *llvm::min_element(users, [](Operation *a,
                                                       Operation *b) {
        return a->isBeforeInBlock(b);
      });
      OpBuilder b(first);
      IRMapping map;
      for (Operation *op : chain) {
        Operation *clone = b.clone(*op, map);
        dialect(b.getContext()).getRecomputedAttrHelper().setAttr(
            clone, b.getUnitAttr());
      }
      Value replay = map.lookup(act);
      for (Operation *user : users)
        user->replaceUsesOfWith(act, replay);
      recomputed.insert(act);
      savedBytes += bytesOf(act);
      extraFlops += flops;
    }
    dialect(&getContext())
        .getRematAttrHelper()
        .setAttr(fn, RematAttr::get(&getContext(), savedBytes, extraFlops));
  }
};

} // namespace
