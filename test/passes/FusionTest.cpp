//===- FusionTest.cpp - properties of tg-fuse -------------------*- C++ -*-===//
//
// Random DAGs of tg ops (broadcasting elementwise ops, reductions over rows,
// columns and everything, softmax, matmuls in every transpose form, explicit
// transposes) through tg-fuse: the fused module verifies, computes exactly
// what the unfused one does on the reference evaluator (same ops in the same
// order, so equal to the bit in f64), and so do the module planned after
// fusion and the module with its groups inlined again.
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "test/reference/EvalTestUtil.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <map>
#include <random>

using namespace mlir;
using namespace tgtest;

namespace {

/// A random function @f over the shapes [R,C], [C], [R,1], [], [C,C],
/// [R,R] and [C,R], returning its last three values.
std::string randomFusionGraph(unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  int64_t r = 2 + pick(3), c = 3 + pick(4);
  using Shape = std::vector<int64_t>;
  auto ty = [](const Shape &s) {
    std::string t = "tensor<";
    for (int64_t d : s)
      t += std::to_string(d) + "x";
    return t + "f64>";
  };
  struct V {
    std::string name;
    Shape shape;
  };
  std::vector<V> values;
  std::string args, body;
  Shape inputs[] = {{r, c}, {c}, {r, 1}, {c, c}};
  for (auto [i, s] : llvm::enumerate(inputs)) {
    std::string name = "%a" + std::to_string(i);
    args += (i ? ", " : "") + name + ": " + ty(s);
    values.push_back({name, s});
  }
  auto broadcast = [](Shape a, Shape b) -> std::optional<Shape> {
    while (a.size() < b.size())
      a.insert(a.begin(), 1);
    while (b.size() < a.size())
      b.insert(b.begin(), 1);
    Shape out;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
        return std::nullopt;
      out.push_back(std::max(a[i], b[i]));
    }
    return out;
  };
  int n = 0;
  auto emit = [&](const std::string &rhs, const Shape &s) {
    std::string out = "%v" + std::to_string(n++);
    body += "  " + out + " = " + rhs + "\n";
    values.push_back({out, s});
  };
  int count = 8 + pick(16);
  for (int k = 0; k < count; ++k) {
    // Recent values more often: long chains are what fusion groups.
    const V &a = values[values.size() - 1 - pick(std::min<size_t>(values.size(), 5))];
    switch (pick(10)) {
    case 0:
    case 1:
    case 2: {
      const V &b = values[pick(values.size())];
      std::optional<Shape> s = broadcast(a.shape, b.shape);
      if (!s)
        break;
      const char *ops[] = {"add", "sub", "mul", "maximum"};
      emit(std::string("tg.") + ops[pick(4)] + " " + a.name + ", " + b.name +
               " : " + ty(a.shape) + ", " + ty(b.shape) + " -> " + ty(*s),
           *s);
      break;
    }
    case 3:
    case 4: {
      const char *ops[] = {"tanh", "neg", "relu", "sigmoid", "exp", "abs"};
      emit(std::string("tg.") + ops[pick(6)] + " " + a.name + " : " +
               ty(a.shape),
           a.shape);
      break;
    }
    case 5: {
      if (a.shape != Shape{r, c})
        break;
      const char *ops[] = {"sum", "max", "mean"};
      std::string op = std::string("tg.") + ops[pick(3)] + " " + a.name;
      switch (pick(3)) {
      case 0:
        emit(op + " axes = [1] keepdims : " + ty(a.shape) + " -> " +
                 ty({r, 1}),
             {r, 1});
        break;
      case 1:
        emit(op + " axes = [0] : " + ty(a.shape) + " -> " + ty({c}), {c});
        break;
      default:
        emit(op + " axes = [0, 1] : " + ty(a.shape) + " -> " + ty({}), {});
      }
      break;
    }
    case 6:
      if (a.shape == Shape{r, c})
        emit("tg.softmax " + a.name + " axis = 1 : " + ty(a.shape), a.shape);
      else if (a.shape.size() < 2 || a.shape == Shape{r, 1})
        emit("tg.broadcast_to " + a.name + " : " + ty(a.shape) + " to " +
                 ty({r, c}),
             {r, c});
      break;
    case 7:
      if (a.shape.size() == 2)
        emit("tg.transpose " + a.name + " perm = [1, 0] : " + ty(a.shape) +
                 " -> " + ty({a.shape[1], a.shape[0]}),
             {a.shape[1], a.shape[0]});
      break;
    default: {
      // A matmul in one of its forms, on whatever operands fit.
      if (a.shape.size() != 2)
        break;
      int64_t m = a.shape[0], kk = a.shape[1];
      std::vector<std::pair<V, std::string>> rhs;
      for (const V &b : values) {
        if (b.shape.size() != 2)
          continue;
        if (b.shape[0] == kk)
          rhs.push_back({b, ""});
        if (b.shape[1] == kk)
          rhs.push_back({b, " {transpose_rhs}"});
      }
      if (rhs.empty())
        break;
      auto [b, flag] = rhs[pick(rhs.size())];
      int64_t nn = flag.empty() ? b.shape[1] : b.shape[0];
      emit("tg.matmul " + a.name + ", " + b.name + flag + " : " +
               ty(a.shape) + ", " + ty(b.shape) + " -> " + ty({m, nn}),
           {m, nn});
    }
    }
  }
  std::string results, types;
  for (int k = 0; k < 3; ++k) {
    const V &v = values[values.size() - 1 - k];
    results += (k ? ", " : "") + v.name;
    types += (k ? ", " : "") + ty(v.shape);
  }
  return "func.func @f(" + args + ") -> (" + types + ") {\n" + body +
         "  return " + results + " : " + types + "\n}\n";
}

