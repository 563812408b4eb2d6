//===- VectorizeElementwise.cpp - vector loops for elementwise ops -*- C++ -*-===//
//
// The tg-vectorize-elementwise pass (see Passes.td): every linalg.generic
// on buffers that tg-select-vector-widths gave a `tg_cpu.vector_width`
// becomes a loop nest whose innermost loop runs that many lanes at a time.
// Its body's scalar ops are cloned on vectors, so tanh, exp and log (inline
// polynomials after tg-approximate-math) run 8 or 16 lanes per instruction
// instead of one libm call per element.
//
// Each element is computed by the same ops, in the same loop order, as in
// the scalar loops convert-linalg-to-loops would emit: where the innermost
// loop is a reduction, only the map before the combining op (`exp(x - m)`
// of `acc + exp(x - m)`) is vectorised, and the lanes are combined into the
// accumulator one by one, in order. So results are bit-identical to the
// scalar lowering (test/cpu/MathApproxTest.cpp checks it), and no sum is
// reassociated that the reference evaluator sums in order.
//
// An operand's indices may be sums of loops and constants (a window's
// `y + i`, a padded `x + 4 - j`): what matters is that along the innermost
// loop its last index steps by exactly one element, so lanes are
// consecutive. That lets the convolutions' stride-1 im2col copies and
// col2im sums (ConvPoolToLinalg.cpp) run as vector rows; LLVM left them
// scalar, unable to prove their arena views apart (LeNet's col2im: 10% of
// its step as scalar adds).
//
// The analysis that decides whether a generic qualifies is here too
// (vectorizableElementBits), shared with tg-select-vector-widths.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoopIndices.h"
#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_VECTORIZEELEMENTWISEPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;
using mlir::tg::cpu::index;
using mlir::tg::cpu::indicesAt;

namespace {

/// What the vector loop nest of one generic needs: its loop ranges, the
/// innermost loop, and where that loop reduces, each result's combining op.
struct Plan {
  SmallVector<int64_t> ranges;
  unsigned inner = 0;
  bool innerReduction = false;
  SmallVector<Operation *> combiners; // by init, when innerReduction
  unsigned bits = 32;
};

/// Whether `e` is a sum of constants and constant multiples of loops (a
/// window's `y * stride + tap - pad`): what LoopIndices.h computes.
bool isLinearInLoops(AffineExpr e) {
  if (isa<AffineDimExpr, AffineConstantExpr>(e))
    return true;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin || (e.getKind() != AffineExprKind::Add &&
               e.getKind() != AffineExprKind::Mul))
    return false;
  if (e.getKind() == AffineExprKind::Mul && !bin.getLHS().isSymbolicOrConstant() &&
      !bin.getRHS().isSymbolicOrConstant())
    return false;
  return isLinearInLoops(bin.getLHS()) && isLinearInLoops(bin.getRHS());
}

/// Whether `e` (linear in the loops) advances by exactly one element per
/// step of loop `inner`, so that lanes of that loop read consecutive
/// elements: `e - inner` no longer depends on it.
bool stepsByOne(AffineExpr e, unsigned inner, unsigned dims) {
  AffineExpr rest = simplifyAffineExpr(
      e - getAffineDimExpr(inner, e.getContext()), dims, 0);
  return !rest.isFunctionOfDim(inner);
}

/// Scalar types a vector of the body may hold.
bool isScalar(Type t) { return isa<IntegerType, FloatType, IndexType>(t); }

unsigned bitsOf(Type t) {
  return isa<IndexType>(t) ? 64 : t.getIntOrFloatBitWidth();
}

