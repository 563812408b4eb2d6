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
} // namespace

void mlir::tg::hoistShrinkingOps(Block &block) {
  // Position in the schedule as given, and the order key an op ends up
  // with: an op left in place has {pos}; a hoisted op its anchor's key
  // followed by its own pos, so it runs right after the anchor (and after
  // ops hoisted to the same anchor earlier in the schedule). Keys are
  // capped in length so a chain of hoists costs at most kMaxDepth per op.
  constexpr size_t kMaxDepth = 8;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> pos;
  for (Operation &op : block.without_terminator()) {
    pos[&op] = ops.size();
    ops.push_back(&op);
  }
  std::vector<SmallVector<int64_t, 4>> key(ops.size());
  Operation *terminator = block.getTerminator();
  DenseSet<Value> returned(llvm::from_range, terminator->getOperands());
  bool moved = false;
  for (auto [i, op] : llvm::enumerate(ops)) {
    key[i] = {int64_t(i)};
    // A fusion group is one kernel of pure ops (its body is isolated, so
    // its operands are all it reads): it moves like a single op. Other ops
    // with regions (the accumulation loop) stay. Unhoisted, the fused
    // forward loss (a row reduction of the logits to one value per row)
    // ran at the end of the backward pass and kept the logits alive
    // through it (2-layer GPT: 2 MiB).
    if ((op->getNumRegions() && !isa<FusedOp>(op)) || !isMemoryEffectFree(op))
      continue;
    int64_t results = 0;
    for (Value r : op->getResults())
      results += tensorBytes(r.getType());
    // What the op frees, and the ops that must stay before it.
    int64_t freed = 0;
    SmallVector<Operation *> deps;
    SmallVector<Value> seen;
    for (Value v : op->getOperands()) {
      if (llvm::is_contained(seen, v))
        continue;
      seen.push_back(v);
      Operation *def = inBlock(v.getDefiningOp(), block);
      if (def)
        deps.push_back(def);
      if (!def || returned.contains(v))
        continue; // arguments and results outlive the step
      bool last = true;
      SmallVector<Operation *> others;
      for (Operation *user : v.getUsers()) {
        Operation *reader = inBlock(user, block);
        if (!reader || reader == op)
          continue;
        if (reader == terminator || pos.lookup(reader) > int64_t(i)) {
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
      continue;
    // The dependency that runs last in the order built so far.
    int64_t anchor = pos[deps.front()];
    for (Operation *d : deps)
      if (key[pos[d]] > key[anchor])
        anchor = pos[d];
    if (anchor + 1 == int64_t(i) || key[anchor].size() >= kMaxDepth)
      continue;
    key[i] = key[anchor];
    key[i].push_back(int64_t(i));
    moved = true;
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

namespace {
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
  bool moved = false;
  for (Operation *op : llvm::reverse(ops)) {
    if (!isReplay(op) || !isMemoryEffectFree(op))
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
    // replay then extends no lifetime.
    bool keepsAlive = false;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || isa<tg::ConstantOp>(def))
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
