//===- MemoryPlanTest.cpp - properties of the memory planner ----*- C++ -*-===//
//
// Random graphs through tg-plan-memory: no two buffers that are live at the
// same time overlap, the peak is at least the lower bound, plans are
// deterministic, and reordering leaves the reference evaluator's answers
// unchanged. Plus the training step of a real model.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGDialect.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "test/passes/RandomGraph.h"
#include "test/reference/EvalTestUtil.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <random>

using namespace mlir;
using namespace tgtest;

namespace {

void checkPlan(const tg::MemoryPlan &plan, int64_t alignment) {
  auto end = [&](const tg::Buffer &b) {
    return b.offset + (b.bytes + alignment - 1) / alignment * alignment;
  };
  const auto &bs = plan.buffers;
  for (size_t i = 0; i < bs.size(); ++i) {
    if (bs[i].persistent || bs[i].nested)
      continue;
    CHECK(bs[i].offset % alignment == 0);
    CHECK(end(bs[i]) <= plan.transientBytes);
    for (size_t j = i + 1; j < bs.size(); ++j) {
      if (bs[j].persistent || bs[j].nested)
        continue;
      bool together = bs[i].start <= bs[j].end && bs[j].start <= bs[i].end;
      bool apart = end(bs[i]) <= bs[j].offset || end(bs[j]) <= bs[i].offset;
      INFO(bs[i].name << " [" << bs[i].start << ", " << bs[i].end << "] at "
                      << bs[i].offset << " and " << bs[j].name << " ["
                      << bs[j].start << ", " << bs[j].end << "] at "
                      << bs[j].offset);
      CHECK((!together || apart));
    }
  }
  CHECK(plan.transientBytes >= plan.lowerBoundBytes);
  CHECK(plan.naiveBytes >= plan.lowerBoundBytes - int64_t(bs.size()) * alignment);
}

} // namespace

TEST_CASE("random graphs get valid, deterministic plans", "[memory]") {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::string ir = randomGraph(seed, 12 + seed % 20);
    INFO("seed " << seed << "\n" << ir);
    for (bool reorder : {false, true}) {
      tg::PlanOptions opts;
      opts.reorder = reorder;
      Harness h1, h2;
      h1.parse(ir);
      h2.parse(ir);
      auto f1 = h1.module->lookupSymbol<func::FuncOp>("f");
      auto f2 = h2.module->lookupSymbol<func::FuncOp>("f");

      // Answers before planning.
      SmallVector<Tensor> args;
      for (auto [i, t] : llvm::enumerate(f1.getArgumentTypes()))
        args.push_back(Tensor::random(cast<RankedTensorType>(t).getShape(),
                                      DType::F32, seed, i));
      auto before = h1.eval(args, true);
      REQUIRE(succeeded(before));

      auto p1 = tg::planMemory(f1, opts);
      auto p2 = tg::planMemory(f2, opts);
      REQUIRE(succeeded(p1));
      REQUIRE(succeeded(p2));
      checkPlan(*p1, 256);
      // Deterministic: the same IR gives the same offsets.
      REQUIRE(p1->buffers.size() == p2->buffers.size());
      for (size_t i = 0; i < p1->buffers.size(); ++i)
        CHECK(p1->buffers[i].offset == p2->buffers[i].offset);
      // The schedule is a legal order: same answers.
      REQUIRE(succeeded(verify(*h1.module)));
      auto after = h1.eval(args, true);
      REQUIRE(succeeded(after));
      CHECK((*after)[0].data == (*before)[0].data);
    }
  }
}

/// Best fit as the planner defined it before its offset search was
/// indexed: for each buffer, largest first, every placed buffer whose
/// lifetime overlaps it, sorted by offset, then the smallest gap that holds
/// it, else the top of those. Quadratic, and the answer assignOffsets must
/// keep exactly unless one of its other orders places the buffers lower.
static int64_t referenceOffsets(std::vector<tg::Buffer> &bs,
                                int64_t alignment) {
  auto size = [&](const tg::Buffer &b) {
    return (std::max<int64_t>(b.bytes, 1) + alignment - 1) / alignment *
           alignment;
  };
  std::vector<size_t> idx;
  for (size_t i = 0; i < bs.size(); ++i)
    if (!bs[i].persistent && !bs[i].nested)
      idx.push_back(i);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return std::make_tuple(-bs[a].bytes, bs[a].start, a) <
           std::make_tuple(-bs[b].bytes, bs[b].start, b);
  });
  std::vector<size_t> placed;
  int64_t top = 0;
  for (size_t i : idx) {
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (bs[i].start <= bs[i].end && bs[j].start <= bs[i].end &&
          bs[i].start <= bs[j].end)
        taken.push_back({bs[j].offset, bs[j].offset + size(bs[j])});
    std::sort(taken.begin(), taken.end());
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [lo, hi] : taken) {
      if (lo - cursor >= size(bs[i]) && lo - cursor < bestGap) {
        best = cursor;
        bestGap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    bs[i].offset = best >= 0 ? best : cursor;
    top = std::max(top, bs[i].offset + size(bs[i]));
    if (bs[i].start <= bs[i].end)
      placed.push_back(i);
  }
  return top;
}

