//===- GemmCommon.cpp - IR pieces shared by both GEMM paths -----*- C++ -*-===//
//
// See GemmCommon.h.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/GemmSm80Smem.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <cstring>

namespace tg::nvptx::detail {

using namespace mlir;

Type mlirType(MLIRContext *ctx, ElemType t) {
  // checkProblem admits only these as kernel inputs and outputs.
  if (t == ElemType::BF16)
    return BFloat16Type::get(ctx);
  if (t == ElemType::F16)
    return Float16Type::get(ctx);
  return Float32Type::get(ctx);
}

Type accType(MLIRContext *ctx, int n) {
  return LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(n / 2, Float32Type::get(ctx)));
}

KernelBuilder::KernelBuilder(Block *entry, Location loc)
    : b(loc.getContext()), loc(loc), entry(entry) {
  MLIRContext *ctx = loc.getContext();
  b.setInsertionPointToEnd(entry);
  i1 = b.getI1Type();
  i32 = b.getI32Type();
  i64 = b.getI64Type();
  f32 = b.getF32Type();
  v2f32 = VectorType::get({2}, f32);
  ptr0 = LLVM::LLVMPointerType::get(ctx);
  ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
  ptr3 = LLVM::LLVMPointerType::get(ctx, 3);
  ptr7 = LLVM::LLVMPointerType::get(ctx, 7);
}

Value KernelBuilder::hoisted(const std::string &key,
                             llvm::function_ref<Value(OpBuilder &)> make) {
  auto it = consts.find(key);
  if (it != consts.end())
    return it->second;
  // Hoisted definitions stay in creation order ahead of the body.
  OpBuilder h(loc.getContext());
  if (lastHoisted)
    h.setInsertionPointAfter(lastHoisted);
  else
    h.setInsertionPointToStart(entry);
  Value v = make(h);
  lastHoisted = v.getDefiningOp();
  return consts[key] = v;
}

Value KernelBuilder::i32c(int64_t v) {
  return hoisted("i32:" + std::to_string(v), [&](OpBuilder &h) {
    return LLVM::ConstantOp::create(h, loc, i32, h.getI32IntegerAttr(v));
  });
}

Value KernelBuilder::i64c(int64_t v) {
  return hoisted("i64:" + std::to_string(v), [&](OpBuilder &h) {
    return LLVM::ConstantOp::create(h, loc, i64, h.getI64IntegerAttr(v));
  });
}

Value KernelBuilder::f32c(double v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return hoisted("f32:" + std::to_string(bits), [&](OpBuilder &h) {
    return LLVM::ConstantOp::create(h, loc, f32, h.getF32FloatAttr(f));
  });
}

Value KernelBuilder::zero(Type t) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << "zero:" << t;
  return hoisted(key, [&](OpBuilder &h) {
    return LLVM::ZeroOp::create(h, loc, t);
  });
}

Value KernelBuilder::add(Value x, Value y) { return LLVM::AddOp::create(b, loc, x, y); }
Value KernelBuilder::sub(Value x, Value y) { return LLVM::SubOp::create(b, loc, x, y); }
Value KernelBuilder::mul(Value x, Value y) { return LLVM::MulOp::create(b, loc, x, y); }
Value KernelBuilder::udiv(Value x, Value y) { return LLVM::UDivOp::create(b, loc, x, y); }
Value KernelBuilder::urem(Value x, Value y) { return LLVM::URemOp::create(b, loc, x, y); }
Value KernelBuilder::lshr(Value x, Value y) { return LLVM::LShrOp::create(b, loc, x, y); }
Value KernelBuilder::and_(Value x, Value y) { return LLVM::AndOp::create(b, loc, x, y); }
Value KernelBuilder::or_(Value x, Value y) { return LLVM::OrOp::create(b, loc, x, y); }
Value KernelBuilder::xor_(Value x, Value y) { return LLVM::XOrOp::create(b, loc, x, y); }
Value KernelBuilder::fadd(Value x, Value y) { return LLVM::FAddOp::create(b, loc, x, y); }
Value KernelBuilder::fmul(Value x, Value y) { return LLVM::FMulOp::create(b, loc, x, y); }

