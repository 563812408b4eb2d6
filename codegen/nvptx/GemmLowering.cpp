//===- GemmLowering.cpp - gemm groups and matmuls to tensor-core GEMMs -*- C++ -*-===//
//
// A `gemm` group is a matmul whose every other op is elementwise on the
// product's shape (tg-fuse guarantees it). The lowering hands the product
// to the sm_80 / sm_90a generators with m, n, k baked in as constants and
// replaces their fixed epilogue by the group's body, generated per output
// element: each op computes in f32 and rounds to its result's element type,
// as the CPU backend and the reference evaluator do, and every value the
// group yields is stored, so the pre-activation a backward pass needs and
// the activation come out of the one kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmLowering.h"
#include "codegen/nvptx/GemmSm80Smem.h"
#include "codegen/nvptx/GemmStaging.h"
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/SimtKernels.h"
#include "codegen/nvptx/SimtScalar.h"

#include "dialects/TGDialect.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tg::nvptx {

using namespace mlir;
using mlir::tg::FusedOp;
using mlir::tg::KernelKind;
using mlir::tg::MatmulOp;
using mlir::tg::TileConfigAttr;

static std::optional<ElemType> elemTypeOf(Type t) {
  Type e = getElementTypeOrSelf(t);
  if (e.isBF16())
    return ElemType::BF16;
  if (e.isF16())
    return ElemType::F16;
  if (e.isF32())
    return ElemType::F32;
  return std::nullopt;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// The one matmul of `op`: itself, or the product in a gemm group's body.
static MatmulOp matmulOf(Operation *op) {
  if (auto m = dyn_cast<MatmulOp>(op))
    return m;
  auto fused = dyn_cast<FusedOp>(op);
  if (!fused || fused.getKind() != KernelKind::gemm)
    return {};
  MatmulOp found;
  for (Operation &inner : fused.getBodyBlock())
    if (auto m = dyn_cast<MatmulOp>(inner)) {
      if (found)
        return {};
      found = m;
    }
  return found;
}

bool isTensorCoreGemm(Operation *op) {
  if (isa<MatmulOp>(op) && op->getParentOfType<FusedOp>())
    return false;
  MatmulOp m = matmulOf(op);
  if (!m)
    return false;
  std::optional<ElemType> in = elemTypeOf(m.getLhs().getType());
  return in && *in != ElemType::F32;
}

FailureOr<GemmOpInfo> analyzeGemm(Operation *op, std::string &why) {
  MatmulOp m = matmulOf(op);
  if (!m) {
    why = "it is neither a tg.matmul nor a gemm group with one matmul";
    return failure();
  }
  std::optional<ElemType> lhs = elemTypeOf(m.getLhs().getType());
  std::optional<ElemType> rhs = elemTypeOf(m.getRhs().getType());
  if (!lhs || lhs != rhs || *lhs == ElemType::F32) {
    why = "its operands are not both bf16 or both f16";
    return failure();
  }
  if (auto acc = m->getAttrOfType<TypeAttr>(mlir::tg::attr::acc);
      acc && !acc.getValue().isF32()) {
    why = "it accumulates in a type other than f32";
    return failure();
  }
  if (!elemTypeOf(m.getResult().getType())) {
    why = "its result is not f32, bf16 or f16";
    return failure();
  }
  bool tl = m.getTransposeLhs(), tr = m.getTransposeRhs();
  if (tl && tr) {
    why = "both operands are transposed (no kernel form computes A^T B^T; "
          "transpose the product instead)";
    return failure();
  }
  ArrayRef<int64_t> a = shapeOf(m.getLhs()), b = shapeOf(m.getRhs()),
                    c = shapeOf(m.getResult());
  GemmOpInfo info;
  info.matmul = m;
  GemmProblem &p = info.problem;
  p.in = *lhs;
  p.form = tl ? Form::TN : tr ? Form::NT : Form::NN;
  p.m = c[c.size() - 2];
  p.n = c.back();
  p.k = tl ? a[a.size() - 2] : a.back();
  ArrayRef<int64_t> batchDims = c.drop_back(2);
  p.batch = 1;
  for (int64_t d : batchDims)
    p.batch *= d;
  // Each operand either has every batch dimension of the result (a batch
  // stride) or none of them (broadcast whole): the kernels index an
  // operand's matrices by one stride.
  auto batched = [&](ArrayRef<int64_t> s, bool &out) {
    ArrayRef<int64_t> lead = s.drop_back(2);
    int64_t n = 1;
    for (int64_t d : lead)
      n *= d;
    if (n == 1) {
      out = false;
      return true;
    }
    out = true;
    if (lead.size() > batchDims.size())
      return false;
    SmallVector<int64_t> padded(batchDims.size() - lead.size(), 1);
    padded.append(lead.begin(), lead.end());
    return ArrayRef<int64_t>(padded) == batchDims;
  };
  if (!batched(a, p.batchA) || !batched(b, p.batchB)) {
    why = "an operand broadcasts over some batch dimensions but not all";
    return failure();
  }
  // A batched lhs whose rows are contiguous (K-major) times one shared rhs
  // is one GEMM of batch x M rows: A's and C's matrices are stacked rows.
  // Every linear layer of a transformer ([B, T, C] x [C, N]) is this, and
  // one tall GEMM has fewer ragged tiles than B short ones.
  if (p.batch > 1 && p.batchA && !p.batchB && p.form != Form::TN) {
    info.rowsPerBatch = p.m;
    p.m *= p.batch;
    p.batch = 1;
  }
  if (p.batch == 1)
    p.batchA = p.batchB = true;
  return info;
}

TileConfigAttr tileConfigAttr(MLIRContext *ctx, const TileConfig &c, Target t) {
  // wgmma's fields; the mma.sync kernel's (on either target) and the SIMT
  // kernel's have warps and no consumer warpgroups.
  bool wgmma = t == Target::SM90a && (c.kernel == GemmKernel::TensorCore ||
                                      c.kernel == GemmKernel::WgmmaStaged);
  return TileConfigAttr::get(ctx, c.bm, c.bn, c.bk, c.stages, c.groupM,
                             wgmma ? 1 : c.warpsM, wgmma ? 1 : c.warpsN,
                             wgmma ? c.consumerWarpgroups() : 0, wgmma,
                             toString(t), toString(c.kernel));
}

TileConfig tileConfigFromAttr(TileConfigAttr a) {
  TileConfig c;
  c.bm = static_cast<int>(a.getBm());
  c.bn = static_cast<int>(a.getBn());
  c.bk = static_cast<int>(a.getBk());
  c.stages = static_cast<int>(a.getStages());
  c.groupM = static_cast<int>(a.getGroupM());
  c.warpsM = static_cast<int>(a.getWarpsM());
  c.warpsN = static_cast<int>(a.getWarpsN());
  // The verifier admitted only the names parseGemmKernel knows.
  c.kernel = parseGemmKernel(a.getKernel().str()).value_or(GemmKernel::TensorCore);
  return c;
}

namespace {

/// The group's body as per-element code (see ElementEpilogue), each op by
/// SimtScalar's emitScalarOp, which computes in f32 and rounds where the
/// op's result type does. Built once per kernel; emit() runs once per
/// output element a thread owns.
class GroupEpilogue final : public detail::ElementEpilogue {
public:
  /// Checks that every op after the product has a scalar form and that
  /// every operand it reads broadcasts to the product's shape.
  LogicalResult init(Operation *op, MatmulOp matmul, int64_t rowsPerBatch);

  /// The group operands the epilogue reads besides the two matrices.
  const SmallVector<unsigned> &extraOperands() const { return extra; }
  /// The kernel parameters of the extra operands and of the results.
  void bind(ArrayRef<Value> extraParams, ArrayRef<Value> resultParams) {
    for (auto [i, v] : llvm::enumerate(extraParams))
      operandPtr[extra[i]] = v;
    results.assign(resultParams.begin(), resultParams.end());
  }

  void emit(detail::KernelBuilder &w, Value batch, Value row, Value col,
            Value acc) const override;
  /// False when emitScalarOp refused an op (the error is at that op).
  bool ok() const { return !failed; }

private:
  Value load(detail::KernelBuilder &w, unsigned operand, Value batch,
             Value row, Value col) const;
  /// The element offset of (batch, row, col) in the product's shape (i64).
  Value linear(detail::KernelBuilder &w, Value batch, Value row,
               Value col) const;

  Operation *group = nullptr; // null for a lone matmul
  Operation *matmul = nullptr;
  Value product;
  SmallVector<int64_t> outShape; // [batch..., M, N]
  SmallVector<unsigned> extra;
  DenseMap<unsigned, Value> operandPtr;
  SmallVector<Value> results;
  int64_t rowsPerBatch = 0; // see GemmOpInfo
  mutable bool failed = false;
};

LogicalResult GroupEpilogue::init(Operation *op, MatmulOp m,
                                  int64_t foldedRows) {
  matmul = m;
  rowsPerBatch = foldedRows;
  product = m.getResult();
  outShape.assign(shapeOf(product).begin(), shapeOf(product).end());
  auto fused = dyn_cast<FusedOp>(op);
  if (!fused)
    return success();
  group = op;
  for (Operation &o : fused.getBodyBlock().without_terminator()) {
    if (&o == matmul)
      continue;
    auto refuse = [&](StringRef why) {
      return op->emitOpError() << "cannot become a tensor-core GEMM: its "
                               << "epilogue op '" << o.getName() << "' at "
                               << o.getLoc() << " " << why;
    };
    // one_hot reads its operand per row, not per element: no epilogue op.
    if (!detail::isScalarOp(&o) || isa<mlir::tg::OneHotOp>(o))
      return refuse("has no per-element GPU form");
    for (Value v : o.getOperands()) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg)
        continue;
      // The operand must broadcast to the product's shape (right-aligned,
      // each dimension equal or 1).
      ArrayRef<int64_t> s = shapeOf(v);
      bool fits = s.size() <= outShape.size();
      for (size_t i = 0; fits && i < s.size(); ++i) {
        int64_t d = s[s.size() - 1 - i];
        fits = d == 1 || d == outShape[outShape.size() - 1 - i];
      }
      if (!fits)
        return refuse("reads an operand that does not broadcast to the "
                      "product's shape");
      if (!llvm::is_contained(extra, arg.getArgNumber()))
        extra.push_back(arg.getArgNumber());
    }
  }
  for (Value v : fused.getYield().getOperands())
    if (isa<BlockArgument>(v))
      return op->emitOpError() << "cannot become a tensor-core GEMM: it "
                                  "yields one of its operands";
  return success();
}