TEST_CASE("indexed offset search gives the exhaustive best fit", "[memory]") {
  // Lifetimes from one step to the whole range, sizes from equal (packed
  // runs) to mixed (gaps that best fit must find), steps not starting at 0.
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    int64_t steps = 1 + rng() % 200, first = rng() % 3;
    size_t count = 1 + rng() % 150;
    std::vector<tg::Buffer> bs(count);
    for (tg::Buffer &b : bs) {
      b.bytes = seed % 3 == 0 ? 1000 : 1 + rng() % (seed % 2 ? 5000 : 100000);
      b.start = first + rng() % steps;
      int64_t span = rng() % 4 == 0 ? steps : 1 + rng() % 10;
      b.end = std::min(first + steps - 1, b.start + int64_t(rng() % span));
      b.persistent = rng() % 20 == 0;
    }
    std::vector<tg::Buffer> expected = bs;
    int64_t alignment = seed % 2 ? 256 : 64;
    int64_t top = tg::assignOffsets(bs, alignment);
    INFO("seed " << seed);
    // The largest-first search is kept unless another order (tried only
    // when it misses the live-bytes bound) places everything lower.
    int64_t reference = referenceOffsets(expected, alignment);
    CHECK(top <= reference);
    if (top == reference)
      for (size_t i = 0; i < bs.size(); ++i)
        if (!bs[i].persistent)
          CHECK(bs[i].offset == expected[i].offset);
    tg::MemoryPlan plan;
    plan.buffers = bs;
    plan.transientBytes = top;
    checkPlan(plan, alignment);
  }
}

TEST_CASE("op scratch is planned at its op's step and counted", "[memory]") {
  // Random graphs whose ops carry tg.scratch (as tg-size-scratch sets it):
  // each op's scratch is a buffer live at its step, so checkPlan proves it
  // overlaps nothing live then (its operands and results included); its
  // offset is on the op; the lower bound counts it. Across the graphs the
  // scratch must reuse holes of the graph's buffers somewhere: otherwise
  // the plan is the old one with a region on top.
  auto isScratch = [](const tg::Buffer &b) {
    return StringRef(b.name).ends_with(" scratch");
  };
  int holes = 0;
  for (unsigned seed = 1; seed <= 30; ++seed) {
    std::string ir = randomGraph(seed, 12 + seed % 20);
    INFO("seed " << seed << "\n" << ir);
    Harness with, without;
    with.parse(ir);
    without.parse(ir);
    auto f = with.module->lookupSymbol<func::FuncOp>("f");
    int64_t n = 0, largest = 0;
    f.walk([&](Operation *op) {
      if (op->getNumResults() != 1 || op->hasTrait<OpTrait::ConstantLike>() ||
          ++n % 2)
        return;
      int64_t bytes = 1 + (seed * 7919 + n * 104729) % 6000;
      largest = std::max(largest, bytes);
      tg::setScratchBytes(op, bytes);
    });
    auto plan = tg::planMemory(f, {});
    auto base = tg::planMemory(
        without.module->lookupSymbol<func::FuncOp>("f"), {});
    REQUIRE(succeeded(plan));
    REQUIRE(succeeded(base));
    checkPlan(*plan, 256);
    int64_t scratchBuffers = 0;
    f.walk([&](Operation *op) {
      IntegerAttr bytes = tg::getScratchBytes(op);
      if (!bytes)
        return;
      IntegerAttr offset = tg::getScratchOffset(op);
      CHECK(offset);
      if (!offset)
        return;
      bool found = false;
      for (const tg::Buffer &b : plan->buffers)
        found |= isScratch(b) && b.offset == offset.getInt() && b.bytes == bytes.getInt() &&
                 b.start == b.end;
      CHECK(found);
      ++scratchBuffers;
    });
    int64_t planned = 0;
    for (const tg::Buffer &b : plan->buffers)
      planned += isScratch(b);
    CHECK(planned == scratchBuffers);
    CHECK(plan->scratchBytes == 0);
    CHECK(plan->lowerBoundBytes >= (largest + 255) / 256 * 256);
    CHECK(plan->lowerBoundBytes >= base->lowerBoundBytes);
    holes += plan->transientBytes <
             base->transientBytes + (largest + 255) / 256 * 256;
  }
  CHECK(holes > 0);
}

TEST_CASE("reuse makes the plan smaller than the naive sum", "[memory]") {
  Harness h;
  h.parse(randomGraph(7, 40));
  auto f = h.module->lookupSymbol<func::FuncOp>("f");
  auto plan = tg::planMemory(f, {});
  REQUIRE(succeeded(plan));
  CHECK(plan->transientBytes < plan->naiveBytes);
}

