//===- ScheduleHoistTest.cpp - hoisting and sinking -------------*- C++ -*-===//
//
// passes/ScheduleHoist.cpp: a reduction (or a fusion group) that frees a
// large value moves up to right after the value's other readers; a replay
// moves down to right before its first reader. On random graphs the order
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

TEST_CASE("a fusion group that frees its input is hoisted like an op",
          "[memory]") {
  // The group (a row reduction of %e, the forward loss of fused logits)
  // reads %e last and writes 512 bytes: it moves up to right after %m.
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<128x128xf32>) -> (tensor<128xf32>, tensor<128x128xf32>) {
  %e = tg.exp %x : tensor<128x128xf32>
  %m = tg.mul %e, %x : tensor<128x128xf32>, tensor<128x128xf32> -> tensor<128x128xf32>
  %n = tg.neg %x : tensor<128x128xf32>
  %o = tg.add %m, %n : tensor<128x128xf32>, tensor<128x128xf32> -> tensor<128x128xf32>
  %s = tg.fused <row_reduction> ins(%e : tensor<128x128xf32>) {
  ^bb0(%a: tensor<128x128xf32>):
    %l = tg.log %a : tensor<128x128xf32>
    %r = tg.sum %l axes = [1] : tensor<128x128xf32> -> tensor<128xf32>
    tg.yield %r : tensor<128xf32>
  } -> tensor<128xf32>
  return %s, %o : tensor<128xf32>, tensor<128x128xf32>
}
)");
  auto f = h.module->lookupSymbol<func::FuncOp>("f");
  tg::hoistShrinkingOps(f.getBody().front());
  REQUIRE(succeeded(verify(*h.module)));
  CHECK(opNames(*h.module) == SmallVector<std::string>{"tg.exp", "tg.mul",
                                                       "tg.fused", "tg.neg",
                                                       "tg.add"});
}

TEST_CASE("a product that frees a gradient takes its replayed operand "
          "and the views along",
          "[memory]") {
  // The tied head's weight gradient: %dw reads the logits' gradient %g
  // (through the view %gv) and a replay %r (through %rv) that frees
  // nothing. %dw is the last reader of %g's 8 KiB and writes 4 KiB, so
  // it moves up to right after %da, %g's other reader, with the replay
  // and both views; the unrelated %n and %o stay after it. Without the
  // replay pulled along, %dw would stay at the end.
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<4x16x32xf32>, %w: tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<4x16x32xf32>) {
  %g = tg.exp %x : tensor<4x16x32xf32>
  %da = tg.matmul %g, %w : tensor<4x16x32xf32>, tensor<32x32xf32> -> tensor<4x16x32xf32>
  %n = tg.neg %da : tensor<4x16x32xf32>
  %o = tg.add %n, %x : tensor<4x16x32xf32>, tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  %r = tg.tanh %x {tg.recomputed} : tensor<4x16x32xf32>
  %rv = tg.reshape %r : tensor<4x16x32xf32> to tensor<64x32xf32>
  %gv = tg.reshape %g : tensor<4x16x32xf32> to tensor<64x32xf32>
  %dw = tg.matmul %gv, %rv {transpose_lhs} : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<32x32xf32>
  return %dw, %o : tensor<32x32xf32>, tensor<4x16x32xf32>
}
)");
  auto f = h.module->lookupSymbol<func::FuncOp>("f");
  tg::hoistShrinkingOps(f.getBody().front());
  REQUIRE(succeeded(verify(*h.module)));
  CHECK(opNames(*h.module) ==
        SmallVector<std::string>{"tg.exp", "tg.matmul", "tg.tanh",
                                 "tg.reshape", "tg.reshape", "tg.matmul",
                                 "tg.neg", "tg.add"});
}

TEST_CASE("a replay that runs early stays, and the product moves to it",
          "[memory]") {
  // The 2-layer GPT's tied head: its replay %r runs early and reads %e,
  // which %b reads again later. Pulled along to after %b (the last other
  // reader of %e), %r would itself move down, so it stays, and so does
  // its view; %dw, the last reader of %g and %r, moves up with %gv to
  // right after %da (behind %b, hoisted there earlier), ahead of %o.
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<4x16x32xf32>, %w: tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<4x16x32xf32>) {
  %e = tg.exp %x : tensor<4x16x32xf32>
  %r = tg.tanh %e {tg.recomputed} : tensor<4x16x32xf32>
  %g = tg.neg %x : tensor<4x16x32xf32>
  %da = tg.matmul %g, %w : tensor<4x16x32xf32>, tensor<32x32xf32> -> tensor<4x16x32xf32>
  %gv = tg.reshape %g : tensor<4x16x32xf32> to tensor<64x32xf32>
  %b = tg.add %da, %e : tensor<4x16x32xf32>, tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  %o = tg.mul %b, %b : tensor<4x16x32xf32>, tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  %rv = tg.reshape %r : tensor<4x16x32xf32> to tensor<64x32xf32>
  %dw = tg.matmul %gv, %rv {transpose_lhs} : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<32x32xf32>
  return %dw, %o : tensor<32x32xf32>, tensor<4x16x32xf32>
}
)");
  auto f = h.module->lookupSymbol<func::FuncOp>("f");
  tg::hoistShrinkingOps(f.getBody().front());
  REQUIRE(succeeded(verify(*h.module)));
  CHECK(opNames(*h.module) ==
        SmallVector<std::string>{"tg.exp", "tg.tanh", "tg.reshape", "tg.neg",
                                 "tg.matmul", "tg.reshape", "tg.add",
                                 "tg.matmul", "tg.mul"});
}

