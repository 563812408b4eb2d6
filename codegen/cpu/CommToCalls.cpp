//===- CommToCalls.cpp - tg collectives to runtime calls --------*- C++ -*-===//
//
// tg.all_reduce becomes one call of the artifact's support function
//
//   void tgx_all_reduce_f32(int64_t comm, float *data, int64_t n, float scale);
//
// on one flat buffer that holds the whole bucket (so a bucket is one
// message, whatever its tensor count): the operands are copied in, the
// runtime sums the buffer over the ranks of communicator `comm` in place
// and scales it (1 for a sum, 1/ranks for a mean), and the results are
// slices of it. `comm` is the id of the collective's communicator: 0 for
// tg.comm_world, which is erased (it has no code). The support code
// forwards to the communicator that the runtime installed
// (tgx_set_all_reduce; tg-run's is MPI_Allreduce), so the artifact links no
// MPI and runs unchanged on one process.
//
// The flat buffer is the bucket's place in the arena where tg-plan-memory
// planned one (the op's bucket_offset: live only while the collective
// runs, it reuses bytes of buffers dead by then), a fresh tensor otherwise.
//
// ZeRO stage 1's collectives work the same way on a buffer of `ranks` rows
// (one per rank) of `block` floats, where a bucket's shards sit side by side
// in each row, so that every rank's part of the bucket is one contiguous
// block (the layout MPI_Reduce_scatter_block and MPI_Allgather expect):
//
//   void tgx_reduce_scatter_f32(int64_t comm, float *data, int64_t block,
//                               float scale);
//       row r of data[ranks][block] summed over the ranks into data[0..block)
//       on rank r, then scaled;
//   void tgx_all_gather_f32(int64_t comm, float *data, int64_t block);
//       fills every row from the rank that owns it;
//   int64_t tgx_rank(int64_t comm);
//       this process's rank in `comm` (tg.shard, and where all_gather's own
//       row is).
//
// A shard of a tensor of n elements is row r of the tensor read flat and
// padded with zeros to ranks * ceil(n / ranks) elements (tg.shard).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LoweringUtils.h"
#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

constexpr llvm::StringLiteral kAllReduce = "tgx_all_reduce_f32";
constexpr llvm::StringLiteral kReduceScatter = "tgx_reduce_scatter_f32";
constexpr llvm::StringLiteral kAllGather = "tgx_all_gather_f32";
constexpr llvm::StringLiteral kRank = "tgx_rank";

/// `func.func private @name(args) -> results`, declared once per module.
func::FuncOp declareSupport(OpBuilder &b, Operation *from, StringRef name,
                            TypeRange args, TypeRange results = {}) {
  auto module = from->getParentOfType<ModuleOp>();
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 b.getFunctionType(args, results));
  fn.setPrivate();
  return fn;
}

/// The id the runtime knows `comm`'s communicator by: 0 for the world
/// (tg.comm_world), the only communicator the dialect makes.
FailureOr<Value> commId(ConversionPatternRewriter &rw, Location loc,
                        Operation *op, Value comm) {
  if (!comm.getDefiningOp<CommWorldOp>())
    return op->emitOpError("the CPU backend runs collectives over "
                           "tg.comm_world's communicator only");
  return arith::ConstantIntOp::create(rw, loc, 0, 64).getResult();
}