TEST_CASE("training step: categories and the accumulation loop", "[memory]") {
  const char *ir = R"(
module attributes {tg.train = {accumulate = 2 : i64, optimizer = {kind = "adam", lr = 0.01 : f64}}} {
func.func @forward(%x: tensor<8x32xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %w: tensor<32x32xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
  %1 = tg.tanh %0 : tensor<8x32xf32>
  %2 = tg.mse_loss %1, %x : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<f32>
  return %2 : tensor<f32>
}
})";
  Harness h;
  h.parse(ir);
  PassManager pm(&h.ctx);
  pm.addPass(tg::createBuildTrainStepPass());
  REQUIRE(succeeded(pm.run(*h.module)));
  auto step = h.module->lookupSymbol<func::FuncOp>("train_step");
  auto plan = tg::planMemory(step, {});
  REQUIRE(succeeded(plan));
  checkPlan(*plan, 256);
  CHECK(plan->bytesOf(tg::BufferKind::Param) == 32 * 32 * 4);
  CHECK(plan->bytesOf(tg::BufferKind::Optimizer) == 2 * 32 * 32 * 4 + 8);
  CHECK(plan->bytesOf(tg::BufferKind::Input) == 16 * 32 * 4);
  // The loop body's buffers are planned inside the loop's region.
  bool loop = false, nestedActivation = false;
  for (const tg::Buffer &b : plan->buffers) {
    loop |= b.op == "scf.for";
    nestedActivation |= b.nested && b.kind == tg::BufferKind::Activation;
  }
  CHECK(loop);
  CHECK(nestedActivation);
  CHECK(plan->bytesOf(tg::BufferKind::Gradient) >= 32 * 32 * 4);
  // The attributes tgc reads back.
  tg::MemoryPlanAttr memory = tg::getMemoryPlan(step);
  REQUIRE(memory);
  CHECK(memory.getPeakBytes() == plan->peakBytes());
}

TEST_CASE("rematerialisation leaves the training step's results unchanged",
          "[memory][remat]") {
  // Dropout inside the recomputed chain must replay the same mask.
  const char *ir = R"(
module attributes {tg.train = {optimizer = {kind = "adam", lr = 0.01 : f64}}} {
func.func @forward(%x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>},
                   %seed: tensor<i64> {tg.name = "seed", tg.role = #tg.role<input>},
                   %w: tensor<8x8xf32> {tg.name = "w", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>})
    -> (tensor<f32> {tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = tg.dropout %0, %seed {p = 2.5e-01 : f64, stream = 1 : i64} : tensor<4x8xf32>, tensor<i64>
  %2 = tg.gelu %1 : tensor<4x8xf32>
  %3 = tg.matmul %2, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %4 = tg.mse_loss %3, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
  return %4 : tensor<f32>
}
})";
  auto build = [&](Harness &h, int64_t level) {
    h.parse(ir);
    PassManager pm(&h.ctx);
    tg::TrainingPipelineOptions options;
    options.rematLevel = level;
    tg::buildTrainingPipeline(pm, options);
    REQUIRE(succeeded(pm.run(*h.module)));
  };
  // Level 1 replays only the GELU (the dropout's input is a matmul's
  // output that nothing else keeps); levels 2-4 replay the first matmul
  // (cheap per byte) and the dropout on it, with the same seed and stream.
  int64_t level = GENERATE(1, 2, 3, 4);
  INFO("rematerialisation level " << level);
  Harness plain, remat;
  build(plain, 0);
  build(remat, level);
  auto grad = remat.module->lookupSymbol<func::FuncOp>("forward_grad");
  auto info = tg::dialect(grad->getContext()).getRematAttrHelper().getAttr(grad);
  REQUIRE(info);
  CHECK(info.getBytes() > 0);
  bool matmul = false, dropout = false;
  grad.walk([&](Operation *op) {
    if (!op->hasAttr(tg::attr::recomputed))
      return;
    matmul |= isa<tg::MatmulOp>(op);
    dropout |= isa<tg::DropoutOp>(op);
  });
  CHECK(dropout == (level >= 2));
  CHECK(matmul == (level >= 2));

  SmallVector<Tensor> args{Tensor::random({8, 8}, DType::F32, 3, 0),
                           Tensor::filled({8, 8}, DType::F32, 0),
                           Tensor::filled({8, 8}, DType::F32, 0),
                           Tensor::filled({}, DType::I64, 0),
                           Tensor::random({4, 8}, DType::F32, 3, 1),
                           Tensor::filled({}, DType::I64, 42)};
  auto a = plain.eval(args, true, "train_step");
  auto b = remat.eval(args, true, "train_step");
  INFO(plain.diagnostics << remat.diagnostics);
  REQUIRE(succeeded(a));
  REQUIRE(succeeded(b));
  REQUIRE(a->size() == b->size());
  for (size_t i = 0; i < a->size(); ++i)
    CHECK((*a)[i].data == (*b)[i].data);
}
