//===- SizeScratch.cpp - each op's CPU scratch as tg.scratch ----*- C++ -*-===//
//
// The tg-size-scratch pass (see Passes.td): measures the scratch the CPU
// lowering of every tg op allocates besides its planned values and records
// it on the op, so that tg-plan-memory places it in the arena like any
// buffer, at the op's moment of the schedule, instead of in a region after
// the plan.
//
// Lowering and bufferizing a whole step costs time superlinear in its
// length (upstream's empty-tensor elimination, one-shot analysis and
// deallocation simplification: 60 s for 2,000 parameters), so each op is
// lowered alone instead, in a function of its own that is planned like the
// step: its operands are arguments (constants are cloned), its results
// planned values, and what tg-plan-scratch then appends to that function's
// arena is the op's scratch. Equal ops (the same printed kernel) are
// lowered once, so the cost grows with the number of distinct ops.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "dialects/TGOps.h"
#include "passes/MemoryPlan.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tg::cpu {
#define GEN_PASS_DEF_SIZESCRATCHPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tg::cpu

using namespace mlir;

FailureOr<int64_t> mlir::tg::cpu::sizeOpScratch(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  // Outside a pass this adds the CPU pipeline's external models; inside one
  // (tg-opt) the tool registered them already and this returns at once.
  DialectRegistry registry;
  registerCpuDialects(registry);
  ctx->appendDialectRegistry(registry);

  TGDialect &tgd = dialect(ctx);
  // The plan's attributes (of an earlier plan) are not the kernel's own.
  const StringAttr planAttrs[] = {
      tgd.getOffsetAttrHelper().getName(), tgd.getOffsetsAttrHelper().getName(),
      tgd.getBytesAttrHelper().getName(), tgd.getAliasArgAttrHelper().getName(),
      tgd.getAliasArgsAttrHelper().getName(),
      tgd.getScratchAttrHelper().getName(),
      tgd.getScratchOffsetAttrHelper().getName()};
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
  (*kernels)->setDiscardableAttrs(module->getDiscardableAttrDictionary());
  OpBuilder b = OpBuilder::atBlockEnd(kernels->getBody());
  llvm::StringMap<unsigned> byText; // printed kernel -> its index
  std::vector<std::string> names;
  std::vector<std::pair<Operation *, unsigned>> kernelOf;
  // Cloned into the kernel rather than passed in: constants, and the
  // communicator of a collective (the CPU lowering needs its tg.comm_world).
  auto isConstant = [](Value v) {
    Operation *def = v.getDefiningOp();
    return def && (def->hasTrait<OpTrait::ConstantLike>() ||
                   isa<CommWorldOp>(def));
  };
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isDeclaration())
      continue;
    // A fusion group is lowered as one kernel, as the backend lowers it:
    // the values it leaves unfused inside are its scratch.
    fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
      bool group = isa<FusedOp>(op);
      if (op->getName().getDialectNamespace() !=
              TGDialect::getDialectNamespace() ||
          (op->getNumRegions() && !group) ||
          op->hasTrait<OpTrait::ConstantLike>() ||
          llvm::none_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>))
        return WalkResult::advance();
      llvm::SetVector<Value> inputs;
      for (Value v : op->getOperands())
        if (!isConstant(v))
          inputs.insert(v);
      auto kernel = func::FuncOp::create(
          b, op->getLoc(), "kernel",
          b.getFunctionType(ValueRange(inputs.getArrayRef()).getTypes(),
                            op->getResultTypes()));
      OpBuilder kb = OpBuilder::atBlockEnd(kernel.addEntryBlock());
      IRMapping map;
      map.map(inputs.getArrayRef(), kernel.getArguments());
      for (Value v : op->getOperands())
        if (!map.contains(v))
          map.map(v, kb.clone(*v.getDefiningOp())
                         ->getResult(cast<OpResult>(v).getResultNumber()));
      Operation *copy = kb.clone(*op, map);
      for (StringAttr a : planAttrs)
        copy->removeDiscardableAttr(a);
      func::ReturnOp::create(kb, op->getLoc(), copy->getResults());
      std::string text;
      llvm::raw_string_ostream os(text);
      kernel->print(os, OpPrintingFlags().useLocalScope());
      auto [it, fresh] = byText.try_emplace(text, names.size());
      if (fresh) {
        names.push_back("kernel" + std::to_string(names.size()));
        kernel.setSymName(names.back());
      } else {
        kernel->erase();
      }
      kernelOf.push_back({op, it->second});
      return group ? WalkResult::skip() : WalkResult::advance();
    });
  }
  if (names.empty())
    return 0;

  // Each kernel planned like the step; one that cannot be planned gets no
  // arena, so its allocations stay and it is left unsized below.
  std::vector<int64_t> transient(names.size(), -1);
  for (auto [i, name] : llvm::enumerate(names)) {
    auto kernel = kernels->lookupSymbol<func::FuncOp>(name);
    FailureOr<MemoryPlan> plan = planMemory(kernel, {});
    if (succeeded(plan))
      transient[i] = plan->transientBytes;
  }
  PassManager pm(ctx);
  CpuPipelineOptions options;
  options.arena = true;
  options.stopAfterScratch = true;
  options.entryPoints = names;
  buildCpuPipeline(pm, options);
  if (failed(pm.run(*kernels)))
    return failure();

  // The op's scratch: what tg-plan-scratch appended to its kernel's arena,
  // which starts at the planned region rounded up to 256 bytes. -1: an
  // allocation its own plan could not place (the isolated lowering is not
  // the step's).
  std::vector<int64_t> scratch(names.size(), -1);
  for (auto [i, name] : llvm::enumerate(names)) {
    auto kernel = kernels->lookupSymbol<func::FuncOp>(name);
    if (transient[i] < 0 ||
        kernel.walk([](memref::AllocOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      continue;
    int64_t arena = loweredArenaBytes(*kernels, name);
    scratch[i] = arena ? arena - llvm::alignTo(transient[i], 256) : 0;
  }
  int64_t unsized = 0;
  for (auto [op, k] : kernelOf) {
    if (scratch[k] > 0)
      setScratchBytes(op, scratch[k]);
    else
      tgd.getScratchAttrHelper().removeAttr(op);
    unsized += scratch[k] < 0;
  }
  return unsized;
}

namespace {
struct SizeScratchPass final
    : tg::cpu::impl::SizeScratchPassBase<SizeScratchPass> {
  using Base::Base;
  void runOnOperation() override {
    FailureOr<int64_t> unsized = tg::cpu::sizeOpScratch(getOperation());
    if (failed(unsized))
      return signalPassFailure();
    if (*unsized)
      getOperation().emitWarning()
          << "tg-size-scratch: " << *unsized
          << " ops allocate what their own plan cannot place; their scratch "
             "stays after the plan's region";
  }
};
} // namespace
