//===- MarkEntryPoints.cpp - C interface on entry points --------*- C++ -*-===//
//
// The tg-mark-entry-points pass: sets llvm.emit_c_interface on the functions
// that callers outside the module (JIT, runtime) invoke, and fixes the
// calling contract that bufferization must respect (read-only arguments).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_MARKENTRYPOINTSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// Drops the argument and result attributes that describe the model, not the
/// code (tg.name, tg.role, tg.init): once results become out-parameters a
/// result's tg.role would land on an argument, where the tg dialect's
/// verifier rejects it. tg.arena (tg-bind-arena's marker) stays.
void stripTGAttributes(func::FuncOp fn) {
  auto strip = [](DictionaryAttr attrs) {
    SmallVector<NamedAttribute> kept;
    if (!attrs)
      return kept;
    for (NamedAttribute a : attrs)
      if (!llvm::is_contained({tg::attr::name, tg::attr::role, tg::attr::init},
                              a.getName().strref()))
        kept.push_back(a);
    return kept;
  };
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    fn.setArgAttrs(i, strip(fn.getArgAttrDict(i)));
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i)
    fn.setResultAttrs(i, strip(fn.getResultAttrDict(i)));
}

struct MarkEntryPointsPass final
    : tg::cpu::impl::MarkEntryPointsPassBase<MarkEntryPointsPass> {
  using Base::Base;
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      stripTGAttributes(fn);
      // Arguments are read-only: bufferization copies rather than write
      // into a caller's buffer, so a runtime can reuse an input batch.
      if (!fn.isDeclaration())
        for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
          if (isa<TensorType>(fn.getArgument(i).getType()) &&
              !fn.getArgAttr(i, bufferization::BufferizationDialect::
                                    kWritableAttrName))
            fn.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                          BoolAttr::get(&getContext(), false));
      bool wanted = functions.empty()
                        ? fn.isPublic() && !fn.isDeclaration()
                        : llvm::is_contained(functions, fn.getName().str());
      if (wanted)
        fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                    UnitAttr::get(&getContext()));
    }
  }
};

} // namespace
