//===- ScheduleHoist.cpp - hoist shrinking ops in a schedule ----*- C++ -*-===//
//
// A list scheduler that takes, at each step, the ready op adding the fewest
// live bytes has no lookahead, and the bottom-up mirror of it places a
// reduction as late as its readers allow: a layer norm's scale gradient
// (the sum over rows of an x-sized product) then runs at the end of the
// backward pass and keeps its x-sized input alive through it. This pass
// over a finished schedule moves every op that frees at least what it
// allocates up to the earliest point where it still frees it: right after
// its operands are defined and the other readers of the values it kills
// have run. Over the stretch it moves across, the killed values no longer
// live and its results (no larger) do, so that stretch holds less; at its
// new place the op's results join what is live there, which can exceed
// what any step held before by up to their size, so the planner keeps
// the smaller of its two hoisted schedules as before (docs/memory.md).
//
//===----------------------------------------------------------------------===//

#include "passes/ScheduleHoist.h"
#include "passes/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <map>

using namespace mlir;

namespace {
/// The top-level op of `block` that contains `op`, or null.
Operation *inBlock(Operation *op, Block &block) {
  while (op && op->getBlock() != &block)
    op = op->getParentOp();
  return op;
}

/// True if `op` is a replay: marked `tg.recomputed`, or a fusion group whose
/// every op is (the constants it clones aside).
bool isReplay(Operation *op) {
  if (auto fused = dyn_cast<tg::FusedOp>(op))
    return llvm::all_of(fused.getBodyBlock().without_terminator(),
                        [](Operation &inner) {
                          return isa<tg::ConstantOp>(inner) ||
                                 inner.hasAttr(tg::attr::recomputed);
                        });
  return op->getNumRegions() == 0 && op->hasAttr(tg::attr::recomputed);
}
} // namespace

void mlir::tg::hoistShrinkingOps(Block &block) {
  // Position in the schedule as given, and the order key an op ends up
  // with: an op left in place has {pos}; a hoisted op (and what it pulls
  // along) its anchor's key followed by its own pos, so it runs right
  // after the anchor (and after ops hoisted to the same anchor earlier in
  // the schedule). Keys are
  // capped in length so a chain of hoists costs at most kMaxDepth per op.
  constexpr size_t kMaxDepth = 8;
  // Producers pulled along with one op: enough for a replay group and the
  // views between it and the op, few enough to keep the pass linear.
  constexpr size_t kMaxPulled = 6;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> pos;
  for (Operation &op : block.without_terminator()) {
    pos[&op] = ops.size();
    ops.push_back(&op);
  }
  std::vector<SmallVector<int64_t, 4>> key(ops.size());
  Operation *terminator = block.getTerminator();
  DenseSet<Value> returned(llvm::from_range, terminator->getOperands());
  // A fusion group is one kernel of pure ops (its body is isolated, so
  // its operands are all it reads): it moves like a single op. Other ops
  // with regions (the accumulation loop) stay. Unhoisted, the fused
  // forward loss (a row reduction of the logits to one value per row)
  // ran at the end of the backward pass and kept the logits alive
  // through it (2-layer GPT: 2 MiB).
  auto movable = [](Operation *op) {
    return (!op->getNumRegions() || isa<FusedOp>(op)) &&
           isMemoryEffectFree(op);
  };
  // The producers that can move with `op`: views (reshapes) and replays
  // whose results only `op` and the other pulled ops read. A weight
  // gradient's operand is often such a replay (the tied head's reads the
  // replayed final layer norm's output through a view): on its own the
  // replay frees nothing, so no schedule ran it early, and the product,
  // the last reader of the logits' gradient, waited for it at the end of
  // the backward pass (2-layer GPT: 2 MiB live across the backward pass).
  auto pullable = [&](Operation *op) {
    SmallVector<Operation *> pulled;
    DenseSet<Operation *> group{op};
    for (size_t next = 0; next <= pulled.size(); ++next) {
      Operation *member = next ? pulled[next - 1] : op;
      for (Value v : member->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || def->getBlock() != &block || group.contains(def) ||
            !movable(def) || !(isa<ReshapeOp>(def) || isReplay(def)) ||
            pulled.size() == kMaxPulled)
          continue;
        if (llvm::all_of(def->getUsers(), [&](Operation *user) {
              return group.contains(inBlock(user, block));
            })) {
          group.insert(def);
          pulled.push_back(def);
        }
      }
    }
    return pulled;
  };
  bool moved = false;
  // Moves op `i`, with `pulled`, up to right after the last of the
  // group's outside producers and of the other readers of what it frees,
  // if it frees at least what `i` writes.
  auto hoist = [&](int64_t i, SmallVector<Operation *> pulled) {
    Operation *op = ops[i];
    int64_t results = 0;
    for (Value r : op->getResults())
      results += tensorBytes(r.getType());
    for (;;) {
      DenseSet<Operation *> group(llvm::from_range, pulled);
      group.insert(op);
      // What the group frees, and the ops that must stay before it.
      int64_t freed = 0;
      SmallVector<Operation *> deps;
      DenseSet<Value> seen;
      for (Operation *member : group)
        for (Value v : member->getOperands()) {
          Operation *def = inBlock(v.getDefiningOp(), block);
          if (group.contains(def) || !seen.insert(v).second)
            continue;
          if (def)
            deps.push_back(def);
          if (!def || returned.contains(v))
            continue; // arguments and results outlive the step
          bool last = true;
          SmallVector<Operation *> others;
          for (Operation *user : v.getUsers()) {
            Operation *reader = inBlock(user, block);
            if (!reader || group.contains(reader))
              continue;
            if (reader == terminator || pos.lookup(reader) > i) {
              last = false;
              break;
            }
            others.push_back(reader);
          }
          if (!last)
            continue;
          freed += tensorBytes(v.getType());
          deps.append(others);
        }
      if (results > freed || freed == 0 || deps.empty())
        return false;
      // The dependency that runs last in the order built so far.
      int64_t anchor = pos[deps.front()];
      for (Operation *d : deps)
        if (key[pos[d]] > key[anchor])
          anchor = pos[d];
      // A pulled op that runs before the anchor stays where it is (moved
      // down, it would keep what it reads alive longer) and becomes a
      // dependency: the tied head's replay ran early, and what it reads
      // is read again later.
      if (llvm::any_of(pulled, [&](Operation *p) {
            return key[pos[p]] < key[anchor];
          })) {
        llvm::erase_if(pulled, [&](Operation *p) {
          return key[pos[p]] < key[anchor];
        });
        continue;
      }
      if (key[anchor].size() >= kMaxDepth ||
          (pulled.empty() && anchor + 1 == i))
        return false;
      for (Operation *member : group) {
        int64_t at = pos[member];
        key[at] = key[anchor];
        key[at].push_back(at);
      }
      moved = true;
      return true;
    }
  };
  for (auto [i, op] : llvm::enumerate(ops)) {
    key[i] = {int64_t(i)};
    if (!movable(op))
      continue;
    SmallVector<Operation *> pulled = pullable(op);
    if (!hoist(i, pulled) && !pulled.empty())
      hoist(i, {});
  }
  if (!moved)
    return;
  SmallVector<int64_t> order(ops.size());
  for (auto [i, slot] : llvm::enumerate(order))
    slot = int64_t(i);
  // Keys are distinct: each ends with its own op's position.
  llvm::sort(order, [&](int64_t a, int64_t b) { return key[a] < key[b]; });
  for (int64_t i : order)
    ops[i]->moveBefore(terminator);
}