/// The f32 buffer of `shape` a collective packs its bucket into: a view of
/// the function's arena (tg-bind-arena's argument) at the op's planned
/// `bucketOffset`, or a fresh tensor where nothing was planned or the code
/// runs without the arena (as tg-bind-arena leaves tg.offset unbound
/// then). `zeroed` fills it with zeros (the padding of ragged shards).
FailureOr<Value> bucketBuffer(ConversionPatternRewriter &rw, Location loc,
                              Operation *op,
                              std::optional<uint64_t> bucketOffset,
                              ArrayRef<int64_t> shape, bool zeroed) {
  Type f32 = rw.getF32Type();
  auto fn = op->getParentOfType<func::FuncOp>();
  Value arena;
  for (unsigned i = 0; fn && i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, cpu::kArenaArgAttr))
      arena = fn.getArgument(i);
  if (!bucketOffset || !arena)
    return zeroed ? cpu::filledTensor(rw, loc, shape, f32, 0.0)
                  : cpu::emptyTensor(rw, loc, shape, f32);
  auto type = RankedTensorType::get(shape, f32);
  int64_t bytes = type.getNumElements() * 4;
  auto arenaType = dyn_cast<MemRefType>(arena.getType());
  if (!arenaType || !arenaType.hasStaticShape() ||
      int64_t(*bucketOffset) + bytes > arenaType.getDimSize(0))
    return op->emitOpError("bucket_offset ")
           << *bucketOffset << " places the bucket's " << bytes
           << "-byte buffer outside the function's arena";
  Value view = memref::ViewOp::create(
      rw, loc, MemRefType::get(shape, f32), arena,
      arith::ConstantIndexOp::create(rw, loc, *bucketOffset), ValueRange{});
  Value buf = bufferization::ToTensorOp::create(rw, loc, type, view,
                                                /*restrict=*/true,
                                                /*writable=*/true);
  if (!zeroed)
    return buf;
  Value zero = cpu::scalarConstant(rw, loc, f32, 0.0);
  return linalg::FillOp::create(rw, loc, ValueRange{zero}, ValueRange{buf})
      .getResult(0);
}

/// Calls support function `name(comm, ptr, count, extra...)` on the flat
/// f32 tensor `flat`, which it updates in place; returns the updated
/// tensor. The buffer may be a view into the arena: its offset is added to
/// the aligned pointer, as the BLAS calls do.
Value callOnBuffer(ConversionPatternRewriter &rw, Location loc, Operation *op,
                   Value comm, Value flat, StringRef name, int64_t count,
                   ArrayRef<Value> extra = {}) {
  auto flatType = cast<RankedTensorType>(flat.getType());
  auto layout = StridedLayoutAttr::get(rw.getContext(), ShapedType::kDynamic,
                                       {1});
  auto bufType =
      MemRefType::get(flatType.getShape(), flatType.getElementType(), layout);
  Value buf = bufferization::ToBufferOp::create(rw, loc, bufType, flat);
  auto meta = memref::ExtractStridedMetadataOp::create(rw, loc, buf);
  SmallVector<Value> args{comm, cpu::firstElementPointer(rw, loc, meta, 4),
                          arith::ConstantIntOp::create(rw, loc, count, 64)};
  llvm::append_range(args, extra);
  func::CallOp::create(
      rw, loc,
      declareSupport(rw, op, name, ValueRange(args).getTypes()), args);
  return bufferization::ToTensorOp::create(rw, loc, flatType, buf,
                                           rw.getUnitAttr(), rw.getUnitAttr());
}

/// The communicated scale of a sum (1) or a mean (1 / ranks).
Value scaleOf(ConversionPatternRewriter &rw, Location loc, StringRef op,
              int64_t ranks) {
  float scale = op == "mean" ? 1.0f / static_cast<float>(ranks) : 1.0f;
  return arith::ConstantOp::create(rw, loc, rw.getF32FloatAttr(scale));
}

/// The CPU backend communicates f32: an error on `op` for anything else.
LogicalResult checkF32(Operation *op, TypeRange types) {
  for (Type t : types)
    if (!cast<RankedTensorType>(t).getElementType().isF32())
      return op->emitOpError("the CPU backend communicates f32 tensors, not ")
             << t;
  return success();
}

/// The CPU backend communicates f32 (MPI has no 16-bit float type): a
/// bf16 or f16 bucket (tgc --comm-dtype) is packed as f32 and its results
/// rounded back, so each rank's values and the result are those of the
/// type, the sum is f32's. An error on `op` for any other type.
LogicalResult checkFloat(Operation *op, TypeRange types) {
  for (Type t : types) {
    Type elt = cast<RankedTensorType>(t).getElementType();
    if (!elt.isF32() && !elt.isBF16() && !elt.isF16())
      return op->emitOpError("the CPU backend communicates f32, bf16 or f16 "
                             "tensors, not ")
             << t;
  }
  return success();
}

/// The flat `line` as `elt` (a tg.cast, which its own pattern lowers, when
/// the types differ).
Value castLine(ConversionPatternRewriter &rw, Location loc, Value line,
               Type elt) {
  auto type = cast<RankedTensorType>(line.getType());
  if (type.getElementType() == elt)
    return line;
  return CastOp::create(rw, loc, type.clone(elt), line);
}

