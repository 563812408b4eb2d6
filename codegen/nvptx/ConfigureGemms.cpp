//===- ConfigureGemms.cpp - tile configs for the tensor-core GEMMs -*- C++ -*-===//
//
// tg-configure-gemms: records, on every 16-bit GEMM of the module, the
// generator and tile configuration configureGemm picks for each GPU target
// (ragged shapes included), as `tg.tile_configs`. The lowering (GemmLowering.cpp) only reads it, so the
// heuristic is tested, and can be overridden, apart from code generation.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmLowering.h"
#include "codegen/nvptx/Passes.h"

namespace tg::nvptx {

#define GEN_PASS_DEF_CONFIGUREGEMMSPASS
#include "codegen/nvptx/Passes.h.inc"

namespace {

using namespace mlir;

struct ConfigureGemmsPass final
    : impl::ConfigureGemmsPassBase<ConfigureGemmsPass> {
  using ConfigureGemmsPassBase::ConfigureGemmsPassBase;

  void runOnOperation() override {
    std::vector<Target> ts;
    for (const std::string &name : targets) {
      std::optional<Target> t = parseTarget(name);
      if (!t) {
        getOperation().emitError()
            << "tg-configure-gemms: unknown target '" << name
            << "' (the GEMM generators know sm_80 and sm_90a)";
        return signalPassFailure();
      }
      if (!llvm::is_contained(ts, *t))
        ts.push_back(*t);
    }
    if (ts.empty())
      ts = {Target::SM80, Target::SM90a};
    getOperation().walk([&](Operation *op) {
      if (!isTensorCoreGemm(op))
        return;
      // A GEMM no kernel computes gets no config; the lowering says why.
      std::string why;
      FailureOr<GemmOpInfo> info = analyzeGemm(op, why);
      if (failed(info))
        return;
      SmallVector<Attribute> configs;
      for (Target t : ts) {
        GemmProblem p = info->problem;
        p.target = t;
        configs.push_back(tileConfigAttr(op->getContext(), configureGemm(p), t));
      }
      op->setAttr(mlir::tg::attr::tileConfigs,
                  ArrayAttr::get(op->getContext(), configs));
    });
  }
};

} // namespace

void registerNvptxPasses() { registerTGNvptxPasses(); }

} // namespace tg::nvptx
