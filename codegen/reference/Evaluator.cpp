//===- Evaluator.cpp - the reference interpreter's driver -------*- C++ -*-===//
//
// Walks a function's blocks op by op, keeping one Tensor per SSA value.
// The structural ops (func.return, func.call, scf.for, scf.yield, tg.fused,
// arith.constant) are handled here; every tg op goes to its family
// (Elementwise.cpp, Reductions.cpp, Movement.cpp, ConvPool.cpp), and each
// result is then rounded to its element type.
//
//===----------------------------------------------------------------------===//

#include "codegen/reference/EvalInternal.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

#include <unistd.h>

using namespace mlir;
using namespace mlir::tg::ref;

namespace {

/// Checks `t` against `type`, and returns it rounded to the element type
/// when `round` (integers always truncate: they are integers in every mode).
FailureOr<Tensor> conform(Location loc, Tensor t, Type type, bool round,
                          StringRef what) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  FailureOr<DType> dtype = dtypeOf(shaped ? shaped.getElementType() : type);
  if (failed(dtype))
    return emitError(loc) << "reference evaluator: unsupported type " << type
                          << " for " << what;
  ArrayRef<int64_t> shape = shaped ? shaped.getShape() : ArrayRef<int64_t>();
  if (t.dtype != *dtype || ArrayRef<int64_t>(t.shape) != shape)
    return emitError(loc) << "reference evaluator: " << what << " has type "
                          << t.typeString() << ", expected " << type;
  if (t.numElements() != internal::numElements(shape))
    return emitError(loc) << "reference evaluator: " << what << " holds "
                          << t.numElements() << " values, but "
                          << t.typeString() << " has "
                          << internal::numElements(shape);
  if (round || !isFloat(t.dtype)) {
    for (double &v : t.data) {
      if (!isFloat(t.dtype) && !std::isfinite(v))
        return emitError(loc)
               << "reference evaluator: " << what
               << " is an integer that is not finite (integer division by "
                  "zero?)";
      v = roundTo(t.dtype, v);
    }
  }
  return t;
}

/// The elements of `type`: 1 for a scalar or a non-tensor. checkEvaluable
/// has bounded every shape before this is called.
uint64_t elementsOf(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? uint64_t(shaped.getNumElements())
                                           : 1;
}

/// The dimension `i` (from the end when negative) of `type`'s shape.
uint64_t dimOf(Type type, int i) {
  ArrayRef<int64_t> shape = cast<ShapedType>(type).getShape();
  return uint64_t(shape[i < 0 ? shape.size() + i : i]);
}

/// An estimate, from the types alone, of the element operations `op` itself
/// performs: every element it reads and writes once, plus, for the ops that
/// reduce, the output times the reduction length (matmul: k; conv2d and its
/// gradients: input channels per group times the kernel, for every element
/// of the conv's output; attention: the key length times the head widths,
/// for every query row). The ops of a region count on their own.
uint64_t workOf(Operation *op) {
  using llvm::SaturatingAdd;
  using llvm::SaturatingMultiply;
  uint64_t work = 1;
  for (Type t : op->getOperandTypes())
    work = SaturatingAdd(work, elementsOf(t));
  for (Type t : op->getResultTypes())
    work = SaturatingAdd(work, elementsOf(t));
  auto times = [&](uint64_t a, uint64_t b) {
    work = SaturatingAdd(work, SaturatingMultiply(a, b));
  };
  // The conv's output y and weight w: each of y's elements sums
  // |w| / w[0] products, whichever of the three ops computes from them.
  auto conv = [&](Type y, Type w) {
    uint64_t outChannels = dimOf(w, 0);
    times(elementsOf(y), outChannels ? elementsOf(w) / outChannels : 0);
  };
  // q [B, H, Tq, d], k [B, H, Tk, d], v [B, H, Tk, dv]: scores and
  // weighted sum, Tk * (d + dv) for each of the B * H * Tq rows.
  auto attention = [&](Type q, Type k, Type v) {
    uint64_t d = dimOf(q, -1);
    uint64_t rows = d ? elementsOf(q) / d : 0;
    times(rows, SaturatingMultiply(dimOf(k, -2), d + dimOf(v, -1)));
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](tg::MatmulOp m) {
        Type lhs = m.getOperand(0).getType();
        times(elementsOf(m->getResult(0).getType()),
              dimOf(lhs, m.getTransposeLhs() ? -2 : -1));
      })
      .Case([&](tg::Conv2dOp c) {
        conv(c->getResult(0).getType(), c->getOperand(1).getType());
      })
      .Case([&](tg::Conv2dGradInputOp c) {
        conv(c->getOperand(0).getType(), c->getOperand(1).getType());
      })
      .Case([&](tg::Conv2dGradWeightOp c) {
        conv(c->getOperand(1).getType(), c->getResult(0).getType());
      })
      .Case([&](tg::AttentionOp a) {
        attention(a->getOperand(0).getType(), a->getOperand(1).getType(),
                  a->getOperand(2).getType());
      })
      .Case([&](tg::AttentionGradOp a) {
        // The backward recomputes the probabilities and then goes over
        // them again for the three gradients.
        for (int pass = 0; pass < 2; ++pass)
          attention(a->getOperand(2).getType(), a->getOperand(3).getType(),
                    a->getOperand(4).getType());
      });
  return work;
}

