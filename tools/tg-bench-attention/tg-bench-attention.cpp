//===- tg-bench-attention.cpp - attention kernels for the GPU bench -*- C++ -*-===//
//
// Builds one causal (or not) tg.attention and its tg.attention_grad of a
// given shape, lowers both with lowerOpToKernels for a target, and writes
// the kernels' PTX and their launches, so that a GPU machine with only a
// driver and PyTorch (bench/attention_torch.py) can check and time exactly
// what tgc would run:
//
//   tg-bench-attention B H T D [--f16] [--causal] --target sm_90a|sm_80
//       --emit-ptx FILE --emit-launches FILE
//
// Each launch is one line: `fwd|bwd SYMBOL GX GY BLOCK SMEM PARAM...`, a
// PARAM being `op:I` or `res:I` (operand / result I of the op) or
// `map:I:ROWS:COLS:BATCHES:BOXROWS:BOXCOLS` (a TMA descriptor over operand
// I, as KernelGen.h's TensorMapParam; 16-bit elements, 128-byte swizzle,
// zero fill).
//
//===----------------------------------------------------------------------===//

#include "codegen/nvptx/Gemm.h"
#include "codegen/nvptx/KernelGen.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

using namespace mlir;

namespace {

int fail(const std::string &msg) {
  std::fprintf(stderr, "tg-bench-attention: error: %s\n", msg.c_str());
  return 1;
}

bool parseInt(const char *s, int64_t &v) {
  char *end = nullptr;
  v = std::strtoll(s, &end, 10);
  return end && *end == '\0' && v > 0;
}

} // namespace

int main(int argc, char **argv) {
  int64_t dims[4];
  std::string target, ptxPath, launchPath;
  bool f16 = false, causal = false;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    if (a == "--f16") {
      f16 = true;
    } else if (a == "--causal") {
      causal = true;
    } else if (a == "--target" || a == "--emit-ptx" || a == "--emit-launches") {
      std::string &out = a == "--target" ? target : a == "--emit-ptx" ? ptxPath : launchPath;
      if (!value(out))
        return fail(a + " needs a value");
    } else if (positional < 4 && parseInt(argv[i], dims[positional])) {
      ++positional;
    } else {
      return fail("unexpected argument '" + a +
                  "' (usage: B H T D [--f16] [--causal] --target sm_90a|sm_80 "
                  "--emit-ptx FILE --emit-launches FILE)");
    }
  }
  if (positional != 4)
    return fail("give the shape as B H T D");
  if (target != "sm_80" && target != "sm_90a")
    return fail("--target must be sm_80 or sm_90a");
  if (ptxPath.empty() || launchPath.empty())
    return fail("give --emit-ptx and --emit-launches");
  auto t = target == "sm_80" ? ::tg::nvptx::Target::SM80 : ::tg::nvptx::Target::SM90a;

  DialectRegistry registry;
  mlir::tg::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  std::string diags;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diags += d.str() + "\n";
    return success();
  });
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  Type elt = f16 ? Type(b.getF16Type()) : Type(b.getBF16Type());
  auto x = RankedTensorType::get({dims[0], dims[1], dims[2], dims[3]}, elt);
  auto stat = RankedTensorType::get({dims[0], dims[1], dims[2]}, b.getF32Type());
  OwningOpRef<ModuleOp> m = ModuleOp::create(loc);
  b.setInsertionPointToEnd(m->getBody());
  auto fn = func::FuncOp::create(b, loc, "f",
                                 b.getFunctionType({x, x, x, x, stat}, {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  auto args = entry->getArguments();
  auto scale = llvm::APFloat(1.0 / std::sqrt(static_cast<double>(dims[3])));
  auto fwd = mlir::tg::AttentionOp::create(b, loc, args[0], args[1], args[2],
                                           causal, scale);
  auto bwd = mlir::tg::AttentionGradOp::create(
      b, loc, TypeRange{x, x, x}, args[3], args[4], args[0], args[1], args[2],
      fwd.getOutput(), fwd.getLse(), causal ? b.getUnitAttr() : UnitAttr(),
      b.getF64FloatAttr(scale.convertToDouble()));
  func::ReturnOp::create(b, loc);

  OwningOpRef<ModuleOp> kernels = ModuleOp::create(loc);
  std::string lines;
  for (auto [tag, op] : {std::pair<const char *, Operation *>{"fwd", fwd},
                         {"bwd", bwd.getOperation()}}) {
    auto launches = ::tg::nvptx::lowerOpToKernels(op, t, *kernels);
    if (failed(launches))
      return fail("the kernels do not take this shape: " + diags);
    for (const ::tg::nvptx::KernelLaunch &l : *launches) {
      lines += std::string(tag) + " " + l.symbol;
      for (uint32_t v : {l.grid[0], l.grid[1], l.block[0], l.dynamicSharedBytes})
        lines += " " + std::to_string(v);
      for (const ::tg::nvptx::KernelParam &p : l.params) {
        using K = ::tg::nvptx::KernelParam::Kind;
        lines += p.kind == K::Result ? " res:" : p.kind == K::Operand ? " op:" : " map:";
        lines += std::to_string(p.index);
        if (p.kind == K::TensorMap)
          for (uint64_t v : {p.map.rows, p.map.cols, p.map.batches,
                             uint64_t(p.map.boxRows), uint64_t(p.map.boxCols)})
            lines += ":" + std::to_string(v);
      }
      lines += "\n";
    }
  }
  std::string text, ptx, err;
  llvm::raw_string_ostream os(text);
  kernels->print(os);
  if (!::tg::nvptx::compileMLIRToPTX(text, t, ptx, err))
    return fail("PTX generation failed: " + err);
  std::ofstream(ptxPath) << ptx;
  std::ofstream(launchPath) << lines;
  if (!std::ifstream(ptxPath) || !std::ifstream(launchPath))
    return fail("cannot write " + ptxPath + " or " + launchPath);
  return 0;
}
