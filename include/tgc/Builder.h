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
//   mlir::OwningOpRef<mlir::ModuleOp> m = b.build();  // null on error
//
// Each call creates its `tg` op at once; the op's own type inference and
// verifier (dialects/) are the only shape rules, and their messages are the
// Builder's. Errors never abort: the failing call returns an invalid Tensor,
// the message is kept (errors()), later calls on invalid tensors stay quiet,
// and build() returns null. Elementwise ops come from BuilderOps.def.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_BUILDER_H
#define TGC_BUILDER_H

#include "tgc/DType.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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
  enum Kind { Int, Float, String, Bool, Dict, List } kind = Int;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<std::pair<std::string, ConfigValue>> dict;
  std::vector<ConfigValue> list; ///< elements of a List

  static ConfigValue ofInt(int64_t v) { ConfigValue c; c.kind = Int; c.i = v; return c; }
  static ConfigValue ofFloat(double v) { ConfigValue c; c.kind = Float; c.f = v; return c; }
  static ConfigValue ofString(std::string v) { ConfigValue c; c.kind = String; c.s = std::move(v); return c; }
  static ConfigValue ofBool(bool v) { ConfigValue c; c.kind = Bool; c.i = v; return c; }
  static ConfigValue ofDict() { ConfigValue c; c.kind = Dict; return c; }
  static ConfigValue ofList() { ConfigValue c; c.kind = List; return c; }
};
using ConfigDict = std::vector<std::pair<std::string, ConfigValue>>;

class Builder;

/// A handle to a value of the model being built; false when invalid.
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

/// Builds the forward function of a model as `tg` ops, checked op by op.
class Builder {
public:
  /// Builds into a context of its own (context()); the module build()
  /// returns lives in it, so it must not outlive the Builder.
  explicit Builder(std::string modelName);
  /// Builds into `ctx`, which must outlive the Builder and its modules.
  Builder(mlir::MLIRContext &ctx, std::string modelName);
  ~Builder();
  Builder(const Builder &) = delete;
  Builder &operator=(const Builder &) = delete;

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
  const std::string &scopePrefix() const;
  /// The call paths of the ops built so far (each op inside a scope
  /// carries its prefix as a NameLoc), in order of first use.
  std::vector<std::string> callPaths() const;
  /// Whether keep_fp32 pattern `pattern` selects an op built so far, by
  /// op kind or call path (dialects/CallPath.h).
  bool keepFp32Selects(const std::string &pattern) const;

  // Model-level data.
  void setHyper(const std::string &name, ConfigValue value);
  void setTrain(ConfigDict train);

  // Leaves.
  Tensor input(const std::string &name, TensorType type,
               Location loc = Location::current());
  Tensor param(const std::string &name, TensorType type, Init init = {},
               Location loc = Location::current());
  /// A tensor filled with `value`.
  Tensor constant(double value, TensorType type, Location loc = Location::current());

  // Elementwise: one method per line of BuilderOps.def, e.g.
  // `Tensor exp(Tensor x, Location loc)`, `Tensor add(Tensor a, Tensor b,
  // Location loc)` (NumPy broadcasting).
#define TGC_UNARY(method, builtin, op)                                         \
  Tensor method(Tensor x, Location loc = Location::current());
#define TGC_BINARY(method, builtin, op)                                        \
  Tensor method(Tensor a, Tensor b, Location loc = Location::current());
#include "tgc/BuilderOps.def"
  Tensor cmp(CmpPredicate p, Tensor a, Tensor b, Location loc = Location::current());
  Tensor select(Tensor cond, Tensor t, Tensor f, Location loc = Location::current());
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
  /// Scaled dot-product attention of q [B, H, Tq, d], k [B, H, Tk, d] and
  /// v [B, H, Tk, dv] (tg.attention), causal or not; `scale` defaults to
  /// 1 / sqrt(d). Returns the output [B, H, Tq, dv].
  Tensor attention(Tensor q, Tensor k, Tensor v, bool causal,
                   std::optional<double> scale = std::nullopt,
                   Location loc = Location::current());
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
  bool ok() const { return errors().empty(); }
  /// Every failure so far, one sentence each.
  const std::vector<std::string> &errors() const;
  /// The message of the most recent failing call; "" when that call failed
  /// only because an operand was already invalid (nothing new to report).
  const std::string &lastError() const;

  /// Caps the number of ops; calls beyond it fail (keeps fuzzed input fast).
  void setMaxNodes(size_t n);

  /// The type of the value `id` (Tensor::id()).
  const TensorType &typeOf(int id) const;
  /// Number of results marked with minimize or output.
  size_t numResults() const;
  /// True once minimize has marked a loss.
  bool hasLoss() const;

  /// The context the ops are created in.
  mlir::MLIRContext &context();
  /// The model as a verified module holding `func.func @forward` (a copy:
  /// building may go on). Null, with a message in errors(), when a call
  /// has failed or the module does not verify.
  mlir::OwningOpRef<mlir::ModuleOp> build();

private:
  struct Impl;
  Tensor wrap(int id);
  Tensor argument(const std::string &name, const std::string &role,
                  TensorType type, Init init, Location loc);
  template <typename OpTy>
  Tensor reduce(Tensor x, std::vector<int64_t> axes, bool keepdims, Location loc);

  std::unique_ptr<Impl> impl;
};

// Operators for terse C++ models: `x * w + b`, `x * 0.5`.
Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a);
Tensor operator*(const Tensor &a, double s);
Tensor operator+(const Tensor &a, double s);

/// Parameters of a model with their element counts, for `--report=params`.
struct ParamInfo {
  std::string name;
  TensorType type;
  int64_t count;
};
/// The parameters of a built module's `@forward`, in argument order.
std::vector<ParamInfo> listParams(mlir::ModuleOp module);

} // namespace tgc

#endif // TGC_BUILDER_H
