//===- NnOpsTest.cpp - composite, convolution and pooling ops on the CPU -*- C++ -*-===//
//
// softmax, losses and normalisations (lowered through their
// decompositions), conv2d with stride, padding, dilation and groups, the
// pooling ops with padding, and every backward op, JIT against reference.
//
//===----------------------------------------------------------------------===//

#include "CpuTestUtil.h"

using namespace cputest;

TEST_CASE("composite ops", "[cpu][composite]") {
  Harness h;
  SECTION("softmax") {
    h.check(fn("%a: tensor<3x7xf32>", "tensor<3x7xf32>",
               "  %r = tg.softmax %a axis = 1 : tensor<3x7xf32>"),
            {{0, {-5, 5}}}, 5);
  }
  SECTION("log_softmax along axis 0") {
    h.check(fn("%a: tensor<4x3xf32>", "tensor<4x3xf32>",
               "  %r = tg.log_softmax %a axis = 0 : tensor<4x3xf32>"),
            {{0, {-5, 5}}}, 5);
  }
  SECTION("cross_entropy with ignored labels") {
    h.check(fn("%a: tensor<6x5xf32>, %l: tensor<6xi64>", "tensor<f32>",
               "  %r = tg.cross_entropy %a, %l {ignore_index = 4 : i64} : "
               "tensor<6x5xf32>, tensor<6xi64> -> tensor<f32>"),
            {{1, {0, 5}}}, 5);
  }
  SECTION("mse_loss") {
    h.check(fn("%a: tensor<4x3xf32>, %b: tensor<4x3xf32>", "tensor<f32>",
               "  %r = tg.mse_loss %a, %b : tensor<4x3xf32>, tensor<4x3xf32> "
               "-> tensor<f32>"),
            {}, 5);
  }
  SECTION("layer_norm") {
    h.check(fn("%a: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>",
               "tensor<3x8xf32>",
               "  %r = tg.layer_norm %a scale(%g : tensor<8xf32>) bias(%b : "
               "tensor<8xf32>) : tensor<3x8xf32>"),
            {}, 10);
  }
  SECTION("rms_norm") {
    h.check(fn("%a: tensor<2x3x8xf32>, %g: tensor<8xf32>", "tensor<2x3x8xf32>",
               "  %r = tg.rms_norm %a scale(%g : tensor<8xf32>) : "
               "tensor<2x3x8xf32>"),
            {}, 10);
  }
}

