//===- PassBarePointers.cpp - buffers as pointers at calls ------*- C++ -*-===//
//
// The tg-pass-bare-pointers pass (see Passes.td): every argument of static
// layout of a function the module calls (the kernels, the micro-batch
// functions, and on request the entry points) becomes one pointer to its
// first element instead of a memref descriptor. The callee rebuilds the
// descriptor from the pointer and its type's constants; the caller passes
// the aligned pointer advanced by the offset. The descriptors on both sides
// are LLVM structs joined to the memrefs by unrealized casts, which the
// memref lowering resolves, so the pass needs no conversion of its own.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_PASSBAREPOINTERSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// The layout of a memref passed as a pointer: its constant strides and
/// offset (ShapedType::kDynamic when the offset is not constant).
struct BareLayout {
  SmallVector<int64_t> strides;
  int64_t offset;
};

/// The layout of `type` if it can travel as one pointer: static shape and
/// strides, the default memory space, and elements LLVM stores as they are
/// (the pointer arithmetic on either side must agree with the memref
/// lowering's).
std::optional<BareLayout> bareLayout(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape() || memref.getMemorySpace())
    return std::nullopt;
  Type element = memref.getElementType();
  if (!isa<IntegerType, BFloat16Type, Float16Type, Float32Type, Float64Type>(
          element))
    return std::nullopt;
  BareLayout layout;
  if (failed(memref.getStridesAndOffset(layout.strides, layout.offset)) ||
      llvm::any_of(layout.strides, ShapedType::isDynamic))
    return std::nullopt;
  return layout;
}

/// The LLVM struct the memref lowering gives a descriptor of `type`:
/// allocated and aligned pointers, offset, sizes, strides (64-bit index).
Type descriptorType(MemRefType type) {
  MLIRContext *ctx = type.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> fields{ptr, ptr, i64};
  if (type.getRank() > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, type.getRank()));
    fields.push_back(LLVM::LLVMArrayType::get(i64, type.getRank()));
  }
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

Value constantI64(OpBuilder &b, Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                  b.getI64IntegerAttr(v));
}

/// In the callee: argument `arg` (now a pointer to the first element)
/// becomes a descriptor of `type` again for every use it had.
void rebuildDescriptor(OpBuilder &b, BlockArgument arg, MemRefType type,
                       const BareLayout &layout) {
  Location loc = arg.getLoc();
  SmallVector<OpOperand *> uses(llvm::make_pointer_range(arg.getUses()));
  arg.setType(LLVM::LLVMPointerType::get(b.getContext()));
  // The lowering addresses element 0 at aligned + offset: with a constant
  // offset, aligned is the pointer moved back by it.
  bool staticOffset = !ShapedType::isDynamic(layout.offset);
  Value aligned = arg;
  if (staticOffset && layout.offset != 0)
    aligned = LLVM::GEPOp::create(b, loc, arg.getType(), type.getElementType(),
                                  arg,
                                  ValueRange{constantI64(b, loc, -layout.offset)});
  Value desc = LLVM::PoisonOp::create(b, loc, descriptorType(type));
  auto insert = [&](Value v, ArrayRef<int64_t> position) {
    desc = LLVM::InsertValueOp::create(b, loc, desc, v, position);
  };
  insert(aligned, {0});
  insert(aligned, {1});
  insert(constantI64(b, loc, staticOffset ? layout.offset : 0), {2});
  for (auto [d, size] : llvm::enumerate(type.getShape())) {
    insert(constantI64(b, loc, size), {3, int64_t(d)});
    insert(constantI64(b, loc, layout.strides[d]), {4, int64_t(d)});
  }
  Value memref =
      UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0);
  for (OpOperand *use : uses)
    use->set(memref);
}

/// In a caller: the pointer to the first element of `value`.
Value firstElement(OpBuilder &b, Location loc, Value value, MemRefType type,
                   const BareLayout &layout) {
  Value desc =
      UnrealizedConversionCastOp::create(b, loc, descriptorType(type), value)
          .getResult(0);
  Value aligned = LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{1});
  if (layout.offset == 0)
    return aligned;
  Value offset = ShapedType::isDynamic(layout.offset)
                     ? Value(LLVM::ExtractValueOp::create(b, loc, desc,
                                                         ArrayRef<int64_t>{2}))
                     : constantI64(b, loc, layout.offset);
  return LLVM::GEPOp::create(b, loc, aligned.getType(), type.getElementType(),
                             aligned, ValueRange{offset});
}

struct PassBarePointersPass final
    : tg::cpu::impl::PassBarePointersPassBase<PassBarePointersPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    StringRef cInterface = LLVM::LLVMDialect::getEmitCWrapperAttrName();
    // Every call of each function; a function with any other use (its
    // address taken, a call of another kind) keeps its signature.
    llvm::StringMap<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>())
      functions[fn.getSymName()] = fn;
    DenseMap<Operation *, SmallVector<func::CallOp>> calls;
    DenseSet<Operation *> otherUses;
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses) {
        func::FuncOp target =
            functions.lookup(use.getSymbolRef().getRootReference());
        if (!target)
          continue;
        auto call = dyn_cast<func::CallOp>(use.getUser());
        if (call && use.getSymbolRef() == call.getCalleeAttr())
          calls[target].push_back(call);
        else
          otherUses.insert(target);
      }
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isDeclaration() || otherUses.contains(fn))
        continue;
      bool entry = fn->hasAttr(cInterface);
      if (entry ? !entryPoints : fn.isPublic())
        continue;
      OpBuilder b(&fn.getBody());
      SmallVector<std::pair<unsigned, BareLayout>> bare;
      for (BlockArgument arg : fn.getArguments()) {
        std::optional<BareLayout> layout = bareLayout(arg.getType());
        if (!layout)
          continue;
        auto type = cast<MemRefType>(arg.getType());
        rebuildDescriptor(b, arg, type, *layout);
        bare.push_back({arg.getArgNumber(), *layout});
      }
      if (entry) {
        // The artifact's wrapper passes one pointer per buffer: an entry
        // with a descriptor left could not be called so.
        if (bare.size() != fn.getNumArguments() ||
            llvm::any_of(fn.getResultTypes(), llvm::IsaPred<MemRefType>)) {
          fn.emitError() << "tg-pass-bare-pointers: entry point '"
                         << fn.getName()
                         << "' has a buffer of dynamic shape or layout";
          return signalPassFailure();
        }
        fn->removeAttr(cInterface);
      }
      if (bare.empty())
        continue;
      for (func::CallOp call : calls.lookup(fn)) {
        OpBuilder cb(call);
        for (auto &[i, layout] : bare) {
          Value operand = call.getOperand(i);
          call->setOperand(i, firstElement(cb, call.getLoc(), operand,
                                           cast<MemRefType>(operand.getType()),
                                           layout));
        }
      }
      fn.setFunctionType(FunctionType::get(
          &getContext(), fn.front().getArgumentTypes(), fn.getResultTypes()));
    }
  }
};

} // namespace
