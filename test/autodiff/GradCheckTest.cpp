//===- GradCheckTest.cpp - every op's VJP against finite differences -*- C++ -*-===//
//
// For each differentiable tg op: loss = sum(op(args...) * r) with a random
// cotangent r; tg-autodiff's gradient of every float argument (r included)
// must match central differences in float64, over shapes that exercise
// broadcasting and size-1 dimensions.
//
//===----------------------------------------------------------------------===//

#include "test/autodiff/GradCheck.h"

#include "llvm/ADT/StringExtras.h"

using namespace tgtest;

namespace {

/// `tensor<2x3xf32>` for a shape.
std::string ty(llvm::ArrayRef<int64_t> shape, const char *elt = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt + ">";
}

/// A module whose @forward takes `args` plus a cotangent %r of `yShape`,
/// computes %y with `body`, and returns sum(%y * %r).
std::string wrap(const std::string &args, const std::string &body,
                 llvm::ArrayRef<int64_t> yShape) {
  std::string y = ty(yShape), axes;
  for (size_t i = 0; i < yShape.size(); ++i)
    axes += (i ? ", " : "") + std::to_string(i);
  return "func.func @forward(" + args + ", %r: " + y +
         " {tg.role = #tg.role<input>}) -> tensor<f32> {\n" + body +
         "\n  %p = tg.mul %y, %r : " + y + ", " + y + " -> " + y +
         "\n  %l = tg.sum %p axes = [" + axes + "] : " + y +
         " -> tensor<f32>\n  return %l : tensor<f32>\n}\n";
}

/// An argument declaration `%name: type {tg.role = #tg.role<input>}`.
std::string arg(const char *name, llvm::ArrayRef<int64_t> shape,
                const char *elt = "f32") {
  return std::string("%") + name + ": " + ty(shape, elt) +
         " {tg.role = #tg.role<input>}";
}

using Shape = llvm::SmallVector<int64_t>;

} // namespace

TEST_CASE("binary ops with broadcasting", "[autodiff]") {
  struct Case {
    const char *op;
    Shape a, b, y;
  } cases[] = {
      {"add", {4, 1}, {3}, {4, 3}},      {"sub", {3, 1, 2}, {2}, {3, 1, 2}},
      {"mul", {1, 3}, {2, 1}, {2, 3}},   {"div", {2, 3}, {}, {2, 3}},
      {"maximum", {2, 3}, {3}, {2, 3}},  {"minimum", {1}, {5}, {5}},
      {"pow", {2, 2}, {2, 1}, {2, 2}},
  };
  for (const Case &c : cases) {
    DYNAMIC_SECTION(c.op) {
      std::string body = std::string("  %y = tg.") + c.op + " %a, %b : " +
                         ty(c.a) + ", " + ty(c.b) + " -> " + ty(c.y);
      GradCheckOptions opts;
      // Positive operands keep div and pow away from poles and NaNs.
      if (llvm::StringRef(c.op) == "div" || llvm::StringRef(c.op) == "pow")
        opts.lo = 0.5, opts.hi = 2.0;
      CHECK(checkGradients(wrap(arg("a", c.a) + ", " + arg("b", c.b), body,
                                c.y),
                           opts) > 0);
    }
  }
}

TEST_CASE("unary ops", "[autodiff]") {
  const char *ops[] = {"neg",  "abs",     "exp",  "tanh", "erf", "sigmoid",
                       "relu", "silu",    "gelu", "cos",  "sin", "log",
                       "sqrt", "rsqrt"};
  for (const char *op : ops) {
    DYNAMIC_SECTION(op) {
      GradCheckOptions opts;
      llvm::StringRef name(op);
      if (name == "log" || name == "sqrt" || name == "rsqrt")
        opts.lo = 0.5, opts.hi = 2.0;
      std::string body =
          std::string("  %y = tg.") + op + " %a : " + ty({3, 4});
      checkGradients(wrap(arg("a", {3, 4}), body, {3, 4}), opts);
    }
  }
  SECTION("gelu tanh") {
    checkGradients(wrap(arg("a", {2, 5}),
                        "  %y = tg.gelu %a approximate = tanh : " + ty({2, 5}),
                        {2, 5}));
  }
  SECTION("cast to f64") {
    checkGradients(wrap(arg("a", {2, 3}),
                        "  %c = tg.cast %a : " + ty({2, 3}) + " to " +
                            ty({2, 3}, "f64") + "\n  %y = tg.cast %c : " +
                            ty({2, 3}, "f64") + " to " + ty({2, 3}),
                        {2, 3}));
  }
}

