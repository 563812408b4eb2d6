//===- Fusion.cpp - the tg-fuse pass ----------------------------*- C++ -*-===//
//
// Groups the ops of every function into kernels (tg.fused regions): a
// matmul with its epilogue, chains of elementwise ops, reductions over rows
// or columns with their elementwise producers and consumers, and the
// optimizer update of all parameters. Greedy producer-into-consumer merging
// in program order; a merge is taken when the merged group is a kernel the
// GPU backend can emit as one (legal) and it keeps a value out of memory
// (the cost model: bytes saved), and never when it would create a cycle.
// See docs/fusion.md.
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion.h"
#include "passes/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/CSE.h"

#include <queue>

namespace mlir::tg {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

void mlir::tg::inlineFusedGroups(Operation *root) {
  SmallVector<FusedOp> groups;
  root->walk([&](FusedOp op) { groups.push_back(op); });
  for (FusedOp group : groups) {
    TGDialect &tgd = dialect(group.getContext());
    auto offsets = tgd.getOffsetsAttrHelper().getAttr(group);
    auto aliases = tgd.getAliasArgsAttrHelper().getAttr(group);
    auto offset = tgd.getOffsetAttrHelper().getAttr(group);
    auto alias = tgd.getAliasArgAttrHelper().getAttr(group);
    Builder b(group.getContext());
    IRMapping map;
    for (auto [arg, in] :
         llvm::zip(group.getBodyBlock().getArguments(), group.getInputs()))
      map.map(arg, in);
    OpBuilder builder(group);
    for (Operation &op : group.getBodyBlock().without_terminator())
      builder.clone(op, map);
    for (auto [i, v] : llvm::enumerate(group.getYield().getValues())) {
      Value inner = map.lookup(v);
      group.getResult(i).replaceAllUsesWith(inner);
      // The plan of result i moves to the op that now computes it.
      Operation *def = inner.getDefiningOp();
      if (!def || def->getNumResults() != 1)
        continue;
      int64_t off = offsets ? offsets[i] : offset ? offset.getInt() : -1;
      int64_t ali = aliases ? aliases[i] : alias ? alias.getInt() : -1;
      if (ali >= 0)
        tgd.getAliasArgAttrHelper().setAttr(def, b.getI64IntegerAttr(ali));
      else if (off >= 0)
        tgd.getOffsetAttrHelper().setAttr(def, b.getI64IntegerAttr(off));
      if (ali >= 0 || off >= 0)
        tgd.getBytesAttrHelper().setAttr(
            def, b.getI64IntegerAttr(tensorBytes(inner.getType())));
    }
    group.erase();
  }
}

namespace {

/// Elementwise ops: result element i reads element i of each operand (after
/// broadcasting), so any chain of them is one loop over the result. A
/// one_hot is one too: element (i, c) compares index i with c.
bool isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, CmpOp,
             SelectOp, NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp,
             SigmoidOp, ReluOp, SiluOp, GeluOp, ErfOp, CosOp, SinOp, CastOp,
             BroadcastToOp, CausalMaskOp, DropoutOp, OneHotOp>(op);
}

/// What a GEMM epilogue applies: scale, bias or residual, activation, cast.
bool isEpilogue(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, ReluOp, GeluOp, SiluOp, SigmoidOp,
             TanhOp, CastOp>(op);
}

/// A reduction's iteration domain: its input shape and the axes it reduces
/// (sorted, non-negative).
struct Domain {
  SmallVector<int64_t> shape, axes;
  bool operator==(const Domain &o) const {
    return shape == o.shape && axes == o.axes;
  }
  /// True when the axes are the last ones and leave rows: each row is
  /// independent (a reduction over everything is not a row reduction).
  bool trailing() const {
    if (axes.size() >= shape.size())
      return false;
    for (auto [i, a] : llvm::enumerate(llvm::reverse(axes)))
      if (a != static_cast<int64_t>(shape.size() - 1 - i))
        return false;
    return !axes.empty();
  }
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The domain of a reduction op (tg.sum/mean/max and the composites that
/// reduce over rows), or std::nullopt for other ops.
std::optional<Domain> reductionDomain(Operation *op) {
  auto make = [](Value in, ArrayRef<int64_t> axes) {
    Domain d;
    d.shape.assign(shapeOf(in).begin(), shapeOf(in).end());
    int64_t rank = d.shape.size();
    for (int64_t a : axes)
      d.axes.push_back(a < 0 ? a + rank : a);
    llvm::sort(d.axes);
    return d;
  };
  auto last = [&](Value in) {
    int64_t rank = shapeOf(in).size();
    SmallVector<int64_t> axes;
    if (rank)
      axes.push_back(rank - 1);
    return make(in, axes);
  };
  if (auto r = dyn_cast<SumOp>(op))
    return make(r.getInput(), r.getAxes());
  if (auto r = dyn_cast<MeanOp>(op))
    return make(r.getInput(), r.getAxes());
  if (auto r = dyn_cast<MaxOp>(op))
    return make(r.getInput(), r.getAxes());
  if (auto s = dyn_cast<SoftmaxOp>(op))
    return make(s.getInput(), {static_cast<int64_t>(s.getAxis())});
  if (auto s = dyn_cast<LogSoftmaxOp>(op))
    return make(s.getInput(), {static_cast<int64_t>(s.getAxis())});
  if (isa<LayerNormOp, RmsNormOp>(op))
    return last(op->getOperand(0));
  return std::nullopt;
}

/// The shapes a row of domain `d` has: the full shape, the reduced shape
/// with and without kept dimensions.
bool isRowShape(ArrayRef<int64_t> shape, const Domain &d) {
  if (shape == ArrayRef<int64_t>(d.shape))
    return true;
  SmallVector<int64_t> keep(d.shape), drop;
  for (int64_t a : d.axes)
    keep[a] = 1;
  for (auto [i, s] : llvm::enumerate(d.shape))
    if (!llvm::is_contained(d.axes, static_cast<int64_t>(i)))
      drop.push_back(s);
  return shape == ArrayRef<int64_t>(keep) || shape == ArrayRef<int64_t>(drop);
}

/// The kind of kernel that `ops` (in program order) form, or std::nullopt
/// when they are not one kernel the GPU backend can emit: the legality
/// half of the fusion decision.
std::optional<KernelKind> classify(ArrayRef<Operation *> ops,
                                   const DenseSet<Operation *> &members) {
  Operation *matmul = nullptr;
  std::optional<Domain> domain;
  SmallVector<Operation *> reductions;
  for (Operation *op : ops) {
    if (isa<MatmulOp>(op)) {
      if (matmul)
        return std::nullopt;
      matmul = op;
    } else if (std::optional<Domain> d = reductionDomain(op)) {
      if (domain && !(*domain == *d))
        return std::nullopt;
      domain = d;
      reductions.push_back(op);
    } else if (!isElementwise(op)) {
      return std::nullopt;
    }
  }
  auto inGroup = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && members.contains(def);
  };
  if (matmul) {
    // A GEMM reads its operands from memory and applies its epilogue to
    // each output element: every other op depends on the product and has
    // its shape.
    if (domain || llvm::any_of(matmul->getOperands(), inGroup))
      return std::nullopt;
    DenseSet<Operation *> after{matmul};
    ArrayRef<int64_t> shape = shapeOf(matmul->getResult(0));
    for (Operation *op : ops) {
      if (op == matmul)
        continue;
      if (!isEpilogue(op) || shapeOf(op->getResult(0)) != shape ||
          llvm::none_of(op->getOperands(), [&](Value v) {
            return v.getDefiningOp() && after.contains(v.getDefiningOp());
          }))
        return std::nullopt;
      after.insert(op);
    }
    return KernelKind::gemm;
  }
  if (domain && domain->trailing()) {
    // One row per thread block: everything is a row or a row's reduction.
    for (Operation *op : ops)
      if (!reductionDomain(op) && !isRowShape(shapeOf(op->getResult(0)), *domain))
        return std::nullopt;
    return KernelKind::row_reduction;
  }
  if (domain) {
    // Reductions across rows are the kernel's sinks: a value computed from
    // them would need the whole grid to finish first.
    for (Operation *op : reductions)
      for (Operation *user : op->getUsers())
        if (members.contains(user))
          return std::nullopt;
    for (Operation *op : ops)
      if (!reductionDomain(op) &&
          shapeOf(op->getResult(0)) != ArrayRef<int64_t>(domain->shape))
        return std::nullopt;
    return KernelKind::reduction;
  }
  // Elementwise: one iteration space, the shape every op writes.
  ArrayRef<int64_t> shape = shapeOf(ops.front()->getResult(0));
  for (Operation *op : ops)
    if (shapeOf(op->getResult(0)) != shape)
      return std::nullopt;
  return KernelKind::elementwise;
}

/// One group under construction.
struct Group {
  SmallVector<Operation *> ops; ///< in program order
  KernelKind kind = KernelKind::elementwise;
  bool fixed = false; ///< the optimizer group: nothing merges into it
  /// The loss's row reduction merged with its gradient's
  /// (mergeLossWithGradient): the body is deduplicated when it is formed.
  bool siblings = false;
};

/// Forms the groups of one block and rewrites them into tg.fused ops.
class BlockFuser {
public:
  BlockFuser(Block &block, ArrayRef<Operation *> optimizer)
      : block(block) {
    for (Operation &op : block.without_terminator())
      pos[&op] = pos.size();
    // The forward pass of a gradient function: the ops its loss depends
    // on (not a prefix of the block: constants are hoisted, replays sunk).
    auto fn = dyn_cast<func::FuncOp>(block.getParentOp());
    auto roleIs = [&](Role role) {
      return [fn, role](unsigned i) { return getResultRole(fn, i) == role; };
    };
    auto results = llvm::seq(0u, fn ? fn.getNumResults() : 0u);
    if (llvm::any_of(results, roleIs(Role::grad))) {
      SmallVector<Value> work;
      for (unsigned i : llvm::make_filter_range(results, roleIs(Role::loss)))
        work.push_back(block.getTerminator()->getOperand(i));
      while (!work.empty()) {
        Operation *def = work.pop_back_val().getDefiningOp();
        if (def && def->getBlock() == &block && forward.insert(def).second)
          llvm::append_range(work, def->getOperands());
      }
    }
    if (optimizer.size() > 1) {
      Group g;
      g.kind = KernelKind::optimizer;
      g.fixed = true;
      g.ops.assign(optimizer.begin(), optimizer.end());
      sortOps(g.ops);
      for (Operation *op : g.ops)
        groupOf[op] = 0;
      groups.push_back(std::move(g));
    }
  }

