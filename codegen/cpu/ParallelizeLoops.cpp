//===- ParallelizeLoops.cpp - which loops run on several threads -*- C++ -*-===//
//
// The tg-parallelize-loops pass (see Passes.td): of the loops whose
// iterations are independent (`scf.parallel`, from the parallel iterators
// of linalg ops and the row tiles of the GEMM kernels), the outermost ones
// with enough work stay parallel, one dimension each, and carry
// `tg_cpu.parallel`; every other one becomes sequential `scf.for` loops.
// `convert-scf-to-openmp` then turns each remaining `scf.parallel` into an
// OpenMP parallel worksharing loop (static schedule).
//
// The rule is a cost rule on static facts: a fork and join of a warm
// OpenMP team costs a few microseconds, so a loop runs in parallel only
// where its estimated work (operations executed, nested loops multiplied
// out) is above `min-work`, and only the outermost such loop of a nest
// (nested parallel regions would fork again per outer iteration).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_PARALLELIZELOOPSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// Iterations of one parallel iteration where the parallel dimension is
/// the innermost loop: a multiple of every vector width, so LLVM's vector
/// body and scalar remainder split each chunk the same way whatever the
/// number of threads.
constexpr int64_t kChunk = 256;
/// A dimension of at least this many iterations is preferred as the
/// parallel one (the outermost such), so a team of threads shares out
/// evenly; below it, the dimension of most iterations.
constexpr int64_t kPreferredTrip = 8;

/// Iterations of `for (iv = lb; iv < ub; iv += step)` where they are known
/// statically: constant bounds, or a block of a blocked loop whose upper
/// bound is `min(lb + c, x)` (at most c / step).
std::optional<int64_t> tripCount(Value lb, Value ub, Value step) {
  std::optional<int64_t> s = getConstantIntValue(step);
  if (!s || *s <= 0)
    return std::nullopt;
  std::optional<int64_t> l = getConstantIntValue(lb),
                         u = getConstantIntValue(ub);
  if (l && u)
    return std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
  if (auto min = ub.getDefiningOp<arith::MinSIOp>())
    for (Value v : {min.getLhs(), min.getRhs()})
      if (auto add = v.getDefiningOp<arith::AddIOp>())
        if (add.getLhs() == lb)
          if (std::optional<int64_t> c = getConstantIntValue(add.getRhs()))
            return std::max<int64_t>(0, (*c + *s - 1) / *s);
  return std::nullopt;
}

/// Saturating product, so a huge nest stays a huge (not negative) number.
int64_t times(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}
int64_t plusSat(int64_t a, int64_t b) {
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/// Operations one execution of `block` runs: every op counts once (a
/// vector op too: it takes about as long as a scalar one), loops count
/// their body times their iterations (unknown: once), a branch its larger
/// side. Constants are free.
int64_t workOf(Block &block) {
  int64_t work = 0;
  for (Operation &op : block) {
    if (isa<arith::ConstantOp>(op))
      continue;
    int64_t w = 1;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      w = times(tripCount(loop.getLowerBound(), loop.getUpperBound(),
                          loop.getStep())
                    .value_or(1),
                workOf(*loop.getBody()));
    } else if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      w = workOf(*loop.getBody());
      for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(),
                                           loop.getUpperBound(),
                                           loop.getStep()))
        w = times(w, tripCount(lb, ub, step).value_or(1));
    } else {
      for (Region &region : op.getRegions())
        for (Block &b : region)
          w = std::max(w, plusSat(1, workOf(b)));
    }
    work = plusSat(work, w);
  }
  return work;
}

