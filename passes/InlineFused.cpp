//===- InlineFused.cpp - the tg-inline-fused pass ---------------*- C++ -*-===//
//
// Undoes tg-fuse for a backend that runs a group's ops one by one (the CPU
// backend): each tg.fused becomes its body, keeping the memory plan of its
// results. See Fusion.h.
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion.h"
#include "passes/Passes.h"

namespace mlir::tg {
#define GEN_PASS_DEF_INLINEFUSEDPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {
struct InlineFusedPass final
    : tg::impl::InlineFusedPassBase<InlineFusedPass> {
  using Base::Base;
  void runOnOperation() override { tg::inlineFusedGroups(getOperation()); }
};
} // namespace