Value KernelBuilder::icmp(LLVM::ICmpPredicate p, Value x, Value y) {
  return LLVM::ICmpOp::create(b, loc, p, x, y);
}

Value KernelBuilder::select(Value p, Value x, Value y) {
  return LLVM::SelectOp::create(b, loc, p, x, y);
}

Value KernelBuilder::zext64(Value x) { return LLVM::ZExtOp::create(b, loc, i64, x); }

Value KernelBuilder::gep(Value base, Value off, Type elt) {
  return LLVM::GEPOp::create(b, loc, base.getType(), elt, base, ValueRange{off});
}

Value KernelBuilder::extractvalue(Value agg, int64_t i) {
  return LLVM::ExtractValueOp::create(b, loc, agg, ArrayRef<int64_t>{i});
}

void KernelBuilder::openIf(Value cond, Block **elseBlock) {
  auto op = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/elseBlock != nullptr);
  if (elseBlock)
    *elseBlock = op.elseBlock();
  b.setInsertionPoint(op.thenBlock()->getTerminator());
}

scf::ForOp KernelBuilder::openFor(Value ub, ValueRange inits, StringRef ivName) {
  auto loop = scf::ForOp::create(b, loc, i32c(0), ub, i32c(1), inits);
  if (!ivName.empty())
    loop.getInductionVar().setLoc(NameLoc::get(b.getStringAttr(ivName), loc));
  Block *body = loop.getBody();
  if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
    b.setInsertionPoint(&body->back());
  else
    b.setInsertionPointToEnd(body);
  return loop;
}

void KernelBuilder::closeFor(scf::ForOp loop, ValueRange results) {
  if (!loop.getInitArgs().empty())
    scf::YieldOp::create(b, loc, results);
  b.setInsertionPointAfter(loop);
}

LLVM::LLVMFuncOp createKernel(ModuleOp module, const GemmProblem &p,
                              const TileConfig &c, Type abPtr, KernelArgs &args) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  Type ptr1 = LLVM::LLVMPointerType::get(ctx, 1), i32 = b.getI32Type();
  SmallVector<Type> argTys = {abPtr, abPtr, ptr1, ptr1, ptr1,
                              i32,   i32,   i32,  b.getF32Type()};
  auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), argTys);
  auto fn = LLVM::LLVMFuncOp::create(b, loc, kernelName(p, c), fnTy);

  const Epilogue &e = p.epilogue;
  auto i32Attr = [&](int64_t v) { return b.getI32IntegerAttr(v); };
  SmallVector<NamedAttribute> cfg = {
      b.getNamedAttr("bm", i32Attr(c.bm)), b.getNamedAttr("bn", i32Attr(c.bn)),
      b.getNamedAttr("bk", i32Attr(c.bk)),
      b.getNamedAttr("stages", i32Attr(c.stages)),
      b.getNamedAttr("group_m", i32Attr(c.groupM))};
  if (p.target == Target::SM80) {
    cfg.push_back(b.getNamedAttr("warps_m", i32Attr(c.warpsM)));
    cfg.push_back(b.getNamedAttr("warps_n", i32Attr(c.warpsN)));
  } else {
    cfg.push_back(b.getNamedAttr("consumer_warpgroups",
                                 i32Attr(c.consumerWarpgroups())));
    cfg.push_back(b.getNamedAttr("persistent", b.getUnitAttr()));
  }
  cfg.push_back(b.getNamedAttr("target", b.getStringAttr(toString(p.target))));
  SmallVector<NamedAttribute> gemm = {
      b.getNamedAttr("form", b.getStringAttr(toString(p.form))),
      b.getNamedAttr("in", b.getStringAttr(toString(p.in))),
      b.getNamedAttr("out", b.getStringAttr(toString(e.out))),
      b.getNamedAttr("scale", b.getBoolAttr(e.scale)),
      b.getNamedAttr("bias", b.getBoolAttr(e.bias)),
      b.getNamedAttr("act", b.getStringAttr(toString(e.act))),
      b.getNamedAttr("residual", b.getBoolAttr(e.residual))};
  fn->setAttr("nvvm.kernel", b.getUnitAttr());
  fn->setAttr("nvvm.maxntid",
              b.getDenseI32ArrayAttr({c.threads(p.target), 1, 1}));
  // sm_90a: one CTA per SM is what lets ptxas size registers for
  // setmaxnreg; sm_80: as many as shared memory allows (sm80ResidentCtas).
  fn->setAttr("nvvm.minctasm", i32Attr(p.target == Target::SM90a
                                           ? 1
                                           : sm80ResidentCtas(p, c)));
  fn->setAttr("tg.tile_config", b.getDictionaryAttr(cfg));
  fn->setAttr("tg.gemm", b.getDictionaryAttr(gemm));

  // Name locations print as the SSA names (%A, %M, ...) in --emit-mlir.
  static const char *const names[] = {"A", "B", "C", "bias", "res",
                                      "M", "N", "K", "alpha"};
  Block *entry = fn.addEntryBlock(b);
  for (unsigned i = 0; i < entry->getNumArguments(); ++i)
    entry->getArgument(i).setLoc(NameLoc::get(b.getStringAttr(names[i]), loc));
  args = {entry->getArgument(0), entry->getArgument(1), entry->getArgument(2),
          entry->getArgument(3), entry->getArgument(4), entry->getArgument(5),
          entry->getArgument(6), entry->getArgument(7), entry->getArgument(8),
          /*epilogue=*/nullptr, /*batch=*/Value()};
  return fn;
}