  /// Returns failure when the contracted graph has a cycle (a bug in the
  /// checks); the block is then left as it was.
  LogicalResult run() {
    for (Operation &op : block.without_terminator()) {
      if (groupOf.count(&op) || !fusible(&op))
        continue;
      Group g;
      g.ops.push_back(&op);
      DenseSet<Operation *> one{&op};
      std::optional<KernelKind> k = classify(g.ops, one);
      if (!k)
        continue;
      g.kind = *k;
      groupOf[&op] = groups.size();
      groups.push_back(std::move(g));
      // Producers merge into this op's group, operand by operand, replays
      // first (replaysFirst).
      for (Value v : replaysFirst(op.getOperands())) {
        Operation *def = v.getDefiningOp();
        if (!def || !groupOf.count(def))
          continue;
        tryMerge(groupOf[def], groupOf[&op]);
      }
    }
    mergeLossWithGradient();
    return materialize();
  }

private:
  /// `operands` with the values that replays compute (`tg.recomputed`)
  /// first: a backward op that reads a GEMM's product and a replay (the
  /// GELU's derivative factors times `dy W^T`) then joins the replay's
  /// elementwise kernel, which reads the product and the kept input, rather
  /// than the GEMM's epilogue, which would read the replay's x-sized results
  /// (one written buffer each) from memory.
  SmallVector<Value> replaysFirst(ValueRange operands) {
    auto isReplayed = [](Value v) {
      Operation *def = v.getDefiningOp();
      return def && def->hasAttr(attr::recomputed);
    };
    SmallVector<Value> order;
    for (bool replayed : {true, false})
      for (Value v : operands)
        if (isReplayed(v) == replayed)
          order.push_back(v);
    return order;
  }

