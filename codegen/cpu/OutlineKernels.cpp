//===- OutlineKernels.cpp - one function per kernel -------------*- C++ -*-===//
//
// The tg-outline-kernels pass (see Passes.td): every linalg op on buffers,
// and every loop nest the lowering marked as one kernel (kKernelLoopAttr:
// the row loop of a row-reduction group), moves into a private `noinline`
// function, and identical functions are shared. A kernel is identified by
// its printed form (op, types, attributes, body; locations are not
// printed), so the key is exactly what the code generator sees.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/CSE.h"
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

/// True if `op` is a loop nest marked as one kernel that can move whole: it
/// returns nothing and works on buffers only (on tensors, a marked loop is
/// left alone, as linalg ops on tensors are).
bool isKernelLoop(Operation *op) {
  if (!op->hasAttr(tg::cpu::kKernelLoopAttr) || op->getNumResults() != 0)
    return false;
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  WalkResult onTensors = op->walk([&](Operation *inner) {
    if (llvm::any_of(inner->getOperandTypes(), isTensor) ||
        llvm::any_of(inner->getResultTypes(), isTensor))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !onTensors.wasInterrupted();
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

/// Drops the copies that bufferizing a loop nest's row-by-row results left
/// in a kernel: each row's result is computed in its slice of the
/// destination and then copied from one subview onto an equal one (the
/// pipeline runs no CSE after bufferization, so the two stay apart and
/// each became a memrefCopy call per row and result). Equal subviews are
/// merged first, so the key that deduplicates kernels sees the clean form.
void dropSelfCopies(func::FuncOp kernel) {
  IRRewriter rewriter(kernel.getContext());
  DominanceInfo dominance;
  eliminateCommonSubExpressions(rewriter, dominance, kernel);
  SmallVector<memref::CopyOp> copies;
  kernel.walk([&](memref::CopyOp copy) {
    if (copy.getSource() == copy.getTarget())
      copies.push_back(copy);
  });
  for (memref::CopyOp copy : copies)
    copy.erase();
}

struct OutlineKernelsPass final
    : tg::cpu::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // In program order: a marked loop nest whole (its linalg ops with it),
    // every other linalg op on buffers on its own.
    SmallVector<Operation *> ops;
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (isKernelLoop(op) || (linalgOp && linalgOp.hasPureBufferSemantics() &&
                               op->getNumResults() == 0)) {
        ops.push_back(op);
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
    SymbolTable symbols(module);
    llvm::StringMap<func::FuncOp> kernels; // printed form -> kernel
    for (Operation *op : ops) {
      // Operands first, then what the body reads from above, each once.
      llvm::SetVector<Value> reads(op->operand_begin(), op->operand_end());
      getUsedValuesDefinedAbove(op->getRegions(), reads);
      SmallVector<Value> args, constants;
      for (Value v : reads)
        (cloneIntoKernel(v) ? constants : args).push_back(v);
      func::FuncOp kernel = buildKernel(op, args, constants);
      if (!isa<linalg::LinalgOp>(op))
        dropSelfCopies(kernel);
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