/// The interpreter state of one function activation.
class Interpreter {
public:
  Interpreter(const EvalOptions &opts, unsigned depth, uint64_t &steps,
              uint64_t &work)
      : opts(opts), depth(depth), steps(steps), work(work) {}

  FailureOr<SmallVector<Tensor>> run(func::FuncOp fn, ArrayRef<Tensor> args) {
    if (fn.isExternal())
      return fn.emitError("reference evaluator: function '")
             << fn.getSymName() << "' has no body";
    auto inputs = fn.getFunctionType().getInputs();
    if (args.size() != inputs.size())
      return fn.emitError("reference evaluator: '")
             << fn.getSymName() << "' takes " << inputs.size()
             << " arguments, got " << args.size();
    Block &entry = fn.getBody().front();
    for (auto [i, arg] : llvm::enumerate(args)) {
      std::string what = "argument #" + std::to_string(i);
      FailureOr<Tensor> t =
          conform(fn.getLoc(), arg, inputs[i], opts.roundToDtype, what);
      if (failed(t))
        return failure();
      values[entry.getArgument(i)] = std::move(*t);
    }
    return runBlock(entry);
  }

private:
  /// Runs `block` and returns the operands of its terminator.
  FailureOr<SmallVector<Tensor>> runBlock(Block &block) {
    for (Operation &op : block) {
      if (op.hasTrait<OpTrait::IsTerminator>()) {
        if (!isa<func::ReturnOp, scf::YieldOp, tg::YieldOp>(op))
          return unsupported(&op);
        return operandsOf(&op);
      }
      if (failed(runOp(&op)))
        return failure();
    }
    return block.getParentOp()->emitError(
        "reference evaluator: block has no terminator");
  }

  SmallVector<Tensor> operandsOf(Operation *op) {
    SmallVector<Tensor> result;
    for (Value v : op->getOperands())
      result.push_back(values.lookup(v));
    return result;
  }

  LogicalResult unsupported(Operation *op) {
    return op->emitError("reference evaluator: unsupported op '")
           << op->getName() << "'";
  }

  /// Binds the results of `op` to `results`, conformed to their types.
  LogicalResult bind(Operation *op, ArrayRef<Tensor> results) {
    // A contraction's exact sum is first rounded to its accumulator (tg.acc:
    // the value a backend's fp32 accumulator holds), then to its result type.
    std::optional<DType> acc;
    if (opts.roundToDtype && tg::isContraction(op) &&
        tg::dialect(op->getContext()).getAccAttrHelper().getAttr(op)) {
      FailureOr<DType> d = dtypeOf(tg::accumulatorType(op));
      if (failed(d))
        return op->emitError("reference evaluator: unsupported accumulator ")
               << tg::accumulatorType(op);
      acc = *d;
    }
    for (auto [value, t] : llvm::zip(op->getResults(), results)) {
      std::string what = "result #" + std::to_string(value.getResultNumber());
      Tensor rounded;
      if (acc) {
        rounded = t;
        for (double &v : rounded.data)
          v = roundTo(*acc, v);
      }
      FailureOr<Tensor> c = conform(op->getLoc(), acc ? rounded : t,
                                    value.getType(), opts.roundToDtype, what);
      if (failed(c))
        return failure();
      values[value] = std::move(*c);
    }
    return success();
  }

  /// Counts one step; fails at `op` past the limit.
  LogicalResult step(Operation *op) {
    if (++steps <= opts.maxSteps)
      return success();
    return op->emitError("reference evaluator: stopped after ")
           << opts.maxSteps << " steps (ops and loop iterations); a loop "
           << "this long is not something to evaluate op by op";
  }

