//===- Builder.h - C++ graph-builder API for TGC models --------*- C++ -*-===//
//
// Define a model in C++ instead of a .tg file: declare inputs and parameters,
// combine them with the same ops the language has, mark the loss, and build a
// verified `tg` module. The .tg frontend is itself a client of this API, so a
// model written either way produces the same IR, parameter names included.
//
//   tgc::Builder b("mlp");
//   auto x = b.input("x", {tgc::DType::F32, {64, 784}});
//   tgc::Tensor h;
//   { tgc::Builder::Scope s(b, "fc1");
//     h = b.relu(x.matmul(b.param("weight", {DType::F32, {784, 256}},
//                                 {"glorot_uniform"}))); }
//   ...
//   b.minimize(loss);
//   mlir::OwningOpRef<mlir::ModuleOp> m = b.build(ctx);  // null on error
//
// Shape errors never abort: the failing call returns an invalid Tensor, the
// message is kept (errors()), later calls on invalid tensors stay quiet, and
// build() returns null.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_BUILDER_H
#define TGC_BUILDER_H

#include "tgc/DType.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mlir {
class MLIRContext;
class ModuleOp;
template <typename OpTy> class OwningOpRef;
} // namespace mlir

namespace tgc {

using Shape = std::vector<int64_t>;

/// A static tensor type.
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  /// Number of elements (1 for a scalar).
  int64_t numElements() const;
  /// "f32[4, 8]".
  std::string str() const;
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && shape == o.shape;
  }
};

/// A source position attached to every op (the C++ call site by default).
struct Location {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;
  static Location current(const char *file = __builtin_FILE(),
                          unsigned line = __builtin_LINE()) {
    return Location{file, line, 0};
  }
};

/// A parameter initializer: kind plus numeric arguments, as in
/// `#tg.init<normal(0.0, 0.02)>`. Kinds: zeros, ones, constant(v),
/// normal(mean, std), uniform(lo, hi), glorot_uniform, glorot_normal,
/// kaiming_uniform, kaiming_normal.
struct Init {
  std::string kind = "zeros";
  std::vector<double> args;
};

/// A value in the hyper-parameter or train dictionaries.
struct ConfigValue {
  enum Kind { Int, Float, String, Bool, Dict } kind = Int;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<std::pair<std::string, ConfigValue>> dict;

  static ConfigValue ofInt(int64_t v) { ConfigValue c; c.kind = Int; c.i = v; return c; }
  static ConfigValue ofFloat(double v) { ConfigValue c; c.kind = Float; c.f = v; return c; }
  static ConfigValue ofString(std::string v) { ConfigValue c; c.kind = String; c.s = std::move(v); return c; }
  static ConfigValue ofBool(bool v) { ConfigValue c; c.kind = Bool; c.i = v; return c; }
  static ConfigValue ofDict() { ConfigValue c; c.kind = Dict; return c; }
};
using ConfigDict = std::vector<std::pair<std::string, ConfigValue>>;

/// An attribute of a graph node.
using NodeAttr = std::variant<int64_t, double, std::string, std::vector<int64_t>, bool>;

/// One op (or function argument) of the forward graph.
struct Node {
  std::string op; ///< "tg.add", ...; "arg" for inputs and parameters
  std::vector<int> operands;
  TensorType type;
  std::vector<std::pair<std::string, NodeAttr>> attrs;
  Location loc;
  // Function arguments only.
  std::string name;
  std::string role; ///< "input" or "param"
  Init init;

  const NodeAttr *attr(const std::string &key) const;
};

/// A marked function result.
struct Result {
  std::string name;
  std::string role; ///< "loss" or "output"
  int node;
  Location loc;
};

/// The forward graph of one model, in creation order.
struct Graph {
  std::string modelName;
  std::vector<Node> nodes;
  std::vector<int> args; ///< nodes that are function arguments, in order
  std::vector<Result> results;
  ConfigDict hyper;
  ConfigDict train;
};

class Builder;

/// A handle to a value of the graph being built; false when invalid.
class Tensor {
public:
  Tensor() = default;
  explicit operator bool() const { return b != nullptr && idx >= 0; }
  int id() const { return idx; }
  Builder *builder() const { return b; }
  const TensorType &type() const;
  const Shape &shape() const { return type().shape; }
  DType dtype() const { return type().dtype; }

