//===- SimtMovement.cpp - data movement and single-op GPU kernels -*- C++ -*-===//
//
// The top-level ops of a planned step that are neither elementwise, nor a
// reduction, nor a matmul, each as a SIMT kernel (KernelGen.h's contract):
//
//   reshape        no launch when the plan gave the result its operand's
//                  buffer, else a copy
//   transpose, slice, broadcast_to
//                  one thread per result element gathering its source
//   concat         one launch per input, each thread scattering one element
//   embedding      one thread per result element: the row of the clamped
//                  index
//   embedding_grad a launch zeroing the table gradient, then one thread per
//                  column walking the positions in order. No atomics: the
//                  sum order is the reference evaluator's (positions
//                  ascending), so f32 results are deterministic and equal to
//                  the CPU's; bf16/f16 tables round after each addition.
//   random         one thread per element from the element's Philox words
//                  (include/tgc/Philox.h's mapping; normal draws in f32)
//   constant       a splat fills its buffer (init's zeros and ones)
//
// Movement kernels copy the stored bits (an integer of the element's width),
// so they are exact for every element type. A gather or scatter cannot run
// in place; the planner never shares buffers for these ops, and a plan that
// did is refused with an error.
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/SimtKernels.h"
#include "codegen/nvptx/SimtScalar.h"

#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>
#include <limits>

using namespace mlir;

namespace tg::nvptx::detail {

//===----------------------------------------------------------------------===//
// Helpers shared with SimtGemm.cpp
//===----------------------------------------------------------------------===//

SimtKernel beginSimtKernel(ModuleOp kernels, StringRef symbol,
                           unsigned numParams, int threads, Location loc) {
  MLIRContext *ctx = kernels.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  Type ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
  auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                          SmallVector<Type>(numParams, ptr1));
  SimtKernel k;
  k.fn = LLVM::LLVMFuncOp::create(b, loc, symbol, fnTy);
  k.fn->setAttr("nvvm.kernel", b.getUnitAttr());
  k.fn->setAttr("nvvm.maxntid", b.getDenseI32ArrayAttr({threads, 1, 1}));
  Block *entry = k.fn.addEntryBlock(b);
  // Buffers of one launch never overlap unless the plan says so, and every
  // generator here refuses a shared buffer: noalias lets LLVM keep loads in
  // registers across stores (and use ld.global.nc).
  for (unsigned i = 0; i < numParams; ++i)
    k.fn.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), b.getUnitAttr());
  k.w = std::make_unique<KernelBuilder>(entry, loc);
  for (BlockArgument a : entry->getArguments())
    k.params.push_back(a);
  return k;
}

SmallVector<Value> beginElementKernel(SimtKernel &k, ModuleOp kernels,
                                      StringRef symbol, unsigned numParams,
                                      ArrayRef<int64_t> space, Location loc) {
  k = beginSimtKernel(kernels, symbol, numParams, 256, loc);
  KernelBuilder &w = *k.w;
  int64_t n = 1;
  for (int64_t s : space)
    n *= s;
  Value linear = globalThreadIndex(w);
  w.openIf(w.ult(linear, w.i32c(n)));
  SmallVector<Value> idx = unravel(w, linear, space);
  idx.push_back(linear);
  return idx;
}

void endSimtKernel(SimtKernel &k) {
  k.w->b.setInsertionPointToEnd(&k.fn.getBody().front());
  LLVM::ReturnOp::create(k.w->b, k.w->loc, ValueRange{});
}

Value globalThreadIndex(KernelBuilder &w) {
  Value bid = NVVM::BlockIdXOp::create(w.b, w.loc, w.i32);
  Value bdim = NVVM::BlockDimXOp::create(w.b, w.loc, w.i32);
  Value tid = NVVM::ThreadIdXOp::create(w.b, w.loc, w.i32);
  return w.add(w.mul(bid, bdim), tid);
}

