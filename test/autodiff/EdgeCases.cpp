//===- EdgeCases.cpp - op semantics at the edges, as PyTorch has them -*- C++ -*-===//
//
// See EdgeCases.h. Every expected value below is PyTorch 1.13's: the
// forward as its kernels compute it, the gradient as derivatives.yaml
// states it (e.g. abs: grad * self.sgn(); maximum: ties get grad / 2;
// pow: masked at exponent == 0 and at a zero base; relu:
// threshold_backward(grad, result, 0)). Where TGC keeps a convention of its
// own the case says so, and docs/language.md lists it under "Differences
// from PyTorch".
//
//===----------------------------------------------------------------------===//

#include "test/autodiff/EdgeCases.h"
#include "passes/Passes.h"
#include "tgc/Philox.h"

#include "mlir/Pass/PassManager.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

namespace tgtest::edge {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

std::string ty(const std::vector<int64_t> &shape, const char *elt = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt + ">";
}

int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<double> filled(size_t n, double v) { return std::vector<double>(n, v); }

/// max with NaN propagation (PyTorch's amax, maximum).
double nanMax(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? nan : std::max(a, b);
}

/// The row's NaN-propagating maximum m and sum of exp(row[k] - m): the
/// pieces of a numerically stable log-sum-exp.
std::pair<double, double> maxAndExpSum(const double *row, int64_t n) {
  double m = -inf, sum = 0;
  for (int64_t k = 0; k < n; ++k)
    m = nanMax(m, row[k]);
  for (int64_t k = 0; k < n; ++k)
    sum += std::exp(row[k] - m);
  return {m, sum};
}

/// sgn for reals: 0 at +-0 and NaN.
double sgn(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

//===--- Unary ops ---------------------------------------------------------===//

struct Unary {
  const char *name, *op; ///< op: the IR after `%y = `, operand %a
  std::function<double(double)> f;
  std::function<double(double, double)> df; ///< (x, g) -> dx
};

void addUnary(std::vector<Case> &out) {
  // Signed zeros, ordinary values, the infinities and NaN.
  const std::vector<double> xs = {0.0, -0.0, 1, -1, 0.5, -2, 3, inf, -inf, nan};
  const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
  const Unary ops[] = {
      {"neg", "tg.neg %a", [](double x) { return -x; },
       [](double, double g) { return -g; }},
      // abs: grad * sgn(x): 0 at +-0 and NaN (TGC gave +1 at 0, -1 at NaN).
      {"abs", "tg.abs %a", [](double x) { return std::fabs(x); },
       [](double x, double g) { return g * sgn(x); }},
      {"exp", "tg.exp %a", [](double x) { return std::exp(x); },
       [](double x, double g) { return g * std::exp(x); }},
      {"log", "tg.log %a", [](double x) { return std::log(x); },
       [](double x, double g) { return g / x; }},
      {"sqrt", "tg.sqrt %a", [](double x) { return std::sqrt(x); },
       [](double x, double g) { return g / (2 * std::sqrt(x)); }},
      // rsqrt: -0.5 * grad * result^3; at -0 the result is -inf and the
      // derivative +inf (TGC gave -inf).
      {"rsqrt", "tg.rsqrt %a", [](double x) { return 1 / std::sqrt(x); },
       [](double x, double g) {
         double y = 1 / std::sqrt(x);
         return -0.5 * g * (y * y * y);
       }},
      {"tanh", "tg.tanh %a", [](double x) { return std::tanh(x); },
       [](double x, double g) {
         double y = std::tanh(x);
         return g * (1 - y * y);
       }},
      {"erf", "tg.erf %a", [](double x) { return std::erf(x); },
       [](double x, double g) { return M_2_SQRTPI * std::exp(-x * x) * g; }},
      {"cos", "tg.cos %a", [](double x) { return std::cos(x); },
       [](double x, double g) { return g * -std::sin(x); }},
      {"sin", "tg.sin %a", [](double x) { return std::sin(x); },
       [](double x, double g) { return g * std::cos(x); }},
      {"sigmoid", "tg.sigmoid %a", sigmoid,
       [](double x, double g) {
         double y = sigmoid(x);
         return g * (1 - y) * y;
       }},
      // relu: threshold_backward(grad, result, 0) zeroes where result <= 0
      // only, so NaN passes the cotangent (TGC gave 0).
      {"relu", "tg.relu %a", [](double x) { return x < 0 ? 0.0 : x; },
       [](double x, double g) { return x <= 0 ? 0.0 : g; }},
      {"silu", "tg.silu %a", [](double x) { return x / (1 + std::exp(-x)); },
       [](double x, double g) {
         double s = sigmoid(x);
         return g * s * (1 + x * (1 - s));
       }},
      {"gelu", "tg.gelu %a",
       [](double x) { return x * 0.5 * (1 + std::erf(x * M_SQRT1_2)); },
       [](double x, double g) {
         double cdf = 0.5 * (1 + std::erf(x * M_SQRT1_2));
         double pdf = M_2_SQRTPI * M_SQRT1_2 * 0.5 * std::exp(-0.5 * x * x);
         return g * (cdf + x * pdf);
       }},
      {"gelu tanh", "tg.gelu %a approximate = tanh",
       [=](double x) {
         return 0.5 * x * (1 + std::tanh(kBeta * (x + kKappa * x * x * x)));
       },
       [=](double x, double g) {
         double inner = kBeta * (x + kKappa * x * x * x), t = std::tanh(inner);
         double left = 0.5 * x, right = 1 + t;
         double dRight = left * (1 - t * t) * kBeta * (1 + 3 * kKappa * x * x);
         return g * (0.5 * right + dRight);
       }},
  };
  int64_t n = xs.size();
  for (const Unary &u : ops) {
    Case c;
    c.name = u.name;
    c.args = {{"a", {n}, xs}};
    c.body = std::string("  %y = ") + u.op + " : " + ty({n});
    c.yShape = {n};
    c.dy = filled(n, 1.5);
    std::vector<double> da;
    for (double x : xs) {
      c.y.push_back(u.f(x));
      da.push_back(u.df(x, 1.5));
    }
    c.grads = {da};
    out.push_back(std::move(c));
  }
}

//===--- Binary ops --------------------------------------------------------===//

struct Binary {
  const char *op;
  std::function<double(double, double)> f;
  /// (a, b, g) -> {da, db}
  std::function<std::pair<double, double>(double, double, double)> df;
};

/// maximum/minimum in PyTorch 1.13: the loser gets 0, a tie grad / 2 each,
/// and an unordered pair (a NaN) the whole cotangent each.
std::pair<double, double> extremum(bool lhsLoses, bool rhsLoses, double a,
                                   double b, double g) {
  double shared = a == b ? g / 2 : g;
  return {lhsLoses ? 0.0 : shared, rhsLoses ? 0.0 : shared};
}

void addBinary(std::vector<Case> &out) {
  // Every pair from these: ties (including 0 == -0 and inf == inf), zero
  // bases and exponents, infinities and NaN.
  const double vs[] = {0.0, -0.0, 1, -1, 2, 0.5, inf, -inf, nan};
  std::vector<double> as, bs;
  for (double a : vs)
    for (double b : vs) {
      as.push_back(a);
      bs.push_back(b);
    }
  const Binary ops[] = {
      {"add", std::plus<double>(),
       [](double, double, double g) { return std::pair(g, g); }},
      {"sub", std::minus<double>(),
       [](double, double, double g) { return std::pair(g, -g); }},
      {"mul", std::multiplies<double>(),
       [](double a, double b, double g) { return std::pair(g * b, g * a); }},
      {"div", std::divides<double>(),
       [](double a, double b, double g) {
         return std::pair(g / b, -g * ((a / b) / b));
       }},
      // pow_backward_self / pow_backward_exponent: 0 where the exponent is
      // 0, and 0 for the exponent at a zero base with exponent >= 0 (TGC
      // gave NaN or +-inf there).
      {"pow", [](double a, double b) { return std::pow(a, b); },
       [](double a, double b, double g) {
         double da = b == 0 ? 0.0 : g * (b * std::pow(a, b - 1));
         double ylog = std::pow(a, b) * std::log(a);
         double db = g * (b >= 0 && a == 0 ? 0.0 : ylog);
         return std::pair(da, db);
       }},
      {"maximum", nanMax,
       [](double a, double b, double g) {
         return extremum(a < b, a > b, a, b, g);
       }},
      {"minimum",
       [](double a, double b) {
         return std::isnan(a) || std::isnan(b) ? nan : std::min(a, b);
       },
       [](double a, double b, double g) {
         return extremum(a > b, a < b, a, b, g);
       }},
  };
  int64_t n = as.size();
  for (const Binary &op : ops) {
    Case c;
    c.name = op.op;
    c.args = {{"a", {n}, as}, {"b", {n}, bs}};
    c.body = std::string("  %y = tg.") + op.op + " %a, %b : " + ty({n}) + ", " +
             ty({n}) + " -> " + ty({n});
    c.yShape = {n};
    c.dy = filled(n, 1.0);
    std::vector<double> da, db;
    for (int64_t i = 0; i < n; ++i) {
      c.y.push_back(op.f(as[i], bs[i]));
      auto [ga, gb] = op.df(as[i], bs[i], 1.0);
      da.push_back(ga);
      db.push_back(gb);
    }
    c.grads = {da, db};
    out.push_back(std::move(c));
  }
}

//===--- Reductions, softmax and losses ------------------------------------===//

/// Applies `fn(row, dyRow, yRow, dxRow)` to each row of a [rows, n] case.
Case rowwise(const char *name, const std::string &op, int64_t rows, int64_t n,
             std::vector<double> x, std::vector<double> dy, bool reduces,
             const std::function<void(const double *, const double *, double *,
                                      double *)> &fn) {
  Case c;
  c.name = name;
  c.args = {{"a", {rows, n}, x}};
  c.yShape = reduces ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, n};
  c.body = "  %y = " + op + " : " + ty({rows, n}) +
           (reduces ? " -> " + ty({rows}) : "");
  c.dy = dy;
  c.y.resize(count(c.yShape));
  std::vector<double> dx(rows * n);
  int64_t ny = reduces ? 1 : n;
  for (int64_t r = 0; r < rows; ++r)
    fn(&x[r * n], &dy[r * ny], &c.y[r * ny], &dx[r * n]);
  c.grads = {dx};
  return c;
}

void addRowOps(std::vector<Case> &out) {
  // Ties, a NaN, an all -inf row, +inf ties and -0.
  std::vector<double> x = {1,    3,    3,    0,    nan, 1,   2,   0,
                           -inf, -inf, -inf, -inf, inf, 1,   inf, -0.0};
  std::vector<double> dy = {1, 2, 3, 4};
  // amax: scale_grad_by_count(grad, result == self): the cotangent is split
  // evenly over the positions equal to the maximum; with a NaN in the row
  // nothing equals it and the whole row's gradient is NaN (grad / 0 * 0).
  out.push_back(rowwise(
      "max", "tg.max %a axes = [1]", 4, 4, x, dy, true,
      [](const double *r, const double *g, double *y, double *dx) {
        double m = -inf;
        for (int k = 0; k < 4; ++k)
          m = nanMax(m, r[k]);
        double hits = 0;
        for (int k = 0; k < 4; ++k)
          hits += r[k] == m;
        *y = m;
        for (int k = 0; k < 4; ++k)
          dx[k] = (*g / hits) * double(r[k] == m);
      }));
  out.push_back(rowwise("sum", "tg.sum %a axes = [1]", 4, 4, x, dy, true,
                        [](const double *r, const double *g, double *y,
                           double *dx) {
                          *y = r[0] + r[1] + r[2] + r[3];
                          std::fill(dx, dx + 4, *g);
                        }));
  out.push_back(rowwise("mean", "tg.mean %a axes = [1]", 4, 4, x, dy, true,
                        [](const double *r, const double *g, double *y,
                           double *dx) {
                          *y = (r[0] + r[1] + r[2] + r[3]) / 4;
                          std::fill(dx, dx + 4, *g / 4);
                        }));

  // Masked (-inf) entries, an all -inf row (NaN, as in PyTorch), +inf, NaN,
  // signed zeros and a constant row.
  std::vector<double> s = {0,   -inf, 1,    -inf, -inf, -inf, inf, 0, 1,
                           nan, 0,    1,    -0.0, 0.0,  -inf, 2,   2, 2};
  std::vector<double> sdy;
  for (int r = 0; r < 6; ++r)
    sdy.insert(sdy.end(), {1, 2, 3});
  auto softmax = [](const double *r, double *e, double &lse) {
    double m = -inf;
    for (int k = 0; k < 3; ++k)
      m = nanMax(m, r[k]);
    double sum = 0;
    for (int k = 0; k < 3; ++k)
      sum += e[k] = std::exp(r[k] - m);
    for (int k = 0; k < 3; ++k)
      e[k] /= sum;
    lse = m + std::log(sum);
  };
  // softmax_backward_data: y * (grad - sum(grad * y)).
  out.push_back(rowwise("softmax", "tg.softmax %a axis = 1", 6, 3, s, sdy, false,
                        [&](const double *r, const double *g, double *y,
                            double *dx) {
                          double lse;
                          softmax(r, y, lse);
                          double dot = 0;
                          for (int k = 0; k < 3; ++k)
                            dot += g[k] * y[k];
                          for (int k = 0; k < 3; ++k)
                            dx[k] = y[k] * (g[k] - dot);
                        }));
  // log_softmax_backward_data: grad - exp(y) * sum(grad).
  out.push_back(rowwise("log_softmax", "tg.log_softmax %a axis = 1", 6, 3, s,
                        sdy, false,
                        [&](const double *r, const double *g, double *y,
                            double *dx) {
                          double p[3], lse;
                          softmax(r, p, lse);
                          double sum = g[0] + g[1] + g[2];
                          for (int k = 0; k < 3; ++k) {
                            y[k] = r[k] - lse;
                            dx[k] = g[k] - std::exp(y[k]) * sum;
                          }
                        }));

  // layer_norm: a constant row (variance 0: 1/sqrt(eps) scales the
  // centred cotangent), signed zeros, an ordinary row.
  std::vector<double> ln = {2, 2, 2, 2, -0.0, 0.0, -0.0, 0.0, 1, 2, 3, 4};
  std::vector<double> lndy = {1, 2, 3, 4, 1, -1, 1, -1, 1, 2, 3, 4};
  out.push_back(rowwise(
      "layer_norm", "tg.layer_norm %a", 3, 4, ln, lndy, false,
      [](const double *r, const double *g, double *y, double *dx) {
        double mu = (r[0] + r[1] + r[2] + r[3]) / 4, var = 0;
        for (int k = 0; k < 4; ++k)
          var += (r[k] - mu) * (r[k] - mu) / 4;
        // eps as the f32 constant that the f32 graph adds.
        double rstd = 1 / std::sqrt(var + double(1e-5f)), mg = 0, mgx = 0;
        for (int k = 0; k < 4; ++k) {
          y[k] = (r[k] - mu) * rstd;
          mg += g[k] / 4;
          mgx += g[k] * y[k] / 4;
        }
        for (int k = 0; k < 4; ++k)
          dx[k] = rstd * (g[k] - mg - y[k] * mgx);
      }));
  // rms_norm: an all-zero row.
  std::vector<double> rn = {0.0, -0.0, 0.0, 0.0, 1, -1, 2, -0.0};
  std::vector<double> rndy = {1, 2, 3, 4, 1, 2, 3, 4};
  out.push_back(rowwise(
      "rms_norm", "tg.rms_norm %a", 2, 4, rn, rndy, false,
      [](const double *r, const double *g, double *y, double *dx) {
        double ms = 0;
        for (int k = 0; k < 4; ++k)
          ms += r[k] * r[k] / 4;
        double rr = 1 / std::sqrt(ms + double(1e-6f)), mgn = 0;
        for (int k = 0; k < 4; ++k) {
          y[k] = r[k] * rr;
          mgn += g[k] * y[k] / 4;
        }
        for (int k = 0; k < 4; ++k)
          dx[k] = rr * (g[k] - y[k] * mgn);
      }));
}

/// cross_entropy (mean over non-ignored rows) and its gradient
/// (softmax - onehot) * dy / count on the non-ignored rows. A label outside
/// [0, C) that is not ignored counts in the mean with loss 0 and gets no
/// gradient (TGC; PyTorch raises an error).
Case crossEntropy(const char *name, std::vector<double> logits,
                  std::vector<double> labels, double allIgnoredLoss) {
  int64_t rows = labels.size(), n = logits.size() / rows;
  Case c;
  c.name = name;
  c.args = {{"a", {rows, n}, logits}, {"lab", {rows}, labels, "i64"}};
  c.body = "  %y = tg.cross_entropy %a, %lab : " + ty({rows, n}) + ", " +
           ty({rows}, "i64") + " -> tensor<f32>";
  c.yShape = {};
  c.dy = {1.0};
  double total = 0, used = 0;
  std::vector<double> dx(rows * n, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    if (labels[r] == -100)
      continue;
    used += 1;
    if (labels[r] < 0 || labels[r] >= n)
      continue;
    const double *row = &logits[r * n];
    auto [m, sum] = maxAndExpSum(row, n);
    total += -(row[int64_t(labels[r])] - m - std::log(sum));
  }
  c.y = {used ? total / used : allIgnoredLoss};
  for (int64_t r = 0; r < rows && used; ++r) {
    if (labels[r] == -100 || labels[r] < 0 || labels[r] >= n)
      continue;
    const double *row = &logits[r * n];
    auto [m, sum] = maxAndExpSum(row, n);
    for (int64_t k = 0; k < n; ++k)
      dx[r * n + k] =
          (std::exp(row[k] - m) / sum - double(k == labels[r])) / used;
  }
  c.grads = {dx};
  return c;
}

void addLosses(std::vector<Case> &out) {
  // A masked (-inf) non-target logit, a -inf target (loss +inf, gradient
  // still finite), an ignored row.
  out.push_back(crossEntropy("cross_entropy with -inf logits",
                             {0, -inf, 1, 2, 0, -inf, 1, 1, 1}, {0, 2, -100},
                             0));
  // Every label ignored: PyTorch's mean is 0/0 = NaN; TGC keeps 0 (a
  // documented difference) and both give a zero gradient.
  out.push_back(crossEntropy("cross_entropy, every label ignored",
                             {0, 1, 2, 3, 4, 5}, {-100, -100}, 0.0));
  out.push_back(crossEntropy("cross_entropy with out-of-range labels",
                             {0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 3, -1}, 0.0));

  Case c;
  c.name = "mse_loss";
  c.args = {{"a", {4}, {0.0, inf, nan, 1}}, {"t", {4}, {-0.0, 1, 1, -0.0}}};
  c.body = "  %y = tg.mse_loss %a, %t : " + ty({4}) + ", " + ty({4}) +
           " -> tensor<f32>";
  c.yShape = {};
  c.dy = {1.0};
  c.y = {nan};
  std::vector<double> da, dt;
  for (int k = 0; k < 4; ++k) {
    double d = 2 * (c.args[0].values[k] - c.args[1].values[k]) / 4;
    da.push_back(d);
    dt.push_back(-d);
  }
  c.grads = {da, dt};
  out.push_back(std::move(c));
}

//===--- Data movement -----------------------------------------------------===//

/// A case whose op only moves elements: y[i] = x[from[i]], so the
/// gradient sums dy[i] into position from[i] (zeros elsewhere).
Case movement(const char *name, std::vector<Arg> args, std::string body,
              std::vector<int64_t> yShape, std::vector<int64_t> from) {
  Case c;
  c.name = name;
  c.args = std::move(args);
  c.body = std::move(body);
  c.yShape = std::move(yShape);
  std::vector<double> all; // the arguments' elements, concatenated
  for (const Arg &a : c.args)
    all.insert(all.end(), a.values.begin(), a.values.end());
  std::vector<double> dx(all.size(), 0.0);
  for (size_t i = 0; i < from.size(); ++i) {
    c.dy.push_back(double(i + 1));
    c.y.push_back(all[from[i]]);
    dx[from[i]] += double(i + 1);
  }
  size_t offset = 0;
  for (const Arg &a : c.args) {
    c.grads.emplace_back(dx.begin() + offset,
                         dx.begin() + offset + a.values.size());
    offset += a.values.size();
  }
  return c;
}

void addMovement(std::vector<Case> &out) {
  // Infinities, NaN and -0 are moved, never computed with.
  const std::vector<double> x = {0.0, -0.0, inf, -inf, nan, 1};
  const std::string x23 = ty({2, 3});
  out.push_back(movement("reshape", {{"a", {2, 3}, x}},
                         "  %y = tg.reshape %a : " + x23 + " to " + ty({3, 2}),
                         {3, 2}, {0, 1, 2, 3, 4, 5}));
  out.push_back(movement("transpose", {{"a", {2, 3}, x}},
                         "  %y = tg.transpose %a perm = [1, 0] : " + x23 +
                             " -> " + ty({3, 2}),
                         {3, 2}, {0, 3, 1, 4, 2, 5}));
  out.push_back(movement("broadcast_to", {{"a", {1, 3}, {nan, -0.0, inf}}},
                         "  %y = tg.broadcast_to %a : " + ty({1, 3}) + " to " +
                             x23,
                         {2, 3}, {0, 1, 2, 0, 1, 2}));
  out.push_back(movement("slice", {{"a", {2, 3}, x}},
                         "  %y = tg.slice %a start [0, 1] limit [2, 3] step "
                         "[1, 1] : " + x23 + " -> " + ty({2, 2}),
                         {2, 2}, {1, 2, 4, 5}));
  out.push_back(movement("concat",
                         {{"a", {2, 1}, {nan, inf}}, {"b", {2, 2}, {-0.0, -inf, 1, 0.0}}},
                         "  %y = tg.concat %a, %b axis = 1 : " + ty({2, 1}) +
                             ", " + ty({2, 2}) + " -> " + x23,
                         {2, 3}, {0, 2, 3, 1, 4, 5}));
  out.push_back(movement("cast through f64", {{"a", {2, 3}, x}},
                         "  %c = tg.cast %a : " + x23 + " to " +
                             ty({2, 3}, "f64") + "\n  %y = tg.cast %c : " +
                             ty({2, 3}, "f64") + " to " + x23,
                         {2, 3}, {0, 1, 2, 3, 4, 5}));
}

//===--- Contraction, gather, select, masking, dropout ---------------------===//

void addStructural(std::vector<Case> &out) {
  {
    // inf * 0 in a dot product is NaN in the forward; the gradients are
    // the usual products.
    Case c;
    c.name = "matmul with inf * 0";
    c.args = {{"a", {1, 2}, {inf, 0.0}}, {"b", {2, 2}, {0.0, 1, 1, 2}}};
    c.body = "  %y = tg.matmul %a, %b : " + ty({1, 2}) + ", " + ty({2, 2}) +
             " -> " + ty({1, 2});
    c.yShape = {1, 2};
    c.dy = {1, 1};
    c.y = {nan, inf};
    c.grads = {{1, 3}, {inf, inf, 0, 0}};
    out.push_back(std::move(c));
  }
  {
    // Out-of-range ids are clamped (TGC); PyTorch raises an IndexError.
    Case c;
    c.name = "embedding clamps ids";
    c.args = {{"t", {3, 2}, {1, 2, 3, 4, 5, 6}}, {"i", {3}, {-1, 5, 1}, "i64"}};
    c.body = "  %y = tg.embedding %t, %i : " + ty({3, 2}) + ", " +
             ty({3}, "i64") + " -> " + ty({3, 2});
    c.yShape = {3, 2};
    c.dy = {1, 1, 2, 2, 3, 3};
    c.y = {1, 2, 5, 6, 3, 4};
    c.grads = {{1, 1, 3, 3, 2, 2}};
    out.push_back(std::move(c));
  }
  {
    // where(): a NaN comparison is false, so the false branch is taken.
    Case c;
    c.name = "select of a NaN comparison";
    c.args = {{"a", {5}, {1, nan, 0.0, -0.0, inf}},
              {"b", {5}, {0.0, 1, nan, 0.0, inf}}};
    c.body = "  %m = tg.cmp gt %a, %b : " + ty({5}) + ", " + ty({5}) + " -> " +
             ty({5}, "i1") + "\n  %y = tg.select %m, %a, %b : " +
             ty({5}, "i1") + ", " + ty({5}) + ", " + ty({5}) + " -> " + ty({5});
    c.yShape = {5};
    c.dy = {1, 2, 3, 4, 5};
    c.y = {1, 1, nan, 0.0, inf};
    c.grads = {{1, 0, 0, 0, 0}, {0, 2, 3, 4, 5}};
    out.push_back(std::move(c));
  }
  {
    // Masked positions (j > i) are replaced, NaN included, and get no
    // cotangent.
    Case c;
    c.name = "causal_mask over NaN";
    c.args = {{"a", {1, 3, 3}, {1, nan, inf, nan, 2, nan, -inf, 0.0, 3}}};
    c.body = "  %y = tg.causal_mask %a {value = -1.0e+09 : f64} : " +
             ty({1, 3, 3});
    c.yShape = {1, 3, 3};
    c.dy = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    c.y = {1, -1e9, -1e9, nan, 2, -1e9, -inf, 0.0, 3};
    c.grads = {{1, 0, 0, 4, 5, 0, 7, 8, 9}};
    out.push_back(std::move(c));
  }
  {
    // Dropout multiplies by the mask, as PyTorch: a dropped inf or NaN is
    // NaN, not 0.
    const uint64_t seed = 7, stream = 1;
    const double p = 0.5;
    std::vector<double> x;
    for (int k = 0; k < 16; ++k)
      x.push_back(k % 4 == 0 ? inf : k % 4 == 1 ? nan : k % 4 == 2 ? -0.0 : k);
    Case c;
    c.name = "dropout of inf and NaN";
    c.args = {{"a", {16}, x}, {"s", {}, {double(seed)}, "i64"}};
    c.body = "  %y = tg.dropout %a, %s {p = 5.0e-01 : f64, stream = 1 : i64} : " +
             ty({16}) + ", tensor<i64>";
    c.yShape = {16};
    std::vector<double> dx;
    for (int k = 0; k < 16; ++k) {
      double m = tgc::dropoutKeep(seed, stream, k, p) ? 1 / (1 - p) : 0.0;
      c.dy.push_back(k + 1);
      c.y.push_back(x[k] * m);
      dx.push_back((k + 1) * m);
    }
    c.grads = {dx};
    out.push_back(std::move(c));
  }
}

//===--- Convolution and pooling -------------------------------------------===//

/// A direct single-plane reference: for each output (oy, ox), `fn(o, taps)`
/// with the in-input positions of its window (stride `s`, padding `p`).
void windows(int64_t h, int64_t w, int64_t k, int64_t s, int64_t p,
             const std::function<void(int64_t, std::vector<std::pair<int64_t, int64_t>>)>
                 &fn) {
  int64_t oh = (h + 2 * p - k) / s + 1, ow = (w + 2 * p - k) / s + 1;
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ++ox) {
      std::vector<std::pair<int64_t, int64_t>> taps; // (input pos, tap)
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j) {
          int64_t iy = oy * s - p + i, ix = ox * s - p + j;
          if (iy >= 0 && iy < h && ix >= 0 && ix < w)
            taps.push_back({iy * w + ix, i * k + j});
        }
      fn(oy * ow + ox, std::move(taps));
    }
}

