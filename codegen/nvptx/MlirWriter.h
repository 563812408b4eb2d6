//===- MlirWriter.h - a tiny SSA text builder for kernel IR -----*- C++ -*-===//
//
// The GEMM generators emit MLIR (llvm + nvvm + scf dialects) as text, which is
// then parsed, verified and lowered like any other module. Text keeps the
// generators close to the IR they produce (a lit test reads the same thing),
// and the parser+verifier checks every op the generator writes.
//
//===----------------------------------------------------------------------===//
#ifndef TG_CODEGEN_NVPTX_MLIRWRITER_H
#define TG_CODEGEN_NVPTX_MLIRWRITER_H

#include <cstdint>
#include <map>
#include <sstream>
#include <string>

namespace tg::nvptx::detail {

/// Accumulates one function body. Constants are hoisted into the entry block
/// (and shared), so they dominate every nested region.
class MlirWriter {
public:
  /// A fresh SSA name.
  std::string fresh(const std::string &hint = "v") {
    return "%" + hint + std::to_string(next++);
  }
  /// Appends one line at the current nesting depth.
  void line(const std::string &s) {
    body.append(2 * depth, ' ');
    body += s;
    body += '\n';
  }
  /// `%x = <rhs>`; returns %x.
  std::string def(const std::string &rhs, const std::string &hint = "v") {
    std::string v = fresh(hint);
    line(v + " = " + rhs);
    return v;
  }
  void open(const std::string &s) { line(s); ++depth; }
  void close(const std::string &s = "}") { --depth; line(s); }

  std::string constant(int64_t v, const std::string &ty) {
    std::string key = ty + ":" + std::to_string(v);
    auto it = consts.find(key);
    if (it != consts.end())
      return it->second;
    std::string name = "%c" + std::to_string(next++);
    constsText += "    " + name + " = llvm.mlir.constant(" + std::to_string(v) +
                  " : " + ty + ") : " + ty + "\n";
    return consts[key] = name;
  }
  std::string i32(int64_t v) { return constant(v, "i32"); }
  std::string i64(int64_t v) { return constant(v, "i64"); }
  std::string f32(double v) {
    std::ostringstream os;
    os.precision(9);
    os << std::scientific << v;
    std::string key = "f32:" + os.str();
    auto it = consts.find(key);
    if (it != consts.end())
      return it->second;
    std::string name = "%c" + std::to_string(next++);
    constsText += "    " + name + " = llvm.mlir.constant(" + os.str() +
                  " : f32) : f32\n";
    return consts[key] = name;
  }
  /// Hoists an arbitrary value-independent definition into the entry block.
  std::string hoist(const std::string &rhs) {
    auto it = consts.find(rhs);
    if (it != consts.end())
      return it->second;
    std::string name = "%c" + std::to_string(next++);
    constsText += "    " + name + " = " + rhs + "\n";
    return consts[rhs] = name;
  }

  // Integer and float helpers on the llvm dialect.
  std::string bin(const std::string &op, const std::string &a,
                  const std::string &b, const std::string &ty = "i32") {
    return def("llvm." + op + " " + a + ", " + b + " : " + ty);
  }
  std::string add(const std::string &a, const std::string &b,
                  const std::string &ty = "i32") { return bin("add", a, b, ty); }
  std::string mul(const std::string &a, const std::string &b,
                  const std::string &ty = "i32") { return bin("mul", a, b, ty); }
  std::string addi(const std::string &a, int64_t b) {
    return b == 0 ? a : add(a, i32(b));
  }
  std::string muli(const std::string &a, int64_t b) {
    return b == 1 ? a : mul(a, i32(b));
  }
  std::string shri(const std::string &a, int64_t b) {
    return b == 0 ? a : bin("lshr", a, i32(b));
  }
  std::string andi(const std::string &a, int64_t b) { return bin("and", a, i32(b)); }
  std::string ult(const std::string &a, const std::string &b,
                  const std::string &ty = "i32") {
    return def("llvm.icmp \"ult\" " + a + ", " + b + " : " + ty);
  }
  std::string select(const std::string &p, const std::string &a,
                     const std::string &b, const std::string &ty) {
    return def("llvm.select " + p + ", " + a + ", " + b + " : i1, " + ty);
  }
  std::string zext64(const std::string &a) {
    return def("llvm.zext " + a + " : i32 to i64");
  }
  std::string gep(const std::string &p, const std::string &off,
                  const std::string &ptrTy, const std::string &offTy,
                  const std::string &elt) {
    return def("llvm.getelementptr " + p + "[" + off + "] : (" + ptrTy + ", " +
               offTy + ") -> " + ptrTy + ", " + elt);
  }
  std::string fbin(const std::string &op, const std::string &a,
                   const std::string &b, const std::string &ty = "f32") {
    return def("llvm." + op + " " + a + ", " + b + " : " + ty);
  }
  std::string sreg(const std::string &name) {
    return def("nvvm.read.ptx.sreg." + name + " : i32");
  }

  /// The function body: hoisted constants first.
  std::string text() const { return constsText + body; }
  int depth = 2;

private:
  int next = 0;
  std::string body, constsText;
  std::map<std::string, std::string> consts;
};

/// log2 of a power of two.
inline int log2i(int64_t v) {
  int l = 0;
  while ((int64_t(1) << l) < v)
    ++l;
  return l;
}

} // namespace tg::nvptx::detail

#endif // TG_CODEGEN_NVPTX_MLIRWRITER_H