TEST_CASE("attention and its gradient", "[cpu][composite][attention]") {
  // Lowered whole as FlashAttention-2 loop nests (AttentionToLoops.cpp,
  // blocks of 64 queries and keys) against the reference's direct
  // evaluation in float64: T = 1, ragged squares within one block and over
  // several (a tail block, causal blocks skipped), exact blocks at d = 64,
  // odd head dims, more keys than queries and more queries than keys
  // (causal too), one head, and bf16 (f32 inside, f32 log-sum-exp).
  struct Case {
    const char *elt;
    int64_t b, h, tq, tk, d, dv;
    bool causal;
  } cases[] = {{"f32", 2, 3, 1, 1, 4, 4, true},
               {"f32", 2, 3, 7, 7, 8, 5, true},
               {"f32", 2, 3, 3, 6, 4, 4, false},
               {"f32", 1, 2, 150, 150, 33, 17, true},
               {"f32", 1, 2, 150, 150, 16, 16, false},
               {"f32", 1, 1, 128, 128, 64, 64, true},
               {"f32", 2, 1, 70, 130, 8, 8, true},
               {"f32", 1, 2, 130, 20, 9, 9, true},
               {"f32", 1, 1, 65, 200, 5, 7, false},
               {"bf16", 2, 3, 5, 5, 8, 8, true},
               {"bf16", 1, 2, 100, 100, 16, 16, true}};
  for (const Case &c : cases) {
    DYNAMIC_SECTION(c.elt << " " << c.b << "x" << c.h << " " << c.tq << "x"
                          << c.tk << " d" << c.d << "/" << c.dv
                          << (c.causal ? " causal" : "")) {
      auto t = [&](std::initializer_list<int64_t> shape, const char *elt) {
        std::string r = "tensor<";
        for (int64_t d : shape)
          r += std::to_string(d) + "x";
        return r + elt + ">";
      };
      std::string q = t({c.b, c.h, c.tq, c.d}, c.elt),
                  k = t({c.b, c.h, c.tk, c.d}, c.elt),
                  v = t({c.b, c.h, c.tk, c.dv}, c.elt),
                  o = t({c.b, c.h, c.tq, c.dv}, c.elt),
                  lse = t({c.b, c.h, c.tq}, "f32"); // f32 for bf16 too
      std::string attrs = std::string("{") + (c.causal ? "causal, " : "") +
                          "scale = 0.4 : f64}";
      std::string ir =
          "func.func @f(%q: " + q + ", %k: " + k + ", %v: " + v + ", %do: " +
          o + ", %dl: " + lse + ") -> (" + o + ", " + lse + ", " + q + ", " +
          k + ", " + v + ") {\n  %o, %lse = tg.attention %q, %k, %v " +
          attrs + " : " + q + ", " + k + ", " + v + " -> " + o + ", " + lse +
          "\n  %dq, %dk, %dv = tg.attention_grad %do, %dl, %q, %k, %v, %o, "
          "%lse " +
          attrs + " : " + o + ", " + lse + ", " + q + ", " + k + ", " + v +
          ", " + o + ", " + lse + " -> " + q + ", " + k + ", " + v +
          "\n  return %o, %lse, %dq, %dk, %dv : " + o + ", " + lse + ", " +
          q + ", " + k + ", " + v + "\n}";
      Harness h;
      h.check(ir, {}, 10);
    }
  }
}

namespace {
struct ConvCase {
  const char *x, *w, *y, *attrs;
};
const ConvCase convCases[] = {
    {"tensor<2x3x7x7xf32>", "tensor<4x3x3x3xf32>", "tensor<2x4x5x5xf32>", ""},
    {"tensor<1x2x8x9xf32>", "tensor<3x2x3x2xf32>", "tensor<1x3x4x5xf32>",
     " {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}"},
    {"tensor<1x4x7x7xf32>", "tensor<6x2x3x3xf32>", "tensor<1x6x3x5xf32>",
     " {dilation = array<i64: 2, 1>, groups = 2 : i64}"},
    {"tensor<2x1x6x6xf32>", "tensor<2x1x5x5xf32>", "tensor<2x2x6x6xf32>",
     " {padding = array<i64: 2, 2>}"},
    // Every attribute at once over several images: the im2col lowering
    // runs image by image, and the input gradient reuses one zeroed buffer
    // whose strided positions each image overwrites.
    {"tensor<3x4x9x8xf32>", "tensor<6x2x3x2xf32>", "tensor<3x6x5x6xf32>",
     " {stride = array<i64: 2, 1>, padding = array<i64: 1, 0>, dilation = "
     "array<i64: 1, 2>, groups = 2 : i64}"},
    // 19 images: blocks of 10 and 9 images (kScratchSlots = 2), each with
    // its own scratch, zeroed buffer and partial weight gradient.
    {"tensor<19x2x6x6xf32>", "tensor<4x2x3x3xf32>", "tensor<19x4x4x4xf32>",
     ""}};
} // namespace

