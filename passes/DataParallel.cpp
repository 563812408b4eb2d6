//===- DataParallel.cpp - average gradients over ranks ----------*- C++ -*-===//
//
// The tg-data-parallel pass (Passes.td; docs/data-parallel.md). Every rank
// of a data-parallel job runs the same @train_step on its shard of the
// global batch; averaging the parameter gradients (and the loss) over the
// ranks before the optimizer makes each rank apply the update of the whole
// batch, so the replicas stay identical.
//
// Where the gradients are complete is read from what tg-build-train-step
// built: the results of the gradient function's call with tg.role = grad,
// or, with gradient accumulation, the results of the micro-batch loop that
// sum them (communicating there costs one exchange per step, not one per
// micro-batch).
//
//===----------------------------------------------------------------------===//

#include "dialects/TGOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tg {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct DataParallelPass final
    : tg::impl::DataParallelPassBase<DataParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks < 1 || bucketBytes < 1) {
      module.emitError("tg-data-parallel: ranks and bucket-bytes must be at "
                       "least 1, got ranks = ")
          << ranks << ", bucket-bytes = " << bucketBytes;
      return signalPassFailure();
    }
    if (ranks == 1)
      return;
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step) {
      module.emitError("tg-data-parallel: the module has no @train_step "
                       "(run tg-build-train-step first)");
      return signalPassFailure();
    }
    auto helper = tg::dialect(&getContext()).getRanksAttrHelper();
    if (helper.isAttrPresent(module)) {
      module.emitError("tg-data-parallel: the module is data-parallel "
                       "already (tg.ranks = ")
          << helper.getAttr(module).getInt() << ")";
      return signalPassFailure();
    }
    if (failed(averageOverRanks(step)))
      return signalPassFailure();
    helper.setAttr(module, IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                            ranks));
  }

  /// The call of the gradient function in `step`: the one whose callee has
  /// results with tg.role = grad.
  func::CallOp findGradientCall(func::FuncOp step) {
    func::CallOp found;
    step.walk([&](func::CallOp call) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee)
        return WalkResult::advance();
      for (unsigned i = 0, e = callee.getNumResults(); i < e; ++i)
        if (getResultRole(callee, i) == Role::grad) {
          found = call;
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    return found;
  }

  /// Where a result of the gradient call is complete for the whole step:
  /// the result itself, or the result of `loop` whose iteration argument
  /// sums it.
  FailureOr<Value> completed(Value v, scf::ForOp loop) {
    if (!loop)
      return v;
    for (Operation *user : v.getUsers()) {
      if (user->getNumResults() != 1)
        continue;
      for (OpOperand &use : user->getResult(0).getUses())
        if (isa<scf::YieldOp>(use.getOwner()) &&
            use.getOwner()->getParentOp() == loop)
          return loop.getResult(use.getOperandNumber());
    }
    return failure();
  }

  LogicalResult averageOverRanks(func::FuncOp step) {
    func::CallOp call = findGradientCall(step);
    if (!call)
      return step.emitError("tg-data-parallel: @train_step calls no "
                            "gradient function (no result with tg.role = "
                            "grad)");
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    Operation *anchor = call;
    scf::ForOp loop;
    if (call->getParentOp() != step) {
      loop = dyn_cast<scf::ForOp>(call->getParentOp());
      if (!loop || loop->getParentOp() != step)
        return call.emitError("tg-data-parallel: the gradient call is "
                              "neither in @train_step's body nor in its "
                              "micro-batch loop");
      anchor = loop;
    }
    SmallVector<Value> grads, loss;
    for (unsigned i = 0, e = callee.getNumResults(); i < e; ++i) {
      std::optional<Role> role = getResultRole(callee, i);
      if (role != Role::grad && role != Role::loss)
        continue;
      FailureOr<Value> v = completed(call.getResult(i), loop);
      if (failed(v))
        return call.emitError("tg-data-parallel: cannot find where the "
                              "micro-batch loop accumulates result #")
               << i;
      (role == Role::grad ? grads : loss).push_back(*v);
    }

    OpBuilder b(anchor->getContext());
    b.setInsertionPointAfter(anchor);
    Location loc = call.getLoc();
    auto reduce = [&](ArrayRef<Value> bucket) {
      auto op = AllReduceOp::create(b, loc, bucket, b.getStringAttr("mean"),
                                    b.getI64IntegerAttr(ranks));
      for (auto [v, r] : llvm::zip(bucket, op.getResults()))
        Value(v).replaceAllUsesExcept(r, op.getOperation());
    };
    // The loss first: a few bytes, and every rank then reports the loss
    // of the global batch.
    if (!loss.empty())
      reduce(loss);
    // Backward order: autodiff completes the last parameter's gradient
    // first, so buckets are filled from the end.
    SmallVector<Value> bucket;
    int64_t bytes = 0;
    for (Value g : llvm::reverse(grads)) {
      bucket.push_back(g);
      bytes += tensorBytes(g.getType());
      if (bytes >= bucketBytes) {
        reduce(bucket);
        bucket.clear();
        bytes = 0;
      }
    }
    if (!bucket.empty())
      reduce(bucket);
    return success();
  }
};

} // namespace