Value wgmmaDescriptor(KernelBuilder &w, Value smemAddr, Value off, int lbo,
                      int sbo) {
  uint64_t fixed = (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32) |
                   (uint64_t(1) << 62);
  Value addr = w.shri(w.add(smemAddr, off), 4);
  Value lo = w.zext64(w.andi(addr, 0x3FFF));
  return w.or_(lo, w.i64c(static_cast<int64_t>(fixed)));
}

std::pair<Value, Value> emitTileRaster(KernelBuilder &w, const TileConfig &c,
                                       const KernelArgs &a, Value tile) {
  // Triton-style grouped order: walk groupM tile-rows down a column of
  // tiles before moving right, so a band of A and a column of B stay in L2.
  Value tilesM = w.udiv(w.addi(a.m, c.bm - 1), w.i32c(c.bm));
  Value tilesN = w.udiv(w.addi(a.n, c.bn - 1), w.i32c(c.bn));
  Value perGroup = w.muli(tilesN, c.groupM);
  Value group = w.udiv(tile, perGroup);
  Value firstM = w.muli(group, c.groupM);
  Value left = w.sub(tilesM, firstM);
  Value gsz = LLVM::UMinOp::create(w.b, w.loc, left, w.i32c(c.groupM));
  Value inGroup = w.urem(tile, perGroup);
  Value tileM = w.add(firstM, w.urem(inGroup, gsz));
  Value tileN = w.udiv(inGroup, gsz);
  return {tileM, tileN};
}