/// This process's rank in communicator `comm`, as an index.
Value rankIndex(ConversionPatternRewriter &rw, Location loc, Operation *op,
                Value comm) {
  auto call = func::CallOp::create(
      rw, loc,
      declareSupport(rw, op, kRank, {rw.getI64Type()}, {rw.getI64Type()}),
      ValueRange{comm});
  return arith::IndexCastOp::create(rw, loc, rw.getIndexType(),
                                    call.getResult(0));
}

/// All dimensions of a rank-`rank` tensor in one group (rank 0: none).
SmallVector<ReassociationIndices> allInOne(int64_t rank) {
  if (rank == 0)
    return {};
  ReassociationIndices all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  return {all};
}

/// `v` read flat: a `tensor<n x T>`.
Value flatten(ConversionPatternRewriter &rw, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  auto lineType =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(rw, loc, lineType, v, allInOne(0));
  if (type.getRank() > 1)
    return tensor::CollapseShapeOp::create(rw, loc, lineType, v,
                                           allInOne(type.getRank()));
  return v;
}

/// The flat `line` in the shape of `type` (the inverse of flatten).
Value unflatten(ConversionPatternRewriter &rw, Location loc, Value line,
                RankedTensorType type) {
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(rw, loc, type, line, allInOne(0));
  if (type.getRank() > 1)
    return tensor::ExpandShapeOp::create(rw, loc, type, line,
                                         allInOne(type.getRank()));
  return line;
}

/// Static offsets, sizes or strides of a slice.
SmallVector<OpFoldResult> idx(ConversionPatternRewriter &rw,
                              ArrayRef<int64_t> v) {
  return llvm::map_to_vector(
      v, [&](int64_t i) -> OpFoldResult { return rw.getIndexAttr(i); });
}

struct AllReduceLowering final : OpConversionPattern<AllReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type f32 = rw.getF32Type();
    if (failed(checkFloat(op, op.getInputs().getTypes())))
      return failure();
    FailureOr<Value> comm = commId(rw, loc, op, op.getComm());
    if (failed(comm))
      return failure();
    int64_t total = 0;
    for (Value v : adaptor.getInputs())
      total += cast<RankedTensorType>(v.getType()).getNumElements();
    FailureOr<Value> buf =
        bucketBuffer(rw, loc, op, op.getBucketOffset(), {total}, false);
    if (failed(buf))
      return failure();
    Value flat = *buf;
    int64_t offset = 0;
    for (Value v : adaptor.getInputs()) {
      int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
      flat = tensor::InsertSliceOp::create(
          rw, loc, castLine(rw, loc, flatten(rw, loc, v), f32), flat,
          idx(rw, {offset}), idx(rw, {n}), idx(rw, {1}));
      offset += n;
    }
    Value reduced =
        callOnBuffer(rw, loc, op, *comm, flat, kAllReduce, total,
                     {scaleOf(rw, loc, op.getOp(), op.getRanks())});
    SmallVector<Value> results;
    offset = 0;
    for (Value v : adaptor.getInputs()) {
      auto type = cast<RankedTensorType>(v.getType());
      int64_t n = type.getNumElements();
      Value line = tensor::ExtractSliceOp::create(
          rw, loc, RankedTensorType::get({n}, f32), reduced,
          idx(rw, {offset}), idx(rw, {n}), idx(rw, {1}));
      results.push_back(unflatten(
          rw, loc, castLine(rw, loc, line, type.getElementType()), type));
      offset += n;
    }
    rw.replaceOp(op, results);
    return success();
  }
};

/// The layout of a bucket in the [ranks][block] buffer: each tensor's
/// shard size and its column.
struct ShardLayout {
  SmallVector<int64_t> size, column;
  int64_t block = 0;
  bool ragged = false; ///< some tensor does not fill its ranks' shards
  ShardLayout(TypeRange whole, int64_t ranks) {
    for (Type t : whole) {
      auto type = cast<ShapedType>(t);
      size.push_back(shardElements(type, ranks));
      column.push_back(block);
      block += size.back();
      ragged |= size.back() * ranks != type.getNumElements();
    }
  }
};

