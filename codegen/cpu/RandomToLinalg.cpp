//===- RandomToLinalg.cpp - dropout and random to linalg --------*- C++ -*-===//
//
// Philox-4x32-10 written in arith (arith.mului_extended gives the high and
// low halves of each 32x32 product), evaluated per element inside a
// parallel linalg.generic with the mapping of include/tgc/Philox.h: counter
// (i / 4, stream), key = seed, word i % 4. Dropout compares the word with
// the integer threshold; random maps it to uniform or (Box-Muller, in f64)
// normal draws.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"
#include "tgc/Philox.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cpu;

namespace {

struct Philox {
  OpBuilder &b;
  Location loc;

  Value i32(uint32_t v) {
    return arith::ConstantOp::create(b, loc,
                                     b.getI32IntegerAttr(static_cast<int32_t>(v)));
  }
  Value i64(uint64_t v) {
    return arith::ConstantOp::create(
        b, loc, b.getI64IntegerAttr(static_cast<int64_t>(v)));
  }
  Value lo(Value v64) {
    return arith::TruncIOp::create(b, loc, b.getI32Type(), v64);
  }
  Value hi(Value v64) {
    return lo(arith::ShRUIOp::create(b, loc, v64, i64(32)));
  }

  /// The four words of philox4x32_10(counter, key).
  std::array<Value, 4> block(std::array<Value, 4> c, std::array<Value, 2> k) {
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        k[0] = arith::AddIOp::create(b, loc, k[0], i32(0x9E3779B9u));
        k[1] = arith::AddIOp::create(b, loc, k[1], i32(0xBB67AE85u));
      }
      auto p0 = arith::MulUIExtendedOp::create(b, loc, i32(0xD2511F53u), c[0]);
      auto p1 = arith::MulUIExtendedOp::create(b, loc, i32(0xCD9E8D57u), c[2]);
      Value x0 = arith::XOrIOp::create(
          b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), c[1]), k[0]);
      Value x2 = arith::XOrIOp::create(
          b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), c[3]), k[1]);
      c = {x0, p1.getLow(), x2, p0.getLow()};
    }
    return c;
  }

  /// The block of element `index` (i64) of `stream` under `seed` (i64).
  std::array<Value, 4> words(Value seed, uint64_t stream, Value index) {
    Value blk = arith::ShRUIOp::create(b, loc, index, i64(2));
    return block({lo(blk), hi(blk), i32(uint32_t(stream)),
                  i32(uint32_t(stream >> 32))},
                 {lo(seed), hi(seed)});
  }

  /// words[sel] for an i64 selector in [0, 4).
  Value pick(ArrayRef<Value> w, Value sel) {
    Value r = w[0];
    for (int k = 1; k < static_cast<int>(w.size()); ++k) {
      Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, sel,
                                       i64(k));
      r = arith::SelectOp::create(b, loc, is, w[k], r);
    }
    return r;
  }

  /// A word as f64 in [0, 2^32).
  Value toF64(Value word) {
    return arith::UIToFPOp::create(b, loc, b.getF64Type(), word);
  }
  Value f64(double v) { return scalarConstant(b, loc, b.getF64Type(), v); }
};

/// The i64 seed scalar of a tensor<i64> operand.
Value seedScalar(OpBuilder &b, Location loc, Value seed) {
  return tensor::ExtractOp::create(b, loc, seed, ValueRange{});
}

struct DropoutLowering final : OpConversionPattern<DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    double p = op.getP().convertToDouble();
    auto stream = static_cast<uint64_t>(op.getStreamAttr().getInt());
    Value seed = seedScalar(rw, op.getLoc(), adaptor.getSeed());
    Value r = buildElementwise(
        rw, op.getLoc(), type, adaptor.getInput(),
        [&](OpBuilder &b, Location l, ValueRange a) {
          Philox ph{b, l};
          Value index = linearIndex(b, l, type.getShape());
          std::array<Value, 4> w = ph.words(seed, stream, index);
          Value word = ph.pick(w, arith::AndIOp::create(b, l, index, ph.i64(3)));
          Value wide = arith::ExtUIOp::create(b, l, b.getI64Type(), word);
          Value keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                             wide,
                                             ph.i64(tgc::dropoutThreshold(p)));
          // x * (keep ? 1/(1-p) : 0), not a select: a dropped inf or NaN
          // stays NaN, as in PyTorch (and the reference).
          Type t = a[0].getType();
          Value factor = arith::SelectOp::create(
              b, l, keep, scalarConstant(b, l, t, 1.0 / (1.0 - p)),
              scalarConstant(b, l, t, 0));
          return arith::MulFOp::create(b, l, a[0], factor);
        });
    rw.replaceOp(op, r);
    return success();
  }
};

struct RandomLowering final : OpConversionPattern<RandomOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RandomOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    double lo = op.getA().convertToDouble(), hi = op.getB().convertToDouble();
    bool normal = op.getDistribution() == RandomDistribution::normal;
    auto stream = static_cast<uint64_t>(op.getStreamAttr().getInt());
    Value seed = seedScalar(rw, op.getLoc(), adaptor.getSeed());
    Value r = buildParallel(
        rw, op.getLoc(), type, ValueRange{}, {},
        [&](OpBuilder &b, Location l, ValueRange) -> Value {
          Philox ph{b, l};
          Value index = linearIndex(b, l, type.getShape());
          std::array<Value, 4> w = ph.words(seed, stream, index);
          Value lane = arith::AndIOp::create(b, l, index, ph.i64(3));
          if (!normal) {
            Value u = arith::MulFOp::create(b, l, ph.toF64(ph.pick(w, lane)),
                                            ph.f64(0x1p-32));
            return arith::AddFOp::create(
                b, l, ph.f64(lo),
                arith::MulFOp::create(b, l, ph.f64(hi - lo), u));
          }
          // Box-Muller on the word pair (0, 1) or (2, 3) of the block.
          Value second = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                               lane, ph.i64(2));
          Value even = arith::SelectOp::create(b, l, second, w[2], w[0]);
          Value odd = arith::SelectOp::create(b, l, second, w[3], w[1]);
          Value u1 = arith::MulFOp::create(
              b, l, arith::AddFOp::create(b, l, ph.toF64(even), ph.f64(0.5)),
              ph.f64(0x1p-32));
          Value u2 = arith::MulFOp::create(b, l, ph.toF64(odd), ph.f64(0x1p-32));
          Value radius = math::SqrtOp::create(
              b, l,
              arith::MulFOp::create(b, l, ph.f64(-2.0),
                                    math::LogOp::create(b, l, u1)));
          Value angle = arith::MulFOp::create(
              b, l, ph.f64(6.283185307179586476925286766559), u2);
          Value isSin = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq,
              arith::AndIOp::create(b, l, lane, ph.i64(1)), ph.i64(1));
          Value trig = arith::SelectOp::create(
              b, l, isSin, math::SinOp::create(b, l, angle),
              math::CosOp::create(b, l, angle));
          Value z = arith::MulFOp::create(b, l, radius, trig);
          return arith::AddFOp::create(
              b, l, ph.f64(lo), arith::MulFOp::create(b, l, ph.f64(hi), z));
        });
    rw.replaceOp(op, r);
    return success();
  }
};

} // namespace

void mlir::tg::cpu::populateRandomToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DropoutLowering, RandomLowering>(patterns.getContext());
}