/// avg_pool2d on a 1x1xHxW plane. count_include_pad divides by k*k
/// (PyTorch's default), else by the unpadded positions.
Case avgPool(int64_t h, int64_t k, int64_t s, int64_t p, bool includePad,
             std::vector<double> x) {
  int64_t o = (h + 2 * p - k) / s + 1;
  Case c;
  c.name = std::string("avg_pool2d k") + std::to_string(k) + " s" +
           std::to_string(s) + " p" + std::to_string(p) +
           (includePad ? " count_include_pad" : " excluding padding");
  c.args = {{"x", {1, 1, h, h}, x}};
  std::string attrs = "{padding = array<i64: " + std::to_string(p) + ", " +
                      std::to_string(p) + ">" +
                      (includePad ? "" : ", count_include_pad = false") + "}";
  c.body = "  %y = tg.avg_pool2d %x kernel = [" + std::to_string(k) + ", " +
           std::to_string(k) + "] stride = [" + std::to_string(s) + ", " +
           std::to_string(s) + "] " + attrs + " : " + ty({1, 1, h, h}) + " -> " +
           ty({1, 1, o, o});
  c.yShape = {1, 1, o, o};
  c.y.resize(o * o);
  for (int64_t i = 0; i < o * o; ++i)
    c.dy.push_back(i + 1);
  std::vector<double> dx(h * h, 0.0);
  windows(h, h, k, s, p, [&](int64_t out, auto taps) {
    double n = includePad ? double(k * k) : double(taps.size());
    double sum = 0;
    for (auto [pos, tap] : taps)
      sum += x[pos];
    c.y[out] = sum / n;
    for (auto [pos, tap] : taps)
      dx[pos] += c.dy[out] / n;
  });
  c.grads = {dx};
  return c;
}