TEST_CASE("conv2d and its gradients", "[cpu][conv]") {
  for (const ConvCase &c : convCases) {
    std::string x = c.x, w = c.w, y = c.y;
    DYNAMIC_SECTION("conv2d " << c.x << c.attrs) {
      Harness h;
      h.check(fn("%x: " + x + ", %w: " + w, y,
                 "  %r = tg.conv2d %x, %w" + std::string(c.attrs) + " : " + x +
                     ", " + w + " -> " + y),
              {}, 10);
    }
    DYNAMIC_SECTION("conv2d_grad_input " << c.x << c.attrs) {
      Harness h;
      h.check(fn("%g: " + y + ", %w: " + w, x,
                 "  %r = tg.conv2d_grad_input %g, %w" + std::string(c.attrs) +
                     " : " + y + ", " + w + " -> " + x),
              {}, 10);
    }
    DYNAMIC_SECTION("conv2d_grad_weight " << c.x << c.attrs) {
      Harness h;
      h.check(fn("%x: " + x + ", %g: " + y, w,
                 "  %r = tg.conv2d_grad_weight %x, %g" + std::string(c.attrs) +
                     " : " + x + ", " + y + " -> " + w),
              {}, 10);
    }
  }
}

TEST_CASE("pooling and its gradients", "[cpu][pool]") {
  struct Case {
    const char *x, *y, *attrs;
  } cases[] = {
      {"tensor<2x3x6x6xf32>", "tensor<2x3x3x3xf32>", "kernel = [2, 2] stride = [2, 2]"},
      {"tensor<1x2x5x7xf32>", "tensor<1x2x3x4xf32>",
       "kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>}"},
      {"tensor<1x1x5x5xf32>", "tensor<1x1x4x4xf32>", "kernel = [2, 2] stride = [1, 1]"},
      // Disjoint windows that leave rows and columns out: the max-pool
      // gradient's scatter form must leave those at zero.
      {"tensor<2x2x7x5xf32>", "tensor<2x2x2x2xf32>", "kernel = [2, 2] stride = [3, 2]"}};
  for (auto &c : cases) {
    std::string x = c.x, y = c.y, attrs = c.attrs;
    for (const char *op : {"max_pool2d", "avg_pool2d"}) {
      DYNAMIC_SECTION(op << " " << c.x << " " << c.attrs) {
        Harness h;
        h.check(fn("%x: " + x, y,
                   "  %r = tg." + std::string(op) + " %x " + attrs + " : " + x +
                       " -> " + y),
                {}, 5);
      }
    }
    DYNAMIC_SECTION("max_pool2d_grad " << c.x << " " << c.attrs) {
      Harness h;
      // Integer-valued inputs give ties, so "first maximum" matters.
      std::string xi = x.substr(0, x.size() - 4) + "i32>";
      h.check(fn("%g: " + y + ", %x: " + xi, x,
                 "  %xf = tg.cast %x : " + xi + " to " + x +
                     "\n  %r = tg.max_pool2d_grad %g, %xf " + attrs + " : " +
                     y + ", " + x),
              {{1, {0, 3}}}, 5);
    }
    DYNAMIC_SECTION("avg_pool2d_grad " << c.x << " " << c.attrs) {
      Harness h;
      h.check(fn("%g: " + y, x,
                 "  %r = tg.avg_pool2d_grad %g " + attrs + " : " + y + " -> " + x),
              {}, 5);
    }
  }
  // Average pooling that divides by the unpadded positions only.
  const std::string x = "tensor<1x2x5x7xf32>", y = "tensor<1x2x3x4xf32>",
                    attrs = "kernel = [3, 3] stride = [2, 2] {padding = "
                            "array<i64: 1, 1>, count_include_pad = false}";
  SECTION("avg_pool2d without count_include_pad") {
    Harness h;
    h.check(fn("%x: " + x, y,
               "  %r = tg.avg_pool2d %x " + attrs + " : " + x + " -> " + y),
            {}, 5);
  }
  SECTION("avg_pool2d_grad without count_include_pad") {
    Harness h;
    h.check(fn("%g: " + y, x,
               "  %r = tg.avg_pool2d_grad %g " + attrs + " : " + y + " -> " + x),
            {}, 5);
  }
}
