//===- GemmSm90.cpp - wgmma + TMA + mbarrier GEMM (sm_90a) ------*- C++ -*-===//
#include "codegen/nvptx/GemmCommon.h"
namespace tg::nvptx::detail {
std::string generateSm90Gemm(const GemmProblem &p, const TileConfig &c) {
  return "";
}
} // namespace tg::nvptx::detail
