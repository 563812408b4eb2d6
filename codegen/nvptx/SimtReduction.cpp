//===- SimtReduction.cpp - reduction and row-reduction kernels --*- C++ -*-===//
//
// Every reducing kernel of a planned step. A reduction's domain D (its input
// shape) splits into kept ("outer") and reduced ("inner") dimensions; an
// outer index k picks one output of the reduction, an inner index j one of
// the elements reduced into it.
//
// Row reductions (the reduced axes are the trailing ones): one warp per row
// for rows of up to 1024 elements (4 rows per 128-thread block), one block
// per row beyond (256 threads: with 512, ptxas sizes registers for full
// occupancy and spills; a 50257-wide vocabulary row is 197 elements a
// thread). A thread takes 4 neighbours at a time when the row splits
// evenly, so its loads and stores are 16 bytes (f32). The reductions of the group run in phases in body order: a
// reduction whose input needs an earlier reduction's row value runs one
// phase later, independent reductions share a phase, i.e. one pass over the
// row. Each pass recomputes its input from the group's operands and the row
// scalars already reduced (elementwise producers are replayed, never stored),
// reduces it with warp shuffles (plus shared memory across the block's
// warps) so every thread holds the row value, and a last pass writes the
// full-shape results. Row-shaped results are written once per row, by the
// row's first thread.
//
// Other reductions (column sums of bias gradients, reductions over
// everything such as the clipping norm's sum of squares): blocks of 32 x Y
// threads, x over 32 consecutive outputs (coalesced when the last axis is
// kept), y striding over the reduced elements; the Y partials meet in shared
// memory and are added in a fixed order. A reduction over everything is a
// block of up to 256 threads striding over the input. The group's
// elementwise results are written in the same pass: each element is
// visited once.
//
// Big reductions are split over blocks (one block would serialise the GPU:
// a bias gradient's column sums over batch*seq rows, a mean over a large
// tensor): the reduced range is cut into `slices` interleaved slices, one
// block (row of blocks, for column sums) each, and two kernels run. The
// partial kernel ("tg_redp") writes each slice's partial in the
// accumulator type to 8-byte slots of the launch's scratch (an f32 or
// wider workspace: KernelLaunch::scratchBytes, sized before the plan by
// tg-size-gpu-scratch through reductionScratchBytes and placed by the
// plan), together with the full-shape
// results; the combine kernel ("tg_redc") folds the slices in slice order
// and writes the reduced results. The slice count depends only on the
// shapes, so the sums stay bit-reproducible run to run.
//
// Every sum is a fixed tree (no atomics), so results are bit-reproducible.
// Aliasing (KernelGen.h): every thread reads the elements of a full-shape
// operand that it later writes itself and no other; a row result is
// written after a barrier that follows every read of the row.
//
// Elementwise ops are evaluated lazily at symbolic indices (each dimension
// is 0, an outer dimension or an inner dimension), so a value that does
// not depend on the inner index (a row scalar, a label) is computed once
// per row outside the loops, and broadcasting is index arithmetic. The
// scalar code is SimtScalar's.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/SimtReduction.h"
#include "codegen/nvptx/SimtReductionLowering.h"
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/SimtKernels.h"
#include "codegen/nvptx/SimtScalar.h"

#include "dialects/TGOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>
#include <map>

using namespace mlir;
namespace tgd = mlir::tg;