TEST_CASE("select and masking", "[autodiff]") {
  SECTION("select from a comparison") {
    std::string body = "  %m = tg.cmp lt %a, %b : " + ty({2, 3}) + ", " +
                       ty({3}) + " -> " + ty({2, 3}, "i1") +
                       "\n  %y = tg.select %m, %a, %b : " + ty({2, 3}, "i1") +
                       ", " + ty({2, 3}) + ", " + ty({3}) + " -> " + ty({2, 3});
    checkGradients(wrap(arg("a", {2, 3}) + ", " + arg("b", {3}), body, {2, 3}));
  }
  SECTION("causal_mask") {
    checkGradients(wrap(arg("a", {2, 4, 4}),
                        "  %y = tg.causal_mask %a {value = -5.0 : f64} : " +
                            ty({2, 4, 4}),
                        {2, 4, 4}));
  }
  SECTION("dropout") {
    std::string args = arg("a", {4, 8}) + ", %s: tensor<i64> {tg.role = #tg.role<input>}";
    checkGradients(wrap(args,
                        "  %y = tg.dropout %a, %s {p = 3.0e-01 : f64, stream = 2 : i64} : " +
                            ty({4, 8}) + ", tensor<i64>",
                        {4, 8}),
                   GradCheckOptions{-1, 1, 1000});
  }
}

TEST_CASE("matmul in every form", "[autodiff]") {
  struct Case {
    const char *attrs;
    Shape a, b, y;
  } cases[] = {
      {"", {3, 4}, {4, 2}, {3, 2}},
      {"{transpose_lhs}", {4, 3}, {4, 2}, {3, 2}},
      {"{transpose_rhs}", {3, 4}, {2, 4}, {3, 2}},
      {"{transpose_lhs, transpose_rhs}", {4, 3}, {2, 4}, {3, 2}},
      {"", {2, 3, 4}, {4, 2}, {2, 3, 2}},            // broadcast rhs batch
      {"{transpose_rhs}", {1, 3, 4}, {2, 5, 4}, {2, 3, 5}}, // size-1 batch
  };
  int i = 0;
  for (const Case &c : cases) {
    DYNAMIC_SECTION("case " << i++) {
      std::string body = std::string("  %y = tg.matmul %a, %b ") + c.attrs +
                         " : " + ty(c.a) + ", " + ty(c.b) + " -> " + ty(c.y);
      checkGradients(wrap(arg("a", c.a) + ", " + arg("b", c.b), body, c.y));
    }
  }
}

TEST_CASE("reductions", "[autodiff]") {
  checkGradients(wrap(arg("a", {2, 3, 4}),
                      "  %y = tg.sum %a axes = [0, 2] : " + ty({2, 3, 4}) +
                          " -> " + ty({3}),
                      {3}));
  checkGradients(wrap(arg("a", {2, 3, 4}),
                      "  %y = tg.mean %a axes = [1] keepdims : " +
                          ty({2, 3, 4}) + " -> " + ty({2, 1, 4}),
                      {2, 1, 4}));
  checkGradients(wrap(arg("a", {3, 5}),
                      "  %y = tg.max %a axes = [1] : " + ty({3, 5}) + " -> " +
                          ty({3}),
                      {3}));
}

TEST_CASE("normalisations and losses", "[autodiff]") {
  SECTION("softmax and log_softmax") {
    checkGradients(wrap(arg("a", {3, 5}),
                        "  %y = tg.softmax %a axis = 0 : " + ty({3, 5}), {3, 5}));
    checkGradients(wrap(arg("a", {2, 3, 5}),
                        "  %y = tg.log_softmax %a axis = -1 : " + ty({2, 3, 5}),
                        {2, 3, 5}));
  }
  SECTION("cross_entropy with ignored positions") {
    // Labels in [0, 5) with ignore_index 4: some positions are ignored.
    std::string args = arg("a", {3, 4, 5}) + ", " + arg("lab", {3, 4}, "i64");
    checkGradients(
        wrap(args,
             "  %y = tg.cross_entropy %a, %lab {ignore_index = 4 : i64} : " +
                 ty({3, 4, 5}) + ", " + ty({3, 4}, "i64") + " -> tensor<f32>",
             {}),
        GradCheckOptions{-1, 1, 5});
  }
  SECTION("mse_loss") {
    checkGradients(wrap(arg("a", {4, 3}) + ", " + arg("t", {4, 3}),
                        "  %y = tg.mse_loss %a, %t : " + ty({4, 3}) + ", " +
                            ty({4, 3}) + " -> tensor<f32>",
                        {}));
  }
  SECTION("layer_norm and rms_norm") {
    std::string args =
        arg("a", {3, 6}) + ", " + arg("g", {6}) + ", " + arg("b", {6});
    checkGradients(wrap(args,
                        "  %y = tg.layer_norm %a scale(%g : " + ty({6}) +
                            ") bias(%b : " + ty({6}) + ") : " + ty({3, 6}),
                        {3, 6}));
    checkGradients(wrap(arg("a", {2, 5}),
                        "  %y = tg.layer_norm %a : " + ty({2, 5}), {2, 5}));
    checkGradients(wrap(arg("a", {3, 6}) + ", " + arg("g", {6}),
                        "  %y = tg.rms_norm %a scale(%g : " + ty({6}) +
                            ") : " + ty({3, 6}),
                        {3, 6}));
  }
}