FailureOr<Plan> analyse(linalg::GenericOp op, std::string &why) {
  auto fail = [&](const Twine &reason) -> FailureOr<Plan> {
    why = reason.str();
    return failure();
  };
  if (!op.hasPureBufferSemantics())
    return fail("not on buffers");
  Plan plan;
  plan.ranges = op.getStaticLoopRanges();
  if (plan.ranges.empty())
    return fail("no loops");
  if (llvm::any_of(plan.ranges, ShapedType::isDynamic))
    return fail("dynamic loop ranges");
  plan.inner = plan.ranges.size() - 1;
  if (plan.ranges[plan.inner] < 2)
    return fail("innermost extent below 2");
  plan.innerReduction =
      op.getIteratorTypesArray()[plan.inner] == utils::IteratorType::reduction;

  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      return fail("an operand is not a buffer");
    Type elt = type.getElementType();
    // vector<8xi1> is one byte in memory, a memref<8xi1> eight.
    if (!isa<IntegerType, FloatType>(elt) ||
        elt.getIntOrFloatBitWidth() % 8 != 0)
      return fail("an operand's elements are not whole bytes");
    plan.bits = std::max(plan.bits, elt.getIntOrFloatBitWidth());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    unsigned uses = 0;
    for (AffineExpr e : map.getResults()) {
      if (!isLinearInLoops(e))
        return fail("an index is not a sum of loops and constants");
      uses += e.isFunctionOfDim(plan.inner);
    }
    if (uses == 0) {
      if (op.isDpsInit(&operand) && !plan.innerReduction)
        return fail("a result is not indexed by the innermost loop");
      continue;
    }
    if (op.isDpsInit(&operand) && plan.innerReduction)
      return fail("a result is indexed by the reduced loop");
    if (uses != 1 || !map.getResults().back().isFunctionOfDim(plan.inner) ||
        !stepsByOne(map.getResults().back(), plan.inner, map.getNumDims()))
      return fail("an operand is not contiguous along the innermost loop");
    // Lanes load before they store: an input that is also a result must
    // be read where it is written, as the scalar loop reads it.
    if (!op.isDpsInit(&operand))
      for (OpOperand &init : op.getDpsInitsMutable())
        if (init.get() == operand.get() &&
            op.getMatchingIndexingMap(&init) != map)
          return fail("an input is a result read at other positions");
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return fail("an operand's last dimension has no unit stride");
  }

  Block &body = op.getRegion().front();
  for (BlockArgument arg : body.getArguments())
    plan.bits = std::max(plan.bits, bitsOf(arg.getType()));
  for (Operation &o : body.without_terminator()) {
    if (o.getNumRegions() != 0)
      return fail("the body has an op with regions");
    if (!isa<linalg::IndexOp, arith::ConstantOp>(o) &&
        !o.hasTrait<OpTrait::Vectorizable>())
      return fail(Twine("'") + o.getName().getStringRef() +
                  "' has no vector form");
    SmallVector<Type> types(o.getOperandTypes());
    llvm::append_range(types, o.getResultTypes());
    for (Type t : types) {
      if (!isScalar(t))
        return fail("the body computes with a non-scalar value");
      plan.bits = std::max(plan.bits, bitsOf(t));
    }
  }

  if (!plan.innerReduction)
    return plan;
  // Each result is combine(acc, x) with x independent of every
  // accumulator: x is then computed lanes at a time, and the combining op
  // applied lane by lane in order.
  Operation *yield = body.getTerminator();
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    Value result = yield->getOperand(init.getOperandNumber() -
                                     op.getNumDpsInputs());
    Operation *combine = result.getDefiningOp();
    if (!combine || combine->getBlock() != &body ||
        combine->getNumOperands() != 2 || combine->getNumResults() != 1 ||
        !result.hasOneUse() || !acc.hasOneUse() ||
        !llvm::is_contained(combine->getOperands(), Value(acc)) ||
        combine->getOperand(0) == combine->getOperand(1))
      return fail("a reduced result is not one op on its accumulator");
    // A sum that may be reassociated is LLVM's to vectorise with partial
    // sums (the matmul's dot form when the GEMM kernels are off).
    if (auto fm = dyn_cast<arith::ArithFastMathInterface>(combine))
      if (arith::bitEnumContainsAll(fm.getFastMathFlagsAttr().getValue(),
                                    arith::FastMathFlags::reassoc))
        return fail("a reassociable reduction");
    plan.combiners.push_back(combine);
  }
  // A plain sum or max has nothing to compute lanes at a time before its
  // in-order combination: the scalar loop is as fast.
  if (llvm::all_of(body.without_terminator(), [&](Operation &o) {
        return llvm::is_contained(plan.combiners, &o) ||
               isa<arith::ConstantOp, linalg::IndexOp>(o);
      }))
    return fail("nothing to vectorise before the in-order reduction");
  return plan;
}