  bool fusible(Operation *op) {
    return isa<MatmulOp>(op) || reductionDomain(op) || isElementwise(op);
  }

  void sortOps(SmallVectorImpl<Operation *> &ops) {
    llvm::sort(ops, [&](Operation *a, Operation *b) {
      return pos.lookup(a) < pos.lookup(b);
    });
  }

  /// Bytes that merging keeps out of memory: each value from `a` read by
  /// `b` is no longer read back (and not written at all when nobody else
  /// reads it). The cost model's benefit; 0 means no reason to merge.
  int64_t bytesSaved(const Group &a, const DenseSet<Operation *> &merged) {
    int64_t saved = 0;
    for (Operation *op : a.ops)
      for (Value r : op->getResults()) {
        bool inside = false, outside = false;
        for (Operation *user : r.getUsers())
          (merged.contains(user) ? inside : outside) = true;
        if (inside)
          saved += tensorBytes(r.getType()) * (outside ? 1 : 2);
      }
    return saved;
  }

  /// True if some path leaves group `from` and enters group `to` through an
  /// op of neither: merging them would make the kernel depend on itself.
  /// Also true when the search gives up: the merge is then not taken.
  ///
  /// A path into `to` ends at or before its last op, so the search never
  /// goes past that op, and it visits the latest op first: in a training
  /// step a forward value read again by the backward (the merges tried
  /// across the whole step) reaches the backward through the loss, and
  /// following the latest op finds that path after a few ops where an
  /// unordered search walked every op in between, once per such merge:
  /// 8x the layers of a small GPT cost 60x the time of tg-fuse. A search
  /// that finds no path in kMaxVisited ops answers "maybe", so each
  /// question costs a bounded number of steps and the pass stays linear.
  bool pathOutside(unsigned from, unsigned to) {
    constexpr unsigned kMaxVisited = 4096;
    int64_t last = 0;
    for (Operation *op : groups[to].ops)
      last = std::max<int64_t>(last, pos.lookup(op));
    std::priority_queue<std::pair<unsigned, Operation *>> work;
    DenseSet<Operation *> seen;
    DenseSet<unsigned> entered;
    auto push = [&](Operation *op) {
      auto it = groupOf.find(op);
      if (it != groupOf.end() && (it->second == from || it->second == to))
        return;
      if (!pos.count(op) || pos.lookup(op) > last || !seen.insert(op).second)
        return;
      work.push({pos.lookup(op), op});
    };
    for (Operation *op : groups[from].ops)
      for (Operation *user : op->getUsers())
        push(topLevel(user));
    for (unsigned visited = 0; !work.empty(); ++visited) {
      if (visited == kMaxVisited)
        return true;
      Operation *op = work.top().second;
      work.pop();
      // Entering any op of a group enters the whole group (once).
      auto it = groupOf.find(op);
      SmallVector<Operation *> members{op};
      if (it != groupOf.end()) {
        if (!entered.insert(it->second).second)
          continue;
        members = groups[it->second].ops;
      }
      for (Operation *m : members)
        for (Operation *user : m->getUsers()) {
          Operation *top = topLevel(user);
          auto ut = groupOf.find(top);
          if (ut != groupOf.end() && ut->second == to)
            return true;
          push(top);
        }
    }
    return false;
  }