TEST_CASE("data movement", "[autodiff]") {
  checkGradients(wrap(arg("t", {7, 3}) + ", " + arg("i", {2, 4}, "i32"),
                      "  %y = tg.embedding %t, %i : " + ty({7, 3}) + ", " +
                          ty({2, 4}, "i32") + " -> " + ty({2, 4, 3}),
                      {2, 4, 3}),
                 GradCheckOptions{-1, 1, 7});
  checkGradients(wrap(arg("a", {2, 6}),
                      "  %y = tg.reshape %a : " + ty({2, 6}) + " to " +
                          ty({3, 2, 2}),
                      {3, 2, 2}));
  checkGradients(wrap(arg("a", {2, 3, 4}),
                      "  %y = tg.transpose %a perm = [2, 0, 1] : " +
                          ty({2, 3, 4}) + " -> " + ty({4, 2, 3}),
                      {4, 2, 3}));
  checkGradients(wrap(arg("a", {1, 3}),
                      "  %y = tg.broadcast_to %a : " + ty({1, 3}) + " to " +
                          ty({2, 4, 3}),
                      {2, 4, 3}));
  checkGradients(wrap(arg("a", {4, 5}),
                      "  %y = tg.slice %a start [1, 0] limit [3, 4] step [1, 1] : " +
                          ty({4, 5}) + " -> " + ty({2, 4}),
                      {2, 4}));
  checkGradients(wrap(arg("a", {2, 2}) + ", " + arg("b", {2, 3}),
                      "  %y = tg.concat %a, %b axis = 1 : " + ty({2, 2}) +
                          ", " + ty({2, 3}) + " -> " + ty({2, 5}),
                      {2, 5}));
}

TEST_CASE("convolution and pooling", "[autodiff]") {
  SECTION("conv2d with stride, padding, dilation and groups") {
    checkGradients(
        wrap(arg("x", {2, 4, 6, 5}) + ", " + arg("w", {6, 2, 3, 2}),
             "  %y = tg.conv2d %x, %w {stride = array<i64: 2, 1>, padding = "
             "array<i64: 1, 1>, dilation = array<i64: 1, 2>, groups = 2 : i64} : " +
                 ty({2, 4, 6, 5}) + ", " + ty({6, 2, 3, 2}) + " -> " +
                 ty({2, 6, 3, 5}),
             {2, 6, 3, 5}));
  }
  SECTION("max_pool2d") {
    checkGradients(wrap(arg("x", {1, 2, 4, 5}),
                        "  %y = tg.max_pool2d %x kernel = [2, 2] stride = [2, 1] : " +
                            ty({1, 2, 4, 5}) + " -> " + ty({1, 2, 2, 4}),
                        {1, 2, 2, 4}));
  }
  SECTION("avg_pool2d with padding") {
    checkGradients(wrap(arg("x", {1, 2, 4, 4}),
                        "  %y = tg.avg_pool2d %x kernel = [3, 3] stride = [1, 1] "
                        "{padding = array<i64: 1, 1>} : " +
                            ty({1, 2, 4, 4}) + " -> " + ty({1, 2, 4, 4}),
                        {1, 2, 4, 4}));
  }
}

TEST_CASE("attention", "[autodiff][attention]") {
  // y = output + lse (broadcast over dv), so both cotangents of tg.attention
  // reach tg.attention_grad. T = 1, a ragged causal square, more keys than
  // queries, and dv != d.
  struct Case {
    int64_t b, h, tq, tk, d, dv;
    bool causal;
  } cases[] = {{1, 1, 1, 1, 4, 4, true},
               {2, 3, 5, 5, 4, 3, true},
               {1, 2, 3, 5, 2, 4, false},
               {1, 1, 4, 3, 3, 2, true}};
  for (const Case &c : cases) {
    DYNAMIC_SECTION(c.tq << "x" << c.tk << (c.causal ? " causal" : "")) {
      Shape q{c.b, c.h, c.tq, c.d}, k{c.b, c.h, c.tk, c.d},
          v{c.b, c.h, c.tk, c.dv}, o{c.b, c.h, c.tq, c.dv},
          lse{c.b, c.h, c.tq}, lse1{c.b, c.h, c.tq, 1};
      std::string body =
          std::string("  %o, %lse = tg.attention %q, %k, %v {") +
          (c.causal ? "causal, " : "") + "scale = 0.7 : f64} : " + ty(q) +
          ", " + ty(k) + ", " + ty(v) + " -> " + ty(o) + ", " + ty(lse) +
          "\n  %l1 = tg.reshape %lse : " + ty(lse) + " to " + ty(lse1) +
          "\n  %y = tg.add %o, %l1 : " + ty(o) + ", " + ty(lse1) + " -> " +
          ty(o);
      CHECK(checkGradients(wrap(arg("q", q) + ", " + arg("k", k) + ", " +
                                    arg("v", v),
                                body, o),
                           GradCheckOptions{-2, 2}) > 0);
    }
  }
}