std::optional<std::pair<int64_t, int64_t>> plannedBuffer(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (isa_and_nonnull<func::FuncOp>(arg.getOwner()->getParentOp()))
      return std::make_pair(int64_t(arg.getArgNumber()), int64_t(0));
    return std::nullopt;
  }
  auto res = cast<OpResult>(v);
  Operation *op = res.getOwner();
  unsigned n = res.getResultNumber();
  // A multi-result op's per-result arrays come first: its tg.offset is the
  // op's summary, not result 0's slot.
  auto aliases = op->getAttrOfType<DenseI64ArrayAttr>(mlir::tg::attr::aliasArgs);
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(mlir::tg::attr::offsets);
  if (aliases || offsets) {
    if (aliases && n < aliases.size() && aliases[n] >= 0)
      return std::make_pair(aliases[n], int64_t(0));
    if (offsets && n < offsets.size() && offsets[n] >= 0)
      return std::make_pair(int64_t(-1), offsets[n]);
    return std::nullopt;
  }
  if (auto a = op->getAttrOfType<IntegerAttr>(mlir::tg::attr::aliasArg))
    return std::make_pair(a.getInt(), int64_t(0));
  if (auto o = op->getAttrOfType<IntegerAttr>(mlir::tg::attr::offset))
    return std::make_pair(int64_t(-1), o.getInt());
  return std::nullopt;
}

bool resultSharesOperandBuffer(Operation *op, Value result) {
  auto mine = plannedBuffer(result);
  if (!mine)
    return false;
  return llvm::any_of(op->getOperands(),
                      [&](Value v) { return plannedBuffer(v) == mine; });
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

SmallVector<Value> unravel(KernelBuilder &w, Value linear,
                           ArrayRef<int64_t> shape) {
  SmallVector<Value> idx(shape.size());
  Value rest = linear;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      idx[d] = rest;
      break;
    }
    idx[d] = shape[d] == 1 ? w.i32c(0) : w.urem(rest, w.i32c(shape[d]));
    rest = shape[d] == 1 ? rest : w.udiv(rest, w.i32c(shape[d]));
  }
  return idx;
}

LogicalResult checkI32Indexable(Operation *op) {
  auto tooBig = [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.getNumElements() >= std::numeric_limits<int32_t>::max();
  };
  if (llvm::any_of(op->getOperandTypes(), tooBig) ||
      llvm::any_of(op->getResultTypes(), tooBig))
    return op->emitOpError()
           << "the GPU backend indexes tensors with 32 bits; a tensor of "
              "2^31 elements or more is not supported yet";
  return success();
}

KernelLaunch launchFor(StringRef symbol, int64_t n, int threads,
                       std::vector<KernelParam> params) {
  KernelLaunch l;
  l.symbol = symbol.str();
  l.block = {uint32_t(threads), 1, 1};
  l.grid = {uint32_t((n + threads - 1) / threads), 1, 1};
  l.params = std::move(params);
  return l;
}