namespace tg::nvptx::detail {

using namespace reduction;

namespace reduction {

bool ReductionLowering::hasInner(const Index &idx) const {
  return llvm::any_of(idx, [](Ix x) { return x.kind == Ix::Inner; });
}

std::string ReductionLowering::key(Value v, const Index &idx) const {
  std::string s = std::to_string(reinterpret_cast<uintptr_t>(v.getAsOpaquePointer()));
  for (Ix x : idx)
    s += "," + std::to_string(x.kind) + ":" + std::to_string(x.d);
  return s;
}

LogicalResult ReductionLowering::analyze() {
  Operation *first = nullptr;
  for (Operation *op : p.ops)
    if (redKind(op)) {
      first = op;
      break;
    }
  if (!first)
    return p.anchor->emitOpError("has no reduction for the GPU reduction kernel");
  auto [in, axes] = domainOf(first);
  dom.assign(shapeOf(in).begin(), shapeOf(in).end());
  if (dom.size() > 255)
    return p.anchor->emitOpError("has a reduction of rank ") << dom.size()
           << ", beyond the GPU reduction kernel's 255";
  dimRole.assign(dom.size(), Ix::Outer);
  dimPos.assign(dom.size(), 0);
  for (int64_t a : axes)
    dimRole[a] = Ix::Inner;
  for (auto [d, s] : llvm::enumerate(dom)) {
    if (dimRole[d] == Ix::Inner) {
      dimPos[d] = innerDims.size();
      innerDims.push_back(s);
    } else {
      dimPos[d] = outerDims.size();
      outerDims.push_back(s);
    }
  }
  outerStride = stridesOf(outerDims);
  innerStride = stridesOf(innerDims);
  kn = numElements(outerDims);
  rn = numElements(innerDims);
  trailing = !axes.empty() && axes.size() < dom.size() &&
             axes.front() == static_cast<int64_t>(dom.size() - axes.size());
  for (size_t i = 1; trailing && i < axes.size(); ++i)
    trailing = axes[i] == axes[i - 1] + 1;

  // Index arithmetic in i32 unless some tensor is too large for it.
  int64_t largest = numElements(dom);
  auto track = [&](Value v) {
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      largest = std::max(largest, t.getNumElements());
  };
  for (Value v : p.inputs)
    track(v);
  for (Operation *op : p.ops)
    for (Value r : op->getResults())
      track(r);
  it = largest < (int64_t(1) << 31) - 1024 ? IntegerType::get(p.anchor->getContext(), 32)
                                           : IntegerType::get(p.anchor->getContext(), 64);

  // Phases: a reduction runs after the reductions its input depends on;
  // the sum of an online pair runs in its max's pass.
  if (rowRequested && trailing)
    detectOnlinePairs();
  DenseMap<Value, int> dep;
  for (Operation *op : p.ops) {
    int d = 0;
    for (Value v : op->getOperands())
      d = std::max(d, dep.lookup(v));
    if (Operation *max = onlineMaxOf.lookup(op)) {
      d = dep.lookup(max->getResult(0));
      phases[d - 1].push_back(op);
    } else if (redKind(op)) {
      auto [rin, raxes] = domainOf(op);
      if (shapeOf(rin) != ArrayRef<int64_t>(dom) || raxes != axes)
        return p.anchor->emitOpError("reduces over two domains; the GPU "
                                     "reduction kernel takes one")
                   .attachNote(op->getLoc())
               << "this reduction differs from the first";
      ++d;
      if (static_cast<int>(phases.size()) < d)
        phases.resize(d);
      phases[d - 1].push_back(op);
    }
    for (Value r : op->getResults())
      dep[r] = d;
  }
  // Every result is an element of the domain or one per kept position.
  SmallVector<int64_t> keep(dom);
  for (int64_t a : axes)
    keep[a] = 1;
  for (Value r : p.results) {
    ArrayRef<int64_t> s = shapeOf(r);
    if (s != ArrayRef<int64_t>(dom) && s != ArrayRef<int64_t>(keep) &&
        s != ArrayRef<int64_t>(outerDims))
      return p.anchor->emitOpError("yields a ")
             << r.getType() << ", neither the reduction's domain nor its "
             << "reduced shape, which the GPU reduction kernel cannot write";
  }
  for (auto &ph : phases)
    maxPerPhase = std::max<int64_t>(maxPerPhase, ph.size());
  return success();
}

Index ReductionLowering::canonical(ArrayRef<int64_t> shape, bool full) const {
  // full: an element of the domain; otherwise the reduction result shape
  // (kept dims only, or all dims with the reduced ones 1).
  Index idx;
  if (full || shape.size() == dom.size()) {
    for (size_t d = 0; d < dom.size(); ++d) {
      Ix x{static_cast<Ix::Kind>(dimRole[d]), dimPos[d]};
      if (shape[d] == 1 || (!full && dimRole[d] == Ix::Inner))
        x = Ix{};
      idx.push_back(x);
    }
    return idx;
  }
  for (size_t i = 0; i < outerDims.size(); ++i)
    idx.push_back(outerDims[i] == 1 ? Ix{} : Ix{Ix::Outer, static_cast<uint8_t>(i)});
  return idx;
}

Index ReductionLowering::broadcastTo(const Index &idx, ArrayRef<int64_t> from,
                                     ArrayRef<int64_t> to) const {
  // `idx` indexes shape `to`; the operand of shape `from` broadcasts into it
  // (right-aligned, NumPy rules).
  Index out;
  size_t off = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    out.push_back(from[d] == 1 ? Ix{} : idx[d + off]);
  return out;
}

Value ReductionLowering::materialize(Ix x) {
  if (x.kind == Ix::Zero)
    return ic(0);
  bool outer = x.kind == Ix::Outer;
  std::string kk = std::string(outer ? "o" : "i") + std::to_string(x.d);
  auto &memo = outer ? outerMemo : *innerMemo;
  if (auto f = memo.find(kk); f != memo.end())
    return f->second;
  auto make = [&] {
    ArrayRef<int64_t> dims = outer ? outerDims : innerDims;
    ArrayRef<int64_t> st = outer ? outerStride : innerStride;
    Value lin = outer ? k : j;
    Value v = lin;
    if (st[x.d] != 1)
      v = w->udiv(v, ic(st[x.d]));
    if (x.d != 0)
      v = w->urem(v, ic(dims[x.d]));
    return v;
  };
  Value v = outer ? atOuter(make) : make();
  return memo[kk] = v;
}

Value ReductionLowering::offsetOf(const Index &idx, ArrayRef<int64_t> shape) {
  // The common cases: an element of the row (row-major domain with trailing
  // reduced axes) and the k-th output of the reduction.
  if (rowMajor && hasInner(idx) && shape == ArrayRef<int64_t>(dom) &&
      idx == canonical(dom, true))
    return w->add(rowBase, j);
  if (!hasInner(idx) && numElements(shape) == kn) {
    SmallVector<int64_t> st = stridesOf(shape);
    bool isK = true;
    SmallVector<bool> seen(outerDims.size(), false);
    for (auto [d, x] : llvm::enumerate(idx)) {
      if (x.kind == Ix::Zero)
        continue;
      isK &= st[d] == outerStride[x.d] && !seen[x.d];
      seen[x.d] = true;
    }
    for (size_t i = 0; i < outerDims.size(); ++i)
      isK &= seen[i] || outerDims[i] == 1;
    if (isK)
      return k;
  }
  SmallVector<int64_t> st = stridesOf(shape);
  Value off;
  for (auto [d, x] : llvm::enumerate(idx)) {
    if (x.kind == Ix::Zero)
      continue;
    Value term = w->mul(materialize(x), ic(st[d]));
    if (st[d] == 1)
      term = materialize(x);
    off = off ? w->add(off, term) : term;
  }
  return off ? off : ic(0);
}

FailureOr<Value> ReductionLowering::eval(Value v, const Index &idxIn) {
  ArrayRef<int64_t> shape = shapeOf(v);
  Index idx = idxIn;
  for (size_t d = 0; d < idx.size(); ++d)
    if (shape[d] == 1)
      idx[d] = Ix{};
  bool inner = hasInner(idx);
  auto &memo = inner ? *innerMemo : outerMemo;
  std::string kk = key(v, idx);
  if (auto f = memo.find(kk); f != memo.end())
    return f->second;
  OpBuilder::InsertionGuard g(w->b);
  if (!inner && loop)
    w->b.setInsertionPoint(loop);
  FailureOr<Value> r;
  if (Value param = params.lookup(v)) {
    Value off = offsetOf(idx, shape);
    r = loadElement(*w, param, off, elemOf(v));
  } else {
    r = evalOp(v.getDefiningOp(), v, idx);
  }
  if (failed(r))
    return failure();
  return memo[kk] = *r;
}

FailureOr<Value> ReductionLowering::evalOp(Operation *op, Value v,
                                           const Index &idx) {
  if (!op)
    return p.anchor->emitOpError("reads a value the GPU kernel has no "
                                 "parameter for");
  if (redKind(op)) {
    auto it = reduced.find(op);
    if (it == reduced.end())
      return p.anchor->emitOpError("uses a reduction before it is computed "
                                   "(GPU reduction kernel)");
    if (idx != canonical(shapeOf(v), false))
      return p.anchor->emitOpError("broadcasts a reduced value across the "
                                   "reduction's kept positions, which one "
                                   "GPU reduction kernel cannot compute")
                 .attachNote(op->getLoc())
             << "this reduction";
    return it->second;
  }
  if (isa<tgd::ConstantOp>(op))
    return emitSplatConstant(*w, op);
  if (!isScalarOp(op)) {
    bool composite = isa<tgd::SoftmaxOp, tgd::LogSoftmaxOp, tgd::LayerNormOp,
                         tgd::RmsNormOp>(op);
    InFlightDiagnostic d = p.anchor->emitOpError("cannot compile '")
                           << op->getName() << "' inside a GPU reduction kernel"
                           << (composite ? " (run tg-decompose first)" : "");
    d.attachNote(op->getLoc()) << "this op";
    return d;
  }
  ArrayRef<int64_t> rshape = shapeOf(op->getResult(0));
  SmallVector<Value> ins;
  if (isa<tgd::OneHotOp>(op)) {
    // Row `idx[:-1]` of the indices; the class is the last index.
    FailureOr<Value> x =
        eval(op->getOperand(0), Index(idx.begin(), idx.end() - 1));
    if (failed(x))
      return failure();
    ins.push_back(*x);
  } else {
    for (Value u : op->getOperands()) {
      FailureOr<Value> x = eval(u, broadcastTo(idx, shapeOf(u), rshape));
      if (failed(x))
        return failure();
      ins.push_back(*x);
    }
  }
  ElementPosition pos;
  bool positional = isa<tgd::OneHotOp, tgd::CausalMaskOp, tgd::DropoutOp>(op);
  if (positional)
    pos.linear = offsetOf(idx, rshape);
  return emitScalarOp(*w, op, ins, positional ? &pos : nullptr);
}

Value ReductionLowering::initOf(RedKind kind, Type t) {
  OpBuilder &b = w->b;
  if (kind != RedKind::Max) {
    if (auto ft = dyn_cast<FloatType>(t))
      return ft == w->f32 ? w->f32c(0)
                          : LLVM::ConstantOp::create(b, w->loc, t,
                                                     b.getFloatAttr(t, 0.0))
                                .getResult();
    return LLVM::ConstantOp::create(b, w->loc, t, b.getIntegerAttr(t, 0));
  }
  if (auto ft = dyn_cast<FloatType>(t))
    return LLVM::ConstantOp::create(
        b, w->loc, t,
        b.getFloatAttr(t, -std::numeric_limits<double>::infinity()));
  unsigned bits = t.getIntOrFloatBitWidth();
  return LLVM::ConstantOp::create(
      b, w->loc, t, b.getIntegerAttr(t, APInt::getSignedMinValue(bits)));
}

Value ReductionLowering::combine(RedKind kind, Value a, Value x) {
  bool isFloat = isa<FloatType>(a.getType());
  if (kind == RedKind::Max)
    return isFloat ? LLVM::MaximumOp::create(w->b, w->loc, a, x).getResult()
                   : LLVM::SMaxOp::create(w->b, w->loc, a, x).getResult();
  return isFloat ? w->fadd(a, x) : w->add(a, x);
}

Value ReductionLowering::shflXor(Value v, int lane) {
  OpBuilder &b = w->b;
  Location loc = w->loc;
  auto shfl32 = [&](Value x) {
    return NVVM::ShflOp::create(b, loc, x.getType(), w->i32c(-1), x,
                                w->i32c(lane), w->i32c(0x1f),
                                NVVM::ShflKind::bfly, UnitAttr())
        .getResult();
  };
  Type t = v.getType();
  if (t == w->f32 || t == w->i32)
    return shfl32(v);
  // 64-bit values travel as two 32-bit halves.
  Value bits = t == w->i64 ? v : LLVM::BitcastOp::create(b, loc, w->i64, v).getResult();
  Value lo = LLVM::TruncOp::create(b, loc, w->i32, bits);
  Value hi = LLVM::TruncOp::create(b, loc, w->i32, w->lshr(bits, w->i64c(32)));
  lo = w->zext64(shfl32(lo));
  hi = w->zext64(shfl32(hi));
  Value r = w->or_(lo, LLVM::ShlOp::create(b, loc, hi, w->i64c(32)));
  return t == w->i64 ? r : LLVM::BitcastOp::create(b, loc, t, r).getResult();
}

Value ReductionLowering::warpReduce(RedKind kind, Value v) {
  // Butterfly: after each step the lanes of a group hold bit-identical
  // values (a + b == b + a), so every lane ends with the same result.
  for (int lane = 16; lane >= 1; lane /= 2)
    v = combine(kind, v, shflXor(v, lane));
  return v;
}

Value ReductionLowering::finishReduction(Operation *red, Value acc) {
  RedKind kind = *redKind(red);
  if (kind == RedKind::Mean) {
    Value n = isa<FloatType>(acc.getType()) && acc.getType() == w->f32
                  ? w->f32c(static_cast<double>(rn))
                  : LLVM::ConstantOp::create(
                        w->b, w->loc, acc.getType(),
                        w->b.getFloatAttr(acc.getType(), static_cast<double>(rn)))
                        .getResult();
    acc = LLVM::FDivOp::create(w->b, w->loc, acc, n);
  }
  // The result is rounded to its element type, as the tg program stores it.
  Type elem = elemOf(red->getResult(0));
  return toCompute(*w, toStorage(*w, acc, elem), elem);
}

bool ReductionLowering::isFull(unsigned result) const {
  Value v = p.results[result];
  Operation *def = v.getDefiningOp();
  return !(def && redKind(def)) && shapeOf(v) == ArrayRef<int64_t>(dom);
}

/// The kernel runs in place (KernelGen.h's aliasing rule) when a result
/// shares the buffer of an operand of its own shape and element size that
/// is read only at the result's elements: both full-shape (each element is
/// one thread's, loaded before it is stored), or both one per kept
/// position (stored after the barrier that follows every read). The plan
/// makes only such pairs; any other is refused.
LogicalResult ReductionLowering::checkPlan() const {
  auto bytes = [](Value v) {
    unsigned bits = elemOf(v).getIntOrFloatBitWidth();
    return bits < 8 ? 1u : bits / 8;
  };
  for (unsigned i = 0; i < p.results.size(); ++i) {
    auto mine = plannedBuffer(p.anchor->getResult(i));
    if (!mine)
      continue;
    for (auto [jdx, operand] : llvm::enumerate(p.anchor->getOperands())) {
      if (plannedBuffer(operand) != mine)
        continue;
      Value in = p.inputs[jdx], r = p.results[i];
      bool sameShape = shapeOf(in) == shapeOf(r) && bytes(in) == bytes(r);
      bool full = isFull(i) && shapeOf(r) == ArrayRef<int64_t>(dom);
      bool perKept = !isFull(i) && numElements(shapeOf(r)) == kn;
      if (!sameShape || !(full || perKept))
        return p.anchor->emitOpError("the memory plan puts result #")
               << i << " in the buffer of operand #" << jdx
               << ", which the GPU reduction kernel cannot compute in place";
    }
  }
  return success();
}

Value ReductionLowering::sharedSlot(int64_t byteOffset, Value index) {
  // 8-byte slots hold any accumulator type (f32, f64, i32, i64).
  Value off = w->add(w->i32c(byteOffset), w->mul(index, w->i32c(8)));
  return w->gep(smem, off, w->b.getI8Type());
}

/// One pass over the inner range: groups [start, ub) by `step`, each group
/// `vec` consecutive elements (j = group * vec + u). Accumulates the
/// reductions `reds` (the per-thread partials are returned, combined in
/// element order) and, when `stores`, computes every full-shape result at
/// each element of the group and then stores them all: a result may alias
/// an operand, and loads grouped before stores let LLVM's load/store
/// vectorizer make 16-byte accesses of the `vec` neighbours.
FailureOr<SmallVector<Value>>
ReductionLowering::pass(ArrayRef<Operation *> reds, bool stores, Value start,
                        Value ub, Value step) {
  OpBuilder &b = w->b;
  SmallVector<Value> inits;
  for (Operation *r : reds)
    inits.push_back(initOf(*redKind(r), computeType(elemOf(r->getOperand(0)))));
  auto forOp = scf::ForOp::create(b, w->loc, start, ub, step, inits);
  Block *body = forOp.getBody();
  if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
    b.setInsertionPoint(&body->back());
  else
    b.setInsertionPointToEnd(body);
  loop = forOp;
  Index full = canonical(dom, true);
  SmallVector<Value> accs(forOp.getRegionIterArgs());
  SmallVector<std::tuple<unsigned, Value, Value>> vals; // result, offset, value
  innerMemos.assign(vec, {});
  SmallVector<Value> js;
  for (int64_t u = 0; u < vec; ++u)
    js.push_back(vec == 1 ? forOp.getInductionVar()
                          : w->add(w->mul(forOp.getInductionVar(), ic(vec)), ic(u)));
  // The group's elements of every full-shape operand first, so that the
  // vectorizer sees adjacent loads with nothing between them (unused ones
  // are dead code).
  for (int64_t u = 0; vec > 1 && u < vec; ++u) {
    innerMemo = &innerMemos[u];
    j = js[u];
    for (Value in : p.inputs)
      if (shapeOf(in) == ArrayRef<int64_t>(dom) && failed(eval(in, full)))
        return failure();
  }
  for (int64_t u = 0; u < vec; ++u) {
    innerMemo = &innerMemos[u];
    j = js[u];
    for (auto [i, r] : llvm::enumerate(reds)) {
      if (onlineMaxOf.count(r))
        continue; // accumulated with its max
      FailureOr<Value> x = eval(r->getOperand(0), full);
      if (failed(x))
        return failure();
      int pi = partnerIndex(reds, i);
      if (pi < 0) {
        accs[i] = combine(*redKind(r), accs[i], *x);
        continue;
      }
      FailureOr<std::pair<Value, Value>> ml = onlineStep(r, accs[i], accs[pi], *x);
      if (failed(ml))
        return failure();
      std::tie(accs[i], accs[pi]) = *ml;
    }
    for (unsigned i = 0; stores && i < p.results.size(); ++i) {
      if (!isFull(i))
        continue;
      FailureOr<Value> x = eval(p.results[i], full);
      if (failed(x))
        return failure();
      vals.push_back({i, offsetOf(full, dom), *x});
    }
  }
  for (auto [i, off, x] : vals)
    storeElement(*w, resultParams.lookup(p.results[i]), off,
                 elemOf(p.results[i]), x);
  if (!inits.empty())
    scf::YieldOp::create(b, w->loc, accs);
  b.setInsertionPointAfter(forOp);
  loop = nullptr;
  innerMemos.assign(1, {});
  innerMemo = &innerMemos[0];
  return SmallVector<Value>(forOp.getResults());
}

/// Combines the warp-reduced `partials` of every warp of the block: lane 0
/// of each warp writes its value to shared slot row `slot`, and after one
/// barrier every thread folds the `warps` values in warp order (the same
/// order in every thread, so all get the same bits).
SmallVector<Value> ReductionLowering::blockCombine(ArrayRef<Operation *> reds,
                                                   ArrayRef<Value> partials,
                                                   int64_t slot, int64_t warps,
                                                   Value warp, Value lane) {
  int64_t base = slot * maxPerPhase * 32 * 8;
  w->openIf(w->icmp(LLVM::ICmpPredicate::eq, lane, w->i32c(0)));
  for (auto [i, v] : llvm::enumerate(partials))
    LLVM::StoreOp::create(w->b, w->loc, v,
                          sharedSlot(base + int64_t(i) * 32 * 8, warp), 8);
  w->b.setInsertionPointAfter(w->b.getInsertionBlock()->getParentOp());
  NVVM::Barrier0Op::create(w->b, w->loc);
  SmallVector<Value> totals;
  for (int64_t q = 0; q < warps; ++q) {
    SmallVector<Value> x;
    for (auto [i, v] : llvm::enumerate(partials))
      x.push_back(LLVM::LoadOp::create(
          w->b, w->loc, v.getType(),
          sharedSlot(base + int64_t(i) * 32 * 8, w->i32c(q)), 8));
    if (totals.empty())
      totals = x;
    else
      combineAll(reds, totals, x);
  }
  return totals;
}

/// Stores the results that are not full-shape (row values, reduction
/// results) from the first thread of the row, after every thread of the
/// row has read what it reads (a result may alias an operand): `sync` is
/// the barrier that orders those reads, or None where the storing thread
/// is the only reader of what it overwrites.
LogicalResult ReductionLowering::storeRowResults(Value isFirst, Sync sync) {
  SmallVector<std::pair<unsigned, Value>> vals;
  for (unsigned i = 0; i < p.results.size(); ++i) {
    if (isFull(i))
      continue;
    Index idx = canonical(shapeOf(p.results[i]), false);
    FailureOr<Value> x = eval(p.results[i], idx);
    if (failed(x))
      return failure();
    vals.push_back({i, *x});
  }
  if (vals.empty())
    return success();
  if (sync == Sync::Block)
    NVVM::Barrier0Op::create(w->b, w->loc);
  else if (sync == Sync::Warp)
    NVVM::SyncWarpOp::create(w->b, w->loc, w->i32c(-1));
  w->openIf(isFirst);
  for (auto [i, x] : vals) {
    Value r = p.results[i];
    storeElement(*w, resultParams.lookup(r),
                 offsetOf(canonical(shapeOf(r), false), shapeOf(r)), elemOf(r),
                 x);
  }
  w->b.setInsertionPointAfter(w->b.getInsertionBlock()->getParentOp());
  return success();
}

LogicalResult ReductionLowering::buildRowKernel() {
  OpBuilder &b = w->b;
  Location loc = w->loc;
  Value tid = NVVM::ThreadIdXOp::create(b, loc, w->i32);
  Value bid = NVVM::BlockIdXOp::create(b, loc, w->i32);
  Value lane = w->andi(tid, 31), warp = w->shri(tid, 5);
  auto toIt = [&](Value v) { return it == w->i32 ? v : w->zext64(v); };
  bool warpPerRow = rn <= 1024;
  Value start, step;
  if (warpPerRow) {
    // Four rows per 128-thread block; a warp past the last row has nothing
    // to do (it holds no barrier: warp mode uses none).
    Value row = w->add(w->muli(bid, 4), warp);
    k = toIt(row);
    w->openIf(w->ult(k, ic(kn)));
    start = toIt(lane);
    step = ic(32);
  } else {
    k = toIt(bid);
    start = toIt(tid);
    step = ic(block[0]);
  }
  rowBase = w->mul(k, ic(rn));
  int64_t warps = block[0] / 32;
  for (auto [pi, reds] : llvm::enumerate(phases)) {
    FailureOr<SmallVector<Value>> partials =
        pass(reds, /*stores=*/false, start, ic(rn / vec), step);
    if (failed(partials))
      return failure();
    SmallVector<Value> vals = warpReduceAll(reds, *partials);
    if (!warpPerRow)
      vals = blockCombine(reds, vals, pi % 2, warps, warp, lane);
    finishAll(reds, vals);
  }
  if (llvm::any_of(llvm::seq<unsigned>(0, p.results.size()),
                   [&](unsigned i) { return isFull(i); }))
    if (failed(pass({}, /*stores=*/true, start, ic(rn / vec), step)))
      return failure();
  Value isFirst = w->icmp(LLVM::ICmpPredicate::eq, start, ic(0));
  return storeRowResults(isFirst, warpPerRow ? Sync::Warp : Sync::Block);
}

LogicalResult ReductionLowering::buildReductionKernel() {
  OpBuilder &b = w->b;
  Location loc = w->loc;
  auto toIt = [&](Value v) { return it == w->i32 ? v : w->zext64(v); };
  Value tx = NVVM::ThreadIdXOp::create(b, loc, w->i32);
  if (phases.size() > 1)
    return p.anchor->emitOpError("uses a reduction inside the reduction it "
                                 "feeds; one GPU reduction kernel cannot");
  ArrayRef<Operation *> reds = phases.front();
  if (stage == Stage::Combine)
    return buildCombineKernel();
  if (kn == 1) {
    // Everything into one value: the blocks (one unless split) stride over
    // the whole domain, block b's thread t from group b * threads + t.
    k = ic(0);
    rowBase = ic(0);
    Value bid = slices > 1 ? NVVM::BlockIdXOp::create(b, loc, w->i32).getResult()
                           : Value();
    Value first = slices > 1 ? w->add(w->muli(bid, block[0]), tx) : tx;
    FailureOr<SmallVector<Value>> partials =
        pass(reds, /*stores=*/true, toIt(first), ic(rn / vec),
             ic(int64_t(block[0]) * slices));
    if (failed(partials))
      return failure();
    SmallVector<Value> vals;
    for (auto [i, v] : llvm::enumerate(*partials))
      vals.push_back(warpReduce(*redKind(reds[i]), v));
    if (block[0] > 32)
      vals = blockCombine(reds, vals, 0, block[0] / 32, w->shri(tx, 5),
                          w->andi(tx, 31));
    Value isFirst = w->icmp(LLVM::ICmpPredicate::eq, tx, w->i32c(0));
    if (slices > 1) {
      storePartials(vals, isFirst, bid);
      return success();
    }
    for (auto [i, v] : llvm::enumerate(vals))
      reduced[reds[i]] = finishReduction(reds[i], v);
    return storeRowResults(isFirst, Sync::Block);
  }
  // 32 consecutive outputs per block along x, Y threads along the reduced
  // range per output (of slice blockIdx.y when split).
  Value ty = NVVM::ThreadIdYOp::create(b, loc, w->i32);
  Value bid = NVVM::BlockIdXOp::create(b, loc, w->i32);
  Value raw = toIt(w->add(w->muli(bid, 32), tx));
  Value valid = w->ult(raw, ic(kn));
  // Past the last output a thread reads output kn - 1 (in bounds) and
  // stores nothing.
  k = LLVM::UMinOp::create(b, loc, raw, ic(kn - 1));
  int64_t y = block[1];
  Value slice = slices > 1 ? NVVM::BlockIdYOp::create(b, loc, w->i32).getResult()
                           : Value();
  Value ub = w->select(valid, ic(rn), ic(0));
  FailureOr<SmallVector<Value>> partials =
      pass(reds, /*stores=*/true,
           toIt(slices > 1 ? w->add(w->muli(slice, y), ty) : ty), ub,
           ic(y * slices));
  if (failed(partials))
    return failure();
  SmallVector<Value> vals(*partials);
  if (y > 1) {
    for (auto [i, v] : llvm::enumerate(vals))
      LLVM::StoreOp::create(
          b, loc, v,
          sharedSlot(int64_t(i) * y * 32 * 8, w->add(w->muli(ty, 32), tx)), 8);
    NVVM::Barrier0Op::create(b, loc);
    for (auto [i, v] : llvm::enumerate(vals)) {
      Value acc;
      for (int64_t q = 0; q < y; ++q) {
        Value x = LLVM::LoadOp::create(
            b, loc, v.getType(),
            sharedSlot(int64_t(i) * y * 32 * 8, w->addi(tx, q * 32)), 8);
        acc = acc ? combine(*redKind(reds[i]), acc, x) : x;
      }
      vals[i] = acc;
    }
  }
  Value first = w->and_(valid, w->icmp(LLVM::ICmpPredicate::eq, ty, w->i32c(0)));
  if (slices > 1) {
    storePartials(vals, first, slice);
    return success();
  }
  for (auto [i, v] : llvm::enumerate(vals))
    reduced[reds[i]] = finishReduction(reds[i], v);
  // The barrier above (or the single y thread) already orders every read of
  // the outputs' inputs before the stores.
  return storeRowResults(first, Sync::None);
}

/// Blocks a split reduction aims for: two per SM of the H200 (132 SMs),
/// enough to keep every SM streaming while a block's partial stays a few
/// hundred cycles of its own work.
constexpr int64_t kTargetBlocks = 264;
/// Loop iterations (groups of `vec` elements) a thread of a split
/// reduction runs at least: below that the second launch costs more than
/// the parallelism gains.
constexpr int64_t kMinGroupsPerThread = 16;
/// Most slices of a column-sum split (the combine kernel adds them in an
/// unrolled chain per output).
constexpr int64_t kMaxColumnSlices = 32;

/// The launch geometry of the kernel `stage` builds (and `slices`): every
/// stage computes the same split from the shapes alone.
void ReductionLowering::geometry(bool rowKernel) {
  // Four neighbours a thread in row-major passes (16 bytes of f32): rows
  // that split evenly and give every lane of a warp some.
  if (rowMajor && rn % 4 == 0 && rn >= 128)
    vec = 4;
  if (rowKernel && rowBlocks > 1) {
    // A row split over blocks (SimtReductionRows.cpp): blocks (slice, row).
    if (stage == Stage::Whole)
      stage = Stage::RowPartial;
    bool anyFull = llvm::any_of(llvm::seq<unsigned>(0, p.results.size()),
                                [&](unsigned i) { return isFull(i); });
    bool wide = stage == Stage::RowPartial || anyFull;
    block = {256, 1, 1};
    grid = {static_cast<uint32_t>(wide ? rowBlocks : 1),
            static_cast<uint32_t>(kn), 1};
    smemBytes = stage == Stage::RowPartial ? maxPerPhase * 32 * 8 : 0;
    return;
  }
  if (rowKernel) {
    if (rn <= 1024) {
      block = {128, 1, 1};
      grid = {static_cast<uint32_t>((kn + 3) / 4), 1, 1};
    } else {
      block = {256, 1, 1};
      grid = {static_cast<uint32_t>(kn), 1, 1};
      smemBytes = 2 * maxPerPhase * 32 * 8;
    }
    return;
  }
  if (kn == 1) {
    int64_t t = std::min<int64_t>(256, std::max<int64_t>(32, (rn + 31) / 32 * 32));
    block = {static_cast<uint32_t>(t), 1, 1};
    if (t > 32)
      smemBytes = maxPerPhase * 32 * 8;
    // Slices of t * kMinGroupsPerThread groups at least, at most t (the
    // combine kernel's block takes one slice a thread).
    slices = std::clamp<int64_t>(
        (rn / vec) / (t * kMinGroupsPerThread), 1, std::min(t, kTargetBlocks));
    grid = {static_cast<uint32_t>(slices), 1, 1};
  } else {
    // Partials stay within the 48 KiB of shared memory a launch gets
    // without opting in.
    int64_t y = 1;
    while (y < 16 && y * 16 < rn && 2 * y * maxPerPhase * 32 * 8 <= kSmemLimit)
      y *= 2;
    block = {32, static_cast<uint32_t>(y), 1};
    int64_t columnBlocks = (kn + 31) / 32;
    if (y > 1)
      smemBytes = maxPerPhase * y * 32 * 8;
    // Split the reduced range while the column blocks alone leave SMs idle
    // and each thread keeps kMinGroupsPerThread elements or more.
    slices = std::clamp<int64_t>(
        std::min(rn / (y * kMinGroupsPerThread),
                 (kTargetBlocks + columnBlocks - 1) / columnBlocks),
        1, kMaxColumnSlices);
    grid = {static_cast<uint32_t>(columnBlocks), static_cast<uint32_t>(slices),
            1};
  }
  if (slices > 1 && stage == Stage::Whole)
    stage = Stage::Partial;
  if (stage != Stage::Combine)
    return;
  if (kn == 1) {
    int64_t t = (slices + 31) / 32 * 32;
    block = {static_cast<uint32_t>(t), 1, 1};
    grid = {1, 1, 1};
    smemBytes = t > 32 ? maxPerPhase * 32 * 8 : 0;
  } else {
    block = {256, 1, 1};
    grid = {static_cast<uint32_t>((kn + 255) / 256), 1, 1};
    smemBytes = 0;
  }
}

FailureOr<std::vector<KernelLaunch>> ReductionLowering::run(bool rowKernel) {
  rowRequested = rowKernel;
  if (failed(analyze()))
    return failure();
  // The row kernel needs trailing reduced axes. An element of the domain
  // is at k * rn + j when the kept axes lead: the row kernel's, and a
  // reduction over everything (k = 0).
  rowKernel = rowKernel && trailing;
  rowMajor = rowKernel || kn == 1;
  if (failed(checkPlan()))
    return failure();
  if (rowKernel && failed(readRowBlocks()))
    return failure();
  std::vector<KernelLaunch> none;
  if (kn == 0)
    return none; // nothing to write
  geometry(rowKernel);
  if (smemBytes > kSmemLimit)
    return p.anchor->emitOpError("has ")
           << maxPerPhase << " independent reductions, more partials than "
           << "the GPU reduction kernel keeps in 48 KiB of shared memory";
  if (kn > std::numeric_limits<int32_t>::max())
    return p.anchor->emitOpError("has ")
           << kn << " outputs per reduction, more than one GPU grid holds";

  std::string prefix = stage == Stage::RowPartial ? "tg_rowp" + std::to_string(rowPhase)
                       : stage == Stage::RowFinal ? "tg_rowc"
                       : rowKernel                ? "tg_rowred"
                       : stage == Stage::Whole    ? "tg_red"
                       : stage == Stage::Partial  ? "tg_redp"
                                                  : "tg_redc";
  std::string sym = kernelSymbol(p.anchor, prefix, target);
  KernelLaunch launch;
  launch.symbol = sym;
  launch.grid = grid;
  launch.block = block;
  launch.dynamicSharedBytes = smemBytes;
  for (unsigned i = 0; i < p.inputs.size(); ++i)
    launch.params.push_back({KernelParam::Kind::Operand, i});
  for (unsigned i = 0; i < p.results.size(); ++i)
    launch.params.push_back({KernelParam::Kind::Result, i});
  if (stage != Stage::Whole) {
    launch.params.push_back({KernelParam::Kind::Scratch, 0});
    launch.scratchBytes = launchScratchBytes();
  }
  if (!hasKernel(kernels, sym) && failed(emitKernel(sym, rowKernel)))
    return failure();
  std::vector<KernelLaunch> launches{launch};
  if (stage == Stage::Partial) {
    // The second launch folds what the first wrote (same op, same split).
    ReductionLowering combine(p, target, kernels);
    combine.stage = Stage::Combine;
    FailureOr<std::vector<KernelLaunch>> rest = combine.run(rowKernel);
    if (failed(rest))
      return failure();
    launches.insert(launches.end(), rest->begin(), rest->end());
  }
  if (stage == Stage::RowPartial) {
    // The next phase's statistics, or the outputs after the last.
    ReductionLowering next(p, target, kernels);
    next.rowPhase = rowPhase + 1;
    next.stage = next.rowPhase < phases.size() ? Stage::RowPartial
                                                : Stage::RowFinal;
    FailureOr<std::vector<KernelLaunch>> rest = next.run(rowKernel);
    if (failed(rest))
      return failure();
    launches.insert(launches.end(), rest->begin(), rest->end());
  }
  return launches;
}

/// Appends kernel `sym` (this stage's) to the kernels module.
LogicalResult ReductionLowering::emitKernel(const std::string &sym,
                                            bool rowKernel) {
  // The caller's context need not have the kernel dialects loaded yet.
  MLIRContext *ctx = kernels.getContext();
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  ctx->getOrLoadDialect<NVVM::NVVMDialect>();
  ctx->getOrLoadDialect<scf::SCFDialect>();
  Location loc = p.anchor->getLoc();
  OpBuilder mb = OpBuilder::atBlockEnd(kernels.getBody());
  if (smemBytes && !kernels.lookupSymbol("tg_smem"))
    // The dynamic shared array every generated kernel shares (as the GEMMs).
    LLVM::GlobalOp::create(mb, loc, LLVM::LLVMArrayType::get(mb.getI8Type(), 0),
                           /*isConstant=*/false, LLVM::Linkage::External,
                           "tg_smem", Attribute(), /*alignment=*/1024,
                           /*addrSpace=*/3);
  Type ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
  unsigned numParams = p.inputs.size() + p.results.size() +
                       (stage == Stage::Whole ? 0 : 1);
  auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                          SmallVector<Type>(numParams, ptr1));
  auto fn = LLVM::LLVMFuncOp::create(mb, loc, sym, fnTy);
  fn->setAttr("nvvm.kernel", mb.getUnitAttr());
  fn->setAttr("nvvm.maxntid", mb.getDenseI32ArrayAttr(
                                  {static_cast<int32_t>(block[0]),
                                   static_cast<int32_t>(block[1]), 1}));
  // Planned buffers are 256-byte aligned (tg-plan-memory) and the runtime's
  // allocations more; 16 is what the vector accesses need.
  for (unsigned i = 0; i < fnTy.getNumParams(); ++i)
    fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                  mb.getI64IntegerAttr(16));
  Block *entry = fn.addEntryBlock(mb);
  KernelBuilder kb(entry, loc);
  w = &kb;
  for (unsigned i = 0; i < p.inputs.size(); ++i)
    params[p.inputs[i]] = entry->getArgument(i);
  for (unsigned i = 0; i < p.results.size(); ++i)
    resultParams[p.results[i]] = entry->getArgument(p.inputs.size() + i);
  if (stage != Stage::Whole)
    scratch = entry->getArgument(numParams - 1);
  if (smemBytes)
    smem = LLVM::AddressOfOp::create(kb.b, loc, kb.ptr3, "tg_smem");
  LogicalResult built = stage == Stage::RowPartial || stage == Stage::RowFinal
                            ? buildSplitRowKernel()
                        : rowKernel ? buildRowKernel()
                                    : buildReductionKernel();
  w = nullptr;
  if (failed(built)) {
    fn.erase();
    return failure();
  }
  kb.b.setInsertionPointToEnd(entry);
  LLVM::ReturnOp::create(kb.b, loc, ValueRange{});
  return success();
}

} // namespace reduction

