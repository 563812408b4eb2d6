//===- OpsTest.cpp - elementwise, reduction and movement ops on the CPU -*- C++ -*-===//
//
// Every elementwise, contraction, reduction, data-movement and random op,
// JIT-compiled and compared with the reference evaluator on random inputs
// of several shapes (broadcasting, size-1 and rank-0 operands) and element
// types.
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"

using namespace cputest;

namespace {
/// Binary op `op` on operand types a, b with result r.
std::string binary(const std::string &op, const std::string &a,
                   const std::string &b, const std::string &r) {
  return fn("%a: " + a + ", %b: " + b, r,
            "  %r = tg." + op + " %a, %b : " + a + ", " + b + " -> " + r);
}
std::string unary(const std::string &op, const std::string &t,
                  const std::string &attrs = "") {
  return fn("%a: " + t, t, "  %r = tg." + op + " %a" + attrs + " : " + t);
}
} // namespace

TEST_CASE("binary float ops broadcast", "[cpu][elementwise]") {
  const char *ops[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  const char *shapes[][3] = {
      {"tensor<4x3xf32>", "tensor<4x3xf32>", "tensor<4x3xf32>"},
      {"tensor<4x1xf32>", "tensor<3xf32>", "tensor<4x3xf32>"},
      {"tensor<2x1x5xf32>", "tensor<3x1xf32>", "tensor<2x3x5xf32>"},
      {"tensor<f32>", "tensor<2x3xf32>", "tensor<2x3xf32>"},
      {"tensor<1x7xbf16>", "tensor<5x1xbf16>", "tensor<5x7xbf16>"},
      {"tensor<6xf16>", "tensor<6xf16>", "tensor<6xf16>"}};
  for (const char *op : ops)
    for (auto &s : shapes) {
      DYNAMIC_SECTION(op << " " << s[0] << " " << s[1]) {
        Harness h;
        h.check(binary(op, s[0], s[1], s[2]), {{1, {0.5, 2}}});
      }
    }
  SECTION("pow") {
    Harness h;
    h.check(binary("pow", "tensor<3x4xf32>", "tensor<4xf32>", "tensor<3x4xf32>"),
            {{0, {0.1, 3}}});
  }
}

TEST_CASE("binary integer ops", "[cpu][elementwise]") {
  const char *ops[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  for (const char *op : ops)
    for (const char *t : {"i32", "i64"}) {
      DYNAMIC_SECTION(op << " " << t) {
        Harness h;
        std::string a = std::string("tensor<3x4x") + t + ">";
        std::string b = std::string("tensor<4x") + t + ">";
        h.check(binary(op, a, b, a), {{0, {-50, 50}}, {1, {1, 9}}});
      }
    }
}

TEST_CASE("cmp and select", "[cpu][elementwise]") {
  for (const char *pred : {"eq", "ne", "lt", "le", "gt", "ge"})
    for (const char *t : {"f32", "i64"}) {
      DYNAMIC_SECTION(pred << " " << t) {
        Harness h;
        std::string a = std::string("tensor<4x3x") + t + ">";
        std::string b = std::string("tensor<3x") + t + ">";
        // Integers in [-1, 2) make ties common, so eq/le/ge are exercised.
        h.check(fn("%a: " + a + ", %b: " + b, "tensor<4x3xf32>",
                   std::string("  %m = tg.cmp ") + pred + " %a, %b : " + a +
                       ", " + b + " -> tensor<4x3xi1>\n"
                       "  %x = tg.constant dense<1.5> : tensor<f32>\n"
                       "  %y = tg.constant dense<-2.0> : tensor<4x1xf32>\n"
                       "  %r = tg.select %m, %x, %y : tensor<4x3xi1>, "
                       "tensor<f32>, tensor<4x1xf32> -> tensor<4x3xf32>"),
                {{0, {-1, 2}}, {1, {-1, 2}}});
      }
    }
}

TEST_CASE("unary ops", "[cpu][elementwise]") {
  struct Case {
    const char *op;
    Range range;
  } cases[] = {{"neg", {}},          {"abs", {}},     {"exp", {}},
               {"log", {0.1, 5}},    {"sqrt", {0, 5}}, {"rsqrt", {0.1, 5}},
               {"tanh", {-4, 4}},    {"erf", {-3, 3}}, {"cos", {-4, 4}},
               {"sin", {-4, 4}},     {"sigmoid", {-6, 6}}, {"relu", {}},
               {"silu", {-5, 5}}};
  for (auto &c : cases)
    for (const char *t : {"tensor<4x5xf32>", "tensor<3x2xbf16>"}) {
      DYNAMIC_SECTION(c.op << " " << t) {
        Harness h;
        h.check(unary(c.op, t), {{0, c.range}}, 2);
      }
    }
  for (const char *t : {"tensor<5xi32>", "tensor<2x3xi64>"})
    for (const char *op : {"neg", "abs", "relu"}) {
      DYNAMIC_SECTION(op << " " << t) {
        Harness h;
        h.check(unary(op, t), {{0, {-20, 20}}});
      }
    }
  SECTION("gelu") {
    Harness h;
    h.check(unary("gelu", "tensor<4x8xf32>"), {{0, {-4, 4}}}, 2);
    Harness h2;
    h2.check(unary("gelu", "tensor<4x8xf32>", " approximate = tanh"),
             {{0, {-4, 4}}}, 2);
  }
}

TEST_CASE("cast between element types", "[cpu][elementwise]") {
  const char *pairs[][2] = {{"f32", "bf16"}, {"f32", "f16"}, {"bf16", "f32"},
                            {"f32", "i32"},  {"f32", "i64"}, {"i64", "f32"},
                            {"i32", "i64"},  {"i64", "i32"}, {"f16", "bf16"},
                            {"i32", "bf16"}, {"f64", "f32"}};
  for (auto &p : pairs) {
    DYNAMIC_SECTION(p[0] << " to " << p[1]) {
      Harness h;
      std::string a = std::string("tensor<3x5x") + p[0] + ">";
      std::string r = std::string("tensor<3x5x") + p[1] + ">";
      h.check(fn("%a: " + a, r, "  %r = tg.cast %a : " + a + " to " + r),
              {{0, {-100, 100}}});
    }
  }
  SECTION("i1 to f32") {
    Harness h;
    h.check(fn("%a: tensor<6xi1>", "tensor<6xf32>",
               "  %r = tg.cast %a : tensor<6xi1> to tensor<6xf32>"));
  }
}

TEST_CASE("constants", "[cpu][elementwise]") {
  Harness h;
  h.check(fn("%a: tensor<2x3xf32>", "tensor<2x3xf32>",
             "  %c = tg.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : "
             "tensor<2x3xf32>\n"
             "  %r = tg.mul %a, %c : tensor<2x3xf32>, tensor<2x3xf32> -> "
             "tensor<2x3xf32>"));
}

TEST_CASE("matmul", "[cpu][contraction]") {
  struct Case {
    const char *a, *b, *r, *attrs;
  } cases[] = {
      {"tensor<5x7xf32>", "tensor<7x3xf32>", "tensor<5x3xf32>", ""},
      {"tensor<7x5xf32>", "tensor<7x3xf32>", "tensor<5x3xf32>", " {transpose_lhs}"},
      {"tensor<5x7xf32>", "tensor<3x7xf32>", "tensor<5x3xf32>", " {transpose_rhs}"},
      {"tensor<7x5xf32>", "tensor<3x7xf32>", "tensor<5x3xf32>",
       " {transpose_lhs, transpose_rhs}"},
      {"tensor<2x4x6xf32>", "tensor<6x3xf32>", "tensor<2x4x3xf32>", ""},
      {"tensor<2x1x4x6xf32>", "tensor<3x5x6xf32>", "tensor<2x3x4x5xf32>",
       " {transpose_rhs}"},
      {"tensor<1x4xf32>", "tensor<4x1xf32>", "tensor<1x1xf32>", ""},
      {"tensor<4x8xbf16>", "tensor<8x2xbf16>", "tensor<4x2xbf16>", ""},
      {"tensor<3x4xi64>", "tensor<4x2xi64>", "tensor<3x2xi64>", ""},
      // Large enough for cblas_sgemm (M * N * K >= 32768).
      {"tensor<40x50xf32>", "tensor<50x30xf32>", "tensor<40x30xf32>", ""},
      {"tensor<50x40xf32>", "tensor<30x50xf32>", "tensor<40x30xf32>",
       " {transpose_lhs, transpose_rhs}"},
      {"tensor<40x50xf32>", "tensor<30x50xf32>", "tensor<40x30xf32>",
       " {transpose_rhs}"}};
  for (auto &c : cases)
    for (bool blas : {false, true}) {
      DYNAMIC_SECTION(c.a << " @ " << c.b << c.attrs << (blas ? " blas" : "")) {
        Harness h;
        mlir::tg::cpu::CpuPipelineOptions options;
        options.blas = blas;
        h.check(fn(std::string("%a: ") + c.a + ", %b: " + c.b, c.r,
                   std::string("  %r = tg.matmul %a, %b") + c.attrs + " : " +
                       c.a + ", " + c.b + " -> " + c.r),
                {{0, {-5, 5}}, {1, {-5, 5}}}, 10, options);
      }
    }
}

TEST_CASE("matmul of a strided slice", "[cpu][contraction]") {
  // The slice bufferizes to a subview (row stride 64, offset 8): BLAS gets
  // it through lda and a shifted pointer.
  Harness h;
  mlir::tg::cpu::CpuPipelineOptions options;
  options.blas = true;
  h.check(fn("%a: tensor<40x64xf32>, %b: tensor<50x30xf32>", "tensor<40x30xf32>",
             "  %s = tg.slice %a start [0, 8] limit [40, 58] step [1, 1] : "
             "tensor<40x64xf32> -> tensor<40x50xf32>\n"
             "  %r = tg.matmul %s, %b : tensor<40x50xf32>, tensor<50x30xf32> -> "
             "tensor<40x30xf32>"),
          {}, 20, options);
}

TEST_CASE("reductions", "[cpu][reduction]") {
  struct Case {
    const char *in, *axes, *keep, *out;
  } cases[] = {{"tensor<4x6xf32>", "[1]", " keepdims", "tensor<4x1xf32>"},
               {"tensor<4x6xf32>", "[0]", "", "tensor<6xf32>"},
               {"tensor<4x6xf32>", "[0, 1]", "", "tensor<f32>"},
               {"tensor<2x3x4xf32>", "[0, 2]", " keepdims", "tensor<1x3x1xf32>"},
               {"tensor<1x5xf32>", "[0]", "", "tensor<5xf32>"},
               {"tensor<3x8xbf16>", "[1]", "", "tensor<3xbf16>"}};
  for (const char *op : {"sum", "mean", "max"})
    for (auto &c : cases) {
      DYNAMIC_SECTION(op << " " << c.in << " axes " << c.axes << c.keep) {
        Harness h;
        h.check(fn(std::string("%a: ") + c.in, c.out,
                   std::string("  %r = tg.") + op + " %a axes = " + c.axes +
                       c.keep + " : " + c.in + " -> " + c.out),
                {}, 10);
      }
    }
  for (const char *op : {"sum", "max"}) {
    DYNAMIC_SECTION(op << " i32") {
      Harness h;
      h.check(fn("%a: tensor<3x5xi32>", "tensor<5xi32>",
                 std::string("  %r = tg.") + op +
                     " %a axes = [0] : tensor<3x5xi32> -> tensor<5xi32>"),
              {{0, {-100, 100}}});
    }
  }
}

TEST_CASE("data movement", "[cpu][movement]") {
  Harness h;
  SECTION("reshape") {
    h.check(fn("%a: tensor<2x3x4xf32>", "tensor<6x4xf32>",
               "  %r = tg.reshape %a : tensor<2x3x4xf32> to tensor<6x4xf32>"));
  }
  SECTION("reshape to and from rank 0") {
    h.check(fn("%a: tensor<1x1xf32>", "tensor<1xf32>",
               "  %s = tg.reshape %a : tensor<1x1xf32> to tensor<f32>\n"
               "  %r = tg.reshape %s : tensor<f32> to tensor<1xf32>"));
  }
  SECTION("transpose") {
    h.check(fn("%a: tensor<2x3x4x5xf32>", "tensor<2x4x3x5xf32>",
               "  %r = tg.transpose %a perm = [0, 2, 1, 3] : "
               "tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>"));
  }
  SECTION("broadcast_to") {
    h.check(fn("%a: tensor<3x1xf32>", "tensor<2x3x4xf32>",
               "  %r = tg.broadcast_to %a : tensor<3x1xf32> to tensor<2x3x4xf32>"));
  }
  SECTION("strided slice") {
    h.check(fn("%a: tensor<6x9xf32>", "tensor<2x3xf32>",
               "  %r = tg.slice %a start [1, 2] limit [5, 9] step [2, 3] : "
               "tensor<6x9xf32> -> tensor<2x3xf32>"));
  }
  SECTION("concat") {
    h.check(fn("%a: tensor<4x2xf32>, %b: tensor<4x3xf32>, %c: tensor<4x1xf32>",
               "tensor<4x6xf32>",
               "  %r = tg.concat %a, %b, %c axis = 1 : tensor<4x2xf32>, "
               "tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x6xf32>"));
  }
  SECTION("causal_mask") {
    h.check(fn("%a: tensor<2x4x4xf32>", "tensor<2x4x4xf32>",
               "  %r = tg.causal_mask %a : tensor<2x4x4xf32>"));
  }
  SECTION("one_hot") {
    h.check(fn("%a: tensor<2x3xi64>", "tensor<2x3x5xf32>",
               "  %r = tg.one_hot %a : tensor<2x3xi64> -> tensor<2x3x5xf32>"),
            {{0, {-1, 6}}});
  }
  SECTION("embedding, with out-of-range ids clamped") {
    h.check(fn("%t: tensor<7x4xf32>, %i: tensor<2x5xi64>", "tensor<2x5x4xf32>",
               "  %r = tg.embedding %t, %i : tensor<7x4xf32>, tensor<2x5xi64> -> "
               "tensor<2x5x4xf32>"),
            {{1, {-2, 9}}});
  }
  SECTION("embedding_grad") {
    h.check(fn("%g: tensor<2x5x4xf32>, %i: tensor<2x5xi32>", "tensor<7x4xf32>",
               "  %r = tg.embedding_grad %g, %i : tensor<2x5x4xf32>, "
               "tensor<2x5xi32> -> tensor<7x4xf32>"),
            {{1, {-2, 9}}});
  }
}

TEST_CASE("dropout and random draw the reference's Philox numbers",
          "[cpu][random]") {
  Harness h;
  SECTION("dropout") {
    h.check(fn("%a: tensor<3x7xf32>, %s: tensor<i64>", "tensor<3x7xf32>",
               "  %r = tg.dropout %a, %s {p = 3.0e-01 : f64, stream = 5 : i64} "
               ": tensor<3x7xf32>, tensor<i64>"),
            {{1, {0, 1e9}}});
  }
  SECTION("uniform") {
    h.check(fn("%s: tensor<i64>", "tensor<5x7xf32>",
               "  %r = tg.random uniform %s {a = -1.0 : f64, b = 3.0 : f64, "
               "stream = 9 : i64} : tensor<i64> -> tensor<5x7xf32>"),
            {{0, {0, 1e9}}});
  }
  SECTION("normal") {
    h.check(fn("%s: tensor<i64>", "tensor<5x7xf32>",
               "  %r = tg.random normal %s {a = 0.5 : f64, b = 2.0 : f64, "
               "stream = 3 : i64} : tensor<i64> -> tensor<5x7xf32>"),
            {{0, {0, 1e9}}}, 10);
  }
}
