//===- SimtReductionLowering.h - the reduction kernels' lowering -*- C++ -*-===//
//
// Private to SimtReduction.cpp and SimtReductionSplit.cpp (the partial and
// combine kernels of a reduction split over blocks): the class that lowers
// one reduction group to its kernel(s), and its helpers. See
// SimtReduction.cpp's file comment for the kernels' structure.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_CODEGEN_NVPTX_SIMTREDUCTIONLOWERING_H
#define TGC_CODEGEN_NVPTX_SIMTREDUCTIONLOWERING_H

#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/KernelGen.h"
#include "codegen/nvptx/SimtReduction.h"

#include "dialects/TGOps.h"

#include <map>
#include <optional>

namespace tg::nvptx::detail::reduction {

using namespace mlir;
namespace tgd = mlir::tg;

/// Dynamic shared memory a launch may use without opting in.
inline constexpr uint32_t kSmemLimit = 48 * 1024;

/// The reductions: sum, mean, max.
enum class RedKind { Sum, Mean, Max };

inline std::optional<RedKind> redKind(Operation *op) {
  if (isa<tgd::SumOp>(op))
    return RedKind::Sum;
  if (isa<tgd::MeanOp>(op))
    return RedKind::Mean;
  if (isa<tgd::MaxOp>(op))
    return RedKind::Max;
  return std::nullopt;
}

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
inline Type elemOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

inline int64_t numElements(ArrayRef<int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// The reduction input and sorted, non-negative axes of a reduction op.
inline std::pair<Value, SmallVector<int64_t>> domainOf(Operation *op) {
  Value in = op->getOperand(0);
  int64_t rank = shapeOf(in).size();
  SmallVector<int64_t> axes;
  for (int64_t a : cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef())
    axes.push_back(a < 0 ? a + rank : a);
  llvm::sort(axes);
  return {in, axes};
}

/// What one kernel computes: the values its parameters hold (operands,
/// then results) and the ops between, in order.
struct Program {
  Operation *anchor = nullptr;
  SmallVector<Value> inputs;
  SmallVector<Operation *> ops;
  SmallVector<Value> results;
};

/// One dimension of a symbolic index: 0, outer dimension `d` or inner
/// dimension `d` of the domain.
/// The program of `op` (isReductionKernelOp: a group's body, or the op
/// alone), and whether it asks for the row kernel.
Program programOf(Operation *op, bool &row);

struct Ix {
  enum Kind : uint8_t { Zero, Outer, Inner } kind = Zero;
  uint8_t d = 0;
  bool operator==(const Ix &o) const { return kind == o.kind && d == o.d; }
};
using Index = SmallVector<Ix, 6>;

/// Lowers one Program to one kernel (see the file comment).
class ReductionLowering {
public:
  ReductionLowering(const Program &p, Target t, ModuleOp kernels)
      : p(p), target(t), kernels(kernels) {}

  FailureOr<std::vector<KernelLaunch>> run(bool rowKernel);
  /// The scratch bytes run(rowKernel) gives its launches (0: none) with
  /// `blocks` per row (kRowBlocksAttr), from the shapes alone: no plan is
  /// read and no kernel is built (tg-size-gpu-scratch).
  FailureOr<uint64_t> scratchBytes(bool rowKernel, int64_t blocks);

private:
  // Analysis.
  LogicalResult analyze();
  // Kernel structure.
  LogicalResult buildRowKernel();
  LogicalResult buildReductionKernel();
  FailureOr<SmallVector<Value>> pass(ArrayRef<Operation *> reds, bool stores,
                                     Value start, Value ub, Value step);
  Value warpReduce(RedKind k, Value v);
  SmallVector<Value> warpReduceAll(ArrayRef<Operation *> reds,
                                   ArrayRef<Value> vals);
  void combineAll(ArrayRef<Operation *> reds, MutableArrayRef<Value> acc,
                  ArrayRef<Value> x);
  int partnerIndex(ArrayRef<Operation *> reds, unsigned i) const;
  Value rescale(Value mOld, Value mNew);
  FailureOr<std::pair<Value, Value>> onlineStep(Operation *max, Value m,
                                                Value l, Value x);
  void detectOnlinePairs();
  void finishAll(ArrayRef<Operation *> reds, ArrayRef<Value> vals);
  SmallVector<Value> blockCombine(ArrayRef<Operation *> reds,
                                  ArrayRef<Value> partials, int64_t slot,
                                  int64_t warps, Value warp, Value lane);
  Value finishReduction(Operation *red, Value acc);
  enum class Sync { None, Warp, Block };
  LogicalResult storeRowResults(Value isFirst, Sync sync);
  LogicalResult buildCombineKernel();
  LogicalResult buildSplitRowKernel();
  void foldRowPartials(unsigned phasesDone, Value row);
  Value rowScratchSlot(Operation *red, Value row, Value slice);
  LogicalResult readRowBlocks();
  void storePartials(ArrayRef<Value> vals, Value isFirst, Value slice);
  Value scratchSlot(unsigned red, Value slice);
  void geometry(bool rowKernel);
  /// This stage's scratch (a split stage: reductions x slices x outputs x 8).
  uint64_t launchScratchBytes() const;
  LogicalResult emitKernel(const std::string &sym, bool rowKernel);
  bool isFull(unsigned result) const;
  LogicalResult checkPlan() const;
  Value sharedSlot(int64_t byteOffset, Value index);

  // Values at symbolic indices.
  FailureOr<Value> eval(Value v, const Index &idx);
  FailureOr<Value> evalOp(Operation *op, Value v, const Index &idx);
  Value materialize(Ix x);
  Value offsetOf(const Index &idx, ArrayRef<int64_t> shape);
  Index canonical(ArrayRef<int64_t> shape, bool full) const;
  Index broadcastTo(const Index &idx, ArrayRef<int64_t> from,
                    ArrayRef<int64_t> to) const;
  bool hasInner(const Index &idx) const;
  std::string key(Value v, const Index &idx) const;
  Value ic(int64_t v) { return it == w->i32 ? w->i32c(v) : w->i64c(v); }

  // Reduction arithmetic.
  Value initOf(RedKind k, Type t);
  Value combine(RedKind k, Value a, Value b);
  Value shflXor(Value v, int lane);

  /// Runs `fn` with the builder before the loop being filled (outer scope).
  template <typename Fn> auto atOuter(Fn fn) {
    OpBuilder::InsertionGuard g(w->b);
    if (loop)
      w->b.setInsertionPoint(loop);
    return fn();
  }

  const Program &p;
  Target target;
  ModuleOp kernels;
  KernelBuilder *w = nullptr;

  // The domain.
  SmallVector<int64_t> dom, outerDims, innerDims, outerStride, innerStride;
  SmallVector<int8_t> dimRole; // per dim of dom: Ix::Kind
  SmallVector<uint8_t> dimPos; // per dim: position among outer/inner dims
  int64_t kn = 1, rn = 1;
  bool trailing = false, rowMajor = false;
  Type it;
  int64_t maxPerPhase = 1;
  /// Consecutive elements a thread takes per step of a row pass.
  int64_t vec = 1;

  // Phases.
  SmallVector<SmallVector<Operation *>> phases; // phases[i]: phase i + 1
  DenseMap<Value, Value> params, resultParams; ///< kernel arguments

  // Per-launch geometry.
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t smemBytes = 0;
  /// Blocks (rows of blocks for column sums) the reduced range is split
  /// over; > 1: a partial and a combine kernel (file comment).
  int64_t slices = 1;
  /// Which kernel is being built: the only one, one of the split pair, or
  /// one of a split row's launches (a statistics kernel per phase, then
  /// the kernel that writes the outputs).
  enum class Stage { Whole, Partial, Combine, RowPartial, RowFinal } stage =
      Stage::Whole;
  /// Blocks per row of a split row kernel (kRowBlocksAttr), and the phase
  /// a RowPartial kernel reduces.
  int64_t rowBlocks = 1;
  unsigned rowPhase = 0;
  /// The caller asked for the row kernel (online pairs are its alone).
  bool rowRequested = false;
  /// Online max-and-sum: a max whose row value feeds a sum of
  /// exp(x - max) over the same x, mapped to that sum (and back); the pair
  /// is reduced in one pass as a running (m, l).
  DenseMap<Operation *, Operation *> onlineSumOf, onlineMaxOf;
  /// The slices' partials (split reductions only).
  Value scratch;

  // Code generation state.
  Value k, j, rowBase, smem;
  Operation *loop = nullptr;
  DenseMap<Operation *, Value> reduced;
  /// Values at indices without (outer) and with (inner) an inner dimension;
  /// a pass keeps one inner memo per element of its group.
  std::map<std::string, Value> outerMemo;
  std::vector<std::map<std::string, Value>> innerMemos{1};
  std::map<std::string, Value> *innerMemo = &innerMemos[0];
};

} // namespace tg::nvptx::detail::reduction

#endif // TGC_CODEGEN_NVPTX_SIMTREDUCTIONLOWERING_H