Value GroupEpilogue::linear(detail::KernelBuilder &w, Value batch, Value row,
                            Value col) const {
  int64_t m = outShape[outShape.size() - 2], n = outShape.back();
  Value off = w.add(w.mul(w.zext64(row), w.i64c(n)), w.zext64(col));
  if (batch)
    off = w.add(off, w.mul(w.zext64(batch), w.i64c(m * n)));
  return off;
}

Value GroupEpilogue::load(detail::KernelBuilder &w, unsigned operand,
                          Value batch, Value row, Value col) const {
  Value arg = cast<FusedOp>(group).getBodyBlock().getArgument(operand);
  ArrayRef<int64_t> s = shapeOf(arg);
  // Element offset: the operand's own strides, 0 along broadcast dims. The
  // batch index is split into the result's batch dimensions.
  size_t rank = s.size(), outRank = outShape.size();
  Value off = w.i64c(0);
  int64_t stride = 1, batchAfter = 1;
  for (size_t i = 0; i < rank; ++i) {
    size_t od = outRank - 1 - i; // the output dimension this one aligns with
    int64_t d = s[rank - 1 - i];
    if (d != 1) {
      Value idx;
      if (od == outRank - 1)
        idx = w.zext64(col);
      else if (od == outRank - 2)
        idx = w.zext64(row);
      else
        idx = w.urem(w.udiv(w.zext64(batch), w.i64c(batchAfter)), w.i64c(d));
      off = w.add(off, w.mul(idx, w.i64c(stride)));
    }
    if (od < outRank - 2)
      batchAfter *= outShape[od];
    stride *= d;
  }
  return detail::loadElement(w, operandPtr.lookup(operand), off,
                             getElementTypeOrSelf(arg.getType()));
}