/// Equal to the bit, NaN equal to NaN.
bool sameBits(const Tensor &a, const Tensor &b) {
  if (a.shape != b.shape || a.data.size() != b.data.size())
    return false;
  for (size_t i = 0; i < a.data.size(); ++i)
    if (!(a.data[i] == b.data[i] ||
          (std::isnan(a.data[i]) && std::isnan(b.data[i]))))
      return false;
  return true;
}

} // namespace

TEST_CASE("fused and unfused random graphs agree on the reference evaluator",
          "[fusion]") {
  Harness h;
  std::map<tg::KernelKind, int> kinds;
  int folded = 0;
  for (unsigned seed = 1; seed <= 1000; ++seed) {
    std::string ir = randomFusionGraph(seed);
    INFO("seed " << seed << "\n" << ir);
    h.parse(ir);
    auto f = h.module->lookupSymbol<func::FuncOp>("f");
    SmallVector<Tensor> args =
        randomArgs(f.getArgumentTypes(), DType::F64, seed);
    auto before = h.eval(args, true);
    REQUIRE(succeeded(before));
    int transposes = 0;
    f.walk([&](tg::TransposeOp) { ++transposes; });

    PassManager pm(&h.ctx);
    pm.addPass(tg::createFusePass());
    REQUIRE(succeeded(pm.run(*h.module)));
    INFO(h.diagnostics);
    REQUIRE(succeeded(verify(*h.module)));
    f = h.module->lookupSymbol<func::FuncOp>("f");
    f.walk([&](tg::FusedOp g) { ++kinds[g.getKind()]; });
    f.walk([&](tg::TransposeOp) { --transposes; });
    folded += transposes;
    auto fused = h.eval(args, true);
    REQUIRE(succeeded(fused));
    REQUIRE(fused->size() == before->size());
    for (size_t i = 0; i < before->size(); ++i)
      CHECK(sameBits((*fused)[i], (*before)[i]));

    // Planning schedules groups like any op; the answers stay.
    REQUIRE(succeeded(tg::planMemory(f, {})));
    auto planned = h.eval(args, true);
    REQUIRE(succeeded(planned));
    for (size_t i = 0; i < before->size(); ++i)
      CHECK(sameBits((*planned)[i], (*before)[i]));

    // Inlining the groups again (what the CPU backend does) too.
    tg::inlineFusedGroups(*h.module);
    REQUIRE(succeeded(verify(*h.module)));
    auto inlined = h.eval(args, true);
    REQUIRE(succeeded(inlined));
    for (size_t i = 0; i < before->size(); ++i)
      CHECK(sameBits((*inlined)[i], (*before)[i]));
  }
  // The generator exercises every kind the graphs can form.
  for (tg::KernelKind k :
       {tg::KernelKind::gemm, tg::KernelKind::elementwise,
        tg::KernelKind::row_reduction, tg::KernelKind::reduction}) {
    INFO(tg::stringifyKernelKind(k).str());
    CHECK(kinds[k] > 50);
  }
  CHECK(folded > 20);
}