/// Emits the vector loop nest of one generic in its place.
class Emitter {
public:
  Emitter(linalg::GenericOp op, Plan plan, int64_t width)
      : op(op), plan(std::move(plan)), width(width), loc(op.getLoc()),
        point(this->plan.ranges.size()) {}

  void emit(OpBuilder &b) { emitLoop(b, 0); }

private:
  linalg::GenericOp op;
  Plan plan;
  int64_t width;
  Location loc;
  /// The current loop point, by loop dimension (the innermost: the first
  /// lane's index).
  SmallVector<Value> point;

  VectorType vectorOf(Type t) { return VectorType::get({width}, t); }

  /// One scf.for per loop outside the innermost, in the generic's order.
  void emitLoop(OpBuilder &b, unsigned d) {
    if (d == plan.inner)
      return emitInner(b);
    if (plan.ranges[d] == 1) {
      point[d] = index(b, loc, 0);
      return emitLoop(b, d + 1);
    }
    scf::ForOp::create(b, loc, index(b, loc, 0), index(b, loc, plan.ranges[d]),
                       index(b, loc, 1), ValueRange{},
                       [&](OpBuilder &nb, Location l, Value iv, ValueRange) {
                         point[d] = iv;
                         emitLoop(nb, d + 1);
                         scf::YieldOp::create(nb, l);
                       });
  }

  /// Full vectors, then the last `n mod width` lanes masked. A reduced
  /// result is loaded before, carried through, and stored after.
  void emitInner(OpBuilder &b) {
    int64_t n = plan.ranges[plan.inner], full = n / width * width;
    SmallVector<Value> accs;
    if (plan.innerReduction)
      for (OpOperand &init : op.getDpsInitsMutable())
        accs.push_back(memref::LoadOp::create(
            b, loc, init.get(), indices(b, op.getMatchingIndexingMap(&init))));
    if (full > 0) {
      auto loop = scf::ForOp::create(
          b, loc, index(b, loc, 0), index(b, loc, full), index(b, loc, width),
          accs, [&](OpBuilder &nb, Location l, Value iv, ValueRange args) {
            point[plan.inner] = iv;
            scf::YieldOp::create(nb, l, emitBody(nb, width, args));
          });
      accs.assign(loop.getResults().begin(), loop.getResults().end());
    }
    if (full < n) {
      point[plan.inner] = index(b, loc, full);
      accs = emitBody(b, n - full, accs);
    }
    for (auto [init, acc] : llvm::zip(op.getDpsInitsMutable(), accs))
      memref::StoreOp::create(b, loc, acc, init.get(),
                              indices(b, op.getMatchingIndexingMap(&init)));
  }

  SmallVector<Value> indices(OpBuilder &b, AffineMap map) {
    return indicesAt(b, loc, map, point);
  }

  Value broadcast(OpBuilder &b, Value scalar) {
    return vector::BroadcastOp::create(b, loc, vectorOf(scalar.getType()),
                                       scalar);
  }

