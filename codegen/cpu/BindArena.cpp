//===- BindArena.cpp - planned values into one arena ------------*- C++ -*-===//
//
// The tg-bind-arena pass: makes the code of a planned function (one that
// tg-plan-memory annotated) use the plan. The function gets one more
// argument, `memref<N x i8>` with N the plan's transient bytes, and every
// planned value is materialised in its slice of it:
//
//   %v = memref.view %arena[%offset][] : memref<Nxi8> to memref<4x3xf32>
//   %d = bufferization.to_tensor %v restrict writable : ... to tensor<4x3xf32>
//   %x = tg.add ...                                  {tg.offset = ...}
//   %r = bufferization.materialize_in_destination %x in %d : ...
//
// with every other use of %x replaced by %r. The view is placed before the
// producer, so that empty-tensor elimination can make the producer write
// into the arena directly (no copy); where it cannot (a reshape, a slice),
// bufferization copies into the planned place. A reshape that the plan
// placed where its operand is (a view: the same tg.offset or tg.alias_arg)
// is not bound: its lowering, a collapse/expand of the operand's
// materialised value, bufferizes to a memref view of the same bytes. A
// value that the plan keeps in an argument's storage (tg.alias_arg, an
// updated parameter) is materialised in that argument, which becomes
// writable. The loop of
// gradient accumulation keeps each carried value in its result's planned
// place: the initial value is copied there, and each iteration's next value
// is materialised over the current one.
//
// The plan, not bufferization, guarantees that simultaneously live values
// never share bytes; `restrict` states exactly that to the analysis.
//
// An op's own scratch (tg.scratch bytes at tg.scratch_offset, planned at
// the op's moment) is no value to bind: the op and every op nested in it
// get the place in their location (withScratchPlace), which the buffers of
// their lowering inherit, and tg-plan-scratch puts those buffers there.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_BINDARENAPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// The transient bytes of a planned function, or nullopt if it has no plan.
std::optional<int64_t> arenaBytes(func::FuncOp fn) {
  tg::MemoryPlanAttr memory = tg::getMemoryPlan(fn);
  if (!memory)
    return std::nullopt;
  return memory.getTransientBytes();
}

class Binder {
public:
  Binder(func::FuncOp fn, Value arena) : fn(fn), arena(arena) {}