  Tensor matmul(const Tensor &rhs, Location loc = Location::current()) const;

private:
  friend class Builder;
  Tensor(Builder *b, int idx) : b(b), idx(idx) {}
  Builder *b = nullptr;
  int idx = -1;
};

/// Comparison predicates of tg.cmp.
enum class CmpPredicate { EQ, NE, LT, LE, GT, GE };

/// Builds a forward graph with shape checking, then lowers it to MLIR.
class Builder {
public:
  explicit Builder(std::string modelName);

  /// Names parameters created while it lives: `Scope s(b, "h.0")`.
  class Scope {
  public:
    Scope(Builder &b, const std::string &name);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    Builder &b;
    size_t saved;
  };
  /// The current scope prefix ("h.0.attn"), or "".
  const std::string &scopePrefix() const { return prefix; }

  // Model-level data.
  void setHyper(const std::string &name, ConfigValue value);
  void setTrain(ConfigDict train) { g.train = std::move(train); }

  // Leaves.
  Tensor input(const std::string &name, TensorType type,
               Location loc = Location::current());
  Tensor param(const std::string &name, TensorType type, Init init = {},
               Location loc = Location::current());
  /// A tensor filled with `value`.
  Tensor constant(double value, TensorType type, Location loc = Location::current());

  // Elementwise with NumPy broadcasting.
  Tensor add(Tensor a, Tensor b, Location loc = Location::current());
  Tensor sub(Tensor a, Tensor b, Location loc = Location::current());
  Tensor mul(Tensor a, Tensor b, Location loc = Location::current());
  Tensor div(Tensor a, Tensor b, Location loc = Location::current());
  Tensor pow(Tensor a, Tensor b, Location loc = Location::current());
  Tensor maximum(Tensor a, Tensor b, Location loc = Location::current());
  Tensor minimum(Tensor a, Tensor b, Location loc = Location::current());
  Tensor cmp(CmpPredicate p, Tensor a, Tensor b, Location loc = Location::current());
  Tensor select(Tensor cond, Tensor t, Tensor f, Location loc = Location::current());

  // Unary.
  Tensor neg(Tensor x, Location loc = Location::current());
  Tensor abs(Tensor x, Location loc = Location::current());
  Tensor exp(Tensor x, Location loc = Location::current());
  Tensor log(Tensor x, Location loc = Location::current());
  Tensor sqrt(Tensor x, Location loc = Location::current());
  Tensor rsqrt(Tensor x, Location loc = Location::current());
  Tensor tanh(Tensor x, Location loc = Location::current());
  Tensor erf(Tensor x, Location loc = Location::current());
  Tensor sigmoid(Tensor x, Location loc = Location::current());
  Tensor relu(Tensor x, Location loc = Location::current());
  Tensor silu(Tensor x, Location loc = Location::current());
  Tensor gelu(Tensor x, bool tanhApprox = false, Location loc = Location::current());
  Tensor cast(Tensor x, DType to, Location loc = Location::current());

  // Linear algebra and reductions.
  Tensor matmul(Tensor a, Tensor b, bool transposeA = false,
                bool transposeB = false, Location loc = Location::current());
  /// Empty `axes` reduces over every axis.
  Tensor sum(Tensor x, std::vector<int64_t> axes = {}, bool keepdims = false,
             Location loc = Location::current());
  Tensor mean(Tensor x, std::vector<int64_t> axes = {}, bool keepdims = false,
              Location loc = Location::current());
  Tensor max(Tensor x, std::vector<int64_t> axes = {}, bool keepdims = false,
             Location loc = Location::current());
  Tensor softmax(Tensor x, int64_t axis = -1, Location loc = Location::current());
  Tensor logSoftmax(Tensor x, int64_t axis = -1, Location loc = Location::current());

  // Losses and normalisation.
  Tensor crossEntropy(Tensor logits, Tensor labels, int64_t ignoreIndex = -100,
                      Location loc = Location::current());
  Tensor mseLoss(Tensor input, Tensor target, Location loc = Location::current());
  /// `scale` and `bias` may be invalid (absent).
  Tensor layerNorm(Tensor x, Tensor scale, Tensor bias, double eps = 1e-5,
                   Location loc = Location::current());
  Tensor rmsNorm(Tensor x, Tensor scale, double eps = 1e-6,
                 Location loc = Location::current());

