//===- PlanScratch.cpp - op scratch into the arena --------------*- C++ -*-===//
//
// The tg-plan-scratch pass: after bufferization, the buffers a planned
// function still allocates are the scratch of single ops' lowerings (a
// convolution's padded input, a pooling gradient's argmax indices, the f32
// accumulator of a bf16 contraction, a row-tiled group's row temporaries).
// tg-plan-memory has given each op that tg-size-scratch sized its own
// bytes of the arena at its moment of the schedule (tg.scratch_offset),
// and tg-bind-arena put offset and bytes into the location of everything
// the op lowers to, so each buffer's location says whose it is. The
// buffers of one op are planned among themselves: liveness over the
// function's ops (in pre-order, a loop counting as all of its body),
// best-fit offsets (tg::assignOffsets, 256-byte aligned), placed at the
// op's offset when they fit its bytes. Buffers of no sized op, or more
// than their op was sized for, are planned alike into a region appended
// to the arena, which grows by it. Each `memref.alloc` becomes a
// `memref.view` of the arena; the module attribute `tg.arena_bytes`
// records each function's final arena size for the artifact writer. A
// buffer that escapes (returned, yielded, passed to a call) stays on the
// heap, where the artifact's allocator counts it. A buffer allocated inside
// a slot loop (tg_cpu.slots = S: a convolution's blocks of images, whose
// iterations may run on threads) is planned S times over, and each
// iteration views its own slot (offset + iteration x slot bytes), so the
// plan, and tg-size-scratch's measure of an op's scratch, count every slot.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "dialects/TGDialect.h"
#include "passes/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <map>

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_PLANSCRATCHPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// The function's arena argument (tg-bind-arena marks it), or null.
BlockArgument arenaOf(func::FuncOp fn) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, tg::cpu::kArenaArgAttr))
      return fn.getArgument(i);
  return nullptr;
}