void GroupEpilogue::emit(detail::KernelBuilder &w, Value batch, Value row,
                         Value col, Value acc) const {
  if (rowsPerBatch) { // a folded batch: row b x M + r of one tall GEMM
    batch = w.udiv(row, w.i32c(rowsPerBatch));
    row = w.urem(row, w.i32c(rowsPerBatch));
  }
  // The product rounds to its own type first, as the matmul's result does.
  Type productElem = getElementTypeOrSelf(product.getType());
  DenseMap<Value, Value> v;
  v[product] = detail::toCompute(
      w, detail::toStorage(w, acc, productElem), productElem);
  if (!group) {
    detail::storeElement(w, results[0], linear(w, batch, row, col),
                         productElem, v[product]);
    return;
  }
  auto fused = cast<FusedOp>(group);
  detail::ElementPosition pos{linear(w, batch, row, col)};
  for (Operation &o : fused.getBodyBlock().without_terminator()) {
    if (&o == matmul)
      continue;
    SmallVector<Value> xs;
    for (Value x : o.getOperands()) {
      auto it = v.find(x);
      xs.push_back(it != v.end()
                       ? it->second
                       : v[x] = load(w, cast<BlockArgument>(x).getArgNumber(),
                                     batch, row, col));
    }
    FailureOr<Value> r = detail::emitScalarOp(w, &o, xs, &pos);
    if (mlir::failed(r)) {
      failed = true;
      return;
    }
    v[o.getResult(0)] = *r;
  }
  for (auto [i, y] : llvm::enumerate(fused.getYield().getOperands()))
    detail::storeElement(w, results[i], pos.linear,
                         getElementTypeOrSelf(y.getType()), v.lookup(y));
}

} // namespace