  // Data movement.
  Tensor embedding(Tensor table, Tensor indices, Location loc = Location::current());
  /// One entry of `shape` may be -1 (inferred).
  Tensor reshape(Tensor x, Shape shape, Location loc = Location::current());
  Tensor transpose(Tensor x, std::vector<int64_t> perm, Location loc = Location::current());
  Tensor broadcastTo(Tensor x, Shape shape, Location loc = Location::current());
  Tensor slice(Tensor x, std::vector<int64_t> start, std::vector<int64_t> limit,
               std::vector<int64_t> step, Location loc = Location::current());
  Tensor concat(std::vector<Tensor> xs, int64_t axis, Location loc = Location::current());
  Tensor causalMask(Tensor x, double value, Location loc = Location::current());
  Tensor dropout(Tensor x, Tensor seed, double p, Location loc = Location::current());
  Tensor oneHot(Tensor indices, int64_t classes, DType dtype = DType::F32,
                Location loc = Location::current());

  // Convolution and pooling (NCHW).
  Tensor conv2d(Tensor x, Tensor w, std::vector<int64_t> stride = {1, 1},
                std::vector<int64_t> padding = {0, 0},
                std::vector<int64_t> dilation = {1, 1}, int64_t groups = 1,
                Location loc = Location::current());
  Tensor maxPool2d(Tensor x, std::vector<int64_t> kernel,
                   std::vector<int64_t> stride, std::vector<int64_t> padding = {0, 0},
                   Location loc = Location::current());
  /// With `countIncludePad` (PyTorch's default) every window is divided by
  /// the kernel's size, padded zeros included; without, by its unpadded
  /// positions.
  Tensor avgPool2d(Tensor x, std::vector<int64_t> kernel,
                   std::vector<int64_t> stride, std::vector<int64_t> padding = {0, 0},
                   bool countIncludePad = true,
                   Location loc = Location::current());

  // Results.
  void minimize(Tensor loss, const std::string &name = "loss",
                Location loc = Location::current());
  void output(const std::string &name, Tensor value,
              Location loc = Location::current());

  /// True while no call has failed.
  bool ok() const { return errorList.empty(); }
  /// Every failure so far, one sentence each.
  const std::vector<std::string> &errors() const { return errorList; }
  /// The message of the most recent failing call; "" when that call failed
  /// only because an operand was already invalid (nothing new to report).
  const std::string &lastError() const { return last; }

  /// Caps the graph size; calls beyond it fail (keeps fuzzed input fast).
  void setMaxNodes(size_t n) { maxNodes = n; }

  const Graph &graph() const { return g; }
  const TensorType &typeOf(int id) const { return g.nodes[id].type; }

  /// Lowers the graph to a verified `tg` module; null (with a message in
  /// errors()) when the graph has errors or fails verification.
  mlir::OwningOpRef<mlir::ModuleOp> build(mlir::MLIRContext &ctx);

private:
  Tensor fail(const std::string &message);
  Tensor poison();
  bool valid(std::initializer_list<const Tensor *> ts);
  Tensor add_node(Node n);
  Tensor binaryOp(const char *op, Tensor a, Tensor b, Location loc);
  Tensor unaryOp(const char *op, Tensor x, bool floatOnly, Location loc);
  Tensor reduceOp(const char *op, Tensor x, std::vector<int64_t> axes,
                  bool keepdims, Location loc);
  Tensor poolOp(const char *op, Tensor x, std::vector<int64_t> kernel,
                std::vector<int64_t> stride, std::vector<int64_t> padding,
                Location loc,
                std::vector<std::pair<std::string, NodeAttr>> extra = {});
  Tensor argument(const std::string &name, const std::string &role,
                  TensorType type, Init init, Location loc);

  Graph g;
  std::string prefix;
  std::vector<std::string> errorList;
  std::string last;
  size_t maxNodes = size_t(1) << 22;
  int64_t dropoutStreams = 0;
};

// Operators for terse C++ models: `x * w + b`, `x * 0.5`.
Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a);
Tensor operator*(const Tensor &a, double s);
Tensor operator+(const Tensor &a, double s);

/// Parameters of a graph with their element counts, for `--report=params`.
struct ParamInfo {
  std::string name;
  TensorType type;
  int64_t count;
};
std::vector<ParamInfo> listParams(const Graph &g);

} // namespace tgc

#endif // TGC_BUILDER_H
