//===- Flops.cpp - FLOP estimates of tg ops ---------------------*- C++ -*-===//
//
// One FLOP model and one byte count of a tensor, shared by
// rematerialisation (what a replay costs and frees), budget fitting (extra
// FLOPs as a share of the step), fusion's cost model, the kernel report,
// memory planning, data parallelism's buckets and tgc's notes.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

using namespace mlir;

int64_t mlir::tg::tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  int64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return t.getNumElements() * std::max<int64_t>(1, bits / 8);
}

int64_t mlir::tg::opFlops(Operation *op) {
  if (auto fused = dyn_cast<FusedOp>(op)) {
    int64_t total = 0;
    for (Operation &inner : fused.getBodyBlock().without_terminator())
      total += opFlops(&inner);
    return total;
  }
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto a = cast<RankedTensorType>(mm.getLhs().getType());
    int64_t k = a.getShape()[a.getRank() - (mm.getTransposeLhs() ? 2 : 1)];
    return 2 * k * cast<RankedTensorType>(mm.getType()).getNumElements();
  }
  int64_t n = 0;
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      n = std::max(n, t.getNumElements());
  if (isa<Conv2dOp, Conv2dGradInputOp, Conv2dGradWeightOp>(op)) {
    auto w = cast<RankedTensorType>(op->getOperand(1).getType());
    return 2 * n * (w.getNumElements() / std::max<int64_t>(1, w.getDimSize(0)));
  }
  // Normalisations, softmax and GELU read their input a few times.
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp, GeluOp>(op))
    return 8 * n;
  return isa<TGDialect>(op->getDialect()) ? n : 0;
}

int64_t mlir::tg::functionFlops(func::FuncOp fn) {
  int64_t total = 0;
  fn.walk([&](Operation *op) {
    if (op != fn)
      total += opFlops(op);
  });
  return total;
}
