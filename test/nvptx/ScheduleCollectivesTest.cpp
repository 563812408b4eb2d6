//===- ScheduleCollectivesTest.cpp - collectives in the GPU schedule -*- C++ -*-===//
//
// The collective steps of a data-parallel GPU schedule
// (codegen/nvptx/ScheduleCollectives.cpp): a bucket is one step with one
// tensor per operand, in the plan's buffers; ragged shards are padded at
// the IR level (a concat before a reduce_scatter, a slice after an
// all_gather) and refused when they are not; a dtype NCCL does not take is
// a located error. End to end they run in
// lit-tests/runtime/data-parallel-cuda.test.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/Schedule.h"
#include "codegen/registry/InitAll.h"
#include "passes/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <map>

using namespace mlir;
using namespace ::tg::nvptx;

namespace {

/// 9 and 4 gradient elements averaged in one bucket; the 9 also
/// reduce-scattered over 2 ranks (shards of 5: one element of padding) and
/// gathered back.
const char *kBucket = R"mlir(
func.func @train_step(
    %g: tensor<3x3xf32> {tg.name = "g", tg.role = #tg.role<input>},
    %h: tensor<4xf32> {tg.name = "h", tg.role = #tg.role<input>})
    -> (tensor<3x3xf32> {tg.name = "a", tg.role = #tg.role<output>},
        tensor<4xf32> {tg.name = "b", tg.role = #tg.role<output>},
        tensor<3x3xf32> {tg.name = "c", tg.role = #tg.role<output>}) {
  %c = tg.comm_world : !tg.comm<ranks = 2>
  %a:2 = tg.all_reduce %g, %h on %c {op = "mean"} : !tg.comm<ranks = 2>, tensor<3x3xf32>, tensor<4xf32>
  %s = tg.reduce_scatter %g on %c {op = "sum"} : !tg.comm<ranks = 2>, tensor<3x3xf32> -> tensor<5xf32>
  %w = tg.all_gather %s on %c : !tg.comm<ranks = 2>, tensor<5xf32> -> tensor<3x3xf32>
  return %a#0, %a#1, %w : tensor<3x3xf32>, tensor<4xf32>, tensor<3x3xf32>
}
)mlir";

struct Fixture {
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  std::string diag;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  explicit Fixture(const char *source, bool pad) {
    mlir::tg::registerAllDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
    handler = std::make_unique<ScopedDiagnosticHandler>(
        ctx.get(), [&](Diagnostic &d) {
          diag = d.str();
          return success();
        });
    module = parseSourceString<ModuleOp>(source, ctx.get());
    REQUIRE(module);
    if (pad)
      padShardsForNccl(*module);
    mlir::tg::PlanOptions gpu; // as buildGpuSchedule's callers plan
    gpu.asyncCollectives = true;
    gpu.flatBuckets = false;
    REQUIRE(succeeded(mlir::tg::planMemory(
        module->lookupSymbol<func::FuncOp>("train_step"), gpu)));
  }
  FailureOr<GpuSchedule> build() {
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(module->getLoc());
    return buildGpuSchedule(*module, Target::SM80, *kernels, {"train_step"});
  }
};

} // namespace

TEST_CASE("schedule: a bucket is one collective step", "[nvptx][schedule]") {
  Fixture f(kBucket, /*pad=*/true);
  FailureOr<GpuSchedule> s = f.build();
  INFO(f.diag);
  REQUIRE(succeeded(s));
  const std::vector<ScheduleStep> &steps = s->entries[0].steps;
  // Each op's step, and where it is (the plan orders the ops by memory).
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < steps.size(); ++i) {
    const ScheduleStep &st = steps[i];
    std::string name = !st.collective.op.empty() ? st.collective.op
                       : st.isCopy              ? "copy"
                                                : st.launch.symbol.substr(0, 9);
    if (!at.count(name))
      at[name] = i;
  }
  REQUIRE(at.count("all_reduce"));
  REQUIRE(at.count("reduce_scatter"));
  REQUIRE(at.count("all_gather"));
  // The ragged reduce_scatter reads g padded to 10 floats (a concat), the
  // all_gather writes 10 and keeps 9 (a slice).
  REQUIRE(at.count("tg_concat"));
  REQUIRE(at.count("tg_slice_"));
  CHECK(at["tg_concat"] < at["reduce_scatter"]);
  CHECK(at["all_gather"] < at["tg_slice_"]);
  const CollectiveStep &ar = steps[at["all_reduce"]].collective;
  CHECK(ar.reduce == "mean");
  CHECK(ar.dtype == "f32");
  CHECK(ar.counts == std::vector<int64_t>{9, 4});
  CHECK(ar.srcs[1].kind == BufferRef::Kind::Arg);
  CHECK(ar.srcs[1].index == 1);
  CHECK(ar.dsts[0].bytes == 36);
  const CollectiveStep &rs = steps[at["reduce_scatter"]].collective;
  CHECK(rs.reduce == "sum");
  CHECK(rs.counts == std::vector<int64_t>{5});
  CHECK(rs.srcs[0].bytes == 40);
  CHECK(rs.dsts[0].bytes == 20);
  const CollectiveStep &ag = steps[at["all_gather"]].collective;
  CHECK(ag.reduce.empty());
  CHECK(ag.counts == std::vector<int64_t>{5});
  CHECK(ag.srcs[0] == rs.dsts[0]);
  CHECK(ag.dsts[0].bytes == 40);
  // The manifest's form (docs/artifact.md, "Collectives").
  llvm::json::Object j = scheduleJson(*s);
  const llvm::json::Array *list =
      j.getObject("entries")->getObject("train_step")->getArray("steps");
  const llvm::json::Object *first =
      (*list)[at["all_reduce"]].getAsObject();
  CHECK(*first->getString("op") == "all_reduce");
  CHECK(*first->getString("reduce") == "mean");
  CHECK(*first->getString("dtype") == "f32");
  CHECK(*first->getInteger("comm") == 0); // the world
  const llvm::json::Object *t0 = (*first->getArray("tensors"))[1].getAsObject();
  CHECK(*t0->getInteger("count") == 4);
  CHECK(*t0->getObject("src")->getString("buffer") == "arg");
  CHECK(!(*list)[at["all_gather"]].getAsObject()->get("reduce"));
}

TEST_CASE("schedule: unpadded shards and other dtypes are located errors",
          "[nvptx][schedule]") {
  Fixture ragged(kBucket, /*pad=*/false);
  CHECK(failed(ragged.build()));
  CHECK(ragged.diag == "'tg.reduce_scatter' op tensor #0 has 9 elements, not 2 "
                       "shards of 5: NCCL needs the shards padded "
                       "(padShardsForNccl)");
  Fixture f64(R"mlir(
func.func @train_step(%g: tensor<4xf64> {tg.name = "g", tg.role = #tg.role<input>})
    -> (tensor<4xf64> {tg.name = "a", tg.role = #tg.role<output>}) {
  %c = tg.comm_world : !tg.comm<ranks = 2>
  %a = tg.all_reduce %g on %c {op = "sum"} : !tg.comm<ranks = 2>, tensor<4xf64>
  return %a : tensor<4xf64>
}
)mlir",
              /*pad=*/true);
  CHECK(failed(f64.build()));
  CHECK(f64.diag ==
        "'tg.all_reduce' op NCCL communicates f32, bf16 or f16 tensors, not 'f64'");
}
