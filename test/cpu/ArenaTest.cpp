//===- ArenaTest.cpp - code in the planned arena ------------*- C++ -*-===//
//
// Random graphs (the planner's property-test generator) planned by
// tg-plan-memory and compiled with and without the arena: every result is
// bit-identical, whatever bytes the arena held before the call (a value
// read before it is written, or two live values sharing bytes, would show
// as a difference between the runs).
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"
#include "passes/MemoryPlan.h"
#include "test/passes/RandomGraph.h"

using namespace cputest;

TEST_CASE("arena: random graphs give the same bits in the planned arena",
          "[cpu][arena]") {
  for (unsigned seed = 0; seed < 16; ++seed) {
    INFO("seed " << seed);
    Harness h;
    h.parse(tgtest::randomGraph(seed, 12 + seed % 20));
    auto fn = h.module->lookupSymbol<mlir::func::FuncOp>("f");
    REQUIRE(mlir::succeeded(mlir::tg::planMemory(fn, {})));
    std::vector<Tensor> args = h.randomArgs({}, seed + 1);
    std::vector<HostTensor> host;
    for (const Tensor &a : args)
      host.push_back(toHost(a));

    // The reference: the same module without the arena, unoptimised (at -O2
    // LLVM's code for heap buffers rounds a few chains differently, within
    // the CPU tests' tolerance of the reference evaluator; -O0 keeps every
    // operation as written). The arena code is optimised, as shipped.
    auto plain = mlir::tg::cpu::JitModule::compile(*h.module, {}, 0);
    INFO(h.diagnostics);
    REQUIRE(mlir::succeeded(plain));
    mlir::tg::cpu::CpuPipelineOptions options;
    options.arena = true;
    auto arena = mlir::tg::cpu::JitModule::compile(*h.module, options, 2);
    REQUIRE(mlir::succeeded(arena));
    REQUIRE((*arena)->arenaBytes("f") > 0);

    std::string error;
    auto want = (*plain)->run("f", host, &error);
    INFO(error);
    REQUIRE(mlir::succeeded(want));
    for (uint8_t poison : {0x00, 0xff, 0x7f}) {
      auto got = (*arena)->run("f", host, &error, poison);
      INFO("poison " << int(poison) << ": " << error);
      REQUIRE(mlir::succeeded(got));
      REQUIRE(got->size() == want->size());
      for (size_t r = 0; r < want->size(); ++r) {
        INFO("got " << (*got)[r].get(0) << " want " << (*want)[r].get(0));
        CHECK((*got)[r].bytes == (*want)[r].bytes);
      }
    }
  }
}