/// Whether the iterations of `loop` may run on other threads: no
/// reductions, and nothing in the body allocates (also on the stack: the
/// OpenMP body's alloca scope must fold away before scf-to-cf), frees or
/// calls.
bool mayRunOnThreads(scf::ParallelOp loop) {
  if (!loop.getInitVals().empty())
    return false;
  WalkResult r = loop.getBody()->walk([](Operation *op) {
    if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
            memref::ReallocOp, CallOpInterface>(op))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !r.wasInterrupted();
}

/// What happens to one scf.parallel.
struct Decision {
  explicit Decision(scf::ParallelOp loop) : loop(loop) {}
  scf::ParallelOp loop;
  /// The dimension that runs in parallel; none: all run sequentially.
  std::optional<unsigned> dim;
  /// Cut the parallel dimension into chunks of kChunk iterations.
  bool chunked = false;
  /// Dimensions 0..*dim run as one parallel loop over the product of their
  /// iterations (all of constant bounds); 1: only *dim runs in parallel.
  unsigned collapsed = 1;
  SmallVector<int64_t> trips;
  int64_t iterations = 0, work = 0;
};

/// Applies the cost rule to `loop` (whose enclosing loops are sequential).
Decision decide(scf::ParallelOp loop, int64_t minWork) {
  Decision d(loop);
  if (!mayRunOnThreads(loop))
    return d;
  SmallVector<int64_t> trips;
  for (auto [lb, ub, step] : llvm::zip(
           loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> t = tripCount(lb, ub, step);
    trips.push_back(t.value_or(-1));
  }
  int64_t work = workOf(*loop.getBody());
  for (int64_t t : trips)
    work = times(work, std::max<int64_t>(t, 1));
  bool bodyHasLoops = loop.getBody()
                          ->walk([](LoopLikeOpInterface) {
                            return WalkResult::interrupt();
                          })
                          .wasInterrupted();
  // Leading dimensions too short alone are collapsed into one parallel
  // loop over their product: a parallel dimension inside sequential outer
  // ones forks and joins once per outer iteration (an im2col copy per
  // image, 1x1x5x5x28x28, forked 25 times per call; the LeNet step made
  // 32,385 OpenMP forks). Only dimensions of constant bounds, whose trip
  // counts are exact, and never the innermost loop (which is chunked
  // instead, below).
  int64_t product = 1;
  for (unsigned i = 0; i < trips.size(); ++i) {
    if (!getConstantIntValue(loop.getLowerBound()[i]) ||
        !getConstantIntValue(loop.getUpperBound()[i]) || trips[i] < 1)
      break;
    product = times(product, trips[i]);
    if (product < kPreferredTrip)
      continue;
    if (i == 0 || (i + 1 == trips.size() && !bodyHasLoops))
      break;
    if (work < minWork)
      return d;
    d.dim = i;
    d.work = work;
    d.collapsed = i + 1;
    d.iterations = product;
    d.trips = trips;
    return d;
  }
  std::optional<unsigned> dim;
  for (auto [i, t] : llvm::enumerate(trips))
    if (t >= kPreferredTrip) {
      dim = i;
      break;
    }
  if (!dim) {
    int64_t best = 1;
    for (auto [i, t] : llvm::enumerate(trips))
      if (t > best) {
        best = t;
        dim = i;
      }
  }
  if (!dim || trips[*dim] < 2 || work < minWork)
    return d;
  d.dim = dim;
  d.work = work;
  // Chunks where the parallel dimension is the innermost loop.
  bool innermost = *dim + 1 == trips.size() && !bodyHasLoops;
  d.chunked = innermost && trips[*dim] > kChunk &&
              getConstantIntValue(loop.getLowerBound()[*dim]) &&
              getConstantIntValue(loop.getUpperBound()[*dim]);
  // An innermost loop too short (or too dynamic) for two chunks stays
  // sequential: split between threads, its vector body and scalar
  // remainder would depend on the thread count.
  if (innermost && !d.chunked) {
    d.dim.reset();
    return d;
  }
  d.iterations = d.chunked ? (trips[*dim] + kChunk - 1) / kChunk : trips[*dim];
  return d;
}

/// A one-dimensional scf.parallel over [lo, hi) by `step`, carrying the
/// decision; the builder moves into its body.
scf::ParallelOp createParallel(const Decision &d, OpBuilder &b, Location loc,
                               Value lo, Value hi, Value step,
                               MLIRContext *ctx) {
  auto par = scf::ParallelOp::create(b, loc, ValueRange{lo}, ValueRange{hi},
                                     ValueRange{step});
  Builder attrs(ctx);
  par->setAttr(tg::cpu::kParallelAttr,
               attrs.getDictionaryAttr(
                   {attrs.getNamedAttr("iterations",
                                       attrs.getI64IntegerAttr(d.iterations)),
                    attrs.getNamedAttr("work",
                                       attrs.getI64IntegerAttr(d.work))}));
  b.setInsertionPoint(par.getBody()->getTerminator());
  return par;
}
scf::ParallelOp createParallel(const Decision &d, OpBuilder &b, Location loc,
                               int64_t lo, int64_t hi, MLIRContext *ctx) {
  return createParallel(d, b, loc, arith::ConstantIndexOp::create(b, loc, lo),
                        arith::ConstantIndexOp::create(b, loc, hi),
                        arith::ConstantIndexOp::create(b, loc, 1), ctx);
}

/// Replaces `d.loop` by a nest of one loop per dimension, in order: scf.for
/// for each, except the parallel dimension (a one-dimensional scf.parallel,
/// over chunks where `d.chunked`). The body moves into the innermost loop.
void rebuild(const Decision &d, MLIRContext *ctx) {
  scf::ParallelOp loop = d.loop;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  SmallVector<Value> ivs;
  unsigned first = 0;
  if (d.collapsed > 1) {
    // One loop over the collapsed dimensions' product; each index
    // delinearised, the last collapsed dimension varying fastest.
    auto par = createParallel(d, b, loc, 0, d.iterations, ctx);
    Value rest = par.getInductionVars()[0];
    ivs.resize(d.collapsed);
    for (unsigned i = d.collapsed; i-- > 0;) {
      Value index = rest;
      if (i > 0) {
        Value trip = arith::ConstantIndexOp::create(b, loc, d.trips[i]);
        index = arith::RemUIOp::create(b, loc, rest, trip);
        rest = arith::DivUIOp::create(b, loc, rest, trip);
      }
      ivs[i] = arith::AddIOp::create(
          b, loc, loop.getLowerBound()[i],
          arith::MulIOp::create(b, loc, index, loop.getStep()[i]));
    }
    first = d.collapsed;
  }
  for (unsigned i = first; i < loop.getNumLoops(); ++i) {
    Value lb = loop.getLowerBound()[i], ub = loop.getUpperBound()[i],
          step = loop.getStep()[i];
    if (d.dim != i || d.collapsed > 1) {
      auto f = scf::ForOp::create(b, loc, lb, ub, step);
      ivs.push_back(f.getInductionVar());
      b.setInsertionPoint(f.getBody()->getTerminator());
      continue;
    }
    Value lo = lb, hi = ub, s = step;
    if (d.chunked) {
      lo = arith::ConstantIndexOp::create(b, loc, 0);
      hi = arith::ConstantIndexOp::create(b, loc, d.iterations);
      s = arith::ConstantIndexOp::create(b, loc, 1);
    }
    auto par = createParallel(d, b, loc, lo, hi, s, ctx);
    Value iv = par.getInductionVars()[0];
    if (!d.chunked) {
      ivs.push_back(iv);
      continue;
    }
    // Iterations [lb + c * kChunk * step, min(that + kChunk * step, ub)).
    Value span = arith::MulIOp::create(
        b, loc, step, arith::ConstantIndexOp::create(b, loc, kChunk));
    Value first = arith::AddIOp::create(
        b, loc, lb, arith::MulIOp::create(b, loc, iv, span));
    Value last = arith::MinSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, first, span), ub);
    auto f = scf::ForOp::create(b, loc, first, last, step);
    ivs.push_back(f.getInductionVar());
    b.setInsertionPoint(f.getBody()->getTerminator());
  }
  Block *body = loop.getBody();
  for (auto [arg, iv] : llvm::zip(body->getArguments(), ivs))
    arg.replaceAllUsesWith(iv);
  Block *dest = b.getInsertionBlock();
  dest->getOperations().splice(b.getInsertionPoint(), body->getOperations(),
                               body->begin(), std::prev(body->end()));
  loop.erase();
}

