//===- JitTest.cpp - the JIT's checks and error messages --------*- C++ -*-===//
//
// Calls that do not match the function, unknown functions and modules the
// JIT cannot describe give a message, never a crash; HostTensor converts
// half-precision values both ways; collectives run as the reference
// evaluator runs them (one process, every rank holding the same values).
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"

using namespace cputest;

TEST_CASE("JIT rejects bad calls with a message", "[cpu][jit]") {
  Harness h;
  h.parse(fn("%a: tensor<2x3xf32>", "tensor<2x3xf32>",
             "  %r = tg.exp %a : tensor<2x3xf32>"));
  auto jit = h.compile();
  std::string error;
  HostTensor good = HostTensor::zeros({2, 3}, HostType::F32);

  CHECK(mlir::failed(jit->run("g", {good}, &error)));
  CHECK(error == "no public function named 'g'");
  CHECK(mlir::failed(jit->run("f", {}, &error)));
  CHECK(error == "'f' takes 1 arguments, got 0");
  CHECK(mlir::failed(
      jit->run("f", {HostTensor::zeros({3, 2}, HostType::F32)}, &error)));
  CHECK(error == "argument 0 of 'f' does not match its type");
  CHECK(mlir::failed(
      jit->run("f", {HostTensor::zeros({2, 3}, HostType::F64)}, &error)));

  auto out = jit->run("f", {good}, &error);
  REQUIRE(mlir::succeeded(out));
  CHECK((*out)[0].get(5) == 1.0f);
}

TEST_CASE("JIT reports functions it cannot call", "[cpu][jit]") {
  Harness h;
  h.parse("func.func @f(%a: index) -> index { return %a : index }");
  auto jit = mlir::tg::cpu::JitModule::compile(*h.module);
  CHECK(mlir::failed(jit));
  CHECK(h.diagnostics.find("JIT: unsupported argument or result type 'index'") !=
        std::string::npos);
}

TEST_CASE("HostTensor rounds to bf16 and f16", "[cpu][jit]") {
  HostTensor b = HostTensor::zeros({2}, HostType::BF16);
  b.set(0, 1.0 + 1.0 / 256); // halfway between bf16 neighbours: to even
  b.set(1, -3.5);
  CHECK(b.get(0) == 1.0);
  CHECK(b.get(1) == -3.5);
  HostTensor f = HostTensor::zeros({1}, HostType::F16);
  f.set(0, 65504.0);
  CHECK(f.get(0) == 65504.0);
}

TEST_CASE("integer division by zero gives 0, not a trap", "[cpu][jit]") {
  Harness h;
  h.parse(fn("%a: tensor<3xi32>, %b: tensor<3xi32>", "tensor<3xi32>",
             "  %r = tg.div %a, %b : tensor<3xi32>, tensor<3xi32> -> "
             "tensor<3xi32>"));
  auto jit = h.compile();
  HostTensor a = HostTensor::zeros({3}, HostType::I32);
  HostTensor b = HostTensor::zeros({3}, HostType::I32);
  a.data<int32_t>()[0] = 7;
  b.data<int32_t>()[0] = 0;
  a.data<int32_t>()[1] = INT32_MIN;
  b.data<int32_t>()[1] = -1;
  a.data<int32_t>()[2] = -7;
  b.data<int32_t>()[2] = 2;
  auto out = jit->run("f", {a, b});
  REQUIRE(mlir::succeeded(out));
  CHECK((*out)[0].get(0) == 0);
  CHECK((*out)[0].get(1) == 0);
  CHECK((*out)[0].get(2) == -3);
}

TEST_CASE("JIT runs collectives as the reference evaluator", "[cpu][jit]") {
  // A bucket of two tensors summed and one averaged over 2 ranks: every
  // rank holds the same values, so the sum doubles and the mean keeps them.
  SECTION("all_reduce") {
    Harness h;
    h.check(R"(
func.func @f(%a: tensor<3xf32>, %b: tensor<2x2xf32>) -> (tensor<3xf32>, tensor<2x2xf32>, tensor<3xf32>) {
  %w = tg.comm_world : !tg.comm<ranks = 2>
  %s:2 = tg.all_reduce %a, %b on %w {op = "sum"} : !tg.comm<ranks = 2>, tensor<3xf32>, tensor<2x2xf32>
  %m = tg.all_reduce %a on %w {op = "mean"} : !tg.comm<ranks = 2>, tensor<3xf32>
  return %s#0, %s#1, %m : tensor<3xf32>, tensor<2x2xf32>, tensor<3xf32>
})");
  }
  // ZeRO-1 on 3 ranks with ragged shards (5 = 3 * 2 - 1): rank 0's shard
  // of the summed gradient, its shard of the parameter, and the gather.
  SECTION("reduce_scatter, shard, all_gather") {
    Harness h;
    h.check(R"(
func.func @f(%g: tensor<5xf32>, %w: tensor<5xf32>) -> (tensor<2xf32>, tensor<5xf32>) {
  %c = tg.comm_world : !tg.comm<ranks = 3>
  %s = tg.reduce_scatter %g on %c {op = "sum"} : !tg.comm<ranks = 3>, tensor<5xf32> -> tensor<2xf32>
  %p = tg.shard %w on %c : !tg.comm<ranks = 3>, tensor<5xf32> -> tensor<2xf32>
  %u = tg.add %p, %s : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %a = tg.all_gather %u on %c : !tg.comm<ranks = 3>, tensor<2xf32> -> tensor<5xf32>
  return %s, %a : tensor<2xf32>, tensor<5xf32>
})");
  }
  SECTION("rank counts that disagree are an error") {
    Harness h;
    h.parse(R"(
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %two = tg.comm_world : !tg.comm<ranks = 2>
  %four = tg.comm_world : !tg.comm<ranks = 4>
  %s = tg.all_reduce %a on %two {op = "sum"} : !tg.comm<ranks = 2>, tensor<3xf32>
  %r = tg.all_reduce %s on %four {op = "sum"} : !tg.comm<ranks = 4>, tensor<3xf32>
  return %r : tensor<3xf32>
})");
    CHECK(mlir::failed(mlir::tg::cpu::JitModule::compile(*h.module)));
    CHECK(h.diagnostics.find("JIT: communicators of 4 ranks and of 2 in "
                             "one module") !=
          std::string::npos);
  }
}
