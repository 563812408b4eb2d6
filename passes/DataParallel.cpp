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
// With zero = 1 (ZeRO stage 1) the optimizer update that
// tg-build-train-step built on whole tensors is rebuilt on each rank's flat
// shards (buildStepUpdate, the same arithmetic), between a reduce-scatter
// of the gradients and an all-gather of the parameters; the old update is
// then dead and erased.
//
// Every collective runs over one communicator, `tg.comm_world` (all the
// ranks of the job), made once at the top of @train_step; its type carries
// the rank count, from which the shard sizes follow.
//
// With comm-dtype = bf16 or f16 the f32 gradients travel in that type: a
// tg.cast before their bucket's collective, which then communicates half
// the bytes, and one back to f32 after it, so the optimizer still sees
// f32 gradients (rounded once per rank and by the library's summation).
//
//===----------------------------------------------------------------------===//

#include "dialects/TGOps.h"
#include "passes/Passes.h"
#include "passes/TrainConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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
          << std::to_string(ranks)
          << ", bucket-bytes = " << std::to_string(bucketBytes);
      return signalPassFailure();
    }
    // One rank has nothing to average; keep-collectives communicates
    // anyway (over a communicator of one), to measure what it costs.
    if (ranks == 1 && !keepCollectives)
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
    if (zero != 0 && zero != 1) {
      module.emitError("tg-data-parallel: zero must be 0 or 1 (ZeRO stage 1 "
                       "shards the optimizer state), got ")
          << std::to_string(zero);
      return signalPassFailure();
    }
    commElt = Type();
    if (commDtype == "bf16")
      commElt = Builder(&getContext()).getBF16Type();
    else if (commDtype == "f16")
      commElt = Builder(&getContext()).getF16Type();
    else if (commDtype != "f32") {
      module.emitError("tg-data-parallel: comm-dtype must be f32, bf16 or "
                       "f16, got '")
          << commDtype << "'";
      return signalPassFailure();
    }
    if (failed(averageOverRanks(step)))
      return signalPassFailure();
    auto i64 = IntegerType::get(&getContext(), 64);
    helper.setAttr(module, IntegerAttr::get(i64, ranks));
    if (zero == 1)
      tg::dialect(&getContext())
          .getZeroAttrHelper()
          .setAttr(module, IntegerAttr::get(i64, 1));
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

  /// `v` in the communicated element type: a tg.cast of an f32 `v` when
  /// comm-dtype narrows it, `v` itself otherwise.
  Value narrow(OpBuilder &b, Location loc, Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    if (!commElt || !type.getElementType().isF32())
      return v;
    return CastOp::create(b, loc, type.clone(commElt), v);
  }

  /// `r`, a collective's result for the gradient `g`, back in `g`'s
  /// element type.
  Value widen(OpBuilder &b, Location loc, Value r, Value g) {
    auto type = cast<RankedTensorType>(r.getType());
    Type elt = TensorBuilder::elt(g);
    if (type.getElementType() == elt)
      return r;
    return CastOp::create(b, loc, type.clone(elt), r);
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
    b.setInsertionPointToStart(&step.getBody().front());
    world = CommWorldOp::create(b, step.getLoc(),
                                CommType::get(b.getContext(), ranks));
    b.setInsertionPointAfter(anchor);
    Location loc = call.getLoc();
    auto reduce = [&](ArrayRef<Value> bucket) {
      auto op = AllReduceOp::create(b, loc, world, bucket,
                                    b.getStringAttr("mean"),
                                    /*bucket_offset=*/IntegerAttr());
      for (auto [v, r] : llvm::zip(bucket, op.getResults()))
        Value(v).replaceAllUsesExcept(r, op.getOperation());
    };
    // The loss first: a few bytes, and every rank then reports the loss
    // of the global batch. It stays f32 whatever comm-dtype says.
    if (!loss.empty())
      reduce(loss);
    if (zero == 1)
      return shardUpdate(step, grads, b);
    // Backward order: autodiff completes the last parameter's gradient
    // first, so buckets are filled from the end. Narrowed gradients are
    // cast right before their bucket's all_reduce and back right after.
    forEachBucket(llvm::to_vector(llvm::reverse(grads)),
                  [&](ArrayRef<Value> bucket) {
                    SmallVector<Value> sent = llvm::map_to_vector(
                        bucket, [&](Value g) { return narrow(b, loc, g); });
                    auto op = AllReduceOp::create(
                        b, loc, world, sent, b.getStringAttr("mean"),
                        /*bucket_offset=*/IntegerAttr());
                    for (auto [g, s, r] :
                         llvm::zip(bucket, sent, op.getResults())) {
                      Value back = widen(b, loc, r, g);
                      Operation *keep =
                          s == g ? op.getOperation() : s.getDefiningOp();
                      Value(g).replaceAllUsesExcept(back, keep);
                    }
                  });
    return success();
  }

  /// Calls `emit` on consecutive runs of `values` of about bucket-bytes.
  void forEachBucket(ArrayRef<Value> values,
                     function_ref<void(ArrayRef<Value>)> emit) {
    SmallVector<Value> bucket;
    int64_t bytes = 0;
    for (Value v : values) {
      bucket.push_back(v);
      bytes += tensorBytes(v.getType());
      if (bytes >= bucketBytes) {
        emit(bucket);
        bucket.clear();
        bytes = 0;
      }
    }
    if (!bucket.empty())
      emit(bucket);
  }

  /// ZeRO stage 1: replaces @train_step's update by one on this rank's
  /// shards. `grads` are the completed gradients (sums over the micro-
  /// batches with accumulation), `b` is where they are complete.
  LogicalResult shardUpdate(func::FuncOp step, ArrayRef<Value> grads,
                            OpBuilder &b) {
    ModuleOp module = getOperation();
    FailureOr<TrainConfig> cfg = TrainConfig::read(module);
    if (failed(cfg))
      return failure();
    SmallVector<BlockArgument> params, state;
    BlockArgument stepArg;
    for (BlockArgument arg : step.getArguments()) {
      auto role = step.getArgAttrOfType<RoleAttr>(arg.getArgNumber(),
                                                  attr::role);
      if (role && role.getValue() == Role::param)
        params.push_back(arg);
      else if (role && role.getValue() == Role::state)
        state.push_back(arg);
      else if (role && role.getValue() == Role::step)
        stepArg = arg;
    }
    size_t np = params.size(), sharded = cfg->stateSlots().size() * np;
    if (grads.size() != np || !stepArg || state.size() < sharded)
      return step.emitError("tg-data-parallel: zero = 1 expects "
                            "tg-build-train-step's @train_step (parameters, "
                            "their optimizer state, step)");
    for (BlockArgument p : params)
      if (!TensorBuilder::elt(p).isF32())
        return step.emitError("tg-data-parallel: zero = 1 communicates f32 "
                              "tensors, but parameter '")
               << step.getArgAttrOfType<StringAttr>(p.getArgNumber(),
                                                    attr::name)
                      .getValue()
               << "' is " << p.getType();

    // The gradients, averaged and reduce-scattered in backward order.
    DenseMap<Value, Value> gradShard;
    forEachBucket(llvm::to_vector(llvm::reverse(grads)),
                  [&](ArrayRef<Value> bucket) {
                    Location loc = b.getUnknownLoc();
                    SmallVector<Value> sent = llvm::map_to_vector(
                        bucket, [&](Value g) { return narrow(b, loc, g); });
                    auto types = llvm::map_to_vector(sent, [&](Value g) {
                      return Type(
                          shardType(cast<ShapedType>(g.getType()), ranks));
                    });
                    auto op = ReduceScatterOp::create(
                        b, loc, types, world, sent, b.getStringAttr("mean"),
                        /*bucket_offset=*/IntegerAttr());
                    for (auto [g, s] : llvm::zip(bucket, op.getResults()))
                      gradShard[g] = widen(b, loc, s, g);
                  });

    // The state tensors of each parameter become its shard's.
    SmallVector<Type> argTypes(step.getArgumentTypes());
    for (size_t i = 0; i < sharded; ++i) {
      auto full = cast<RankedTensorType>(state[i].getType());
      state[i].setType(shardType(full, ranks));
      argTypes[state[i].getArgNumber()] = state[i].getType();
      step.setArgAttr(state[i].getArgNumber(), attr::shardOf,
                      b.getDenseI64ArrayAttr(full.getShape()));
    }

    // The update, on shards, right before the return.
    Operation *ret = step.getBody().front().getTerminator();
    b.setInsertionPoint(ret);
    TensorBuilder t{b, ret->getLoc()};
    int64_t k = cfg->accumulate;
    SmallVector<Value> pShards, gShards;
    for (auto [p, g] : llvm::zip(params, grads)) {
      pShards.push_back(ShardOp::create(
          b, t.loc, shardType(cast<ShapedType>(p.getType()), ranks), world,
          p));
      Value gs = gradShard.lookup(g);
      // With accumulation the gradient is the micro-batches' mean; the
      // division runs on the shard (1/N of the work).
      if (k > 1)
        gs = t.div(gs, t.scalar(TensorBuilder::elt(gs), double(k)));
      gShards.push_back(gs);
    }
    auto globalSum = [&](Value local) -> Value {
      return AllReduceOp::create(b, t.loc, world, ValueRange{local},
                                 b.getStringAttr("sum"),
                                 /*bucket_offset=*/IntegerAttr())
          .getResult(0);
    };
    SmallVector<Value> stateValues(state.begin(), state.end());
    StepUpdate next = buildStepUpdate(t, *cfg, pShards, gShards, stateValues,
                                      stepArg, globalSum);

    // The updated shards, gathered into whole parameters, in buckets.
    SmallVector<Value> newParams;
    size_t first = 0;
    forEachBucket(next.params, [&](ArrayRef<Value> bucket) {
      SmallVector<Type> types;
      for (size_t i = 0; i < bucket.size(); ++i)
        types.push_back(params[first + i].getType());
      first += bucket.size();
      llvm::append_range(newParams,
                         AllGatherOp::create(b, t.loc, types, world, bucket,
                                             /*bucket_offset=*/IntegerAttr())
                             .getResults());
    });

    // The results, by role, in the order of the arguments.
    SmallVector<Value> results(ret->getOperands());
    size_t pi = 0, si = 0;
    for (unsigned i = 0; i < step.getNumResults(); ++i) {
      std::optional<Role> role = getResultRole(step, i);
      if (role == Role::param)
        results[i] = newParams[pi++];
      else if (role == Role::state) {
        if (si < sharded)
          step.setResultAttr(i, attr::shardOf,
                             step.getArgAttr(state[si].getArgNumber(),
                                             attr::shardOf));
        results[i] = next.state[si++];
      } else if (role == Role::step)
        results[i] = next.step;
    }
    ret->setOperands(results);
    step.setFunctionType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
    eraseDeadOps(step);
    return shardInitState(sharded);
  }

  /// Erases the ops of `fn`'s body that nothing uses any more (the update
  /// on whole tensors that shardUpdate replaced).
  static void eraseDeadOps(func::FuncOp fn) {
    // Backwards, so that an op's operands die after it.
    Operation *op = fn.getBody().front().getTerminator()->getPrevNode();
    while (op) {
      Operation *prev = op->getPrevNode();
      if (isOpTriviallyDead(op))
        op->erase();
      op = prev;
    }
  }

  /// @init returns the first `sharded` state tensors as zero shards.
  LogicalResult shardInitState(size_t sharded) {
    auto init = getOperation().lookupSymbol<func::FuncOp>("init");
    if (!init)
      return success();
    Operation *ret = init.getBody().front().getTerminator();
    OpBuilder b(ret);
    TensorBuilder t{b, ret->getLoc()};
    SmallVector<Value> results(ret->getOperands());
    size_t si = 0;
    for (unsigned i = 0; i < init.getNumResults() && si < sharded; ++i) {
      if (getResultRole(init, i) != Role::state)
        continue;
      ++si;
      auto full = cast<RankedTensorType>(results[i].getType());
      results[i] = t.filled(shardType(full, ranks), 0.0);
      init.setResultAttr(i, attr::shardOf,
                         b.getDenseI64ArrayAttr(full.getShape()));
    }
    ret->setOperands(results);
    init.setFunctionType(b.getFunctionType(init.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    eraseDeadOps(init);
    return success();
  }

  /// The communicator of every collective this pass inserts.
  Value world;
  /// The element type f32 gradients are communicated in (comm-dtype);
  /// null for f32.
  Type commElt;
};

} // namespace