void addConvPool(std::vector<Case> &out) {
  std::vector<double> x9 = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  // Corner windows hold 1 of 4 positions (k2 s2 p1) or 4 of 9 (k3 s1 p1).
  for (bool include : {true, false}) {
    out.push_back(avgPool(3, 2, 2, 1, include, x9));
    out.push_back(avgPool(3, 3, 1, 1, include, x9));
  }
  {
    // max_pool2d as PyTorch scans a window: a NaN always takes over (the
    // last NaN wins), a number only when greater (the first maximum wins);
    // an all -inf window routes to its first position.
    std::vector<double> x = {1, 1, 0, nan, 2, nan, -inf, -inf, -inf};
    Case c;
    c.name = "max_pool2d with ties, NaN and -inf";
    c.args = {{"x", {1, 1, 3, 3}, x}};
    c.body = "  %y = tg.max_pool2d %x kernel = [2, 2] stride = [1, 1] "
             "{padding = array<i64: 1, 1>} : " +
             ty({1, 1, 3, 3}) + " -> " + ty({1, 1, 4, 4});
    c.yShape = {1, 1, 4, 4};
    c.y.resize(16);
    for (int i = 0; i < 16; ++i)
      c.dy.push_back(i + 1);
    std::vector<double> dx(9, 0.0);
    windows(3, 3, 2, 1, 1, [&](int64_t o, auto taps) {
      double best = -inf;
      int64_t where = taps.front().first;
      for (auto [pos, tap] : taps)
        if (x[pos] > best || std::isnan(x[pos])) {
          best = x[pos];
          where = pos;
        }
      c.y[o] = best;
      dx[where] += c.dy[o];
    });
    c.grads = {dx};
    out.push_back(std::move(c));
  }
  // Windows that tile the input (stride = kernel, no padding): tg-autodiff
  // rewrites the pooling as selects whose conditions are all the backward
  // pass keeps (passes/PoolingMasks.cpp), and a relu read only by the
  // pooling moves after it. Same scan as above: ties, all -inf, NaN (the
  // last one wins), an all non-positive window after the relu.
  for (bool relu : {false, true}) {
    std::vector<double> x = {1,    1,    -1, -2, nan, 3,   //
                             0,    1,    -3, -0., 2,  nan, //
                             -inf, -inf, 5,  2,  -1,  4,   //
                             -inf, -inf, 2,  5,  4,   -2};
    Case c;
    c.name = relu ? "relu then max_pool2d over tiling windows"
                  : "max_pool2d over tiling windows";
    c.args = {{"x", {1, 1, 4, 6}, x}};
    std::string pooled = relu ? "%r" : "%x";
    c.body = (relu ? "  %r = tg.relu %x : " + ty({1, 1, 4, 6}) + "\n" : "") +
             "  %y = tg.max_pool2d " + pooled +
             " kernel = [2, 2] stride = [2, 2] : " + ty({1, 1, 4, 6}) +
             " -> " + ty({1, 1, 2, 3});
    c.yShape = {1, 1, 2, 3};
    c.y.resize(6);
    for (int i = 0; i < 6; ++i)
      c.dy.push_back(i + 1);
    std::vector<double> v = x, dx(24, 0.0);
    if (relu)
      for (double &e : v)
        e = e < 0 ? 0.0 : e;
    windows(4, 6, 2, 2, 0, [&](int64_t o, auto taps) {
      double best = -inf;
      int64_t where = taps.front().first;
      for (auto [pos, tap] : taps)
        if (v[pos] > best || std::isnan(v[pos])) {
          best = v[pos];
          where = pos;
        }
      c.y[o] = best;
      // relu's threshold_backward zeroes where its result is <= 0.
      if (!relu || !(v[where] <= 0))
        dx[where] += c.dy[o];
    });
    c.grads = {dx};
    out.push_back(std::move(c));
  }
  {
    // Padding is zeros that are multiplied, as PyTorch's im2col does: an
    // inf weight over the padding gives NaN, not the sum of the taps inside.
    // The gradients see the same padded input.
    std::vector<double> x = {1, 2, 3, 4}, w = {inf, 1, 1, 1};
    Case c;
    c.name = "conv2d with an inf weight over the padding";
    c.args = {{"x", {1, 1, 2, 2}, x}, {"w", {1, 1, 2, 2}, w}};
    c.body = "  %y = tg.conv2d %x, %w {padding = array<i64: 1, 1>} : " +
             ty({1, 1, 2, 2}) + ", " + ty({1, 1, 2, 2}) + " -> " +
             ty({1, 1, 3, 3});
    c.yShape = {1, 1, 3, 3};
    c.dy = filled(9, 1.0);
    c.y = {nan, nan, nan, nan, inf, inf, nan, inf, inf};
    // dx[p] = sum of dy * w over the taps on p: each pixel meets every tap.
    // dw[tap] = sum of dy * x over the outputs: each tap meets every pixel.
    c.grads = {filled(4, inf), filled(4, 10.0)};
    out.push_back(std::move(c));
  }
  {
    // conv2d with padding corners, a signed zero and an inf input.
    std::vector<double> x = {1, -0.0, inf, 2}, w = {1, -1, 0.5, 2};
    Case c;
    c.name = "conv2d with padding and inf";
    c.args = {{"x", {1, 1, 2, 2}, x}, {"w", {1, 1, 2, 2}, w}};
    c.body = "  %y = tg.conv2d %x, %w {padding = array<i64: 1, 1>} : " +
             ty({1, 1, 2, 2}) + ", " + ty({1, 1, 2, 2}) + " -> " +
             ty({1, 1, 3, 3});
    c.yShape = {1, 1, 3, 3};
    c.y.resize(9);
    for (int i = 0; i < 9; ++i)
      c.dy.push_back(i + 1);
    std::vector<double> dx(4, 0.0), dw(4, 0.0);
    windows(2, 2, 2, 1, 1, [&](int64_t o, auto taps) {
      for (auto [pos, tap] : taps) {
        c.y[o] += w[tap] * x[pos];
        dx[pos] += c.dy[o] * w[tap];
        dw[tap] += c.dy[o] * x[pos];
      }
    });
    c.grads = {dx, dw};
    out.push_back(std::move(c));
  }
}

} // namespace