  /// True if merging producer group `a` into consumer group `b` would move
  /// a replay (`tg.recomputed`: an op that autodiff or tg-rematerialize
  /// placed in the backward pass so that its result is not kept from the
  /// forward pass) into the group of a non-replayed op it reads. That group
  /// runs in the forward pass, so the replay would run there too and its
  /// results (a GELU's derivative factors, x-sized) would be kept until
  /// the backward pass: the memory the replay was made to save (issue 19:
  /// the 2-layer GPT's MLP blocks kept 8 MiB more). A replay still joins
  /// other replays and the backward ops that read it.
  bool pullsReplayForward(const Group &a, const Group &b) {
    auto isReplay = [](Operation *op) {
      return op->hasAttr(attr::recomputed);
    };
    DenseSet<Operation *> kept;
    for (Operation *op : a.ops)
      if (!isReplay(op))
        kept.insert(op);
    if (kept.empty())
      return false;
    for (Operation *op : b.ops)
      if (isReplay(op))
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp(); def && kept.contains(def))
            return true;
    return false;
  }

  /// True if merging producer group `a` into consumer group `b` would make
  /// `a` wait for an input of `b` computed after all of `a` (in program
  /// order) while `a` is the last reader of more bytes than it writes: the
  /// merged kernel then keeps those bytes alive until the late input
  /// exists. A tied head's weight gradient (the logits' gradient times the
  /// final layer norm's output, 3 MiB read for 0.5 MiB written in the
  /// 2-layer GPT) became a GEMM whose epilogue adds the embedding's
  /// gradient, computed at the very end of the backward pass.
  bool defersFree(const Group &a, const Group &b) {
    int64_t lastA = 0;
    DenseSet<Operation *> members;
    for (Operation *op : a.ops) {
      lastA = std::max<int64_t>(lastA, pos.lookup(op));
      members.insert(op);
    }
    members.insert(b.ops.begin(), b.ops.end());
    auto late = [&](Value v) {
      Operation *def = topLevel(v.getDefiningOp());
      return def && !members.contains(def) && pos.count(def) &&
             pos.lookup(def) > lastA;
    };
    if (llvm::none_of(b.ops, [&](Operation *op) {
          return llvm::any_of(op->getOperands(), late);
        }))
      return false;
    int64_t freed = 0, written = 0;
    DenseSet<Value> seen;
    for (Operation *op : a.ops) {
      for (Value r : op->getResults())
        written += tensorBytes(r.getType());
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || members.contains(def) ||
            isa<ConstantOp, arith::ConstantOp>(def) || !seen.insert(v).second)
          continue;
        if (llvm::all_of(v.getUsers(), [&](Operation *u) {
              Operation *reader = topLevel(u);
              return reader && pos.count(reader) &&
                     pos.lookup(reader) <= lastA;
            }))
          freed += tensorBytes(v.getType());
      }
    }
    return freed > written;
  }

  Operation *topLevel(Operation *op) {
    while (op && op->getBlock() != &block)
      op = op->getParentOp();
    return op;
  }

  /// True if `ops` hold an op of the forward pass and one of the backward
  /// pass of a gradient function. Such a kernel runs in the forward pass
  /// and writes the backward's values there, to be stored until the
  /// backward reads them: what tg-rematerialize chose to replay in the
  /// backward instead of storing (its replays read kept forward values),
  /// and the f32 copy of attention's bf16 probabilities that the backward
  /// reads. These merges took the fused 2-layer GPT's planned peak from
  /// 80.0 MiB to 70.1 MiB (unfused: 66.1). Proving them legal was also what
  /// made tg-fuse quadratic: no path joins the forward op to the backward
  /// op that reads it, and the search walked the step to find none.
  bool joinsPasses(ArrayRef<Operation *> ops) {
    auto inForward = [&](Operation *op) { return forward.contains(op); };
    auto inBackward = [&](Operation *op) {
      return !forward.contains(op) && !op->hasTrait<OpTrait::ConstantLike>();
    };
    return !forward.empty() && llvm::any_of(ops, inForward) &&
           llvm::any_of(ops, inBackward);
  }

  // A merge re-sorts and re-classifies the whole group, so unbounded
  // groups made the pass quadratic (the clipping norm's sum over 2,000
  // gradients: one group grown op by op, 2.6 s). A kernel of this many
  // ops already keeps its values out of memory; past it, a new group.
  static constexpr size_t kMaxGroupOps = 256;

  void tryMerge(unsigned a, unsigned b) {
    if (a == b || groups[a].fixed || groups[b].fixed ||
        groups[a].ops.size() + groups[b].ops.size() > kMaxGroupOps ||
        pullsReplayForward(groups[a], groups[b]) ||
        defersFree(groups[a], groups[b]))
      return;
    SmallVector<Operation *> ops(groups[a].ops);
    ops.append(groups[b].ops);
    sortOps(ops);
    DenseSet<Operation *> members(ops.begin(), ops.end());
    std::optional<KernelKind> kind = classify(ops, members);
    if (!kind || joinsPasses(ops) ||
        bytesSaved(groups[a], members) <= 0 || pathOutside(a, b) ||
        pathOutside(b, a))
      return;
    for (Operation *op : groups[a].ops)
      groupOf[op] = b;
    groups[b].ops = std::move(ops);
    groups[b].kind = *kind;
    groups[a].ops.clear();
  }

  /// The reduction domain of a row-reduction group (its first reduction's).
  std::optional<Domain> rowDomain(const Group &g) {
    for (Operation *op : g.ops)
      if (std::optional<Domain> d = reductionDomain(op))
        return d->trailing() ? d : std::nullopt;
    return std::nullopt;
  }

  /// The sibling merge of a gradient function (issue 14): a row reduction
  /// of the forward pass (cross-entropy's log-softmax of the logits, the
  /// loss) with a row reduction of the backward pass over the same rows of
  /// the same input (the logits' gradient: the softmax, replayed, minus the
  /// one-hot labels, times the row's scale). Producer-into-consumer merging
  /// never joins them (neither reads the other) and rule 4 (joinsPasses)
  /// refuses a kernel of both passes, because such a kernel writes backward
  /// values in the forward pass, stored until the backward reads them. Here
  /// the backward value is the one the backward pass needs first, right
  /// after the loss: the merge is taken only when every op between the two
  /// groups (the loss's tail: the mean over the rows; the gradient's scale:
  /// 1 / the number of counted targets, from the labels) computes at most
  /// one value per row, so the gradient is stored across nothing larger
  /// than that. Merged, each row is read once, and the forward's max, exp
  /// and sum serve the gradient too (the replays are deduplicated when the
  /// group is formed). The merge must still be legal (one row-reduction
  /// kernel) and acyclic: the scale must not depend on the loss.
  void mergeLossWithGradient() {
    if (forward.empty())
      return;
    auto ofPass = [&](const Group &g, bool fwd) {
      return g.kind == KernelKind::row_reduction && !g.fixed &&
             !g.ops.empty() && llvm::all_of(g.ops, [&](Operation *op) {
               return op->hasTrait<OpTrait::ConstantLike>() ||
                      forward.contains(op) == fwd;
             });
    };
    for (unsigned f = 0; f < groups.size(); ++f) {
      if (!ofPass(groups[f], true))
        continue;
      for (unsigned g = 0; g < groups.size(); ++g)
        if (g != f && ofPass(groups[g], false) && mergeSiblings(f, g))
          break;
    }
  }

  /// Merges row-reduction groups `f` (forward) and `g` (backward) as
  /// mergeLossWithGradient allows; returns true if merged.
  bool mergeSiblings(unsigned f, unsigned g) {
    Group &a = groups[f], &b = groups[g];
    std::optional<Domain> domain = rowDomain(a);
    if (!domain || !(domain == rowDomain(b)) ||
        a.ops.size() + b.ops.size() > kMaxGroupOps)
      return false;
    DenseSet<Operation *> members(a.ops.begin(), a.ops.end());
    members.insert(b.ops.begin(), b.ops.end());
    // The benefit: a whole input both read row by row is read once.
    auto wholeInputs = [&](const Group &x) {
      DenseSet<Value> in;
      for (Operation *op : x.ops)
        for (Value v : op->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (!(def && members.contains(def)) &&
              shapeOf(v) == ArrayRef<int64_t>(domain->shape))
            in.insert(v);
        }
      return in;
    };
    DenseSet<Value> inA = wholeInputs(a);
    if (llvm::none_of(wholeInputs(b), [&](Value v) { return inA.contains(v); }))
      return false;
    // Between the two groups, at most one value per row.
    int64_t rows = 1;
    for (auto [i, n] : llvm::enumerate(domain->shape))
      if (!llvm::is_contained(domain->axes, static_cast<int64_t>(i)))
        rows *= n;
    unsigned lo = ~0u, hi = 0;
    for (Operation *op : members) {
      lo = std::min(lo, pos.lookup(op));
      hi = std::max(hi, pos.lookup(op));
    }
    for (Operation &op : block.without_terminator()) {
      unsigned p = pos.lookup(&op);
      if (p <= lo || p >= hi || members.contains(&op))
        continue;
      for (Type t : op.getResultTypes()) {
        auto type = dyn_cast<RankedTensorType>(t);
        if (!type || type.getNumElements() > rows)
          return false;
      }
    }
    SmallVector<Operation *> ops(a.ops);
    ops.append(b.ops);
    sortOps(ops);
    std::optional<KernelKind> kind = classify(ops, members);
    if (kind != KernelKind::row_reduction || pathOutside(f, g) ||
        pathOutside(g, f))
      return false;
    for (Operation *op : a.ops)
      groupOf[op] = g;
    b.ops = std::move(ops);
    b.siblings = true;
    a.ops.clear();
    return true;
  }

  /// Orders the block so that each group's ops are contiguous (a
  /// topological order of groups and single ops, program order among the
  /// ready ones), then replaces each group of two or more ops by a
  /// tg.fused.
  LogicalResult materialize() {
    // Units: a group (its first op stands for it) or a single op.
    auto unitOf = [&](Operation *op) -> Operation * {
      auto it = groupOf.find(op);
      if (it == groupOf.end() || groups[it->second].ops.size() < 2)
        return op;
      return groups[it->second].ops.front();
    };
    auto membersOf = [&](Operation *unit) -> SmallVector<Operation *> {
      auto it = groupOf.find(unit);
      if (it == groupOf.end() || groups[it->second].ops.size() < 2)
        return {unit};
      return groups[it->second].ops;
    };
    DenseMap<Operation *, unsigned> waiting;
    DenseMap<Operation *, SmallVector<Operation *>> next;
    SmallVector<Operation *> units;
    for (Operation &op : block.without_terminator())
      if (unitOf(&op) == &op)
        units.push_back(&op);
    for (Operation *unit : units) {
      DenseSet<Operation *> preds;
      for (Operation *m : membersOf(unit))
        m->walk([&](Operation *inner) {
          for (Value v : inner->getOperands()) {
            Operation *def = v.getDefiningOp();
            def = def ? topLevel(def) : nullptr;
            if (def && def != block.getTerminator() && pos.count(def) &&
                unitOf(def) != unit && preds.insert(unitOf(def)).second)
              next[unitOf(def)].push_back(unit);
          }
        });
      waiting[unit] = preds.size();
    }
    using Item = std::pair<unsigned, Operation *>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
    for (Operation *unit : units)
      if (!waiting[unit])
        ready.push({pos[unit], unit});
    SmallVector<Operation *> order;
    while (!ready.empty()) {
      Operation *unit = ready.top().second;
      ready.pop();
      order.push_back(unit);
      for (Operation *n : next[unit])
        if (--waiting[n] == 0)
          ready.push({pos[n], n});
    }
    if (order.size() != units.size())
      return failure();
    Operation *terminator = block.getTerminator();
    for (Operation *unit : order)
      for (Operation *m : membersOf(unit))
        m->moveBefore(terminator);
    for (Group &g : groups)
      if (g.ops.size() >= 2)
        outline(g);
    return success();
  }

  /// Replaces the (contiguous) ops of `g` by one tg.fused.
  void outline(Group &g) {
    DenseSet<Operation *> members(g.ops.begin(), g.ops.end());
    SmallVector<Value> inputs, outputs;
    DenseSet<Value> seenIn;
    SmallVector<Operation *> constants;
    for (Operation *op : g.ops)
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && members.contains(def))
          continue;
        if (def && isa<ConstantOp, arith::ConstantOp>(def)) {
          if (!llvm::is_contained(constants, def))
            constants.push_back(def);
        } else if (seenIn.insert(v).second) {
          inputs.push_back(v);
        }
      }
    for (Operation *op : g.ops)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *u) {
              return !members.contains(topLevel(u));
            }))
          outputs.push_back(r);
    if (outputs.empty())
      return; // dead ops: nothing to write, no kernel to form
    OpBuilder b(g.ops.front());
    auto fused = FusedOp::create(b, g.ops.front()->getLoc(),
                                 ValueRange(outputs).getTypes(), inputs,
                                 g.kind);
    IRMapping map;
    for (auto [in, arg] : llvm::zip(inputs, fused.getBodyBlock().getArguments()))
      map.map(in, arg);
    OpBuilder body = OpBuilder::atBlockEnd(&fused.getBodyBlock());
    for (Operation *c : constants)
      body.clone(*c, map);
    for (Operation *op : g.ops)
      body.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(map.lookup(v));
    YieldOp::create(body, fused.getLoc(), yielded);
    if (g.siblings) {
      // One kernel runs both passes' ops on each row: a replay of a value
      // the forward's ops compute in it is that value (the softmax's max,
      // exp and sum are the log-softmax's), so the copies are merged.
      for (Operation &op : fused.getBodyBlock())
        op.removeAttr(attr::recomputed);
      IRRewriter rewriter(fused.getContext());
      DominanceInfo dominance;
      eliminateCommonSubExpressions(rewriter, dominance, fused);
    }
    // The cost model's record: what the kernel computes, reads and writes.
    int64_t read = 0, written = 0;
    for (Value v : inputs)
      read += tensorBytes(v.getType());
    for (Value v : outputs)
      written += tensorBytes(v.getType());
    TGDialect &tgd = dialect(fused.getContext());
    tgd.getFlopsAttrHelper().setAttr(fused,
                                     b.getI64IntegerAttr(opFlops(fused)));
    tgd.getBytesReadAttrHelper().setAttr(fused, b.getI64IntegerAttr(read));
    tgd.getBytesWrittenAttrHelper().setAttr(fused,
                                            b.getI64IntegerAttr(written));
    for (auto [v, r] : llvm::zip(outputs, fused.getResults()))
      v.replaceAllUsesWith(r);
    for (Operation *op : llvm::reverse(g.ops))
      op->erase();
    for (Operation *c : constants)
      if (c->use_empty())
        c->erase();
  }

  Block &block;
  DenseMap<Operation *, unsigned> pos;
  DenseMap<Operation *, unsigned> groupOf;
  SmallVector<Group> groups;
  DenseSet<Operation *> forward; ///< of a gradient function; else empty
};