namespace {

constexpr int kThreads = 256;

KernelParam operand(unsigned i) { return {KernelParam::Kind::Operand, i}; }
KernelParam result(unsigned i) { return {KernelParam::Kind::Result, i}; }

/// The integer type an element of `elem` is stored as (bit copies).
Type bitsType(MLIRContext *ctx, Type elem) {
  unsigned bits = elem.getIntOrFloatBitWidth();
  return IntegerType::get(ctx, bits == 1 ? 8 : bits);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
Type elemOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}
int64_t numel(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

/// Element offsets computed from a thread's multi-index (and the kernel's
/// parameters, for index tensors).
using OffsetFn = std::function<Value(KernelBuilder &, ArrayRef<Value> params,
                                     ArrayRef<Value> idx, Value linear)>;

/// A kernel over the index space `space` (one thread per point) copying the
/// element at srcOffset of params[src] to dstOffset of params[dst].
void buildCopyKernel(ModuleOp kernels, StringRef symbol, Location loc,
                     unsigned numParams, ArrayRef<int64_t> space, Type elem,
                     unsigned src, const OffsetFn &srcOffset, unsigned dst,
                     const OffsetFn &dstOffset) {
  SimtKernel k;
  SmallVector<Value> idx =
      beginElementKernel(k, kernels, symbol, numParams, space, loc);
  Value linear = idx.pop_back_val();
  KernelBuilder &w = *k.w;
  Type bits = bitsType(w.b.getContext(), elem);
  Value from = w.gep(k.params[src], srcOffset(w, k.params, idx, linear), bits);
  Value v = LLVM::LoadOp::create(w.b, loc, bits, from);
  Value to = w.gep(k.params[dst], dstOffset(w, k.params, idx, linear), bits);
  LLVM::StoreOp::create(w.b, loc, v, to);
  endSimtKernel(k);
}

/// sum_d idx[d] * strides[d] (+ base), skipping zero strides.
Value dot(KernelBuilder &w, ArrayRef<Value> idx, ArrayRef<int64_t> strides,
          int64_t base = 0) {
  Value off = w.i32c(base);
  for (auto [i, s] : llvm::zip(idx, strides))
    if (s != 0)
      off = w.add(off, w.muli(i, s));
  return off;
}

/// A one-launch gather `result[i] = operand0[source(i)]`.
FailureOr<std::vector<KernelLaunch>>
gatherLaunch(Operation *op, Target t, ModuleOp kernels, StringRef prefix,
             const OffsetFn &srcOffset) {
  Value res = op->getResult(0);
  if (resultSharesOperandBuffer(op, res))
    return op->emitOpError()
           << "the memory plan gives the result its operand's buffer; the "
              "GPU kernel for this op cannot run in place";
  if (numel(res) == 0)
    return std::vector<KernelLaunch>{};
  std::string sym = kernelSymbol(op, prefix, t);
  if (!hasKernel(kernels, sym))
    buildCopyKernel(
        kernels, sym, op->getLoc(), op->getNumOperands() + 1, shapeOf(res),
        elemOf(res), 0, srcOffset, op->getNumOperands(),
        [](KernelBuilder &, ArrayRef<Value>, ArrayRef<Value>, Value linear) {
          return linear;
        });
  std::vector<KernelParam> params;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    params.push_back(operand(i));
  params.push_back(result(0));
  return std::vector<KernelLaunch>{launchFor(sym, numel(res), kThreads, params)};
}

FailureOr<std::vector<KernelLaunch>> lowerReshape(mlir::tg::ReshapeOp op,
                                                  Target t, ModuleOp kernels) {
  auto in = plannedBuffer(op.getInput()), out = plannedBuffer(op.getResult());
  if (in && out && in == out)
    return std::vector<KernelLaunch>{}; // a view: nothing moves
  return gatherLaunch(op, t, kernels, "tg_copy",
                      [](KernelBuilder &, ArrayRef<Value>, ArrayRef<Value>,
                         Value linear) { return linear; });
}

FailureOr<std::vector<KernelLaunch>>
lowerTranspose(mlir::tg::TransposeOp op, Target t, ModuleOp kernels) {
  SmallVector<int64_t> inStrides = stridesOf(shapeOf(op.getInput()));
  SmallVector<int64_t> strides;
  for (int64_t p : op.getPermutation())
    strides.push_back(inStrides[p]);
  return gatherLaunch(op, t, kernels, "tg_transpose",
                      [strides](KernelBuilder &w, ArrayRef<Value>,
                                ArrayRef<Value> idx, Value) {
                        return dot(w, idx, strides);
                      });
}

FailureOr<std::vector<KernelLaunch>> lowerSlice(mlir::tg::SliceOp op, Target t,
                                                ModuleOp kernels) {
  SmallVector<int64_t> inStrides = stridesOf(shapeOf(op.getInput()));
  SmallVector<int64_t> strides;
  int64_t base = 0;
  for (auto [s, st, start] :
       llvm::zip(inStrides, op.getStep(), op.getStart())) {
    strides.push_back(s * st);
    base += s * start;
  }
  return gatherLaunch(op, t, kernels, "tg_slice",
                      [strides, base](KernelBuilder &w, ArrayRef<Value>,
                                      ArrayRef<Value> idx, Value) {
                        return dot(w, idx, strides, base);
                      });
}

FailureOr<std::vector<KernelLaunch>>
lowerBroadcast(mlir::tg::BroadcastToOp op, Target t, ModuleOp kernels) {
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  SmallVector<int64_t> inStrides = stridesOf(in);
  // NumPy alignment: the input's dimensions are the result's trailing ones;
  // a size-1 input dimension repeats (stride 0).
  SmallVector<int64_t> strides(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    strides[lead + d] = in[d] == 1 ? 0 : inStrides[d];
  return gatherLaunch(op, t, kernels, "tg_broadcast",
                      [strides](KernelBuilder &w, ArrayRef<Value>,
                                ArrayRef<Value> idx, Value) {
                        return dot(w, idx, strides);
                      });
}

/// Loads index element `i` (i32 or i64) from `base` and clamps it to
/// [0, size), as i32.
Value loadClampedIndex(KernelBuilder &w, Value base, Value i, Type idxType,
                       int64_t size) {
  Value raw = LLVM::LoadOp::create(w.b, w.loc, idxType, w.gep(base, i, idxType));
  Value lo = LLVM::ConstantOp::create(w.b, w.loc, idxType,
                                      w.b.getIntegerAttr(idxType, 0));
  Value hi = LLVM::ConstantOp::create(w.b, w.loc, idxType,
                                      w.b.getIntegerAttr(idxType, size - 1));
  Value c = w.select(w.icmp(LLVM::ICmpPredicate::slt, raw, lo), lo, raw);
  c = w.select(w.icmp(LLVM::ICmpPredicate::sgt, c, hi), hi, c);
  if (idxType != w.i32)
    c = LLVM::TruncOp::create(w.b, w.loc, w.i32, c);
  return c;
}

FailureOr<std::vector<KernelLaunch>>
lowerEmbedding(mlir::tg::EmbeddingOp op, Target t, ModuleOp kernels) {
  ArrayRef<int64_t> table = shapeOf(op.getTable());
  int64_t v = table[0], d = table[1];
  Type idxType = elemOf(op.getIndices());
  return gatherLaunch(
      op, t, kernels, "tg_embedding",
      [=](KernelBuilder &w, ArrayRef<Value> params, ArrayRef<Value> idx,
          Value linear) {
        Value row = w.udiv(linear, w.i32c(d));
        Value r = loadClampedIndex(w, params[1], row, idxType, v);
        return w.add(w.muli(r, d), idx.back());
      });
}

FailureOr<std::vector<KernelLaunch>>
lowerEmbeddingGrad(mlir::tg::EmbeddingGradOp op, Target t, ModuleOp kernels) {
  Value res = op.getResult();
  if (resultSharesOperandBuffer(op, res))
    return op->emitOpError()
           << "the memory plan gives the result an operand's buffer; the GPU "
              "kernel zeroes the result before reading the operands";
  ArrayRef<int64_t> table = shapeOf(res);
  int64_t v = table[0], d = table[1];
  int64_t positions = numel(op.getIndices());
  Type elem = elemOf(res), idxType = elemOf(op.getIndices());
  std::string zeroSym = kernelSymbol(op, "tg_zero", t);
  std::string sumSym = kernelSymbol(op, "tg_embedding_grad", t);
  Location loc = op.getLoc();
  if (!hasKernel(kernels, zeroSym)) {
    SimtKernel k;
    Value i = beginElementKernel(k, kernels, zeroSym, 1, {v * d}, loc).back();
    KernelBuilder &w = *k.w;
    Type bits = bitsType(w.b.getContext(), elem);
    LLVM::StoreOp::create(w.b, loc, w.zero(bits), w.gep(k.params[0], i, bits));
    endSimtKernel(k);
  }
  if (!hasKernel(kernels, sumSym)) {
    // Thread `col` owns column col of the table gradient: no two threads
    // write one element, and each adds its positions in ascending order.
    SimtKernel k;
    Value col = beginElementKernel(k, kernels, sumSym, 3, {d}, loc).back();
    KernelBuilder &w = *k.w;
    scf::ForOp loop = w.openFor(w.i32c(positions), {}, "pos");
    Value pos = loop.getInductionVar();
    Value row = loadClampedIndex(w, k.params[1], pos, idxType, v);
    Value g = loadElement(w, k.params[0], w.add(w.muli(pos, d), col), elem);
    Value at = w.add(w.muli(row, d), col);
    Value sum = w.fadd(loadElement(w, k.params[2], at, elem), g);
    storeElement(w, k.params[2], at, elem, sum);
    w.closeFor(loop);
    endSimtKernel(k);
  }
  return std::vector<KernelLaunch>{
      launchFor(zeroSym, v * d, kThreads, {result(0)}),
      launchFor(sumSym, d, kThreads, {operand(0), operand(1), result(0)})};
}

FailureOr<std::vector<KernelLaunch>> lowerConcat(mlir::tg::ConcatOp op,
                                                 Target t, ModuleOp kernels) {
  Value res = op.getResult();
  if (resultSharesOperandBuffer(op, res))
    return op->emitOpError()
           << "the memory plan gives the result an operand's buffer; the GPU "
              "kernel for concat cannot run in place";
  SmallVector<int64_t> outStrides = stridesOf(shapeOf(res));
  int64_t axis = op.getAxis();
  std::vector<KernelLaunch> launches;
  int64_t at = 0;
  for (auto [i, in] : llvm::enumerate(op.getInputs())) {
    int64_t base = at * outStrides[axis];
    at += shapeOf(in)[axis];
    if (numel(in) == 0)
      continue;
    // The kernel depends on the input's shape and its place in the result;
    // the symbol hashes the op, so add the input's number.
    std::string sym =
        kernelSymbol(op, "tg_concat", t) + "_" + std::to_string(i);
    if (!hasKernel(kernels, sym))
      buildCopyKernel(
          kernels, sym, op.getLoc(), 2, shapeOf(in), elemOf(in), 0,
          [](KernelBuilder &, ArrayRef<Value>, ArrayRef<Value>, Value linear) {
            return linear;
          },
          1,
          [&outStrides, base](KernelBuilder &w, ArrayRef<Value>,
                              ArrayRef<Value> idx, Value) {
            return dot(w, idx, outStrides, base);
          });
    launches.push_back(
        launchFor(sym, numel(in), kThreads, {operand(unsigned(i)), result(0)}));
  }
  return launches;
}

/// u * 2^-32 for an i32 word read as unsigned, in f32.
Value wordToUnit(KernelBuilder &w, Value word) {
  Value f = LLVM::UIToFPOp::create(w.b, w.loc, w.f32, word);
  return w.fmul(f, w.f32c(0x1p-32));
}

/// `sin.approx.f32` / `cos.approx.f32` (absolute error below 2^-20 on
/// [-pi, pi], which is where the callers keep their argument).
Value approx(KernelBuilder &w, StringRef inst, Value x) {
  auto asmOp = LLVM::InlineAsmOp::create(
      w.b, w.loc, w.f32, ValueRange{x}, (inst + " $0, $1;").str(), "=f,f",
      /*has_side_effects=*/false, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
  return asmOp.getResult(0);
}

FailureOr<std::vector<KernelLaunch>> lowerRandom(mlir::tg::RandomOp op,
                                                 Target t, ModuleOp kernels) {
  Value res = op.getResult();
  Type elem = elemOf(res);
  if (!elem.isF32() && !elem.isBF16() && !elem.isF16())
    return op->emitOpError()
           << "the GPU backend draws random f32, bf16 and f16 tensors; not "
           << elem;
  if (numel(res) == 0)
    return std::vector<KernelLaunch>{};
  std::string sym = kernelSymbol(op, "tg_random", t);
  if (!hasKernel(kernels, sym)) {
    SimtKernel k;
    Value i =
        beginElementKernel(k, kernels, sym, 2, {numel(res)}, op.getLoc()).back();
    KernelBuilder &w = *k.w;
    Value seed = LLVM::LoadOp::create(w.b, w.loc, w.i64, k.params[0]);
    uint64_t stream = uint64_t(op.getStream());
    Value i64 = w.zext64(i);
    float a = float(op.getA().convertToDouble());
    float b = float(op.getB().convertToDouble());
    Value x;
    if (op.getDistribution() == mlir::tg::RandomDistribution::uniform) {
      Value u = wordToUnit(w, emitPhiloxWord(w, seed, stream, i64));
      x = LLVM::FMAOp::create(w.b, w.loc, u, w.f32c(b - a), w.f32c(a));
    } else {
      // Box-Muller on the word pair of the element (Philox.h): the even
      // element of a pair takes the cosine, the odd one the sine.
      Value even = w.and_(i64, w.i64c(~int64_t(1)));
      Value w0 = emitPhiloxWord(w, seed, stream, even);
      Value w1 = emitPhiloxWord(w, seed, stream, w.add(even, w.i64c(1)));
      Value u1 = w.fmul(
          w.fadd(LLVM::UIToFPOp::create(w.b, w.loc, w.f32, w0), w.f32c(0.5)),
          w.f32c(0x1p-32));
      Value u2 = wordToUnit(w, w1);
      Value r = LLVM::SqrtOp::create(
          w.b, w.loc, w.fmul(w.f32c(-2.0), emitLog(w, u1)));
      // 2*pi*u2 moved into [-pi, pi): sin and cos are unchanged and the
      // approximate instructions are accurate there.
      Value wrapped = LLVM::FSubOp::create(
          w.b, w.loc, u2,
          w.select(LLVM::FCmpOp::create(w.b, w.loc, LLVM::FCmpPredicate::oge,
                                        u2, w.f32c(0.5)),
                   w.f32c(1.0), w.f32c(0.0)));
      Value angle = w.fmul(wrapped, w.f32c(6.283185307179586));
      Value odd = w.icmp(LLVM::ICmpPredicate::ne,
                         w.and_(i64, w.i64c(1)), w.i64c(0));
      Value trig = w.select(odd, approx(w, "sin.approx.f32", angle),
                            approx(w, "cos.approx.f32", angle));
      x = LLVM::FMAOp::create(w.b, w.loc, w.fmul(r, trig), w.f32c(b),
                              w.f32c(a));
    }
    storeElement(w, k.params[1], i, elem, x);
    endSimtKernel(k);
  }
  return std::vector<KernelLaunch>{
      launchFor(sym, numel(res), kThreads, {operand(0), result(0)})};
}

/// A splat constant that owns a buffer (an initial value init returns, an
/// operand of another top-level op) is written by a fill kernel; a constant
/// inside a group is folded into that group's kernel instead.
FailureOr<std::vector<KernelLaunch>> lowerConstant(mlir::tg::ConstantOp op,
                                                   Target t, ModuleOp kernels) {
  auto value = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!value || !value.isSplat())
    return op->emitOpError()
           << "the GPU backend fills splat constants only; a constant with "
              "distinct elements needs its data in the artifact";
  Value res = op.getResult();
  if (numel(res) == 0)
    return std::vector<KernelLaunch>{};
  Type elem = elemOf(res);
  APInt bits = isa<FloatType>(elem)
                   ? value.getSplatValue<APFloat>().bitcastToAPInt()
                   : value.getSplatValue<APInt>();
  std::string sym = kernelSymbol(op, "tg_fill", t);
  if (!hasKernel(kernels, sym)) {
    SimtKernel k;
    Value i =
        beginElementKernel(k, kernels, sym, 1, {numel(res)}, op.getLoc()).back();
    KernelBuilder &w = *k.w;
    auto bitsTy = cast<IntegerType>(bitsType(w.b.getContext(), elem));
    Value v = LLVM::ConstantOp::create(
        w.b, w.loc, bitsTy,
        w.b.getIntegerAttr(bitsTy, bits.zextOrTrunc(bitsTy.getWidth())));
    LLVM::StoreOp::create(w.b, w.loc, v, w.gep(k.params[0], i, bitsTy));
    endSimtKernel(k);
  }
  return std::vector<KernelLaunch>{
      launchFor(sym, numel(res), kThreads, {result(0)})};
}

} // namespace

std::optional<FailureOr<std::vector<KernelLaunch>>>
lowerMovementOp(Operation *op, Target t, ModuleOp kernels) {
  using R = std::optional<FailureOr<std::vector<KernelLaunch>>>;
  if (!isa<mlir::tg::ReshapeOp, mlir::tg::TransposeOp, mlir::tg::SliceOp,
           mlir::tg::BroadcastToOp, mlir::tg::ConcatOp, mlir::tg::EmbeddingOp,
           mlir::tg::EmbeddingGradOp, mlir::tg::RandomOp,
           mlir::tg::ConstantOp>(op))
    return std::nullopt;
  if (failed(checkI32Indexable(op)))
    return R(failure());
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](mlir::tg::ReshapeOp o) { return lowerReshape(o, t, kernels); })
      .Case([&](mlir::tg::TransposeOp o) { return lowerTranspose(o, t, kernels); })
      .Case([&](mlir::tg::SliceOp o) { return lowerSlice(o, t, kernels); })
      .Case([&](mlir::tg::BroadcastToOp o) { return lowerBroadcast(o, t, kernels); })
      .Case([&](mlir::tg::ConcatOp o) { return lowerConcat(o, t, kernels); })
      .Case([&](mlir::tg::EmbeddingOp o) { return lowerEmbedding(o, t, kernels); })
      .Case([&](mlir::tg::EmbeddingGradOp o) {
        return lowerEmbeddingGrad(o, t, kernels);
      })
      .Case([&](mlir::tg::RandomOp o) { return lowerRandom(o, t, kernels); })
      .Case([&](mlir::tg::ConstantOp o) { return lowerConstant(o, t, kernels); })
      .Default([](Operation *) { return R(std::nullopt); });
}

} // namespace tg::nvptx::detail