std::vector<Case> cases() {
  std::vector<Case> all;
  addUnary(all);
  addBinary(all);
  addRowOps(all);
  addLosses(all);
  addMovement(all);
  addStructural(all);
  addConvPool(all);
  return all;
}

std::string moduleOf(const Case &c) {
  std::string args, y = ty(c.yShape), axes;
  for (const Arg &a : c.args)
    args += "%" + a.name + ": " + ty(a.shape, a.elt) + " {tg.role = #tg.role<input>}, ";
  for (size_t i = 0; i < c.yShape.size(); ++i)
    axes += (i ? ", " : "") + std::to_string(i);
  return "func.func @forward(" + args + "%dy: " + y +
         " {tg.role = #tg.role<input>}) -> (tensor<f32> {tg.role = #tg.role<loss>}, " + y +
         " {tg.name = \"y\", tg.role = #tg.role<output>}) {\n" + c.body +
         "\n  %p = tg.mul %y, %dy : " + y + ", " + y + " -> " + y +
         "\n  %l = tg.sum %p axes = [" + axes + "] : " + y +
         " -> tensor<f32>\n  return %l, %y : tensor<f32>, " + y + "\n}\n";
}

void differentiate(Harness &h) {
  PassManager pm(&h.ctx);
  tg::AutodiffPassOptions opts;
  opts.wrtInputs = true;
  pm.addPass(tg::createAutodiffPass(opts));
  INFO(h.diagnostics);
  REQUIRE(succeeded(pm.run(*h.module)));
}

std::vector<Tensor> argsOf(const Case &c) {
  std::vector<Tensor> args;
  for (const Arg &a : c.args)
    args.push_back(Tensor::fromValues(
        a.shape, std::string(a.elt) == "i64" ? DType::I64 : DType::F32,
        a.values));
  args.push_back(Tensor::fromValues(c.yShape, DType::F32, c.dy));
  return args;
}

void checkValues(const std::string &what, llvm::ArrayRef<double> got,
                 llvm::ArrayRef<double> want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got[i], w = want[i];
    bool ok = std::isnan(w)   ? std::isnan(g)
              : std::isinf(w) ? g == w
                              : std::fabs(g - w) <= tol * (1 + std::fabs(w));
    INFO(what << " element " << i << ": got " << g << ", want " << w);
    CHECK(ok);
  }
}

} // namespace tgtest::edge
