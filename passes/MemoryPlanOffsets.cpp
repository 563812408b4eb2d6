//===- MemoryPlanOffsets.cpp - best-fit offsets of planned buffers -*- C++ -*-===//
//
// The planner's offset search (assignOffsets, MemoryPlan.h): each buffer,
// largest first, goes to the smallest gap of the address space taken during
// its lifetime. A segment tree over the schedule's steps keeps the merged
// runs of the placed buffers, so a query reads runs, not buffers
// (docs/hardening.md, "The planner's offset search"). Kept apart from the
// scheduling and liveness of MemoryPlan.cpp: it only sees lifetimes and sizes.
// Op scratch (tg.scratch) enters the search here too, as one buffer per op
// live at that op's step, and leaves it as tg.scratch_offset.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"
#include "passes/MemoryPlanScratch.h"
#include "dialects/TGDialect.h"

#include "llvm/ADT/STLExtras.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

using namespace mlir;
using namespace mlir::tg;

static int64_t alignTo(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

namespace {
/// Address ranges [lo, hi) merged into maximal disjoint runs (touching
/// ranges merge too: a gap of 0 bytes holds no buffer).
class Runs {
public:
  void add(int64_t lo, int64_t hi) {
    auto it = runs.upper_bound(lo);
    if (it != runs.begin() && std::prev(it)->second >= lo)
      lo = (--it)->first;
    while (it != runs.end() && it->first <= hi) {
      hi = std::max(hi, it->second);
      it = runs.erase(it);
    }
    runs.emplace_hint(it, lo, hi);
  }
  void appendTo(std::vector<std::pair<int64_t, int64_t>> &out) const {
    out.insert(out.end(), runs.begin(), runs.end());
  }

private:
  std::map<int64_t, int64_t> runs;
};

/// The address space that placed buffers take over time, answering "which
/// bytes are taken at some step of [s, e]?" as merged runs, in time
/// proportional to the number of runs rather than of buffers. A segment
/// tree over steps: a buffer live over [s, e] is added to `here` of the
/// O(log n) nodes that cover [s, e] exactly, and to `below` of those nodes
/// and of every node on the paths from the leaves s and e to the root
/// (which hold the covering nodes' ancestors). A query for [s, e] reads
/// `below` of its covering nodes (buffers live somewhere inside them) and
/// `here` of the nodes on its own two leaf-to-root paths (buffers live
/// across a node that contains s or e): exactly the buffers live at some
/// step of [s, e], each set already merged.
///
/// At the peak of a long step nearly every placed buffer is live (the
/// forward products of N parameters before their sum); listing them for
/// each buffer to place made offset assignment quadratic (16,000
/// parameters: 35% of the planner's time, N^1.35 overall), while their
/// runs are few: packed buffers merge into one.
class TakenIndex {
public:
  TakenIndex(int64_t first, int64_t last)
      : first(first),
        width(llvm::PowerOf2Ceil(std::max<int64_t>(1, last - first + 1))),
        here(2 * width, 0), below(2 * width, 0) {}

  void insert(int64_t s, int64_t e, int64_t lo, int64_t hi) {
    forCover(s, e, [&](int64_t node) {
      runsAt(here, node).add(lo, hi);
      runsAt(below, node).add(lo, hi);
    });
    forPaths(s, e, [&](int64_t node) { runsAt(below, node).add(lo, hi); });
  }

  /// Appends the runs taken at some step of [s, e], unsorted and possibly
  /// overlapping one another.
  void taken(int64_t s, int64_t e,
             std::vector<std::pair<int64_t, int64_t>> &out) const {
    forCover(s, e, [&](int64_t node) {
      if (below[node])
        pool[below[node] - 1].appendTo(out);
    });
    forPaths(s, e, [&](int64_t node) {
      if (here[node])
        pool[here[node] - 1].appendTo(out);
    });
  }

private:
  /// The nodes whose step ranges partition [s, e].
  template <typename Fn> void forCover(int64_t s, int64_t e, Fn fn) const {
    for (int64_t lo = leaf(s), hi = leaf(e) + 1; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1)
        fn(lo++);
      if (hi & 1)
        fn(--hi);
    }
  }
  /// The nodes on the paths from the leaves s and e to the root, once each.
  template <typename Fn> void forPaths(int64_t s, int64_t e, Fn fn) const {
    for (int64_t a = leaf(s), b = leaf(e); a >= 1; a /= 2, b /= 2) {
      fn(a);
      if (b != a)
        fn(b);
    }
  }
  int64_t leaf(int64_t step) const { return width + step - first; }
  Runs &runsAt(std::vector<uint32_t> &slots, int64_t node) {
    if (!slots[node]) {
      pool.emplace_back();
      slots[node] = pool.size();
    }
    return pool[slots[node] - 1];
  }

  int64_t first, width;
  std::vector<uint32_t> here, below; ///< node -> 1 + index into pool, or 0
  std::deque<Runs> pool;
};
} // namespace