void mlir::tg::sinkReplays(Block &block) {
  // Each op has a label, its place in the order; a sunk op takes a label
  // between its first reader's and that reader's predecessor's. Replays
  // are taken last to first, so a chain of them lands in order before its
  // reader, and the labels of the ops after the current one are final.
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  DenseMap<Operation *, double> label;
  std::map<double, Operation *> at;
  for (auto [i, op] : llvm::enumerate(ops)) {
    label[op] = double(i);
    at[double(i)] = op;
  }
  Operation *terminator = block.getTerminator();
  // A view (reshape) of a replay's result that is its only reader goes
  // down with the replay: the replay's first reader is then the op that
  // reads the view, not the view placed right after it. The layer norms'
  // replayed `xh s + b` lived from their views to the weight gradients
  // that read them (2-layer GPT: 0.5 MiB less at the peak).
  auto replayViewed = [&](Operation *op) -> Operation * {
    if (!isa<ReshapeOp>(op))
      return nullptr;
    Operation *def = op->getOperand(0).getDefiningOp();
    if (!def || def->getBlock() != &block || !isReplay(def) ||
        !isMemoryEffectFree(def) || !op->getOperand(0).hasOneUse())
      return nullptr;
    return def;
  };
  bool moved = false;
  for (Operation *op : llvm::reverse(ops)) {
    Operation *source = replayViewed(op);
    if (!source && (!isReplay(op) || !isMemoryEffectFree(op)))
      continue;
    // The first reader in the order built so far.
    Operation *first = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *reader = inBlock(user, block);
      if (!reader || reader == terminator) {
        first = nullptr;
        break;
      }
      if (!first || label[reader] < label[first])
        first = reader;
    }
    if (!first)
      continue;
    double to = label[first];
    // Every value read must be read again at or after `first`: moving the
    // replay then extends no lifetime (the view's operand is the replay's
    // result, which moves too).
    bool keepsAlive = false;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || def == source || isa<tg::ConstantOp>(def))
        continue;
      keepsAlive |= llvm::none_of(v.getUsers(), [&](Operation *user) {
        Operation *reader = inBlock(user, block);
        return reader && reader != op &&
               (reader == terminator || label[reader] >= to);
      });
    }
    if (keepsAlive)
      continue;
    auto it = at.find(to);
    double before = std::prev(it)->first; // `op` itself at the latest
    if (std::prev(it)->second == op)
      continue;
    double mid = (before + to) / 2;
    if (mid <= before || mid >= to)
      continue; // no label left between them: stay
    at.erase(label[op]);
    label[op] = mid;
    at[mid] = op;
    moved = true;
  }
  if (!moved)
    return;
  for (auto &[l, op] : at)
    op->moveBefore(terminator);
}