/// Folds a transpose of the last two dimensions that feeds only matmuls
/// into their transpose_lhs/transpose_rhs flags, so the GEMM reads the
/// operand in its stored layout (nn / nt / tn) instead of a copy.
void foldTransposesIntoMatmuls(Block &block) {
  SmallVector<TransposeOp> transposes;
  for (auto t : block.getOps<TransposeOp>())
    transposes.push_back(t);
  for (TransposeOp t : transposes) {
    ArrayRef<int64_t> perm = t.getPermutation();
    int64_t rank = perm.size();
    bool swapsLastTwo = rank >= 2 && perm[rank - 1] == rank - 2 &&
                        perm[rank - 2] == rank - 1;
    for (int64_t i = 0; i + 2 < rank; ++i)
      swapsLastTwo &= perm[i] == i;
    if (!swapsLastTwo || t->use_empty() ||
        llvm::any_of(t->getUses(), [&](OpOperand &use) {
          auto mm = dyn_cast<MatmulOp>(use.getOwner());
          return !mm || mm.getLhs() == mm.getRhs();
        }))
      continue;
    for (OpOperand &use : llvm::make_early_inc_range(t->getUses())) {
      auto mm = cast<MatmulOp>(use.getOwner());
      if (use.getOperandNumber() == 0)
        mm.setTransposeLhs(!mm.getTransposeLhs());
      else
        mm.setTransposeRhs(!mm.getTransposeRhs());
      use.set(t.getInput());
    }
    t.erase();
  }
}