  /// Counts `op`'s element operations before it runs; fails at `op`, with
  /// nothing allocated for it, when they would take the evaluation past
  /// opts.maxWork.
  LogicalResult charge(Operation *op) {
    uint64_t cost = workOf(op);
    if (cost <= opts.maxWork && work <= opts.maxWork - cost) {
      work += cost;
      return success();
    }
    return op->emitError("reference evaluator: this op needs about ")
           << cost << " element operations, which would take the "
           << "evaluation past its limit of " << opts.maxWork
           << "; tensors this large are not something to evaluate in "
           << "float64 element by element";
  }

  LogicalResult runOp(Operation *op) {
    if (failed(step(op)) || failed(charge(op)))
      return failure();
    SmallVector<Tensor> operands = operandsOf(op);
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](arith::ConstantOp c) {
          FailureOr<Tensor> t = internal::fromAttr(op, c.getValue());
          return failed(t) ? failure() : bind(op, *t);
        })
        .Case([&](func::CallOp call) { return runCall(call, operands); })
        .Case([&](scf::ForOp loop) { return runFor(loop, operands); })
        .Case([&](tg::FusedOp group) {
          // A fusion group computes what its body computes, op by op.
          for (auto [arg, t] :
               llvm::zip(group.getBodyBlock().getArguments(), operands))
            values[arg] = t;
          FailureOr<SmallVector<Tensor>> results =
              runBlock(group.getBodyBlock());
          return failed(results) ? failure() : bind(op, *results);
        })
        // A communicator holds no tensor; the collectives over it (their
        // operand 0) run as on one process holding every rank's values.
        .Case([&](tg::CommWorldOp) { return success(); })
        .Case([&](tg::AllReduceOp r) {
          return runAllReduce(r, ArrayRef(operands).drop_front());
        })
        .Case([&](tg::ReduceScatterOp r) {
          return runReduceScatter(r, ArrayRef(operands).drop_front());
        })
        .Case([&](tg::AllGatherOp g) {
          return runAllGather(g, ArrayRef(operands).drop_front());
        })
        .Case([&](tg::ShardOp s) {
          return bind(op, SmallVector<Tensor>{
                              shardZero(operands[1], s.getType(), 1.0)});
        })
        .Default([&](Operation *) -> LogicalResult {
          if (internal::MultiResult r = internal::evalAttention(op, operands))
            return failed(*r) ? failure() : bind(op, **r);
          if (op->getNumResults() != 1)
            return unsupported(op);
          for (auto family :
               {internal::evalElementwise, internal::evalReduction,
                internal::evalMovement, internal::evalConvPool}) {
            internal::FamilyResult r = family(op, operands);
            if (!r)
              continue;
            return failed(*r) ? failure() : bind(op, **r);
          }
          return unsupported(op);
        });
  }

  /// tg.all_reduce on one process: every rank holds this rank's values,
  /// so the mean is the identity and the sum is `ranks` times the value.
  LogicalResult runAllReduce(tg::AllReduceOp op, ArrayRef<Tensor> operands) {
    SmallVector<Tensor> results(operands);
    if (op.getOp() == "sum")
      for (Tensor &t : results)
        for (double &v : t.data)
          v *= static_cast<double>(op.getRanks());
    return bind(op, results);
  }

  /// Rank 0's flat shard of `t` (of `shard`'s type), scaled: elements
  /// [0, s) of `t` read flat, zeros past its end.
  static Tensor shardZero(const Tensor &t, RankedTensorType shard,
                          double scale) {
    Tensor out = t;
    out.shape.assign(shard.getShape().begin(), shard.getShape().end());
    out.data.resize(shard.getNumElements(), 0.0);
    for (double &v : out.data)
      v *= scale;
    return out;
  }

  /// tg.reduce_scatter on one process, which is rank 0 and where every
  /// rank holds the same values: shard 0 of each operand, times `ranks`
  /// for a sum.
  LogicalResult runReduceScatter(tg::ReduceScatterOp op,
                                 ArrayRef<Tensor> operands) {
    double scale =
        op.getOp() == "sum" ? static_cast<double>(op.getRanks()) : 1.0;
    SmallVector<Tensor> results;
    for (auto [t, type] : llvm::zip(operands, op.getResultTypes()))
      results.push_back(shardZero(t, cast<RankedTensorType>(type), scale));
    return bind(op, results);
  }

  /// tg.all_gather on one process: every rank holds this shard, so the
  /// result repeats it.
  LogicalResult runAllGather(tg::AllGatherOp op, ArrayRef<Tensor> operands) {
    SmallVector<Tensor> results;
    for (auto [t, type] : llvm::zip(operands, op.getResultTypes())) {
      auto full = cast<RankedTensorType>(type);
      Tensor out = t;
      out.shape.assign(full.getShape().begin(), full.getShape().end());
      out.data.resize(full.getNumElements());
      for (size_t i = t.data.size(); i < out.data.size(); ++i)
        out.data[i] = t.data[i % t.data.size()];
      results.push_back(std::move(out));
    }
    return bind(op, results);
  }

  LogicalResult runCall(func::CallOp call, ArrayRef<Tensor> operands) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee)
      return call.emitError("reference evaluator: no function named '")
             << call.getCallee() << "'";
    if (depth >= opts.maxCallDepth)
      return call.emitError("reference evaluator: calls nest deeper than ")
             << opts.maxCallDepth << " (recursion?)";
    if (failed(checkEvaluable(callee, opts)))
      return failure();
    Interpreter inner(opts, depth + 1, steps, work);
    FailureOr<SmallVector<Tensor>> results = inner.run(callee, operands);
    if (failed(results))
      return failure();
    return bind(call, *results);
  }

  /// scf.for: bounds are index scalars; the body sees the induction variable
  /// and the loop-carried values, and yields the next loop-carried values.
  LogicalResult runFor(scf::ForOp loop, ArrayRef<Tensor> operands) {
    double lb = operands[0].data[0], ub = operands[1].data[0],
           step = operands[2].data[0];
    if (!(step > 0))
      return loop.emitError("reference evaluator: scf.for step must be "
                            "positive, got ")
             << step;
    SmallVector<Tensor> carried(operands.drop_front(3));
    Block &body = *loop.getBody();
    Type ivType = loop.getInductionVar().getType();
    FailureOr<DType> ivDtype = dtypeOf(ivType);
    if (failed(ivDtype))
      return loop.emitError("reference evaluator: unsupported induction "
                            "variable type ")
             << ivType;
    for (double iv = lb; iv < ub; iv += step) {
      if (failed(this->step(loop)))
        return failure();
      values[body.getArgument(0)] = Tensor::filled({}, *ivDtype, iv);
      for (auto [arg, t] : llvm::zip(body.getArguments().drop_front(), carried))
        values[arg] = t;
      FailureOr<SmallVector<Tensor>> next = runBlock(body);
      if (failed(next))
        return failure();
      carried = std::move(*next);
    }
    return bind(loop, carried);
  }

  const EvalOptions &opts;
  unsigned depth;
  uint64_t &steps; ///< shared by every activation of one evaluation
  uint64_t &work;  ///< likewise
  llvm::DenseMap<Value, Tensor> values;
};