/// Writes the flat `line` (n elements) as the rows of the shard of width
/// `s` at `column` of the [ranks][block] buffer `buf`: the whole rows, then
/// the last partial one (the rest stays padding).
Value scatterRows(ConversionPatternRewriter &rw, Location loc, Value line,
                  Value buf, int64_t s, int64_t column) {
  auto lineType = cast<RankedTensorType>(line.getType());
  int64_t n = lineType.getNumElements(), full = n / s, rest = n - full * s;
  Type elt = lineType.getElementType();
  auto piece = [&](int64_t row, int64_t rows, int64_t width) {
    Value part = tensor::ExtractSliceOp::create(
        rw, loc, RankedTensorType::get({rows * width}, elt), line,
        idx(rw, {row * s}), idx(rw, {rows * width}), idx(rw, {1}));
    part = tensor::ExpandShapeOp::create(
        rw, loc, RankedTensorType::get({rows, width}, elt), part,
        SmallVector<ReassociationIndices>{{0, 1}});
    buf = tensor::InsertSliceOp::create(rw, loc, part, buf,
                                        idx(rw, {row, column}),
                                        idx(rw, {rows, width}), idx(rw, {1, 1}));
  };
  if (full > 0)
    piece(0, full, s);
  if (rest > 0)
    piece(full, 1, rest);
  return buf;
}

/// The inverse of scatterRows: the flat tensor of `n` elements whose
/// shards of width `s` are at `column` of the [ranks][block] buffer.
Value gatherRows(ConversionPatternRewriter &rw, Location loc, Value buf,
                 int64_t n, int64_t s, int64_t column) {
  Type elt = cast<RankedTensorType>(buf.getType()).getElementType();
  int64_t full = n / s, rest = n - full * s;
  auto piece = [&](int64_t row, int64_t rows, int64_t width) -> Value {
    Value part = tensor::ExtractSliceOp::create(
        rw, loc, RankedTensorType::get({rows, width}, elt), buf,
        idx(rw, {row, column}), idx(rw, {rows, width}), idx(rw, {1, 1}));
    return tensor::CollapseShapeOp::create(
        rw, loc, RankedTensorType::get({rows * width}, elt), part,
        SmallVector<ReassociationIndices>{{0, 1}});
  };
  if (rest == 0)
    return piece(0, full, s);
  Value line = tensor::EmptyOp::create(rw, loc, ArrayRef<int64_t>{n}, elt);
  if (full > 0)
    line = tensor::InsertSliceOp::create(rw, loc, piece(0, full, s), line,
                                         idx(rw, {0}), idx(rw, {full * s}),
                                         idx(rw, {1}));
  return tensor::InsertSliceOp::create(rw, loc, piece(full, 1, rest), line,
                                       idx(rw, {full * s}), idx(rw, {rest}),
                                       idx(rw, {1}));
}

struct ReduceScatterLowering final : OpConversionPattern<ReduceScatterOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReduceScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    if (failed(checkFloat(op, op.getInputs().getTypes())))
      return failure();
    FailureOr<Value> comm = commId(rw, loc, op, op.getComm());
    if (failed(comm))
      return failure();
    int64_t ranks = op.getRanks();
    Type f32 = rw.getF32Type();
    ShardLayout layout(op.getInputs().getTypes(), ranks);
    // Zeros where padding will be read.
    FailureOr<Value> rows =
        bucketBuffer(rw, loc, op, op.getBucketOffset(),
                     {ranks, layout.block}, layout.ragged);
    if (failed(rows))
      return failure();
    Value buf = *rows;
    for (auto [i, v] : llvm::enumerate(adaptor.getInputs()))
      buf = scatterRows(rw, loc, castLine(rw, loc, flatten(rw, loc, v), f32),
                        buf, layout.size[i], layout.column[i]);
    Value reduced = callOnBuffer(rw, loc, op, *comm, flatten(rw, loc, buf),
                                 kReduceScatter, layout.block,
                                 {scaleOf(rw, loc, op.getOp(), ranks)});
    SmallVector<Value> results;
    for (auto [i, type] : llvm::enumerate(op.getResultTypes())) {
      auto shard = cast<RankedTensorType>(type);
      Value line = tensor::ExtractSliceOp::create(
          rw, loc, shard.clone(f32), reduced, idx(rw, {layout.column[i]}),
          idx(rw, {layout.size[i]}), idx(rw, {1}));
      results.push_back(castLine(rw, loc, line, shard.getElementType()));
    }
    rw.replaceOp(op, results);
    return success();
  }
};