bool isReductionKernelOp(Operation *op) {
  if (auto f = dyn_cast<tgd::FusedOp>(op))
    return f.getKind() == tgd::KernelKind::row_reduction ||
           f.getKind() == tgd::KernelKind::reduction;
  return redKind(op).has_value();
}

Program reduction::programOf(Operation *op, bool &row) {
  Program p;
  p.anchor = op;
  if (auto f = dyn_cast<tgd::FusedOp>(op)) {
    Block &body = f.getBodyBlock();
    p.inputs.assign(body.args_begin(), body.args_end());
    for (Operation &inner : body.without_terminator())
      p.ops.push_back(&inner);
    p.results.assign(body.getTerminator()->operand_begin(),
                     body.getTerminator()->operand_end());
    row = f.getKind() == tgd::KernelKind::row_reduction;
  } else {
    p.inputs.assign(op->operand_begin(), op->operand_end());
    p.ops.push_back(op);
    p.results.assign(op->result_begin(), op->result_end());
    row = true; // when its axes are the trailing ones
  }
  return p;
}

FailureOr<std::vector<KernelLaunch>>
lowerReductionKernels(Operation *op, Target t, ModuleOp kernels) {
  bool row;
  Program p = programOf(op, row);
  // A group result must be computed in the group (tg.fused's verifier), so
  // every result has its own parameter.
  for (Value r : p.results)
    if (llvm::is_contained(p.inputs, r))
      return op->emitOpError("yields an operand unchanged; the GPU reduction "
                             "kernel needs computed results");
  return ReductionLowering(p, t, kernels).run(row);
}

} // namespace tg::nvptx::detail