/// Checks, before anything runs, that every value of `scope` has a type the
/// evaluator can hold: a static shape whose element count neither
/// overflows nor exceeds the limit. An op's families trust these types for
/// their loops and allocations.
} // namespace

LogicalResult mlir::tg::ref::checkEvaluable(Operation *scope,
                                            const EvalOptions &opts) {
  uint64_t limit = opts.maxElements;
  if (!limit) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    limit = pages > 0 && page > 0 ? uint64_t(pages) * page / 4 / sizeof(double)
                                  : uint64_t(1) << 28;
  }
  auto check = [&](Location loc, Type type, StringRef what) -> LogicalResult {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped)
      return success();
    if (!shaped.hasRank() || !shaped.hasStaticShape())
      return emitError(loc) << "reference evaluator: " << what << " has type "
                            << type << "; only static shapes can be evaluated";
    uint64_t n = 1;
    for (int64_t d : shaped.getShape())
      if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n) || n > limit)
        return emitError(loc)
               << "reference evaluator: " << what << " has type " << type
               << ", more than the " << limit
               << " elements it can hold in this machine's memory";
    return success();
  };
  WalkResult walk = scope->walk([&](Operation *op) {
    for (Value r : op->getResults())
      if (failed(check(op->getLoc(), r.getType(), "a result")))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument a : block.getArguments())
          if (failed(check(op->getLoc(), a.getType(), "an argument")))
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

FailureOr<SmallVector<Tensor>>
mlir::tg::ref::evaluate(func::FuncOp fn, ArrayRef<Tensor> args,
                        const EvalOptions &opts) {
  // The op families trust the verifiers for shapes and attributes, so IR
  // that was never verified is checked here rather than read out of bounds.
  Operation *scope = fn->getParentOfType<ModuleOp>();
  if (failed(verify(scope ? scope : fn.getOperation())))
    return failure();
  if (failed(checkEvaluable(fn, opts)))
    return failure();
  uint64_t steps = 0, work = 0;
  return Interpreter(opts, 0, steps, work).run(fn, args);
}
