//===- SimtGemm.cpp - fp32 GEMM on CUDA cores with a fused epilogue -*- C++ -*-===//
//
// An f32 model's products (`tg.matmul` and `tg.fused <gemm>` with f32
// operands) run here, and so do bf16/f16 products whose tile config says
// `kernel = "simt"` (M, N or K under 8, too small for a tensor-core tile:
// docs/nvptx.md, "Ragged shapes"): their operands are read as f32 into the
// tiles, accumulated in f32 and the product rounded to its element type.
//
// One CTA of 256 threads computes a 64x64 tile of one batch (blockIdx.z) of
// the product, walking K in steps of 16: each thread loads 4 elements of the
// A tile and 4 of the B tile into shared memory (zero outside the matrix,
// so M, N and K need not be tile multiples), then accumulates a 4x4 block
// of outputs in registers. Thread (ty, tx) owns rows ty + 16i and columns
// tx + 16j: the 16 threads of a half-warp read 16 consecutive B elements and
// one A element (a broadcast) per step, and store 16 consecutive columns.
// Every form (nn, nt, tn) is handled by the tile loader, which reads the
// operand in its stored layout. Leading batch dimensions broadcast as in
// NumPy (a size-1 or missing batch dimension has stride 0).
//
// The group's epilogue (every op of the body after the product, in order)
// is evaluated per output element with SimtScalar, reading the other group
// operands broadcast to the product's shape, and every yielded value is
// stored with its element type. A result sharing an operand's buffer is
// refused (KernelGen.h): tiles of the output are written while other CTAs
// still read the inputs.
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/SimtKernels.h"
#include "codegen/nvptx/SimtScalar.h"

#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace tg::nvptx::detail {