/// Whether the code under `root` may run on several threads at once given
/// that its iterations touch disjoint data (a slot loop's promise): it
/// neither allocates nor frees (the counted allocator is not thread-safe),
/// and calls only functions of the module, of one block, not recursive,
/// that do the same. `seen` gets the functions it calls, transitively.
bool threadSafe(Operation *root, SymbolTable &symbols,
                llvm::SmallPtrSetImpl<Operation *> &seen,
                SmallVectorImpl<Operation *> &stack) {
  WalkResult r = root->walk([&](Operation *op) {
    if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
            memref::ReallocOp>(op))
      return WalkResult::interrupt();
    auto call = dyn_cast<func::CallOp>(op);
    if (!call) {
      return isa<CallOpInterface>(op) ? WalkResult::interrupt()
                                      : WalkResult::advance();
    }
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isDeclaration() || !callee.getBody().hasOneBlock() ||
        call.getNumResults())
      return WalkResult::interrupt();
    if (llvm::is_contained(stack, callee))
      return WalkResult::interrupt();
    stack.push_back(callee);
    bool safe = !seen.insert(callee).second ||
                threadSafe(callee, symbols, seen, stack);
    stack.pop_back();
    return safe ? WalkResult::advance() : WalkResult::interrupt();
  });
  return !r.wasInterrupted();
}