FailureOr<std::vector<KernelLaunch>>
lowerGemmToKernels(Operation *op, Target t, ModuleOp kernels) {
  // Both kernels (tensor-core and SIMT) are built in these dialects.
  kernels.getContext()->getOrLoadDialect<LLVM::LLVMDialect>();
  kernels.getContext()->getOrLoadDialect<NVVM::NVVMDialect>();
  kernels.getContext()->getOrLoadDialect<scf::SCFDialect>();
  std::string why;
  FailureOr<GemmOpInfo> info = analyzeGemm(op, why);
  if (failed(info))
    return op->emitOpError() << "cannot become a tensor-core GEMM: " << why;
  GemmProblem p = info->problem;
  p.target = t;
  if (std::optional<std::string> bad = checkShape(p))
    return op->emitOpError() << "cannot become a tensor-core GEMM (M = " << p.m
                             << ", N = " << p.n << ", K = " << p.k
                             << "): " << *bad;
  TileConfigAttr cfgAttr;
  if (auto list = op->getAttrOfType<ArrayAttr>(mlir::tg::attr::tileConfigs))
    for (Attribute a : list)
      if (auto c = dyn_cast<TileConfigAttr>(a); c && c.getTarget() == toString(t))
        cfgAttr = c;
  if (!cfgAttr)
    return op->emitOpError() << "has no #tg.tile_config for " << toString(t)
                             << " (run tg-configure-gemms{targets="
                             << toString(t) << "} first)";
  TileConfig c = tileConfigFromAttr(cfgAttr);
  if (c.kernel == GemmKernel::Simt)
    return detail::lowerSimtGemm(op, t, kernels);
  // The mma.sync kernel on sm_90a is sm_80's code: its tiles, its launch.
  p.target = codeTarget(t, c);
  bool sm90 = p.target == Target::SM90a;
  bool staged = c.kernel == GemmKernel::WgmmaStaged;
  bool aligned = rowsAligned(p, true) && rowsAligned(p, false);
  if (sm90 && !aligned && !staged)
    return op->emitOpError()
           << "cannot become a wgmma GEMM: an operand's rows are not 16-byte "
              "aligned, which TMA cannot load; its #tg.tile_config for sm_90a "
              "must say kernel = \"wgmma_staged\" or \"mma_sync\" (as "
              "tg-configure-gemms does)";
  if (staged && aligned)
    return op->emitOpError()
           << "has kernel = \"wgmma_staged\" but every operand's rows are "
              "16-byte aligned: there is nothing to stage (use tensor_core)";
  // Where each staged operand's realigned copy goes in the op's scratch.
  uint64_t scratchBytes = 0;
  uint64_t stagedAt[2] = {0, 0};
  if (staged)
    for (bool isA : {true, false}) {
      if (rowsAligned(p, isA))
        continue;
      TmaTensor tensor = tmaTensor(p, isA);
      uint64_t padded = tensor.batches * tensor.rows * stagedPitch(tensor.cols);
      if (padded >= (uint64_t(1) << 31))
        return op->emitOpError()
               << "cannot stage operand " << (isA ? "A" : "B") << " for wgmma: "
               << "its realigned copy has " << padded
               << " elements, over the 2^31 the copy kernel indexes";
      stagedAt[isA ? 0 : 1] = scratchBytes;
      scratchBytes += (2 * padded + 255) / 256 * 256;
    }

  GroupEpilogue epi;
  if (failed(epi.init(op, info->matmul, info->rowsPerBatch)))
    return failure();

  // Parameters: the two matrices, the epilogue's other operands, results.
  MatmulOp m = info->matmul;
  // A group's matrices are block arguments (tg-fuse puts no producer of
  // a product in its group); a lone matmul's are its operands 0 and 1.
  auto operandIndex = [&](Value v, unsigned lone) -> FailureOr<unsigned> {
    if (!isa<FusedOp>(op))
      return lone;
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getArgNumber();
    return failure();
  };
  std::vector<KernelParam> params;
  for (bool isA : {true, false}) {
    KernelParam k;
    FailureOr<unsigned> index =
        operandIndex(isA ? m.getLhs() : m.getRhs(), isA ? 0 : 1);
    if (failed(index))
      return op->emitOpError() << "cannot become a tensor-core GEMM: its "
                                  "product reads a value computed in the group";
    k.index = *index;
    if (sm90) {
      k.kind = KernelParam::Kind::TensorMap;
      TmaTensor tensor = tmaTensor(p, isA);
      TmaBox box = tmaBox(p, c, isA);
      k.map = {p.in == ElemType::BF16, tensor.rows, tensor.cols,
               tensor.batches, box.outer, box.inner};
      if (staged && !rowsAligned(p, isA)) {
        k.map.pitch = stagedPitch(tensor.cols);
        k.map.staged = true;
        k.map.scratchOffset = stagedAt[isA ? 0 : 1];
      }
    }
    params.push_back(k);
  }
  // KernelGen.h's aliasing rule: CTAs read tiles of A and B after other
  // CTAs have stored results, so no result may live in their buffers (a
  // result in place of an epilogue operand is fine: each element is read
  // by the thread that then writes it).
  for (OpResult r : op->getResults()) {
    std::optional<std::pair<int64_t, int64_t>> mine = detail::plannedBuffer(r);
    for (unsigned i = 0; i < 2 && mine; ++i)
      if (detail::plannedBuffer(op->getOperand(params[i].index)) == mine)
        return op->emitOpError()
               << "cannot become a tensor-core GEMM: the memory plan puts "
                  "result #"
               << r.getResultNumber() << " in the buffer of operand #"
               << params[i].index << ", a matrix the kernel still reads";
  }
  for (unsigned i : epi.extraOperands())
    params.push_back({KernelParam::Kind::Operand, i, {}});
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    params.push_back({KernelParam::Kind::Result, i, {}});

  // The realigning copies run first (same stream), one per staged operand.
  std::vector<KernelLaunch> launches;
  for (unsigned i = 0; i < 2; ++i)
    if (params[i].kind == KernelParam::Kind::TensorMap && params[i].map.staged)
      launches.push_back(detail::stagingCopy(kernels, op->getLoc(), t,
                                             params[i].map, params[i].index,
                                             scratchBytes));

  LaunchGeometry g = launchGeometry(p, c, assumedSMs(p.target));
  KernelLaunch launch;
  launch.symbol = kernelSymbol(op, "tg_gemm", t);
  launch.grid = {g.grid, g.gridY, 1};
  launch.block = {g.block, 1, 1};
  launch.dynamicSharedBytes = g.smemBytes;
  launch.params = params;
  launch.scratchBytes = scratchBytes;
  launches.push_back(launch);
  if (hasKernel(kernels, launch.symbol))
    return launches;

  MLIRContext *ctx = kernels.getContext();
  detail::declareSharedMemory(kernels);
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  Location loc = op->getLoc();
  // TMA descriptors are generic pointers (to device memory holding the
  // CUtensorMap); every buffer is a global pointer.
  Type ptr0 = LLVM::LLVMPointerType::get(ctx),
       ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
  SmallVector<Type> argTys;
  for (const KernelParam &k : params)
    argTys.push_back(k.kind == KernelParam::Kind::TensorMap ? ptr0 : ptr1);
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, launch.symbol,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), argTys));
  fn->setAttr("nvvm.kernel", b.getUnitAttr());
  fn->setAttr("nvvm.maxntid", b.getDenseI32ArrayAttr({c.threads(p.target), 1, 1}));
  // sm_90a: one CTA per SM lets ptxas size registers for setmaxnreg;
  // sm_80: as many as shared memory allows (sm80ResidentCtas).
  fn->setAttr("nvvm.minctasm",
              b.getI32IntegerAttr(sm90 ? 1 : sm80ResidentCtas(p, c)));
  Block *entry = fn.addEntryBlock(b);

  detail::KernelBuilder w(entry, loc);
  detail::KernelArgs a;
  a.a = entry->getArgument(0);
  a.b = entry->getArgument(1);
  a.m = w.i32c(p.m);
  a.n = w.i32c(p.n);
  a.k = w.i32c(p.k);
  a.alpha = w.f32c(1.0);
  size_t nExtra = epi.extraOperands().size();
  SmallVector<Value> args(entry->getArguments().begin(),
                          entry->getArguments().end());
  epi.bind(ArrayRef<Value>(args).slice(2, nExtra),
           ArrayRef<Value>(args).drop_front(2 + nExtra));
  a.epilogue = &epi;
  if (sm90)
    detail::emitSm90Gemm(w, p, c, a);
  else
    detail::emitSm80Gemm(w, p, c, a);
  if (!epi.ok()) {
    fn.erase();
    return failure();
  }
  return launches;
}

} // namespace tg::nvptx
