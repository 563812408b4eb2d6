//===- RandomGraph.h - random tg graphs for property tests ------*- C++ -*-===//
//
// The generator the memory-planner property tests and the CPU arena tests
// share: a random DAG over a few square shapes, as tg IR text.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TEST_PASSES_RANDOMGRAPH_H
#define TGC_TEST_PASSES_RANDOMGRAPH_H

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace tgtest {

/// A random DAG of elementwise, matmul and reduction ops over a few square
/// shapes, returning the sum of some of its values.
inline std::string randomGraph(unsigned seed, int ops) {
  std::mt19937 rng(seed);
  const int sizes[] = {4, 8, 16};
  auto pick = [&](int n) { return int(rng() % n); };
  struct V {
    std::string name;
    int n; // shape n x n
  };
  std::vector<V> values;
  std::string args, body;
  for (int i = 0; i < 3; ++i) {
    int n = sizes[i];
    std::string name = "%a" + std::to_string(i);
    args += (i ? ", " : "") + name + ": tensor<" + std::to_string(n) + "x" +
            std::to_string(n) + "xf32> {tg.role = #tg.role<input>}";
    values.push_back({name, n});
  }
  auto ty = [](int n) {
    return "tensor<" + std::to_string(n) + "x" + std::to_string(n) + "xf32>";
  };
  for (int k = 0; k < ops; ++k) {
    V a = values[pick(values.size())];
    std::vector<V> same;
    for (const V &v : values)
      if (v.n == a.n)
        same.push_back(v);
    V b = same[pick(same.size())];
    std::string out = "%v" + std::to_string(k);
    switch (pick(4)) {
    case 0:
      body += "  " + out + " = tg.add " + a.name + ", " + b.name + " : " +
              ty(a.n) + ", " + ty(a.n) + " -> " + ty(a.n) + "\n";
      break;
    case 1:
      body += "  " + out + " = tg.mul " + a.name + ", " + b.name + " : " +
              ty(a.n) + ", " + ty(a.n) + " -> " + ty(a.n) + "\n";
      break;
    case 2:
      body += "  " + out + " = tg.matmul " + a.name + ", " + b.name + " : " +
              ty(a.n) + ", " + ty(a.n) + " -> " + ty(a.n) + "\n";
      break;
    default:
      body += "  " + out + " = tg.tanh " + a.name + " : " + ty(a.n) + "\n";
      break;
    }
    values.push_back({out, a.n});
  }
  // Sum a handful of values so that several stay live to the end.
  std::string total;
  for (int k = 0; k < 4; ++k) {
    V v = values[values.size() - 1 - pick(std::min<size_t>(values.size(), 6))];
    std::string s = "%s" + std::to_string(k);
    body += "  " + s + " = tg.sum " + v.name + " axes = [0, 1] : " + ty(v.n) +
            " -> tensor<f32>\n";
    if (total.empty()) {
      total = s;
    } else {
      std::string t = "%t" + std::to_string(k);
      body += "  " + t + " = tg.add " + total + ", " + s +
              " : tensor<f32>, tensor<f32> -> tensor<f32>\n";
      total = t;
    }
  }
  return "func.func @f(" + args + ") -> tensor<f32> {\n" + body +
         "  return " + total + " : tensor<f32>\n}\n";
}

} // namespace tgtest

#endif // TGC_TEST_PASSES_RANDOMGRAPH_H
