//===- TrainStepTest.cpp - a whole training step on the CPU -----*- C++ -*-===//
//
// A tiny MLP (AdamW, clipping, cosine schedule, two accumulated
// micro-batches: func.call, scf.for and extract_slice in @train_step) and a
// tiny CNN (conv, pooling and their gradients) through tg-build-train-step,
// then @init and three @train_step calls on the JIT and on the reference
// evaluator, each feeding its own results back.
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace cputest;

namespace {
const char *kMlp = R"(
module attributes {tg.train = {accumulate = 2 : i64, clip_grad_norm = 1.0 : f64, optimizer = {kind = "adamw", lr = 1.0e-2 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64}, schedule = {kind = "cosine", steps = 100 : i64, warmup = 2 : i64, min_lr = 0.0 : f64}}} {
func.func @forward(%x: tensor<4x12xf32> {tg.name = "images", tg.role = #tg.role<input>},
                   %y: tensor<4xi64> {tg.name = "labels", tg.role = #tg.role<input>},
                   %w1: tensor<12x8xf32> {tg.name = "fc1.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>},
                   %b1: tensor<8xf32> {tg.name = "fc1.bias", tg.role = #tg.role<param>, tg.init = #tg.init<normal(0.0, 0.1)>},
                   %w2: tensor<8x3xf32> {tg.name = "fc2.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_uniform>},
                   %b2: tensor<3xf32> {tg.name = "fc2.bias", tg.role = #tg.role<param>, tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.matmul %x, %w1 : tensor<4x12xf32>, tensor<12x8xf32> -> tensor<4x8xf32>
  %1 = tg.add %0, %b1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %2 = tg.relu %1 : tensor<4x8xf32>
  %3 = tg.matmul %2, %w2 : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  %4 = tg.add %3, %b2 : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %5 = tg.cross_entropy %4, %y : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  return %5 : tensor<f32>
}
}
)";

/// conv (padding, groups of 1) → relu → max-pool → avg-pool → dense →
/// cross-entropy, trained with SGD + momentum: the backward pass uses
/// conv2d_grad_input/weight and both pooling gradients.
const char *kCnn = R"(
module attributes {tg.train = {optimizer = {kind = "momentum", lr = 5.0e-2 : f64, momentum = 0.9 : f64, nesterov = 0 : i64, weight_decay = 0.0 : f64}}} {
func.func @forward(%x: tensor<2x2x8x8xf32> {tg.name = "images", tg.role = #tg.role<input>},
                   %y: tensor<2xi32> {tg.name = "labels", tg.role = #tg.role<input>},
                   %w: tensor<4x2x3x3xf32> {tg.name = "conv.weight", tg.role = #tg.role<param>, tg.init = #tg.init<kaiming_uniform>},
                   %v: tensor<16x3xf32> {tg.name = "fc.weight", tg.role = #tg.role<param>, tg.init = #tg.init<glorot_normal>})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  %0 = tg.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<2x2x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<2x4x8x8xf32>
  %1 = tg.relu %0 : tensor<2x4x8x8xf32>
  %2 = tg.max_pool2d %1 kernel = [2, 2] stride = [2, 2] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  %3 = tg.avg_pool2d %2 kernel = [2, 2] stride = [2, 2] : tensor<2x4x4x4xf32> -> tensor<2x4x2x2xf32>
  %4 = tg.reshape %3 : tensor<2x4x2x2xf32> to tensor<2x16xf32>
  %5 = tg.matmul %4, %v : tensor<2x16xf32>, tensor<16x3xf32> -> tensor<2x3xf32>
  %6 = tg.cross_entropy %5, %y : tensor<2x3xf32>, tensor<2xi32> -> tensor<f32>
  return %6 : tensor<f32>
}
}
)";

/// Builds the training module of `model`, then runs @init and `steps`
/// @train_step calls on the JIT and on the reference, each side feeding its
/// own results back (both start from the reference's initial state).
/// With `arena`, the composites are decomposed and @train_step is planned
/// first, and the JIT runs it in the planned arena (poisoned between
/// calls): the code artifacts run, checked against the same reference.
/// With `precision`, tg-assign-precision rewrites the model first (as the
/// training pipeline does), and results are compared within `tolScale`.
/// With `fuse`, tg-fuse groups the step into kernels before planning: the
/// reference runs the groups, the JIT their inlined bodies in the plan made
/// for the groups.
void checkTraining(llvm::StringRef model, double classes, int steps,
                   bool arena = false, llvm::StringRef precision = "",
                   double tolScale = 50, bool fuse = false) {
  Harness h;
  h.parse(model);
  mlir::PassManager pm(&h.ctx);
  if (!precision.empty()) {
    mlir::tg::AssignPrecisionPassOptions assign;
    assign.precision = precision.str();
    pm.addPass(mlir::tg::createAssignPrecisionPass(assign));
  }
  pm.addPass(mlir::tg::createBuildTrainStepPass());
  if (arena)
    pm.addPass(mlir::tg::createDecomposeCompositesPass());
  if (fuse)
    pm.addPass(mlir::tg::createFusePass());
  if (arena)
    pm.addPass(mlir::tg::createPlanMemoryPass());
  {
    INFO(h.diagnostics);
    REQUIRE(mlir::succeeded(pm.run(*h.module)));
  }
  if (fuse) { // the step really is grouped, the update included
    int64_t groups = 0, optimizer = 0;
    h.module->walk([&](mlir::tg::FusedOp g) {
      ++groups;
      optimizer += g.getKind() == mlir::tg::KernelKind::optimizer;
    });
    CHECK(groups > 3);
    CHECK(optimizer == 1);
  }
  if (!precision.empty()) { // the step really computes in low precision
    int64_t contractions = 0;
    h.module->walk([&](mlir::Operation *op) {
      contractions += bool(mlir::tg::dialect(&h.ctx).getAccAttrHelper().getAttr(op));
    });
    CHECK(contractions > 0);
  }
  mlir::tg::cpu::CpuPipelineOptions options;
  options.arena = arena;
  auto jit = h.compile(options);
  if (arena)
    CHECK(jit->arenaBytes("train_step") > 0);

  Tensor seed = Tensor::fromValues({}, DType::I64, {1234});
  std::vector<Tensor> refState = h.reference({seed}, "init");
  std::vector<HostTensor> jitState = h.jitRun(*jit, {seed}, "init");
  Harness::compare(jitState, refState, 5);

  // The inputs are the last two arguments; integer ones (labels, tokens)
  // are drawn from [0, classes).
  unsigned n = h.module->lookupSymbol<mlir::func::FuncOp>("train_step")
                   .getNumArguments();
  auto fnArgs = h.randomArgs({{n - 2, {0, classes}}, {n - 1, {0, classes}}},
                             7, "train_step");
  std::vector<Tensor> inputs(fnArgs.end() - 2, fnArgs.end());
  std::vector<HostTensor> jitCarry;
  for (const Tensor &t : refState)
    jitCarry.push_back(toHost(t));
  std::vector<Tensor> refCarry = refState;
  for (int step = 0; step < steps; ++step) {
    INFO("step " << step);
    std::vector<Tensor> refArgs = refCarry;
    refArgs.insert(refArgs.end(), inputs.begin(), inputs.end());
    std::vector<Tensor> want = h.reference(refArgs, "train_step");
    std::vector<HostTensor> hostArgs = jitCarry;
    for (const Tensor &t : inputs)
      hostArgs.push_back(toHost(t));
    std::string error;
    auto got = jit->run("train_step", hostArgs, &error);
    INFO(error);
    REQUIRE(mlir::succeeded(got));
    Harness::compare(*got, want, tolScale);
    refCarry.assign(want.begin() + 1, want.end());
    jitCarry.assign(got->begin() + 1, got->end());
  }
}
} // namespace

TEST_CASE("CNN init and three train steps match the reference",
          "[cpu][train]") {
  checkTraining(kCnn, 3, 3);
}

TEST_CASE("MLP init and three train steps match the reference",
          "[cpu][train]") {
  checkTraining(kMlp, 3, 3);
}

TEST_CASE("one-layer GPT: two train steps match the reference",
          "[cpu][train]") {
  // bf16 precision, embedding, causal attention, layer norm, GELU, tied
  // head, AdamW, two accumulated micro-batches.
  auto buffer = llvm::MemoryBuffer::getFile(TGC_CPU_TEST_INPUTS "/gpt-tiny.mlir");
  REQUIRE(buffer);
  checkTraining((*buffer)->getBuffer(), 32, 2);
}

TEST_CASE("the planned arena: CNN, MLP (accumulated) and GPT train steps match "
          "the reference",
          "[cpu][train][arena]") {
  SECTION("CNN") { checkTraining(kCnn, 3, 3, true); }
  SECTION("MLP, two accumulated micro-batches") {
    checkTraining(kMlp, 3, 3, true);
  }
  SECTION("one-layer GPT, bf16") {
    auto buffer =
        llvm::MemoryBuffer::getFile(TGC_CPU_TEST_INPUTS "/gpt-tiny.mlir");
    REQUIRE(buffer);
    checkTraining((*buffer)->getBuffer(), 32, 2, true);
  }
}

TEST_CASE("fused train steps: the reference runs the groups, the JIT their "
          "bodies in the arena planned for the groups",
          "[cpu][train][fusion]") {
  SECTION("MLP, two accumulated micro-batches, unplanned") {
    checkTraining(kMlp, 3, 3, false, "", 50, true);
  }
  SECTION("MLP, planned") { checkTraining(kMlp, 3, 3, true, "", 50, true); }
  SECTION("CNN, planned") { checkTraining(kCnn, 3, 3, true, "", 50, true); }
  SECTION("one-layer GPT, bf16, planned") {
    auto buffer =
        llvm::MemoryBuffer::getFile(TGC_CPU_TEST_INPUTS "/gpt-tiny.mlir");
    REQUIRE(buffer);
    checkTraining((*buffer)->getBuffer(), 32, 2, true, "", 50, true);
  }
  SECTION("one-layer GPT, unplanned") {
    auto buffer =
        llvm::MemoryBuffer::getFile(TGC_CPU_TEST_INPUTS "/gpt-tiny.mlir");
    REQUIRE(buffer);
    checkTraining((*buffer)->getBuffer(), 32, 2, false, "", 50, true);
  }
}

TEST_CASE("bf16 mixed precision: MLP, CNN and GPT train steps on the JIT match "
          "the reference running the same IR",
          "[cpu][train][precision]") {
  // The same rewritten IR on both sides: bf16 compute copies, bf16
  // matmul/conv with f32 accumulation, f32 losses and updates of the f32
  // masters. Both round every bf16 result to nearest even; they differ
  // only where an f32 sum, summed in another order, rounds to a
  // neighbouring bf16 value, which the f32 update then carries.
  SECTION("MLP, two accumulated micro-batches") {
    checkTraining(kMlp, 3, 3, false, "bf16", 50);
  }
  SECTION("CNN, planned arena") { checkTraining(kCnn, 3, 3, true, "bf16", 50); }
  SECTION("one-layer GPT") {
    auto buffer =
        llvm::MemoryBuffer::getFile(TGC_CPU_TEST_INPUTS "/gpt-tiny.mlir");
    REQUIRE(buffer);
    checkTraining((*buffer)->getBuffer(), 32, 2, false, "bf16", 50);
  }
}