  /// A fresh tensor over the arena's bytes [offset, offset + size of type).
  FailureOr<Value> slot(OpBuilder &b, Location loc, Type type, int64_t offset) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return failure();
    auto arenaType = cast<MemRefType>(arena.getType());
    int64_t bytes = tensor.getNumElements() *
                    std::max<int64_t>(1, tensor.getElementTypeBitWidth() / 8);
    if (offset < 0 || offset + bytes > arenaType.getDimSize(0))
      return failure();
    auto memrefType =
        MemRefType::get(tensor.getShape(), tensor.getElementType());
    Value shift = arith::ConstantIndexOp::create(b, loc, offset);
    Value view =
        memref::ViewOp::create(b, loc, memrefType, arena, shift, ValueRange{});
    return bufferization::ToTensorOp::create(b, loc, tensor, view,
                                             /*restrict=*/true,
                                             /*writable=*/true)
        .getResult();
  }

  /// Materialises `value` in `dest` right after its producer; every other
  /// use reads the materialised value.
  void materialize(Value value, Value dest) {
    OpBuilder b(fn.getContext());
    b.setInsertionPointAfterValue(value);
    auto m = bufferization::MaterializeInDestinationOp::create(
        b, value.getLoc(), value, dest);
    value.replaceAllUsesExcept(m.getResult(), m);
  }

  LogicalResult bindValue(Operation *op, Value result, int64_t offset) {
    OpBuilder b(op);
    FailureOr<Value> dest = slot(b, op->getLoc(), result.getType(), offset);
    if (failed(dest))
      return op->emitError() << "tg-bind-arena: planned offset " << offset
                             << " does not fit the arena";
    materialize(result, *dest);
    return success();
  }
  /// scf.for carrying accumulators: each carried value lives in its
  /// result's planned slot for the whole loop.
  LogicalResult bindLoop(scf::ForOp loop, ArrayRef<int64_t> offsets) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [i, result] : llvm::enumerate(loop.getResults())) {
      int64_t offset = i < offsets.size() ? offsets[i] : -1;
      if (offset < 0 || !isa<RankedTensorType>(result.getType()))
        continue;
      OpBuilder b(loop);
      FailureOr<Value> init = slot(b, loop.getLoc(), result.getType(), offset);
      if (failed(init))
        return loop.emitError() << "tg-bind-arena: planned offset " << offset
                                << " does not fit the arena";
      OpOperand &initOperand = loop.getInitArgsMutable()[i];
      initOperand.set(bufferization::MaterializeInDestinationOp::create(
                          b, loop.getLoc(), initOperand.get(), *init)
                          .getResult());
      // The next value goes where the current one is (its last read comes
      // before the yield), so the carried buffer is the same in every
      // iteration and bufferization needs no ownership bookkeeping.
      b.setInsertionPoint(yield);
      OpOperand &yielded = yield->getOpOperand(i);
      yielded.set(bufferization::MaterializeInDestinationOp::create(
                      b, loop.getLoc(), yielded.get(),
                      loop.getRegionIterArgs()[i])
                      .getResult());
    }
    return success();
  }

  LogicalResult bindAlias(Operation *op, Value result, int64_t argIndex) {
    if (argIndex < 0 || argIndex >= fn.getNumArguments() ||
        fn.getArgument(argIndex).getType() != result.getType())
      return op->emitError() << "tg-bind-arena: tg.alias_arg " << argIndex
                             << " names no argument of this type";
    fn.setArgAttr(argIndex,
                  bufferization::BufferizationDialect::kWritableAttrName,
                  BoolAttr::get(fn.getContext(), true));
    materialize(result, fn.getArgument(argIndex));
    return success();
  }
  /// Where the plan keeps result `i` of `op`: {argument, -1} for a
  /// tg.alias_arg(s), {-1, offset} for a tg.offset(s), {-1, -1} for none.
  /// One result (tg.offset / tg.alias_arg) or several, a fusion group's
  /// (tg.offsets / tg.alias_args, -1 where a result has none).
  std::pair<int64_t, int64_t> placeOf(Operation *op, unsigned i) {
    tg::TGDialect &tgd = tg::dialect(fn.getContext());
    int64_t alias = -1, offset = -1;
    if (op->getNumResults() == 1) {
      if (auto a = tgd.getAliasArgAttrHelper().getAttr(op))
        alias = a.getInt();
      if (auto o = tgd.getOffsetAttrHelper().getAttr(op))
        offset = o.getInt();
    } else {
      auto aliases = tgd.getAliasArgsAttrHelper().getAttr(op);
      auto offsets = tgd.getOffsetsAttrHelper().getAttr(op);
      if (aliases && static_cast<int64_t>(i) < aliases.size())
        alias = aliases[i];
      if (offsets && static_cast<int64_t>(i) < offsets.size())
        offset = offsets[i];
    }
    return alias >= 0 ? std::make_pair(alias, int64_t(-1))
                      : std::make_pair(int64_t(-1), offset);
  }

  /// True for a reshape planned in its operand's place: a view.
  bool isView(Operation *op) {
    auto reshape = dyn_cast<tg::ReshapeOp>(op);
    if (!reshape)
      return false;
    auto operand = dyn_cast<OpResult>(reshape.getInput());
    if (!operand)
      return false;
    auto mine = placeOf(op, 0);
    return mine != std::make_pair(int64_t(-1), int64_t(-1)) &&
           mine == placeOf(operand.getOwner(), operand.getResultNumber());
  }

  LogicalResult run() {
    tg::TGDialect &tgd = tg::dialect(fn.getContext());
    auto offsetAttr = tgd.getOffsetAttrHelper();
    auto offsetsAttr = tgd.getOffsetsAttrHelper();
    auto aliasAttr = tgd.getAliasArgAttrHelper();
    auto aliasesAttr = tgd.getAliasArgsAttrHelper();
    SmallVector<Operation *> planned;
    fn.walk([&](Operation *op) {
      if ((offsetAttr.isAttrPresent(op) || offsetsAttr.isAttrPresent(op) ||
           aliasAttr.isAttrPresent(op) || aliasesAttr.isAttrPresent(op)) &&
          !isView(op))
        planned.push_back(op);
    });
    fn.walk([&](Operation *op) {
      IntegerAttr offset = tg::getScratchOffset(op);
      IntegerAttr bytes = tg::getScratchBytes(op);
      if (!arena || !offset || !bytes)
        return;
      tg::cpu::ScratchPlace place{offset.getInt(), bytes.getInt()};
      op->walk([&](Operation *inner) {
        inner->setLoc(tg::cpu::withScratchPlace(inner->getLoc(), place));
      });
    });
    for (Operation *op : planned) {
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        SmallVector<int64_t> offsets;
        if (auto offs = offsetsAttr.getAttr(op))
          offsets.assign(offs.asArrayRef().begin(), offs.asArrayRef().end());
        else if (auto off = offsetAttr.getAttr(op))
          offsets.push_back(off.getInt());
        if (failed(bindLoop(loop, offsets)))
          return failure();
        continue;
      }
      for (auto [i, result] : llvm::enumerate(op->getResults())) {
        if (!isa<RankedTensorType>(result.getType()))
          continue;
        auto [alias, offset] = placeOf(op, i);
        if (alias >= 0) {
          if (failed(bindAlias(op, result, alias)))
            return failure();
        } else if (offset >= 0 && arena &&
                   failed(bindValue(op, result, offset))) {
          return failure();
        }
      }
    }
    return success();
  }

private:
  func::FuncOp fn;
  Value arena;
};

struct BindArenaPass final
    : tg::cpu::impl::BindArenaPassBase<BindArenaPass> {
  using Base::Base;
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      std::optional<int64_t> bytes = arenaBytes(fn);
      if (!bytes || fn.isDeclaration())
        continue;
      Value arena;
      if (*bytes > 0) {
        auto type = MemRefType::get({*bytes}, IntegerType::get(&getContext(), 8));
        unsigned index = fn.getNumArguments();
        auto marker = NamedAttribute(
            StringAttr::get(&getContext(), tg::cpu::kArenaArgAttr),
            UnitAttr::get(&getContext()));
        if (failed(fn.insertArgument(
                index, type, DictionaryAttr::get(&getContext(), {marker}),
                fn.getLoc())))
          return signalPassFailure();
        arena = fn.getArgument(index);
      }
      if (failed(Binder(fn, arena).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