void emitEpiloguePair(KernelBuilder &w, const GemmProblem &p,
                      const KernelArgs &a, Value row, Value col, Value v0In,
                      Value v1In) {
  const Epilogue &e = p.epilogue;
  Location loc = w.loc;
  OpBuilder &b = w.b;
  Value inM = w.ult(row, a.m), inN = w.ult(col, a.n);
  Value pred = w.and_(inM, inN);
  scf::IfOp ifOp = scf::IfOp::create(b, loc, pred, /*withElseRegion=*/false);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  if (a.epilogue) {
    // col is even, so with an even N col + 1 < N as well; an odd N (the
    // pipeline's kernels take any) leaves the last column's pair half out.
    a.epilogue->emit(w, a.batch, row, col, v0In);
    Value col1 = w.addi(col, 1);
    if (p.n % 2)
      w.openIf(w.ult(col1, a.n));
    a.epilogue->emit(w, a.batch, row, col1, v1In);
    b.setInsertionPointAfter(ifOp);
    return;
  }
  Value v = LLVM::UndefOp::create(b, loc, w.v2f32);
  v = LLVM::InsertElementOp::create(b, loc, v, v0In, w.i32c(0));
  v = LLVM::InsertElementOp::create(b, loc, v, v1In, w.i32c(1));
  if (e.scale) {
    Value s = LLVM::UndefOp::create(b, loc, w.v2f32);
    s = LLVM::InsertElementOp::create(b, loc, s, a.alpha, w.i32c(0));
    s = LLVM::ShuffleVectorOp::create(b, loc, s, s, ArrayRef<int32_t>{0, 0});
    v = w.fmul(v, s);
  }
  if (e.bias) {
    Value bp = w.gep(a.bias, w.zext64(col), w.f32);
    Value bv = LLVM::LoadOp::create(b, loc, w.v2f32, bp, /*alignment=*/8);
    v = w.fadd(v, bv);
  }
  if (e.act == Activation::ReLU) {
    Value z = w.zero(w.v2f32);
    v = LLVM::MaxNumOp::create(b, loc, v, z);
  } else if (e.act == Activation::GELU) {
    // tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), with the
    // hardware tanh.approx.f32 (sm_75+), per lane. NVVM has no op for it.
    Value out = LLVM::UndefOp::create(b, loc, w.v2f32);
    for (int i = 0; i < 2; ++i) {
      Value x = LLVM::ExtractElementOp::create(b, loc, v, w.i32c(i));
      Value x3 = w.fmul(w.fmul(x, x), x);
      Value in = w.fadd(x, w.fmul(x3, w.f32c(0.044715)));
      in = w.fmul(in, w.f32c(0.7978845608028654));
      Value t = LLVM::InlineAsmOp::create(
                    b, loc, w.f32, ValueRange{in}, "tanh.approx.f32 $0, $1;",
                    "=f,f", /*has_side_effects=*/false,
                    /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
                    LLVM::AsmDialectAttr(), ArrayAttr())
                    .getResult(0);
      Value y = w.fmul(w.fmul(x, w.f32c(0.5)), w.fadd(t, w.f32c(1.0)));
      out = LLVM::InsertElementOp::create(b, loc, out, y, w.i32c(i));
    }
    v = out;
  }
  Type ot = mlirType(b.getContext(), e.out);
  Type vt = VectorType::get({2}, ot);
  Value off = w.add(w.mul(w.zext64(row), w.zext64(a.n)), w.zext64(col));
  if (a.batch) // C and the residual are [batch, M, N]
    off = w.add(off, w.mul(w.zext64(a.batch),
                           w.mul(w.zext64(a.m), w.zext64(a.n))));
  unsigned align = 2 * elemBytes(e.out);
  if (e.residual) {
    Value rp = w.gep(a.res, off, ot);
    Value rv = LLVM::LoadOp::create(b, loc, vt, rp, align);
    if (e.out != ElemType::F32)
      rv = LLVM::FPExtOp::create(b, loc, w.v2f32, rv);
    v = w.fadd(v, rv);
  }
  if (e.out != ElemType::F32)
    v = LLVM::FPTruncOp::create(b, loc, vt, v);
  Value cp = w.gep(a.c, off, ot);
  LLVM::StoreOp::create(b, loc, v, cp, align);
  b.setInsertionPointAfter(ifOp);
}

void declareSharedMemory(ModuleOp module) {
  if (module.lookupSymbol("tg_smem"))
    return;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  // All kernels share the dynamic shared-memory symbol; each sizes it at
  // launch. 1024-byte aligned for the 128-byte swizzle atoms of TMA.
  LLVM::GlobalOp::create(b, module.getLoc(),
                         LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                         /*isConstant=*/false, LLVM::Linkage::External,
                         "tg_smem", Attribute(), /*alignment=*/1024,
                         /*addrSpace=*/3);
}

} // namespace tg::nvptx::detail