/// Places `buffers[idx]` in that order, each at the smallest gap of the
/// address space taken during its lifetime (best fit), else at the end;
/// writes the offsets to `offsets` (by buffer index) and returns the top.
static int64_t placeInOrder(const std::vector<Buffer> &buffers,
                            ArrayRef<size_t> idx, int64_t alignment,
                            int64_t first, int64_t last,
                            std::vector<int64_t> &offsets) {
  TakenIndex placed(first, std::max(first, last));
  int64_t top = 0;
  std::vector<std::pair<int64_t, int64_t>> taken;
  for (size_t i : idx) {
    const Buffer &b = buffers[i];
    int64_t size = alignTo(std::max<int64_t>(b.bytes, 1), alignment);
    // The address space taken during b's lifetime, by offset.
    taken.clear();
    if (b.start <= b.end)
      placed.taken(b.start, b.end, taken);
    llvm::sort(taken);
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [lo, hi] : taken) {
      if (lo - cursor >= size && lo - cursor < bestGap) {
        best = cursor;
        bestGap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    offsets[i] = best >= 0 ? best : cursor;
    top = std::max(top, offsets[i] + size);
    if (b.start <= b.end)
      placed.insert(b.start, b.end, offsets[i], offsets[i] + size);
  }
  return top;
}

/// The most aligned bytes of `buffers[idx]` live at one step: no placement
/// can have a lower top.
static int64_t liveBound(const std::vector<Buffer> &buffers,
                         ArrayRef<size_t> idx, int64_t alignment) {
  std::vector<std::pair<int64_t, int64_t>> events; // (step, +/- bytes)
  for (size_t i : idx) {
    const Buffer &b = buffers[i];
    if (b.start > b.end)
      continue;
    int64_t size = alignTo(std::max<int64_t>(b.bytes, 1), alignment);
    events.push_back({b.start, size});
    events.push_back({b.end + 1, -size});
  }
  // At equal steps, ends (negative) before starts.
  llvm::sort(events);
  int64_t live = 0, most = 0;
  for (auto [step, delta] : events) {
    live += delta;
    most = std::max(most, live);
  }
  return most;
}

int64_t mlir::tg::assignOffsets(std::vector<Buffer> &buffers,
                                int64_t alignment) {
  std::vector<size_t> idx;
  int64_t first = 0, last = 0;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (!buffers[i].persistent && !buffers[i].nested) {
      first = idx.empty() ? buffers[i].start
                          : std::min(first, buffers[i].start);
      last = idx.empty() ? buffers[i].end : std::max(last, buffers[i].end);
      idx.push_back(i);
    }
  // Largest first; a total order (index last) keeps plans deterministic.
  auto bySize = [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    if (buffers[a].start != buffers[b].start)
      return buffers[a].start < buffers[b].start;
    return a < b;
  };
  llvm::sort(idx, bySize);
  std::vector<int64_t> offsets(buffers.size(), 0), trial(buffers.size(), 0);
  int64_t top = placeInOrder(buffers, idx, alignment, first, last, offsets);
  // Largest first leaves gaps where a long-lived small buffer lands between
  // short-lived large ones (the LeNet's pooling masks: 1.102 of the bound).
  // Where it misses the bound, four more orders are tried and the lowest
  // top kept (the first on ties): longest-lived first, most bytes x steps
  // first, earliest start first, latest end first (LeNet: 1.102 -> 1.034).
  // Plans that meet the bound pay for one search only.
  int64_t bound = liveBound(buffers, idx, alignment);
  if (top > bound) {
    auto span = [&](size_t i) {
      return std::max<int64_t>(0, buffers[i].end - buffers[i].start + 1);
    };
    SmallVector<std::function<bool(size_t, size_t)>> orders = {
        [&](size_t a, size_t b) {
          if (span(a) != span(b))
            return span(a) > span(b);
          return bySize(a, b);
        },
        [&](size_t a, size_t b) {
          double x = double(span(a)) * double(buffers[a].bytes),
                 y = double(span(b)) * double(buffers[b].bytes);
          if (x != y)
            return x > y;
          return bySize(a, b);
        },
        [&](size_t a, size_t b) {
          if (buffers[a].start != buffers[b].start)
            return buffers[a].start < buffers[b].start;
          return bySize(a, b);
        },
        [&](size_t a, size_t b) {
          if (buffers[a].end != buffers[b].end)
            return buffers[a].end > buffers[b].end;
          return bySize(a, b);
        }};
    for (auto &order : orders) {
      std::vector<size_t> other = idx;
      llvm::sort(other, order);
      int64_t t = placeInOrder(buffers, other, alignment, first, last, trial);
      if (t < top) {
        top = t;
        offsets.swap(trial);
      }
      if (top <= bound)
        break;
    }
  }
  for (size_t i : idx)
    buffers[i].offset = offsets[i];
  return top;
}

// Op scratch: one buffer per op, live at its step (MemoryPlanScratch.h).
void mlir::tg::addScratchBuffer(
    Operation *op, int64_t at, std::vector<Buffer> &buffers,
    std::vector<std::pair<Operation *, size_t>> &scratchOf) {
  IntegerAttr bytes = getScratchBytes(op);
  if (!bytes || bytes.getInt() <= 0)
    return;
  Buffer buf;
  buf.op = op->getName().getStringRef().str();
  buf.loc = locString(op->getLoc());
  buf.name = buf.op + "#" + std::to_string(at) + " scratch";
  buf.kind = BufferKind::Scratch;
  buf.bytes = bytes.getInt();
  buf.start = buf.end = at;
  scratchOf.push_back({op, buffers.size()});
  buffers.push_back(buf);
}

void mlir::tg::recordScratchOffsets(
    ArrayRef<std::pair<Operation *, size_t>> scratchOf,
    const std::vector<Buffer> &buffers) {
  for (auto [op, id] : scratchOf)
    setScratchOffset(op, buffers[id].offset);
}