  /// The body on `lanes` lanes from the current point (a mask below the
  /// full width); returns the reduced results' new accumulators.
  SmallVector<Value> emitBody(OpBuilder &b, int64_t lanes, ValueRange accs) {
    Value mask;
    if (lanes < width)
      mask = vector::ConstantMaskOp::create(
          b, loc, VectorType::get({width}, b.getI1Type()),
          ArrayRef<int64_t>{lanes});
    Block &body = op.getRegion().front();
    IRMapping vec; // scalar value of the body -> its vector
    auto vectorValue = [&](Value v) {
      if (!vec.contains(v)) // defined above the generic: the same in every lane
        vec.map(v, broadcast(b, v));
      return vec.lookup(v);
    };

    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      if (arg.use_empty() || (plan.innerReduction && op.isDpsInit(&operand)))
        continue;
      AffineMap map = op.getMatchingIndexingMap(&operand);
      SmallVector<Value> idx = indices(b, map);
      if (!llvm::any_of(map.getResults(), [&](AffineExpr e) {
            return e.isFunctionOfDim(plan.inner);
          })) {
        vec.map(arg, broadcast(b, memref::LoadOp::create(b, loc,
                                                         operand.get(), idx)));
        continue;
      }
      VectorType type = vectorOf(arg.getType());
      if (!mask) {
        vec.map(arg, vector::LoadOp::create(b, loc, type, operand.get(), idx));
        continue;
      }
      // Masked lanes read 0 (computed on, never stored or combined).
      Value zero =
          arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(type)));
      vec.map(arg, vector::MaskedLoadOp::create(b, loc, type, operand.get(),
                                                idx, mask, zero));
    }

    for (Operation &o : body.without_terminator()) {
      if (llvm::is_contained(plan.combiners, &o))
        continue;
      if (auto idx = dyn_cast<linalg::IndexOp>(o)) {
        Value at = broadcast(b, point[idx.getDim()]);
        if (idx.getDim() == plan.inner) {
          SmallVector<APInt> steps;
          for (int64_t l = 0; l < width; ++l)
            steps.push_back(APInt(64, l));
          VectorType type = vectorOf(b.getIndexType());
          Value step = arith::ConstantOp::create(
              b, loc, DenseElementsAttr::get(type, steps));
          at = arith::AddIOp::create(b, loc, at, step);
        }
        vec.map(idx.getResult(), at);
        continue;
      }
      if (auto c = dyn_cast<arith::ConstantOp>(o)) {
        auto splat = DenseElementsAttr::get(vectorOf(c.getType()),
                                            ArrayRef<Attribute>{c.getValue()});
        vec.map(c.getResult(), arith::ConstantOp::create(b, loc, splat));
        continue;
      }
      for (Value v : o.getOperands())
        vectorValue(v);
      Operation *clone = b.clone(o, vec);
      for (OpResult r : clone->getResults())
        r.setType(vectorOf(r.getType()));
    }

    Operation *yield = body.getTerminator();
    SmallVector<Value> next;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      unsigned i = init.getOperandNumber() - op.getNumDpsInputs();
      if (!plan.innerReduction) {
        Value v = vectorValue(yield->getOperand(i));
        SmallVector<Value> idx =
            indices(b, op.getMatchingIndexingMap(&init));
        if (mask)
          vector::MaskedStoreOp::create(b, loc, init.get(), idx, mask, v);
        else
          vector::StoreOp::create(b, loc, v, init.get(), idx);
        continue;
      }
      // acc = combine(acc, x[l]) for each lane in order, as the scalar
      // loop would.
      Operation *combine = plan.combiners[i];
      BlockArgument accArg = op.getMatchingBlockArgument(&init);
      Value x = combine->getOperand(0) == accArg ? combine->getOperand(1)
                                                 : combine->getOperand(0);
      Value xs = vectorValue(x), acc = accs[i];
      for (int64_t l = 0; l < lanes; ++l) {
        IRMapping scalar;
        scalar.map(accArg, acc);
        scalar.map(x, vector::ExtractOp::create(b, loc, xs, l).getResult());
        acc = b.clone(*combine, scalar)->getResult(0);
      }
      next.push_back(acc);
    }
    return next;
  }
};

struct VectorizeElementwisePass final
    : tg::cpu::impl::VectorizeElementwisePassBase<VectorizeElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> chosen;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op->hasAttr(tg::cpu::kVectorWidthAttr))
        chosen.push_back(op);
    });
    for (linalg::GenericOp op : chosen) {
      auto width = dyn_cast<IntegerAttr>(op->getAttr(tg::cpu::kVectorWidthAttr));
      if (!width || width.getInt() < 2 || width.getInt() > 64) {
        op.emitOpError() << "'" << tg::cpu::kVectorWidthAttr
                         << "' must be an integer from 2 to 64 lanes";
        return signalPassFailure();
      }
      std::string why;
      FailureOr<Plan> plan = analyse(op, why);
      if (failed(plan)) {
        op.emitOpError() << "cannot be vectorised as '"
                         << tg::cpu::kVectorWidthAttr << "' asks: " << why;
        return signalPassFailure();
      }
      OpBuilder b(op);
      Emitter(op, std::move(*plan), width.getInt()).emit(b);
      op.erase();
    }
  }
};

} // namespace

FailureOr<unsigned>
mlir::tg::cpu::vectorizableElementBits(linalg::GenericOp op,
                                       std::string *why) {
  std::string reason;
  FailureOr<Plan> plan = analyse(op, reason);
  if (failed(plan)) {
    if (why)
      *why = reason;
    return failure();
  }
  return plan->bits;
}
