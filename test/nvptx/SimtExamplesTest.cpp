//===- SimtExamplesTest.cpp - the example models' ops on the GPU -*- C++ -*-===//
//
// Compiles examples/{mlp,cnn,gpt}.tg (small sizes, fp32 and bf16) through
// the training pipeline (fuse, decompose, plan memory) and lowers every
// top-level op of every function with lowerOpToKernels. An op may fail only
// when it belongs to another generator that has not landed yet (an
// elementwise, reduction or optimizer kernel, a bf16/f16 product); every
// f32 product, movement, convolution, pooling and constant op must lower,
// and the kernels, at the models' real shapes, must assemble cleanly for
// sm_80 and sm_90a.
//
//===----------------------------------------------------------------------===//
#include "SimtTestUtil.h"

#include "codegen/nvptx/KernelGen.h"
#include "codegen/nvptx/SimtScalar.h"
#include "dialects/TGOps.h"
#include "frontend/Diagnostics.h"
#include "frontend/Sema.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>

using namespace mlir;
using namespace ::tg::nvptx;

namespace {

/// True when `op` is another engineer's kernel kind (see the file comment).
bool ownedElsewhere(Operation *op) {
  auto elem = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  if (auto fused = dyn_cast<mlir::tg::FusedOp>(op)) {
    if (fused.getKind() != mlir::tg::KernelKind::gemm)
      return true;
    for (Operation &inner : fused.getBodyBlock())
      if (auto mm = dyn_cast<mlir::tg::MatmulOp>(inner))
        return !elem(mm.getLhs()).isF32();
    return false;
  }
  if (auto mm = dyn_cast<mlir::tg::MatmulOp>(op))
    return !elem(mm.getLhs()).isF32();
  return isa<mlir::tg::SumOp, mlir::tg::MaxOp, mlir::tg::MeanOp>(op) ||
         (!isa<mlir::tg::ConstantOp, mlir::tg::BroadcastToOp>(op) &&
          ::tg::nvptx::detail::isScalarOp(op));
}

/// Every top-level tg op of `fn`'s body and of loops in it.
void collectOps(func::FuncOp fn, std::vector<Operation *> &ops) {
  fn.walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "tg" &&
        !isa<mlir::tg::YieldOp>(op) && !op->getParentOfType<mlir::tg::FusedOp>())
      ops.push_back(op);
  });
}

void checkModel(const std::string &name,
                std::vector<std::pair<std::string, std::string>> defines,
                const std::string &precision) {
  INFO(name << " " << precision);
  const char *src = std::getenv("TGC_SOURCE_DIR");
  REQUIRE(src);
  std::string path = std::string(src) + "/examples/" + name + ".tg";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  REQUIRE(buffer);

  tgtest::SimtContext c;
  MLIRContext &ctx = c.ctx;
  std::string &diags = c.diags;

  tgc::SourceFile file(path, (*buffer)->getBuffer().str());
  tgc::DiagEngine diag(file);
  tgc::FrontendOptions opts;
  opts.defines = std::move(defines);
  opts.context = &ctx;
  auto builder = tgc::parseAndElaborate(file, diag, opts);
  REQUIRE(builder);
  OwningOpRef<ModuleOp> module = builder->build();
  REQUIRE(module);
  PassManager pm(&ctx);
  mlir::tg::TrainingPipelineOptions options;
  options.fuse = true;
  options.decompose = true;
  options.planMemory = true;
  options.precision = precision;
  mlir::tg::buildTrainingPipeline(pm, options);
  INFO(diags);
  REQUIRE(succeeded(pm.run(*module)));

  for (Target t : {Target::SM80, Target::SM90a}) {
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(UnknownLoc::get(&ctx));
    std::map<std::string, int> missing;
    int lowered = 0;
    for (auto fn : module->getOps<func::FuncOp>()) {
      std::vector<Operation *> ops;
      collectOps(fn, ops);
      for (Operation *op : ops) {
        diags.clear();
        if (succeeded(lowerOpToKernels(op, t, *kernels))) {
          ++lowered;
          continue;
        }
        INFO("@" << fn.getName().str() << ": " << diags);
        CHECK(ownedElsewhere(op));
        ++missing[op->getName().getStringRef().str()];
      }
    }
    std::string left;
    for (auto &[op, n] : missing)
      left += " " + op + " x" + std::to_string(n);
    INFO("not lowered (other generators):" << left);
    CHECK(lowered > 0);
    tgtest::checkAssembles(*kernels, t);
  }
}

} // namespace

TEST_CASE("the example models' products and movement ops lower",
          "[nvptx][simt-examples]") {
  std::string precision = GENERATE(std::string(""), std::string("bf16"));
  checkModel("mlp", {{"batch", "8"}, {"hidden", "32"}}, precision);
  checkModel("cnn", {{"batch", "4"}}, precision);
  checkModel("gpt",
             {{"vocab", "64"}, {"ctx", "16"}, {"d_model", "32"}, {"layers", "1"},
              {"heads", "2"}, {"batch", "2"}, {"seq", "16"}, {"accumulate", "1"}},
             precision);
}
