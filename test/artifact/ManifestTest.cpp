//===- ManifestTest.cpp - the manifest from the final module --------------===//
//
// buildManifest reads an entry's arena from the module the backend left
// (`tg.arena_bytes`, recorded by buildCpuSharedObject with the ops' scratch
// added), not from the plan's transient bytes: nothing is patched into the
// manifest afterwards.
//
//===----------------------------------------------------------------------===//
#include "codegen/artifact/Manifest.h"
#include "codegen/registry/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;

namespace {

/// train_step and eval both planned (512 and 128 transient bytes); the
/// backend gave train_step an arena of 768 bytes (256 of scratch) and
/// generated eval without one.
constexpr const char *kModule = R"mlir(
module attributes {tg.model = "m", tg.arena_bytes = {train_step = 768 : i64}} {
  func.func @train_step(%w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>},
                        %x: tensor<2x4xf32> {tg.name = "x", tg.role = #tg.role<input>})
      -> (tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>})
      attributes {tg.memory = #tg.memory<params_bytes = 16, optimizer_bytes = 0,
        inputs_bytes = 32, grads_bytes = 0, activations_bytes = 0,
        workspace_bytes = 512, persistent_bytes = 48, transient_bytes = 512,
        peak_bytes = 560, lower_bound_bytes = 560, naive_bytes = 600>} {
    return %w : tensor<4xf32>
  }
  func.func @eval(%w: tensor<4xf32> {tg.name = "w", tg.role = #tg.role<param>})
      -> (tensor<4xf32> {tg.name = "out", tg.role = #tg.role<output>})
      attributes {tg.memory = #tg.memory<params_bytes = 16, optimizer_bytes = 0,
        inputs_bytes = 0, grads_bytes = 0, activations_bytes = 0,
        workspace_bytes = 128, persistent_bytes = 16, transient_bytes = 128,
        peak_bytes = 144, lower_bound_bytes = 144, naive_bytes = 144>} {
    return %w : tensor<4xf32>
  }
}
)mlir";

} // namespace

TEST_CASE("manifest: arenas come from what the backend recorded",
          "[artifact][manifest]") {
  MLIRContext ctx;
  DialectRegistry registry;
  tg::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &ctx);
  REQUIRE(module);
  llvm::json::Object memory{{"peak_bytes", 816}};
  FailureOr<llvm::json::Object> m = tg::buildManifest(*module, &memory);
  REQUIRE(succeeded(m));
  CHECK(m->getString("model") == "m");
  llvm::json::Object *entries = m->getObject("entries");
  REQUIRE(entries);
  llvm::json::Object *step = entries->getObject("train_step");
  REQUIRE(step);
  CHECK(step->getInteger("arena_bytes") == 768);
  CHECK(step->getBoolean("inplace") == true);
  // eval's plan is not its code's: no arena, no in-place update.
  llvm::json::Object *eval = entries->getObject("eval");
  REQUIRE(eval);
  CHECK_FALSE(eval->get("arena_bytes"));
  CHECK_FALSE(eval->get("inplace"));
  REQUIRE(m->getObject("memory"));
  CHECK(m->getObject("memory")->getInteger("peak_bytes") == 816);
}