TEST_CASE("hoisting with replays pulled keeps random graphs' answers",
          "[memory]") {
  // Every third op of a random graph marked as a replay, so that products
  // pull replays (and their views) along: the order stays legal and the
  // answers do not change.
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::string ir = randomGraph(seed, 12 + seed % 20);
    INFO("seed " << seed << "\n" << ir);
    Harness h;
    h.parse(ir);
    auto f = h.module->lookupSymbol<func::FuncOp>("f");
    unsigned i = 0;
    for (Operation &op : f.getBody().front().without_terminator())
      if (i++ % 3 == 1)
        op.setAttr("tg.recomputed", UnitAttr::get(op.getContext()));
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

TEST_CASE("a replay runs right before its first reader", "[memory]") {
  // %r replays from %x, which %o reads after it: it moves down to right
  // before %o; %q also replays, but from %e, whose last reader it is
  // (moving it would keep %e alive longer): it stays.
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %e = tg.exp %x : tensor<64x64xf32>
  %r = tg.tanh %x {tg.recomputed} : tensor<64x64xf32>
  %q = tg.neg %e {tg.recomputed} : tensor<64x64xf32>
  %n = tg.neg %x : tensor<64x64xf32>
  %m = tg.mul %n, %n : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %o = tg.add %r, %x : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  %p = tg.add %o, %q : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %p, %m : tensor<64x64xf32>, tensor<64x64xf32>
}
)");
  auto f = h.module->lookupSymbol<func::FuncOp>("f");
  tg::sinkReplays(f.getBody().front());
  REQUIRE(succeeded(verify(*h.module)));
  CHECK(opNames(*h.module) ==
        SmallVector<std::string>{"tg.exp", "tg.neg", "tg.neg", "tg.mul",
                                 "tg.tanh", "tg.add", "tg.add"});
}

TEST_CASE("a replay's view goes down with it to the op that reads it",
          "[memory]") {
  // %rv, a view of the replay %r and its only reader, moves down to right
  // before %dw, and %r with it: %r then lives across %m no longer (the
  // layer norms' replayed outputs, read by weight gradients through views).
  Harness h;
  h.parse(R"(
func.func @f(%x: tensor<4x16x32xf32>) -> (tensor<32x32xf32>, tensor<4x16x32xf32>) {
  %r = tg.tanh %x {tg.recomputed} : tensor<4x16x32xf32>
  %rv = tg.reshape %r : tensor<4x16x32xf32> to tensor<64x32xf32>
  %m = tg.mul %x, %x : tensor<4x16x32xf32>, tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  %dw = tg.matmul %rv, %rv {transpose_lhs} : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<32x32xf32>
  return %dw, %m : tensor<32x32xf32>, tensor<4x16x32xf32>
}
)");
  auto f = h.module->lookupSymbol<func::FuncOp>("f");
  tg::sinkReplays(f.getBody().front());
  REQUIRE(succeeded(verify(*h.module)));
  CHECK(opNames(*h.module) == SmallVector<std::string>{"tg.mul", "tg.tanh",
                                                       "tg.reshape",
                                                       "tg.matmul"});
}

TEST_CASE("sinking replays keeps random graphs' answers", "[memory]") {
  // Every other op of a random graph marked as a replay: the order stays
  // legal and the answers do not change.
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::string ir = randomGraph(seed, 12 + seed % 20);
    INFO("seed " << seed << "\n" << ir);
    Harness h;
    h.parse(ir);
    auto f = h.module->lookupSymbol<func::FuncOp>("f");
    unsigned i = 0;
    for (Operation &op : f.getBody().front().without_terminator())
      if (i++ % 2)
        op.setAttr("tg.recomputed", UnitAttr::get(op.getContext()));
    SmallVector<Tensor> args =
        randomArgs(f.getArgumentTypes(), DType::F32, seed);
    auto before = h.eval(args, true);
    REQUIRE(succeeded(before));
    tg::sinkReplays(f.getBody().front());
    REQUIRE(succeeded(verify(*h.module)));
    auto after = h.eval(args, true);
    REQUIRE(succeeded(after));
    for (size_t i = 0; i < before->size(); ++i)
      CHECK((*after)[i].data == (*before)[i].data);
  }
}
