//===- ScheduleHoistTest.cpp - hoisting shrinking ops -----------*- C++ -*-===//
//
// passes/ScheduleHoist.cpp: a reduction that frees a large value moves up
// to right after the value's other readers; on random graphs the order
// stays legal and the reference evaluator's answers do not change.
//
//===----------------------------------------------------------------------===//

#include "passes/ScheduleHoist.h"
#include "test/passes/RandomGraph.h"
#include "test/reference/EvalTestUtil.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace tgtest;

namespace {
/// The ops of @f's body by their first result's printed name, in order.
SmallVector<std::string> opNames(ModuleOp module) {
  SmallVector<std::string> names;
  auto f = module.lookupSymbol<func::FuncOp>("f");
  for (Operation &op : f.getBody().front().without_terminator())
    names.push_back(op.getName().getStringRef().str());
  return names;
}
} // namespace

TEST_CASE("a reduction that frees its input runs right after its last "
          "other reader",
          "[memory]") {
  // %s reads the 64 KiB %e last and leaves 4 bytes: it moves up from the
  // end to right after %m, its other reader; %n and %o, which free
  // nothing, stay where they are.
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<128x128xf32>) -> (tensor<f32>, tensor<128x128xf32>) {
  %e = tg.exp %x : tensor<128x128xf32>
  %m = tg.mul %e, %x : tensor<128x128xf32>, tensor<128x128xf32> -> tensor<128x128xf32>
  %n = tg.neg %x : tensor<128x128xf32>
  %o = tg.add %m, %n : tensor<128x128xf32>, tensor<128x128xf32> -> tensor<128x128xf32>
  %s = tg.sum %e axes = [0, 1] : tensor<128x128xf32> -> tensor<f32>
  return %s, %o : tensor<f32>, tensor<128x128xf32>
}
)");
  auto f = h.module->lookupSymbol<func::FuncOp>("f");
  tg::hoistShrinkingOps(f.getBody().front());
  REQUIRE(succeeded(verify(*h.module)));
  CHECK(opNames(*h.module) == SmallVector<std::string>{"tg.exp", "tg.mul",
                                                       "tg.sum", "tg.neg",
                                                       "tg.add"});
}

TEST_CASE("hoisting keeps random graphs' answers", "[memory]") {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::string ir = randomGraph(seed, 12 + seed % 20);
    INFO("seed " << seed << "\n" << ir);
    Harness h;
    h.parse(ir);
    auto f = h.module->lookupSymbol<func::FuncOp>("f");
    SmallVector<Tensor> args =
        randomArgs(f.getArgumentTypes(), DType::F32, seed);
    auto before = h.eval(args, true);
    REQUIRE(succeeded(before));
    tg::hoistShrinkingOps(f.getBody().front());
    REQUIRE(succeeded(verify(*h.module)));
    auto after = h.eval(args, true);
    REQUIRE(succeeded(after));
    for (size_t i = 0; i < before->size(); ++i)
      CHECK((*after)[i].data == (*before)[i].data);
  }
}
