//===- GemmCommon.cpp - IR pieces shared by both GEMM paths -----*- C++ -*-===//
//
// See GemmCommon.h.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/GemmCommon.h"

namespace tg::nvptx::detail {

std::string mlirType(ElemType t) { return toString(t); }

std::string accAliasName(int n) { return "!tg_acc" + std::to_string(n); }

std::string accAliasDef(int n) {
  std::string s = accAliasName(n) + " = !llvm.struct<(";
  for (int i = 0; i < n / 2; ++i)
    s += i ? ", f32" : "f32";
  return s + ")>\n";
}

std::string functionHeader(const GemmProblem &p, const TileConfig &c,
                           const std::string &aArgTy) {
  const Epilogue &e = p.epilogue;
  std::string cfg = "{bm = " + std::to_string(c.bm) +
                    " : i32, bn = " + std::to_string(c.bn) +
                    " : i32, bk = " + std::to_string(c.bk) +
                    " : i32, stages = " + std::to_string(c.stages) +
                    " : i32, group_m = " + std::to_string(c.groupM) + " : i32";
  if (p.target == Target::SM80)
    cfg += ", warps_m = " + std::to_string(c.warpsM) +
           " : i32, warps_n = " + std::to_string(c.warpsN) + " : i32";
  else
    cfg += ", consumer_warpgroups = " +
           std::to_string(c.consumerWarpgroups()) + " : i32, persistent";
  cfg += ", target = \"" + toString(p.target) + "\"}";
  std::string gemm = "{form = \"" + toString(p.form) + "\", in = \"" +
                     toString(p.in) + "\", out = \"" + toString(e.out) +
                     "\", scale = " + (e.scale ? "true" : "false") +
                     ", bias = " + (e.bias ? "true" : "false") +
                     ", act = \"" + toString(e.act) + "\", residual = " +
                     (e.residual ? "true" : "false") + "}";
  std::string s;
  s += "  llvm.func @" + kernelName(p, c) + "(%A: " + aArgTy + ", %B: " +
       aArgTy +
       ", %C: !llvm.ptr<1>, %bias: !llvm.ptr<1>, %res: !llvm.ptr<1>, "
       "%M: i32, %N: i32, %K: i32, %alpha: f32)\n";
  // sm_90a: one CTA per SM is what lets ptxas size registers for setmaxnreg.
  s += "      attributes {nvvm.kernel, nvvm.maxntid = array<i32: " +
       std::to_string(c.threads(p.target)) + ", 1, 1>" +
       (p.target == Target::SM90a ? ", nvvm.minctasm = 1 : i32" : "") + ",\n";
  s += "                  tg.tile_config = " + cfg + ",\n";
  s += "                  tg.gemm = " + gemm + "} {\n";
  return s;
}

std::string functionFooter() { return "    llvm.return\n  }\n"; }

void emitTileRaster(MlirWriter &w, const TileConfig &c, const KernelArgs &a,
                    const std::string &tile, std::string &tileM,
                    std::string &tileN) {
  // Triton-style grouped order: walk groupM tile-rows down a column of
  // tiles before moving right, so a band of A and a column of B stay in L2.
  std::string tilesM = w.bin("udiv", w.addi(a.m, c.bm - 1), w.i32(c.bm));
  std::string tilesN = w.bin("udiv", w.addi(a.n, c.bn - 1), w.i32(c.bn));
  std::string perGroup = w.muli(tilesN, c.groupM);
  std::string group = w.bin("udiv", tile, perGroup);
  std::string firstM = w.muli(group, c.groupM);
  std::string left = w.bin("sub", tilesM, firstM);
  std::string gsz = w.def("llvm.intr.umin(" + left + ", " + w.i32(c.groupM) +
                          ") : (i32, i32) -> i32");
  std::string inGroup = w.bin("urem", tile, perGroup);
  tileM = w.add(firstM, w.bin("urem", inGroup, gsz));
  tileN = w.bin("udiv", inGroup, gsz);
}

void emitEpiloguePair(MlirWriter &w, const GemmProblem &p, const KernelArgs &a,
                      const std::string &row, const std::string &col,
                      const std::string &v0In, const std::string &v1In) {
  const Epilogue &e = p.epilogue;
  std::string inM = w.ult(row, a.m), inN = w.ult(col, a.n);
  std::string pred = w.bin("and", inM, inN, "i1");
  w.open("scf.if " + pred + " {");
  std::string v = w.def("llvm.mlir.undef : vector<2xf32>");
  v = w.def("llvm.insertelement " + v0In + ", " + v + "[" + w.i32(0) +
            " : i32] : vector<2xf32>");
  v = w.def("llvm.insertelement " + v1In + ", " + v + "[" + w.i32(1) +
            " : i32] : vector<2xf32>");
  if (e.scale) {
    std::string s = w.def("llvm.mlir.undef : vector<2xf32>");
    s = w.def("llvm.insertelement " + a.alpha + ", " + s + "[" + w.i32(0) +
              " : i32] : vector<2xf32>");
    s = w.def("llvm.shufflevector " + s + ", " + s +
              " [0, 0] : vector<2xf32>");
    v = w.fbin("fmul", v, s, "vector<2xf32>");
  }
  if (e.bias) {
    std::string bp = w.gep(a.bias, w.zext64(col), "!llvm.ptr<1>", "i64", "f32");
    std::string bv = w.def("llvm.load " + bp +
                           " {alignment = 8 : i64} : !llvm.ptr<1> -> vector<2xf32>");
    v = w.fbin("fadd", v, bv, "vector<2xf32>");
  }
  if (e.act == Activation::ReLU) {
    std::string z = w.hoist("llvm.mlir.zero : vector<2xf32>");
    v = w.def("llvm.intr.maxnum(" + v + ", " + z +
              ") : (vector<2xf32>, vector<2xf32>) -> vector<2xf32>");
  } else if (e.act == Activation::GELU) {
    // tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), with the
    // hardware tanh.approx.f32 (sm_75+), per lane.
    std::string out = w.def("llvm.mlir.undef : vector<2xf32>");
    for (int i = 0; i < 2; ++i) {
      std::string x = w.def("llvm.extractelement " + v + "[" + w.i32(i) +
                            " : i32] : vector<2xf32>");
      std::string x3 = w.fbin("fmul", w.fbin("fmul", x, x), x);
      std::string in = w.fbin("fadd", x, w.fbin("fmul", x3, w.f32(0.044715)));
      in = w.fbin("fmul", in, w.f32(0.7978845608028654));
      std::string t = w.def("llvm.inline_asm \"tanh.approx.f32 $0, $1;\", "
                            "\"=f,f\" " + in + " : (f32) -> f32");
      std::string y = w.fbin("fmul", w.fbin("fmul", x, w.f32(0.5)),
                             w.fbin("fadd", t, w.f32(1.0)));
      out = w.def("llvm.insertelement " + y + ", " + out + "[" + w.i32(i) +
                  " : i32] : vector<2xf32>");
    }
    v = out;
  }
  std::string ot = mlirType(e.out), vt = "vector<2x" + ot + ">";
  std::string off = w.add(w.mul(w.zext64(row), w.zext64(a.n), "i64"),
                          w.zext64(col), "i64");
  int align = 2 * elemBytes(e.out);
  if (e.residual) {
    std::string rp = w.gep(a.res, off, "!llvm.ptr<1>", "i64", ot);
    std::string rv = w.def("llvm.load " + rp + " {alignment = " +
                           std::to_string(align) + " : i64} : !llvm.ptr<1> -> " +
                           vt);
    if (e.out != ElemType::F32)
      rv = w.def("llvm.fpext " + rv + " : " + vt + " to vector<2xf32>");
    v = w.fbin("fadd", v, rv, "vector<2xf32>");
  }
  if (e.out != ElemType::F32)
    v = w.def("llvm.fptrunc " + v + " : vector<2xf32> to " + vt);
  std::string cp = w.gep(a.c, off, "!llvm.ptr<1>", "i64", ot);
  w.line("llvm.store " + v + ", " + cp + " {alignment = " +
         std::to_string(align) + " : i64} : " + vt + ", !llvm.ptr<1>");
  w.close();
}

} // namespace tg::nvptx::detail