struct PlanScratchPass final
    : tg::cpu::impl::PlanScratchPassBase<PlanScratchPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    NamedAttrList sizes;
    if (auto old = module->getAttrOfType<DictionaryAttr>(tg::cpu::kArenaBytesAttr))
      sizes.append(old.getValue());
    for (auto fn : module.getOps<func::FuncOp>()) {
      BlockArgument arena = arenaOf(fn);
      if (!arena)
        continue;
      FailureOr<int64_t> size = planFunction(fn, arena);
      if (failed(size))
        return signalPassFailure();
      sizes.set(fn.getName(),
                IntegerAttr::get(IntegerType::get(&getContext(), 64), *size));
    }
    if (!sizes.empty())
      module->setAttr(tg::cpu::kArenaBytesAttr,
                      sizes.getDictionary(&getContext()));
  }

  /// Plans `fn`'s allocations into its arena; returns the new arena size.
  FailureOr<int64_t> planFunction(func::FuncOp fn, BlockArgument arena) {
    auto arenaType = cast<MemRefType>(arena.getType());
    int64_t base = arenaType.getDimSize(0);
    // Pre-order positions; an op's subtree ends at `last[op]`.
    DenseMap<Operation *, int64_t> pos, last;
    int64_t counter = 0;
    std::function<void(Operation *)> number = [&](Operation *op) {
      pos[op] = counter++;
      for (Region &r : op->getRegions())
        for (Block &b : r)
          for (Operation &inner : b)
            number(&inner);
      last[op] = counter - 1;
    };
    for (Operation &op : fn.getBody().front())
      number(&op);

    SmallVector<memref::AllocOp> allocs;
    // The slot loop around each allocation (if any) and one slot's bytes.
    SmallVector<std::pair<scf::ForOp, int64_t>> slotted;
    std::vector<tg::Buffer> buffers;
    // Where the plan put each buffer's op's scratch, if it did.
    SmallVector<std::optional<tg::cpu::ScratchPlace>> places;
    fn.walk([&](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          type.getMemorySpace())
        return;
      // Every use, through views; the interval ends at the end of the
      // user's ancestor in the alloc's block (a loop: all of its body).
      Block *block = alloc->getBlock();
      int64_t end = pos[alloc];
      bool escapes = false;
      // The place is the op's only while nothing but that op's code (the
      // same place in its location) touches the buffer: the plan left the
      // bytes free at that op's moment, not at another's.
      std::optional<tg::cpu::ScratchPlace> place =
          tg::cpu::scratchPlaceOf(alloc.getLoc());
      SmallVector<Value> worklist{alloc.getResult()};
      while (!worklist.empty() && !escapes) {
        Value v = worklist.pop_back_val();
        for (Operation *user : v.getUsers()) {
          if (isa<memref::DeallocOp>(user))
            continue; // erased with the allocation
          if (isa<func::ReturnOp, func::CallOp, scf::YieldOp>(user)) {
            escapes = true;
            break;
          }
          if (isa<ViewLikeOpInterface, memref::ExpandShapeOp,
                  memref::CollapseShapeOp, memref::CastOp,
                  memref::ReinterpretCastOp>(user) &&
              user->getNumOperands() > 0 && user->getOperand(0) == v)
            for (Value r : user->getResults())
              worklist.push_back(r);
          if (place) {
            std::optional<tg::cpu::ScratchPlace> other =
                tg::cpu::scratchPlaceOf(user->getLoc());
            if (!other || other->offset != place->offset)
              place.reset();
          }
          Operation *anc = block->findAncestorOpInBlock(*user);
          if (!anc) {
            escapes = true;
            break;
          }
          end = std::max(end, last[anc]);
        }
      }
      if (escapes)
        return;
      tg::Buffer buf;
      int64_t elt = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
      buf.bytes = type.getNumElements() * elt;
      std::pair<scf::ForOp, int64_t> slot{nullptr, 0};
      for (auto loop = alloc->getParentOfType<scf::ForOp>(); loop;
           loop = loop->getParentOfType<scf::ForOp>())
        if (auto slots = loop->getAttrOfType<IntegerAttr>(tg::cpu::kSlotsAttr);
            slots && slots.getInt() > 1) {
          slot = {loop, llvm::alignTo(buf.bytes, 256)};
          buf.bytes = slot.second * slots.getInt();
          break;
        }
      slotted.push_back(slot);
      buf.start = pos[alloc];
      buf.end = end;
      // A slot buffer lives as long as its slot loop: iterations run on
      // threads at once, so two buffers that one iteration uses one after
      // the other are live together in two iterations (sharing bytes, one
      // slot of the first would overlap another slot of the second).
      if (slot.first) {
        buf.start = pos[slot.first];
        buf.end = last[slot.first];
      }
      buf.kind = tg::BufferKind::Workspace;
      buffers.push_back(buf);
      allocs.push_back(alloc);
      places.push_back(place);
    });
    if (allocs.empty())
      return base;
    // The buffers of each sized op, by its scratch offset (ops placed at
    // one offset run at different moments, so their buffers never live
    // together and are packed as one set, each op's as it would be alone).
    std::map<int64_t, SmallVector<size_t>> byOp;
    SmallVector<size_t> above;
    for (auto [i, place] : llvm::enumerate(places)) {
      if (place)
        byOp[place->offset].push_back(i);
      else
        above.push_back(i);
    }
    SmallVector<int64_t> at(allocs.size(), -1); // final arena offsets
    for (auto &[offset, ids] : byOp) {
      std::vector<tg::Buffer> group;
      for (size_t i : ids)
        group.push_back(buffers[i]);
      tg::assignOffsets(group, 256);
      bool fits = true;
      for (auto [i, buf] : llvm::zip(ids, group))
        fits &= buf.offset + buf.bytes <= places[i]->bytes &&
                offset + places[i]->bytes <= base;
      if (!fits) {
        llvm::append_range(above, ids);
        continue;
      }
      for (auto [i, buf] : llvm::zip(ids, group))
        at[i] = offset + buf.offset;
    }
    int64_t total = base;
    if (!above.empty()) {
      std::vector<tg::Buffer> rest;
      for (size_t i : above)
        rest.push_back(buffers[i]);
      int64_t scratch = tg::assignOffsets(rest, 256);
      int64_t start = (base + 255) / 256 * 256;
      for (auto [i, buf] : llvm::zip(above, rest))
        at[i] = start + buf.offset;
      total = start + scratch;
    }

    // The arena grows (if anything went above the plan); its uses (views)
    // keep their result types.
    auto grown = MemRefType::get({total}, arenaType.getElementType());
    arena.setType(grown);
    SmallVector<Type> inputs(fn.getArgumentTypes());
    inputs[arena.getArgNumber()] = grown;
    fn.setType(FunctionType::get(&getContext(), inputs, fn.getResultTypes()));

    for (auto [alloc, offset, slot] : llvm::zip(allocs, at, slotted)) {
      OpBuilder b(alloc);
      Value shift = arith::ConstantIndexOp::create(b, alloc.getLoc(), offset);
      if (auto [loop, bytes] = slot; loop)
        shift = arith::AddIOp::create(
            b, alloc.getLoc(), shift,
            arith::MulIOp::create(
                b, alloc.getLoc(), loop.getInductionVar(),
                arith::ConstantIndexOp::create(b, alloc.getLoc(), bytes)));
      Value view = memref::ViewOp::create(b, alloc.getLoc(), alloc.getType(),
                                          arena, shift, ValueRange{});
      SmallVector<Operation *> deallocs;
      for (Operation *user : alloc->getUsers())
        if (isa<memref::DeallocOp>(user))
          deallocs.push_back(user);
      for (Operation *d : deallocs)
        d->erase();
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    }
    return total;
  }
};

} // namespace