struct AllGatherLowering final : OpConversionPattern<AllGatherOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    if (failed(checkF32(op, op.getResultTypes())))
      return failure();
    FailureOr<Value> comm = commId(rw, loc, op, op.getComm());
    if (failed(comm))
      return failure();
    int64_t ranks = op.getRanks();
    ShardLayout layout(op.getResultTypes(), ranks);
    Type f32 = rw.getF32Type();
    // Only this rank's row is written here; the call fills the others.
    FailureOr<Value> rows = bucketBuffer(rw, loc, op, op.getBucketOffset(),
                                         {ranks, layout.block}, false);
    if (failed(rows))
      return failure();
    Value buf = *rows;
    Value rank = rankIndex(rw, loc, op, *comm);
    for (auto [i, v] : llvm::enumerate(adaptor.getInputs())) {
      int64_t s = layout.size[i];
      Value row = tensor::ExpandShapeOp::create(
          rw, loc, RankedTensorType::get({1, s}, f32), v,
          SmallVector<ReassociationIndices>{{0, 1}});
      buf = tensor::InsertSliceOp::create(
          rw, loc, row, buf, {rank, rw.getIndexAttr(layout.column[i])},
          idx(rw, {1, s}), idx(rw, {1, 1}));
    }
    Value gathered = callOnBuffer(rw, loc, op, *comm, flatten(rw, loc, buf),
                                  kAllGather, layout.block);
    gathered = tensor::ExpandShapeOp::create(
        rw, loc, RankedTensorType::get({ranks, layout.block}, f32), gathered,
        SmallVector<ReassociationIndices>{{0, 1}});
    SmallVector<Value> results;
    for (auto [i, t] : llvm::enumerate(op.getResultTypes())) {
      auto type = cast<RankedTensorType>(t);
      Value line = gatherRows(rw, loc, gathered, type.getNumElements(),
                              layout.size[i], layout.column[i]);
      results.push_back(unflatten(rw, loc, line, type));
    }
    rw.replaceOp(op, results);
    return success();
  }
};

struct ShardLowering final : OpConversionPattern<ShardOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ShardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    FailureOr<Value> comm = commId(rw, loc, op, op.getComm());
    if (failed(comm))
      return failure();
    auto whole = cast<RankedTensorType>(op.getInput().getType());
    int64_t ranks = op.getRanks(), s = op.getType().getNumElements();
    Value line = flatten(rw, loc, adaptor.getInput());
    if (s * ranks != whole.getNumElements()) {
      // Padded with zeros to ranks * s, as reduce_scatter's shards are.
      Value padded = cpu::filledTensor(rw, loc, {s * ranks},
                                       whole.getElementType(), 0.0);
      line = tensor::InsertSliceOp::create(
          rw, loc, line, padded, idx(rw, {0}),
          idx(rw, {whole.getNumElements()}), idx(rw, {1}));
    }
    Value first = arith::MulIOp::create(
        rw, loc, rankIndex(rw, loc, op, *comm),
        arith::ConstantIndexOp::create(rw, loc, s));
    rw.replaceOp(op, tensor::ExtractSliceOp::create(
                         rw, loc, op.getType(), line,
                         SmallVector<OpFoldResult>{first}, idx(rw, {s}),
                         idx(rw, {1}))
                         .getResult());
    return success();
  }
};

/// The communicator has no code: the collectives that run over it name it
/// by its id (commId), and they are lowered too.
struct CommWorldLowering final : OpConversionPattern<CommWorldOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CommWorldOp op, OpAdaptor,
                  ConversionPatternRewriter &rw) const override {
    rw.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::tg::cpu::populateCommToCallsPatterns(RewritePatternSet &patterns) {
  patterns.add<AllReduceLowering, ReduceScatterLowering, AllGatherLowering,
               ShardLowering, CommWorldLowering>(patterns.getContext());
}