namespace {

// kBM == kBN: both tiles are kBK x 64, loaded by one routine.
constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256, kPer = 4;

/// The product and the op's parameters, in the kernel's terms.
struct SimtGemmProblem {
  mlir::tg::MatmulOp matmul; ///< the product (the op or in its body)
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  SmallVector<int64_t> batch;        ///< the result's batch dimensions
  SmallVector<int64_t> aBatchStride; ///< per batch dim (0: broadcast)
  SmallVector<int64_t> bBatchStride;
  /// Operand number (of the lowered op) of A and B.
  unsigned aOperand = 0, bOperand = 1;
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
Type elemOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Strides of `shape`'s batch dimensions (all but the last two) aligned to
/// the trailing dimensions of `batch`, 0 where it broadcasts.
SmallVector<int64_t> batchStrides(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> batch) {
  SmallVector<int64_t> strides = stridesOf(shape);
  SmallVector<int64_t> out(batch.size(), 0);
  size_t own = shape.size() - 2, lead = batch.size() - own;
  for (size_t d = 0; d < own; ++d)
    out[lead + d] = shape[d] == 1 ? 0 : strides[d];
  return out;
}

/// The matmul `op` computes (itself, or the one in a gemm group).
mlir::tg::MatmulOp productOf(Operation *op) {
  if (auto mm = dyn_cast<mlir::tg::MatmulOp>(op))
    return mm;
  if (auto fused = dyn_cast<mlir::tg::FusedOp>(op))
    for (Operation &inner : fused.getBodyBlock())
      if (auto mm = dyn_cast<mlir::tg::MatmulOp>(inner))
        return mm;
  return {};
}

SimtGemmProblem problemOf(Operation *op) {
  SimtGemmProblem p;
  p.matmul = productOf(op);
  Value lhs = p.matmul.getLhs(), rhs = p.matmul.getRhs();
  ArrayRef<int64_t> a = shapeOf(lhs), b = shapeOf(rhs),
                    c = shapeOf(p.matmul.getResult());
  p.transA = p.matmul.getTransposeLhs();
  p.transB = p.matmul.getTransposeRhs();
  p.m = c[c.size() - 2];
  p.n = c.back();
  p.k = p.transA ? a[a.size() - 2] : a.back();
  p.batch.assign(c.begin(), c.end() - 2);
  p.aBatchStride = batchStrides(a, p.batch);
  p.bBatchStride = batchStrides(b, p.batch);
  if (isa<mlir::tg::FusedOp>(op)) {
    p.aOperand = cast<BlockArgument>(lhs).getArgNumber();
    p.bOperand = cast<BlockArgument>(rhs).getArgNumber();
  }
  return p;
}

int64_t product(ArrayRef<int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v)
    n *= x;
  return n;
}

/// Emits the kernel for `op` (a matmul or gemm group) as `symbol`.
LogicalResult buildKernel(Operation *op, SimtGemmProblem &p,
                          ModuleOp kernels, StringRef symbol) {
  Location loc = op->getLoc();
  MLIRContext *ctx = kernels.getContext();
  unsigned numIn = op->getNumOperands(), numOut = op->getNumResults();
  // Per-kernel static shared tiles: As[k][m] and Bs[k][n].
  Type tileTy = LLVM::LLVMArrayType::get(Float32Type::get(ctx), kBK * kBM);
  std::string aName = (symbol + "_As").str(), bName = (symbol + "_Bs").str();
  {
    OpBuilder g = OpBuilder::atBlockEnd(kernels.getBody());
    for (const std::string &name : {aName, bName})
      LLVM::GlobalOp::create(g, loc, tileTy, /*isConstant=*/false,
                             LLVM::Linkage::Internal, name, Attribute(),
                             /*alignment=*/16, /*addrSpace=*/3);
  }
  SimtKernel kern = beginSimtKernel(kernels, symbol, numIn + numOut, kThreads, loc);
  // With only .maxntid, ptxas budgets registers for full occupancy (64 or
  // fewer per thread) and spills the epilogue of a group. One CTA per SM
  // lifts the cap: most products use about 80 registers (three CTAs fit),
  // while a K of one tile (LeNet's weight gradients, K = batch) becomes
  // straight-line code whose hoisted shared loads need about 150, which
  // two CTAs per SM (128) would spill.
  kern.fn->setAttr("nvvm.minctasm", OpBuilder(ctx).getI32IntegerAttr(1));
  KernelBuilder &w = *kern.w;
  OpBuilder &b = w.b;
  Value A = kern.params[p.aOperand], B = kern.params[p.bOperand];
  Value as = LLVM::AddressOfOp::create(b, loc, w.ptr3, aName);
  Value bs = LLVM::AddressOfOp::create(b, loc, w.ptr3, bName);

  Value tid = NVVM::ThreadIdXOp::create(b, loc, w.i32);
  Value tx = w.andi(tid, 15), ty = w.shri(tid, 4);
  Value n0 = w.muli(NVVM::BlockIdXOp::create(b, loc, w.i32), kBN);
  Value m0 = w.muli(NVVM::BlockIdYOp::create(b, loc, w.i32), kBM);
  Value batch = NVVM::BlockIdZOp::create(b, loc, w.i32);
  SmallVector<Value> bidx = unravel(w, batch, p.batch);
  SmallVector<int64_t> none;
  auto dotStrides = [&](ArrayRef<int64_t> strides) {
    Value off = w.i32c(0);
    for (auto [i, s] : llvm::zip(bidx, strides))
      if (s != 0)
        off = w.add(off, w.muli(i, s));
    return off;
  };
  Value aBase = dotStrides(p.aBatchStride), bBase = dotStrides(p.bBatchStride);

  // Element e (of 1024) of the k0 tile of an operand whose other dimension
  // is `mn` (M for A, N for B) goes to smem[k][x] (x = 0..63 from mn0), or
  // 0 outside the matrix. The faster part of e walks the operand's
  // contiguous dimension: K when `kContiguous` (A in nn/nt, B in nt), else
  // M or N. A clamped address keeps the load inside the buffer.
  auto loadTile = [&](Value src, Type elem, Value base, bool kContiguous,
                      int64_t mn, Value mn0, Value k0, Value e, Value smem) {
    Value x, kk;
    if (kContiguous) {
      kk = w.andi(e, kBK - 1);
      x = w.shri(e, log2i(kBK));
    } else {
      x = w.andi(e, kBM - 1);
      kk = w.shri(e, log2i(kBM));
    }
    Value gx = w.add(mn0, x), gk = w.add(k0, kk);
    Value in = w.and_(w.ult(gx, w.i32c(mn)), w.ult(gk, w.i32c(p.k)));
    Value off = kContiguous ? w.add(w.muli(gx, p.k), gk)
                            : w.add(w.muli(gk, mn), gx);
    off = w.select(in, w.add(base, off), base);
    Value v = loadElement(w, src, off, elem);
    v = w.select(in, v, w.f32c(0.0));
    LLVM::StoreOp::create(b, loc, v, w.gep(smem, w.add(w.muli(kk, kBM), x), w.f32));
  };

  SmallVector<Value> zeros(kPer * kPer, w.f32c(0.0));
  scf::ForOp kloop = w.openFor(w.i32c((p.k + kBK - 1) / kBK), zeros, "kt");
  Value k0 = w.muli(kloop.getInductionVar(), kBK);
  for (int r = 0; r < kBK * kBM / kThreads; ++r) {
    Value e = w.addi(tid, r * kThreads);
    loadTile(A, elemOf(p.matmul.getLhs()), aBase, !p.transA, p.m, m0, k0, e, as);
    loadTile(B, elemOf(p.matmul.getRhs()), bBase, p.transB, p.n, n0, k0, e, bs);
  }
  NVVM::Barrier0Op::create(b, loc);
  SmallVector<Value> acc(kloop.getRegionIterArgs().begin(),
                         kloop.getRegionIterArgs().end());
  for (int kk = 0; kk < kBK; ++kk) {
    Value av[kPer], bv[kPer];
    for (int i = 0; i < kPer; ++i) {
      av[i] = LLVM::LoadOp::create(
          b, loc, w.f32, w.gep(as, w.addi(ty, kk * kBM + 16 * i), w.f32));
      bv[i] = LLVM::LoadOp::create(
          b, loc, w.f32, w.gep(bs, w.addi(tx, kk * kBN + 16 * i), w.f32));
    }
    for (int i = 0; i < kPer; ++i)
      for (int j = 0; j < kPer; ++j)
        acc[i * kPer + j] =
            LLVM::FMAOp::create(b, loc, av[i], bv[j], acc[i * kPer + j]);
  }
  // The next step overwrites the tiles: everyone must be done reading.
  NVVM::Barrier0Op::create(b, loc);
  w.closeFor(kloop, acc);

  // Epilogue, per owned element.
  Block *body = isa<mlir::tg::FusedOp>(op)
                    ? &cast<mlir::tg::FusedOp>(op).getBodyBlock()
                    : nullptr;
  SmallVector<int64_t> outShape(shapeOf(p.matmul.getResult()));
  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) {
      Value row = w.add(m0, w.addi(ty, 16 * i));
      Value col = w.add(n0, w.addi(tx, 16 * j));
      Value inside = w.and_(w.ult(row, w.i32c(p.m)), w.ult(col, w.i32c(p.n)));
      OpBuilder::InsertionGuard guard(b);
      w.openIf(inside);
      Value linear =
          w.add(w.muli(batch, p.m * p.n), w.add(w.muli(row, p.n), col));
      // The product rounds to its own type first (identity for f32), as
      // the matmul's result does.
      Type productElem = elemOf(p.matmul.getResult());
      Value accv = toCompute(
          w, toStorage(w, kloop.getResult(i * kPer + j), productElem),
          productElem);
      if (!body) {
        storeElement(w, kern.params[numIn], linear, elemOf(op->getResult(0)),
                     accv);
        continue;
      }
      // Values of the body at this element.
      llvm::DenseMap<Value, Value> vals;
      vals[p.matmul.getResult()] = accv;
      auto valueOf = [&](Value v) -> Value {
        if (Value known = vals.lookup(v))
          return known;
        // A group operand, broadcast to the product's shape.
        auto arg = cast<BlockArgument>(v);
        ArrayRef<int64_t> shape = shapeOf(v);
        SmallVector<int64_t> strides = stridesOf(shape);
        size_t lead = outShape.size() - shape.size();
        Value off = w.i32c(0);
        for (size_t d = 0; d < shape.size(); ++d) {
          if (shape[d] == 1)
            continue;
          size_t od = lead + d;
          Value ix = od == outShape.size() - 1   ? col
                     : od == outShape.size() - 2 ? row
                                                 : bidx[od];
          off = w.add(off, w.muli(ix, strides[d]));
        }
        Value x = loadElement(w, kern.params[arg.getArgNumber()], off,
                              elemOf(v));
        vals[v] = x;
        return x;
      };
      ElementPosition pos{linear};
      for (Operation &inner : *body) {
        if (&inner == p.matmul.getOperation())
          continue;
        if (auto yield = dyn_cast<mlir::tg::YieldOp>(inner)) {
          for (auto [r, v] : llvm::enumerate(yield.getOperands()))
            storeElement(w, kern.params[numIn + r], linear, elemOf(v),
                         valueOf(v));
          continue;
        }
        SmallVector<Value> args;
        for (Value v : inner.getOperands())
          args.push_back(valueOf(v));
        FailureOr<Value> x = emitScalarOp(w, &inner, args, &pos);
        if (failed(x))
          return failure();
        vals[inner.getResult(0)] = *x;
      }
    }
  endSimtKernel(kern);
  return success();
}

} // namespace