/// The optimizer update of a function that returns new parameters or
/// optimizer state: the elementwise ops that compute them, back to the
/// first op that is not elementwise (the gradients, the norm reduction of
/// gradient clipping), without any op from which a path leaves the set and
/// comes back.
SmallVector<Operation *> optimizerOps(func::FuncOp fn) {
  Block &block = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  SetVector<Operation *> set;
  SmallVector<Operation *> work;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    std::optional<Role> role = getResultRole(fn, i);
    if (role != Role::param && role != Role::state)
      continue;
    if (Operation *def = v.getDefiningOp())
      work.push_back(def);
  }
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (op->getBlock() != &block || !isElementwise(op) || !set.insert(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        work.push_back(def);
  }
  // Drop the members that reach an outside op which reaches back into the
  // set (e.g. gradients averaged in the update and read by the clipping
  // norm): the group must not depend on itself.
  while (true) {
    DenseSet<Operation *> fromSet, toSet;
    SmallVector<Operation *> stack;
    for (Operation *op : set)
      for (Operation *u : op->getUsers())
        if (u->getBlock() == &block && !set.contains(u) && fromSet.insert(u).second)
          stack.push_back(u);
    while (!stack.empty())
      for (Operation *u : stack.pop_back_val()->getUsers())
        if (u->getBlock() == &block && !set.contains(u) && fromSet.insert(u).second)
          stack.push_back(u);
    for (Operation *op : set)
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          if (d->getBlock() == &block && !set.contains(d) && toSet.insert(d).second)
            stack.push_back(d);
    while (!stack.empty())
      for (Value v : stack.pop_back_val()->getOperands())
        if (Operation *d = v.getDefiningOp())
          if (d->getBlock() == &block && !set.contains(d) && toSet.insert(d).second)
            stack.push_back(d);
    SmallVector<Operation *> bad;
    for (Operation *op : fromSet)
      if (toSet.contains(op))
        bad.push_back(op);
    if (bad.empty())
      break;
    // Remove every member from which a bad op is reachable.
    DenseSet<Operation *> drop;
    SmallVector<Operation *> up(bad.begin(), bad.end());
    DenseSet<Operation *> seen(bad.begin(), bad.end());
    while (!up.empty())
      for (Value v : up.pop_back_val()->getOperands())
        if (Operation *d = v.getDefiningOp())
          if (d->getBlock() == &block && seen.insert(d).second) {
            up.push_back(d);
            if (set.contains(d))
              drop.insert(d);
          }
    set.remove_if([&](Operation *op) { return drop.contains(op); });
  }
  return SmallVector<Operation *>(set.begin(), set.end());
}

struct FusePass final : tg::impl::FusePassBase<FusePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Operation *op) {
      if (isa<func::FuncOp, scf::ForOp>(op))
        for (Region &r : op->getRegions())
          for (Block &b : r)
            blocks.push_back(&b);
    });
    for (Block *block : blocks) {
      foldTransposesIntoMatmuls(*block);
      SmallVector<Operation *> optimizer;
      auto fn = dyn_cast<func::FuncOp>(block->getParentOp());
      if (fn && optimizerGroup && fn.getBody().hasOneBlock())
        optimizer = optimizerOps(fn);
      // A failure is found before anything moved: the block stays as it
      // was, unfused but correct.
      BlockFuser fuser(*block, optimizer);
      if (failed(fuser.run()))
        block->getParentOp()->emitWarning(
            "tg-fuse: the fusion groups of this block form a cycle; left "
            "unfused (please report this model)");
    }
  }
};

} // namespace
