//===- PlanScratch.cpp - op scratch into the arena --------------*- C++ -*-===//
//
// The tg-plan-scratch pass: after bufferization, the buffers a planned
// function still allocates are the scratch of single ops' lowerings (a
// convolution's padded input, a pooling gradient's argmax indices, a
// pooling window's shape operand). Their lifetimes are short and known, so
// they are planned like the graph's values: liveness over the function's
// ops (in pre-order, a loop counting as all of its body), best-fit offsets
// (tg::assignOffsets, 256-byte aligned) in a scratch region appended to the
// arena, and each `memref.alloc` becomes a `memref.view` of it. The arena
// argument grows by the scratch region; the module attribute
// `tg.arena_bytes` records each function's final arena size for the
// artifact writer. A buffer that escapes (returned, yielded, passed to a
// call) stays on the heap, where the artifact's allocator counts it.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "passes/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

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
    std::vector<tg::Buffer> buffers;
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
      buf.start = pos[alloc];
      buf.end = end;
      buf.kind = tg::BufferKind::Workspace;
      buffers.push_back(buf);
      allocs.push_back(alloc);
    });
    if (allocs.empty())
      return base;
    int64_t scratch = tg::assignOffsets(buffers, 256);
    int64_t start = (base + 255) / 256 * 256;
    int64_t total = start + scratch;

    // The arena grows; its uses (views) keep their result types.
    auto grown = MemRefType::get({total}, arenaType.getElementType());
    arena.setType(grown);
    SmallVector<Type> inputs(fn.getArgumentTypes());
    inputs[arena.getArgNumber()] = grown;
    fn.setType(FunctionType::get(&getContext(), inputs, fn.getResultTypes()));

    for (auto [alloc, buf] : llvm::zip(allocs, buffers)) {
      OpBuilder b(alloc);
      Value shift =
          arith::ConstantIndexOp::create(b, alloc.getLoc(), start + buf.offset);
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

int64_t mlir::tg::cpu::loweredArenaBytes(ModuleOp lowered, StringRef function) {
  auto sizes = lowered->getAttrOfType<DictionaryAttr>(kArenaBytesAttr);
  auto size = sizes ? sizes.getAs<IntegerAttr>(function) : IntegerAttr();
  return size ? size.getInt() : 0;
}