bool isF32Gemm(Operation *op) {
  mlir::tg::MatmulOp mm = productOf(op);
  return mm && elemOf(mm.getLhs()).isF32() && elemOf(mm.getRhs()).isF32();
}

FailureOr<std::vector<KernelLaunch>> lowerSimtGemm(Operation *op, Target t,
                                                   ModuleOp kernels) {
  if (failed(checkI32Indexable(op)))
    return failure();
  SimtGemmProblem p = problemOf(op);
  if (auto fused = dyn_cast<mlir::tg::FusedOp>(op)) {
    // The epilogue reads operands as the product's elements: each group
    // operand it uses must broadcast to the product's shape, and every
    // yielded value must have it.
    ArrayRef<int64_t> out = shapeOf(p.matmul.getResult());
    for (Operation &inner : fused.getBodyBlock()) {
      if (&inner == p.matmul.getOperation())
        continue;
      for (Value v : inner.getOperands()) {
        ArrayRef<int64_t> s = shapeOf(v);
        bool fits = s.size() <= out.size();
        for (size_t d = 0; fits && d < s.size(); ++d)
          fits = s[d] == 1 || s[d] == out[out.size() - s.size() + d];
        if (!fits || (isa<mlir::tg::YieldOp>(inner) && s != out))
          return inner.emitOpError()
                 << "the GPU GEMM epilogue computes values of the product's "
                    "shape; this operand does not broadcast to it";
      }
      if (!isa<mlir::tg::YieldOp>(inner) && !isScalarOp(&inner))
        return inner.emitOpError()
               << "the GPU GEMM epilogue cannot compute this op";
    }
  }
  for (Value r : op->getResults())
    if (resultSharesOperandBuffer(op, r))
      return op->emitOpError()
             << "the memory plan gives a GEMM result an operand's buffer; "
                "the GPU GEMM cannot write over its inputs";
  int64_t batches = product(p.batch);
  int64_t gridM = (p.m + kBM - 1) / kBM, gridN = (p.n + kBN - 1) / kBN;
  if (gridM > 65535 || batches > 65535)
    return op->emitOpError() << "the GPU GEMM launches at most 65535 row "
                                "tiles and batches; this product has "
                             << gridM << " and " << batches;
  if (p.m == 0 || p.n == 0 || batches == 0)
    return std::vector<KernelLaunch>{};
  std::string sym = kernelSymbol(op, "tg_sgemm", t);
  if (!hasKernel(kernels, sym) && failed(buildKernel(op, p, kernels, sym)))
    return failure();
  KernelLaunch l;
  l.symbol = sym;
  l.grid = {uint32_t(gridN), uint32_t(gridM), uint32_t(batches)};
  l.block = {kThreads, 1, 1};
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    l.params.push_back({KernelParam::Kind::Operand, i});
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    l.params.push_back({KernelParam::Kind::Result, i});
  return std::vector<KernelLaunch>{l};
}

} // namespace tg::nvptx::detail