Location mlir::tg::cpu::withScratchPlace(Location loc, ScratchPlace place) {
  MLIRContext *ctx = loc.getContext();
  Builder b(ctx);
  auto metadata = b.getDictionaryAttr(
      {b.getNamedAttr(tg::attr::scratchOffset,
                      b.getI64IntegerAttr(place.offset)),
       b.getNamedAttr(tg::attr::scratch, b.getI64IntegerAttr(place.bytes))});
  return FusedLoc::get(ctx, {loc}, metadata);
}

std::optional<tg::cpu::ScratchPlace>
mlir::tg::cpu::scratchPlaceOf(Location loc) {
  // A location fused from the ops of two places (a fold of both) is no
  // one op's: no place.
  std::optional<ScratchPlace> found;
  bool ambiguous = false;
  loc->walk([&](Location inner) {
    auto fused = dyn_cast<FusedLoc>(inner);
    auto dict = fused ? dyn_cast_if_present<DictionaryAttr>(fused.getMetadata())
                      : DictionaryAttr();
    auto offset =
        dict ? dict.getAs<IntegerAttr>(tg::attr::scratchOffset) : IntegerAttr();
    auto bytes =
        dict ? dict.getAs<IntegerAttr>(tg::attr::scratch) : IntegerAttr();
    if (!offset || !bytes)
      return WalkResult::advance();
    if (found && found->offset != offset.getInt())
      ambiguous = true;
    found = ScratchPlace{offset.getInt(), bytes.getInt()};
    return WalkResult::advance();
  });
  return ambiguous ? std::nullopt : found;
}

int64_t mlir::tg::cpu::loweredArenaBytes(ModuleOp lowered, StringRef function) {
  auto sizes = lowered->getAttrOfType<DictionaryAttr>(kArenaBytesAttr);
  auto size = sizes ? sizes.getAs<IntegerAttr>(function) : IntegerAttr();
  return size ? size.getInt() : 0;
}
