//===- OutlineKernels.cpp - one function per linalg op ----------*- C++ -*-===//
//
// The tg-outline-kernels pass (see Passes.td): every linalg op on buffers
// moves into a private `noinline` function, and identical functions are
// shared. A kernel is identified by its printed form (op, types, attributes,
// body; locations are not printed), so the key is exactly what the code
// generator sees.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_OUTLINEKERNELSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

namespace {

/// A value the kernel rebuilds itself instead of taking as an argument:
/// constants stay visible to the kernel's folding, and do not make two
/// otherwise equal kernels differ by their argument lists.
bool cloneIntoKernel(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         def->hasTrait<OpTrait::ConstantLike>();
}

/// Builds, unlinked, the kernel that runs `op`: its arguments are `args`
/// (every value `op` reads from outside that is not a constant).
func::FuncOp buildKernel(Operation *op, ArrayRef<Value> args,
                         ArrayRef<Value> constants) {
  OpBuilder b(op->getContext());
  Location loc = op->getLoc();
  auto type = b.getFunctionType(ValueRange(args).getTypes(), {});
  auto kernel = func::FuncOp::create(b, loc, "tg_kernel", type);
  kernel.setPrivate();
  // Inlined back at -O3, the kernels would rebuild the long function.
  // (func-to-llvm keeps `passthrough`, LLVMFuncOp's list of LLVM function
  // attributes, and drops a plain `no_inline`.)
  kernel->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
  Block *body = kernel.addEntryBlock();
  b.setInsertionPointToStart(body);
  IRMapping map;
  map.map(args, body->getArguments());
  for (Value c : constants)
    b.clone(*c.getDefiningOp(), map);
  b.clone(*op, map);
  func::ReturnOp::create(b, loc);
  return kernel;
}

struct OutlineKernelsPass final
    : tg::cpu::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && op->getNumResults() == 0)
        ops.push_back(op);
    });
    SymbolTable symbols(module);
    llvm::StringMap<func::FuncOp> kernels; // printed form -> kernel
    for (linalg::LinalgOp linalgOp : ops) {
      Operation *op = linalgOp;
      // Operands first, then what the body reads from above, each once.
      llvm::SetVector<Value> reads(op->operand_begin(), op->operand_end());
      getUsedValuesDefinedAbove(op->getRegions(), reads);
      SmallVector<Value> args, constants;
      for (Value v : reads)
        (cloneIntoKernel(v) ? constants : args).push_back(v);
      func::FuncOp kernel = buildKernel(op, args, constants);
      std::string key;
      llvm::raw_string_ostream os(key);
      kernel->print(os, OpPrintingFlags().useLocalScope());
      auto [it, added] = kernels.try_emplace(key, kernel);
      if (added) {
        kernel.setName(("tg_kernel_" + Twine(kernels.size() - 1)).str());
        symbols.insert(kernel); // renamed if the name is taken
      } else {
        kernel.erase();
        kernel = it->second;
      }
      OpBuilder b(op);
      func::CallOp::create(b, op->getLoc(), kernel, args);
      op->erase();
    }
  }
};

} // namespace