/// Replaces every call under `root` by a copy of its callee's body
/// (threadSafe said each is one block and returns nothing). A parallel
/// region's body must not call: convert-scf-to-openmp wraps it in a
/// memref.alloca_scope, which folds away only where nothing inside may
/// allocate on the stack, and upstream counts every call as such (the
/// scope would then outlive scf-to-cf, which it cannot). The kernels'
/// own loops, now inside the parallel loop, stay sequential.
void inlineCalls(Operation *root, SymbolTable &symbols) {
  SmallVector<func::CallOp> calls;
  root->walk([&](func::CallOp call) { calls.push_back(call); });
  for (func::CallOp call : calls) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    IRMapping map;
    map.map(callee.getArguments(), call.getOperands());
    OpBuilder b(call);
    for (Operation &op : callee.getBody().front().without_terminator())
      b.clone(op, map);
    call.erase();
  }
  // Calls inside what was copied.
  if (!calls.empty())
    inlineCalls(root, symbols);
}

/// Runs the slot loops (tg_cpu.slots: a convolution's blocks of images,
/// each with its own slot of the op's scratch) as one-dimensional
/// scf.parallel loops where they may run on threads: outside any loop, no
/// results, and thread-safe code, the kernels it calls inlined. Returns
/// the new loops.
SmallVector<scf::ParallelOp> parallelizeSlotLoops(ModuleOp module) {
  SymbolTable symbols(module);
  SmallVector<scf::ForOp> candidates;
  module->walk([&](scf::ForOp loop) {
    auto slots = loop->getAttrOfType<IntegerAttr>(tg::cpu::kSlotsAttr);
    if (slots && slots.getInt() > 1 && loop.getNumResults() == 0 &&
        !loop->getParentOfType<LoopLikeOpInterface>())
      candidates.push_back(loop);
  });
  SmallVector<scf::ParallelOp> made;
  llvm::SmallPtrSet<Operation *, 8> inlined;
  for (scf::ForOp loop : candidates) {
    llvm::SmallPtrSet<Operation *, 8> called;
    SmallVector<Operation *> stack;
    if (!threadSafe(loop, symbols, called, stack))
      continue;
    inlined.insert(called.begin(), called.end());
    inlineCalls(loop, symbols);
    std::optional<int64_t> trips = tripCount(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    Decision d(nullptr);
    d.iterations = trips.value_or(-1);
    d.work = times(workOf(*loop.getBody()), std::max<int64_t>(1, d.iterations));
    OpBuilder b(loop);
    auto par = createParallel(d, b, loop.getLoc(), loop.getLowerBound(),
                              loop.getUpperBound(), loop.getStep(),
                              module.getContext());
    Block *body = loop.getBody();
    body->getArgument(0).replaceAllUsesWith(par.getInductionVars()[0]);
    par.getBody()->getOperations().splice(b.getInsertionPoint(),
                                          body->getOperations(), body->begin(),
                                          std::prev(body->end()));
    loop.erase();
    made.push_back(par);
  }
  // Kernels no one calls any more (in module order, until none is left:
  // one may have been called only by another).
  for (bool erased = true; erased;) {
    erased = false;
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (inlined.contains(fn) && fn.isPrivate() &&
          SymbolTable::symbolKnownUseEmpty(fn, module)) {
        inlined.erase(fn);
        symbols.erase(fn);
        erased = true;
      }
  }
  return made;
}

struct ParallelizeLoopsPass final
    : tg::cpu::impl::ParallelizeLoopsPassBase<ParallelizeLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    // The convolutions' slot loops first: the loops inside them (the
    // kernels inlined there) then stay sequential.
    SmallVector<scf::ParallelOp> slotLoops =
        parallelizeSlotLoops(getOperation());
    // Outermost first: a loop inside one that runs in parallel stays
    // sequential.
    SmallVector<Decision> decisions;
    llvm::SmallPtrSet<Operation *, 16> parallel;
    for (scf::ParallelOp loop : slotLoops)
      parallel.insert(loop);
    getOperation()->walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      if (parallel.contains(loop))
        return;
      for (Operation *p = loop->getParentOp(); p; p = p->getParentOp())
        if (parallel.contains(p)) {
          decisions.push_back(Decision(loop));
          return;
        }
      decisions.push_back(decide(loop, minWork));
      if (decisions.back().dim)
        parallel.insert(loop);
    });
    // Innermost first, so each rebuild moves a body that is final.
    for (const Decision &d : llvm::reverse(decisions))
      rebuild(d, &getContext());
  }
};

} // namespace
