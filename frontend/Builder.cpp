//===- Builder.cpp - shape-checked construction of forward graphs -*- C++ -*-===//
//
// Every op's result type is inferred here, with the rules of docs/
// dialect-plan.md, before any MLIR exists: a mistake becomes a sentence naming
// the shapes involved instead of a failed verifier or an assert in an op
// builder. The .tg frontend turns these sentences into file:line:col errors.
//
//===----------------------------------------------------------------------===//

#include "tgc/Builder.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace tgc;

namespace {
/// Largest accepted element count; keeps all size arithmetic in range.
constexpr int64_t kMaxElements = int64_t(1) << 50;

std::string join(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Normalises a possibly negative axis; false when out of range.
bool normAxis(int64_t &axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return false;
  if (axis < 0)
    axis += r;
  return true;
}
} // namespace

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d; // bounded by kMaxElements when built through Builder
  return n;
}

std::string TensorType::str() const {
  return dtypeName(dtype) + join(shape);
}

const NodeAttr *Node::attr(const std::string &key) const {
  for (const auto &kv : attrs)
    if (kv.first == key)
      return &kv.second;
  return nullptr;
}

const TensorType &Tensor::type() const { return b->typeOf(idx); }

Tensor Tensor::matmul(const Tensor &rhs, Location loc) const {
  return b->matmul(*this, rhs, false, false, std::move(loc));
}

//===----------------------------------------------------------------------===//
// Bookkeeping
//===----------------------------------------------------------------------===//

Builder::Builder(std::string modelName) { g.modelName = std::move(modelName); }

Builder::Scope::Scope(Builder &b, const std::string &name)
    : b(b), saved(b.prefix.size()) {
  if (!name.empty())
    b.prefix += (b.prefix.empty() ? "" : ".") + name;
}
Builder::Scope::~Scope() { b.prefix.resize(saved); }

void Builder::setHyper(const std::string &name, ConfigValue value) {
  for (auto &kv : g.hyper)
    if (kv.first == name) {
      kv.second = std::move(value);
      return;
    }
  g.hyper.emplace_back(name, std::move(value));
}

Tensor Builder::fail(const std::string &message) {
  last = message;
  errorList.push_back(message);
  return Tensor();
}

Tensor Builder::poison() {
  last.clear();
  return Tensor();
}

bool Builder::valid(std::initializer_list<const Tensor *> ts) {
  for (const Tensor *t : ts)
    if (!*t || t->b != this)
      return false;
  return true;
}

Tensor Builder::add_node(Node n) {
  if (g.nodes.size() >= maxNodes)
    return fail("the graph has more than " + std::to_string(maxNodes) +
                " ops; reduce the model size");
  for (int64_t d : n.type.shape)
    if (d <= 0)
      return fail("result of " + n.op + " would have a dimension of size " +
                  std::to_string(d));
  last.clear();
  g.nodes.push_back(std::move(n));
  return Tensor(this, static_cast<int>(g.nodes.size() - 1));
}

static bool checkShape(const Shape &s, std::string &why) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d <= 0) {
      why = "dimensions must be positive, got " + std::to_string(d);
      return false;
    }
    if (d > kMaxElements || n > kMaxElements / d) {
      why = "the tensor " + join(s) + " has too many elements";
      return false;
    }
    n *= d;
  }
  return true;
}

Tensor Builder::argument(const std::string &name, const std::string &role,
                         TensorType type, Init init, Location loc) {
  std::string full = prefix.empty() ? name : prefix + "." + name;
  std::string why;
  if (!checkShape(type.shape, why))
    return fail("invalid shape for " + role + " '" + full + "': " + why);
  for (int a : g.args)
    if (g.nodes[a].name == full)
      return fail("duplicate " + role + " name '" + full +
                  "' (name each call of a def with 'as')");
  Node n;
  n.op = "arg";
  n.type = std::move(type);
  n.loc = std::move(loc);
  n.name = full;
  n.role = role;
  n.init = std::move(init);
  Tensor t = add_node(std::move(n));
  if (t)
    g.args.push_back(t.id());
  return t;
}

Tensor Builder::input(const std::string &name, TensorType type, Location loc) {
  return argument(name, "input", std::move(type), {}, std::move(loc));
}

Tensor Builder::param(const std::string &name, TensorType type, Init init,
                      Location loc) {
  if (!isFloat(type.dtype))
    return fail("parameter '" + name + "' must have a floating-point type, not " +
                type.str());
  return argument(name, "param", std::move(type), std::move(init), std::move(loc));
}

Tensor Builder::constant(double value, TensorType type, Location loc) {
  std::string why;
  if (!checkShape(type.shape, why))
    return fail("invalid constant shape: " + why);
  if (isInteger(type.dtype) || type.dtype == DType::I1) {
    double lim = type.dtype == DType::I64   ? 9.2e18
                 : type.dtype == DType::I32 ? 2147483647.0
                                            : 1.0;
    double lo = type.dtype == DType::I1 ? 0.0 : -lim;
    if (!(value >= lo && value <= lim) || value != std::floor(value))
      return fail("the number " + std::to_string(value) + " does not fit " +
                  dtypeName(type.dtype));
  }
  Node n;
  n.op = "tg.constant";
  n.type = std::move(type);
  n.attrs.emplace_back("value", value);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// NumPy broadcasting of two shapes; "" on success, else the reason.
static std::string broadcastShapes(const Shape &a, const Shape &b, Shape &out) {
  size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return "dimension " + std::to_string(da) + " does not match " +
             std::to_string(db);
    out[r - 1 - i] = std::max(da, db);
  }
  return "";
}

Tensor Builder::binaryOp(const char *op, Tensor a, Tensor b, Location loc) {
  if (!valid({&a, &b}))
    return poison();
  const TensorType &ta = a.type(), &tb = b.type();
  std::string name = std::string(op).substr(3);
  if (ta.dtype != tb.dtype)
    return fail(name + ": element types differ: " + ta.str() + " and " +
                tb.str() + " (use cast)");
  if (ta.dtype == DType::I1)
    return fail(name + ": operands are booleans (" + ta.str() + "); use select");
  Node n;
  n.op = op;
  n.type.dtype = ta.dtype;
  std::string why = broadcastShapes(ta.shape, tb.shape, n.type.shape);
  if (!why.empty())
    return fail(name + ": cannot broadcast " + ta.str() + " and " + tb.str() +
                ": " + why);
  n.operands = {a.id(), b.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::add(Tensor a, Tensor b, Location l) { return binaryOp("tg.add", a, b, l); }
Tensor Builder::sub(Tensor a, Tensor b, Location l) { return binaryOp("tg.sub", a, b, l); }
Tensor Builder::mul(Tensor a, Tensor b, Location l) { return binaryOp("tg.mul", a, b, l); }
Tensor Builder::div(Tensor a, Tensor b, Location l) { return binaryOp("tg.div", a, b, l); }
Tensor Builder::pow(Tensor a, Tensor b, Location l) { return binaryOp("tg.pow", a, b, l); }
Tensor Builder::maximum(Tensor a, Tensor b, Location l) { return binaryOp("tg.maximum", a, b, l); }
Tensor Builder::minimum(Tensor a, Tensor b, Location l) { return binaryOp("tg.minimum", a, b, l); }

Tensor Builder::cmp(CmpPredicate p, Tensor a, Tensor b, Location loc) {
  Tensor t = binaryOp("tg.cmp", a, b, loc);
  if (!t)
    return t;
  Node &n = g.nodes[t.id()];
  n.type.dtype = DType::I1;
  static const char *names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  n.attrs.emplace_back("predicate", std::string(names[static_cast<int>(p)]));
  return t;
}

Tensor Builder::select(Tensor c, Tensor t, Tensor f, Location loc) {
  if (!valid({&c, &t, &f}))
    return poison();
  if (c.dtype() != DType::I1)
    return fail("select: the condition must be a comparison result (i1), not " +
                c.type().str());
  if (t.dtype() != f.dtype())
    return fail("select: element types differ: " + t.type().str() + " and " +
                f.type().str());
  Node n;
  n.op = "tg.select";
  n.type.dtype = t.dtype();
  Shape tmp;
  std::string why = broadcastShapes(c.shape(), t.shape(), tmp);
  if (why.empty())
    why = broadcastShapes(tmp, f.shape(), n.type.shape);
  if (!why.empty())
    return fail("select: cannot broadcast " + c.type().str() + ", " +
                t.type().str() + " and " + f.type().str() + ": " + why);
  n.operands = {c.id(), t.id(), f.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::unaryOp(const char *op, Tensor x, bool floatOnly, Location loc) {
  if (!valid({&x}))
    return poison();
  if (floatOnly ? !isFloat(x.dtype()) : x.dtype() == DType::I1)
    return fail(std::string(op + 3) + " needs a " +
                (floatOnly ? "floating-point" : "numeric") + " tensor, not " +
                x.type().str());
  Node n;
  n.op = op;
  n.type = x.type();
  n.operands = {x.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::neg(Tensor x, Location l) { return unaryOp("tg.neg", x, false, l); }
Tensor Builder::abs(Tensor x, Location l) { return unaryOp("tg.abs", x, false, l); }
Tensor Builder::exp(Tensor x, Location l) { return unaryOp("tg.exp", x, true, l); }
Tensor Builder::log(Tensor x, Location l) { return unaryOp("tg.log", x, true, l); }
Tensor Builder::sqrt(Tensor x, Location l) { return unaryOp("tg.sqrt", x, true, l); }
Tensor Builder::rsqrt(Tensor x, Location l) { return unaryOp("tg.rsqrt", x, true, l); }
Tensor Builder::tanh(Tensor x, Location l) { return unaryOp("tg.tanh", x, true, l); }
Tensor Builder::erf(Tensor x, Location l) { return unaryOp("tg.erf", x, true, l); }
Tensor Builder::sigmoid(Tensor x, Location l) { return unaryOp("tg.sigmoid", x, true, l); }
Tensor Builder::relu(Tensor x, Location l) { return unaryOp("tg.relu", x, false, l); }
Tensor Builder::silu(Tensor x, Location l) { return unaryOp("tg.silu", x, true, l); }

Tensor Builder::gelu(Tensor x, bool tanhApprox, Location l) {
  Tensor t = unaryOp("tg.gelu", x, true, l);
  if (t && tanhApprox)
    g.nodes[t.id()].attrs.emplace_back("approximate", std::string("tanh"));
  return t;
}

Tensor Builder::cast(Tensor x, DType to, Location loc) {
  if (!valid({&x}))
    return poison();
  Node n;
  n.op = "tg.cast";
  n.type = {to, x.shape()};
  n.operands = {x.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

Tensor Builder::matmul(Tensor a, Tensor b, bool ta, bool tb, Location loc) {
  if (!valid({&a, &b}))
    return poison();
  const TensorType &x = a.type(), &y = b.type();
  std::string pair = x.str() + " @ " + y.str();
  if (x.shape.size() < 2 || y.shape.size() < 2)
    return fail("matmul needs operands of rank 2 or more, got " + pair);
  if (x.dtype != y.dtype)
    return fail("matmul: element types differ: " + pair);
  if (!isFloat(x.dtype))
    return fail("matmul needs floating-point operands, got " + pair);
  size_t rx = x.shape.size(), ry = y.shape.size();
  int64_t m = ta ? x.shape[rx - 1] : x.shape[rx - 2];
  int64_t kx = ta ? x.shape[rx - 2] : x.shape[rx - 1];
  int64_t ky = tb ? y.shape[ry - 1] : y.shape[ry - 2];
  int64_t nn = tb ? y.shape[ry - 2] : y.shape[ry - 1];
  if (kx != ky)
    return fail("matmul: inner dimensions differ: " + pair + " (" +
                std::to_string(kx) + " vs " + std::to_string(ky) + ")");
  Node n;
  n.op = "tg.matmul";
  n.type.dtype = x.dtype;
  Shape bx(x.shape.begin(), x.shape.end() - 2), by(y.shape.begin(), y.shape.end() - 2);
  std::string why = broadcastShapes(bx, by, n.type.shape);
  if (!why.empty())
    return fail("matmul: batch dimensions of " + pair + " do not broadcast: " + why);
  n.type.shape.push_back(m);
  n.type.shape.push_back(nn);
  n.operands = {a.id(), b.id()};
  if (ta)
    n.attrs.emplace_back("transpose_lhs", true);
  if (tb)
    n.attrs.emplace_back("transpose_rhs", true);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::reduceOp(const char *op, Tensor x, std::vector<int64_t> axes,
                         bool keepdims, Location loc) {
  if (!valid({&x}))
    return poison();
  std::string name = op + 3;
  size_t rank = x.shape().size();
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(static_cast<int64_t>(i));
  std::set<int64_t> seen;
  for (int64_t &a : axes) {
    int64_t orig = a;
    if (!normAxis(a, rank))
      return fail(name + ": axis " + std::to_string(orig) +
                  " is out of range for " + x.type().str());
    if (!seen.insert(a).second)
      return fail(name + ": axis " + std::to_string(orig) + " is listed twice");
  }
  if (x.dtype() == DType::I1)
    return fail(name + " needs a numeric tensor, not " + x.type().str());
  std::sort(axes.begin(), axes.end());
  Node n;
  n.op = op;
  n.type.dtype = x.dtype();
  for (size_t i = 0; i < rank; ++i) {
    if (!seen.count(static_cast<int64_t>(i)))
      n.type.shape.push_back(x.shape()[i]);
    else if (keepdims)
      n.type.shape.push_back(1);
  }
  n.operands = {x.id()};
  n.attrs.emplace_back("axes", axes);
  if (keepdims)
    n.attrs.emplace_back("keepdims", true);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::sum(Tensor x, std::vector<int64_t> a, bool k, Location l) {
  return reduceOp("tg.sum", x, std::move(a), k, l);
}
Tensor Builder::mean(Tensor x, std::vector<int64_t> a, bool k, Location l) {
  if (x && !isFloat(x.dtype()))
    return fail("mean needs a floating-point tensor, not " + x.type().str());
  return reduceOp("tg.mean", x, std::move(a), k, l);
}
Tensor Builder::max(Tensor x, std::vector<int64_t> a, bool k, Location l) {
  return reduceOp("tg.max", x, std::move(a), k, l);
}

Tensor Builder::softmax(Tensor x, int64_t axis, Location loc) {
  int64_t a = axis;
  if (x && !normAxis(a, x.shape().size()))
    return fail("softmax: axis " + std::to_string(axis) + " is out of range for " +
                x.type().str());
  Tensor t = unaryOp("tg.softmax", x, true, loc);
  if (t)
    g.nodes[t.id()].attrs.emplace_back("axis", axis);
  return t;
}

Tensor Builder::logSoftmax(Tensor x, int64_t axis, Location loc) {
  int64_t a = axis;
  if (x && !normAxis(a, x.shape().size()))
    return fail("log_softmax: axis " + std::to_string(axis) +
                " is out of range for " + x.type().str());
  Tensor t = unaryOp("tg.log_softmax", x, true, loc);
  if (t)
    g.nodes[t.id()].attrs.emplace_back("axis", axis);
  return t;
}

//===----------------------------------------------------------------------===//
// Losses and normalisation
//===----------------------------------------------------------------------===//

Tensor Builder::crossEntropy(Tensor logits, Tensor labels, int64_t ignoreIndex,
                             Location loc) {
  if (!valid({&logits, &labels}))
    return poison();
  const TensorType &l = logits.type(), &y = labels.type();
  if (!isFloat(l.dtype) || l.shape.empty())
    return fail("cross_entropy: logits must be a floating-point tensor [..., "
                "classes], got " + l.str());
  if (!isInteger(y.dtype))
    return fail("cross_entropy: labels must be i32 or i64 class indices, got " +
                y.str());
  Shape expect(l.shape.begin(), l.shape.end() - 1);
  if (y.shape != expect)
    return fail("cross_entropy: labels " + y.str() + " do not match logits " +
                l.str() + " (labels need shape " + join(expect) + ")");
  Node n;
  n.op = "tg.cross_entropy";
  n.type = {l.dtype, {}};
  n.operands = {logits.id(), labels.id()};
  if (ignoreIndex != -100)
    n.attrs.emplace_back("ignore_index", ignoreIndex);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::mseLoss(Tensor a, Tensor b, Location loc) {
  if (!valid({&a, &b}))
    return poison();
  if (!(a.type() == b.type()) || !isFloat(a.dtype()))
    return fail("mse_loss: input " + a.type().str() + " and target " +
                b.type().str() + " must have the same floating-point type");
  Node n;
  n.op = "tg.mse_loss";
  n.type = {a.dtype(), {}};
  n.operands = {a.id(), b.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::layerNorm(Tensor x, Tensor scale, Tensor bias, double eps,
                          Location loc) {
  if (!valid({&x}))
    return poison();
  if (!isFloat(x.dtype()) || x.shape().empty())
    return fail("layer_norm needs a floating-point tensor of rank 1 or more, got " +
                x.type().str());
  TensorType want{x.dtype(), {x.shape().back()}};
  for (Tensor *t : {&scale, &bias})
    if (*t && !(t->type() == want))
      return fail(std::string("layer_norm: ") + (t == &scale ? "weight " : "bias ") +
                  t->type().str() + " must be " + want.str() + " to match " +
                  x.type().str());
  if (!(eps > 0))
    return fail("layer_norm: eps must be positive");
  Node n;
  n.op = "tg.layer_norm";
  n.type = x.type();
  n.operands = {x.id(), scale ? scale.id() : -1, bias ? bias.id() : -1};
  n.attrs.emplace_back("eps", eps);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::rmsNorm(Tensor x, Tensor scale, double eps, Location loc) {
  if (!valid({&x}))
    return poison();
  if (!isFloat(x.dtype()) || x.shape().empty())
    return fail("rms_norm needs a floating-point tensor of rank 1 or more, got " +
                x.type().str());
  TensorType want{x.dtype(), {x.shape().back()}};
  if (scale && !(scale.type() == want))
    return fail("rms_norm: weight " + scale.type().str() + " must be " +
                want.str() + " to match " + x.type().str());
  if (!(eps > 0))
    return fail("rms_norm: eps must be positive");
  Node n;
  n.op = "tg.rms_norm";
  n.type = x.type();
  n.operands = {x.id(), scale ? scale.id() : -1};
  n.attrs.emplace_back("eps", eps);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

Tensor Builder::embedding(Tensor table, Tensor indices, Location loc) {
  if (!valid({&table, &indices}))
    return poison();
  if (table.shape().size() != 2 || !isFloat(table.dtype()))
    return fail("embedding: the table must be a floating-point matrix "
                "[vocab, dim], got " + table.type().str());
  if (!isInteger(indices.dtype()))
    return fail("embedding: indices must be i32 or i64, got " +
                indices.type().str());
  Node n;
  n.op = "tg.embedding";
  n.type = {table.dtype(), indices.shape()};
  n.type.shape.push_back(table.shape()[1]);
  n.operands = {table.id(), indices.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::reshape(Tensor x, Shape shape, Location loc) {
  if (!valid({&x}))
    return poison();
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer < 0) {
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (shape[i] <= 0 || shape[i] > kMaxElements || known > kMaxElements / shape[i])
      return fail("reshape: invalid target shape " + join(shape));
    known *= shape[i];
  }
  int64_t total = x.type().numElements();
  if (infer >= 0) {
    if (total % known)
      return fail("reshape: cannot reshape " + x.type().str() + " (" +
                  std::to_string(total) + " elements) into " + join(shape));
    shape[infer] = total / known;
    known = total;
  }
  if (known != total)
    return fail("reshape: cannot reshape " + x.type().str() + " (" +
                std::to_string(total) + " elements) into " + join(shape) + " (" +
                std::to_string(known) + " elements)");
  Node n;
  n.op = "tg.reshape";
  n.type = {x.dtype(), shape};
  n.operands = {x.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::transpose(Tensor x, std::vector<int64_t> perm, Location loc) {
  if (!valid({&x}))
    return poison();
  size_t rank = x.shape().size();
  std::vector<bool> seen(rank, false);
  bool okPerm = perm.size() == rank;
  for (int64_t &p : perm) {
    if (!okPerm || !normAxis(p, rank) || seen[p]) {
      okPerm = false;
      break;
    }
    seen[p] = true;
  }
  if (!okPerm)
    return fail("transpose: " + join(perm) + " is not a permutation of the " +
                std::to_string(rank) + " axes of " + x.type().str());
  Node n;
  n.op = "tg.transpose";
  n.type.dtype = x.dtype();
  for (int64_t p : perm)
    n.type.shape.push_back(x.shape()[p]);
  n.operands = {x.id()};
  n.attrs.emplace_back("permutation", perm);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::broadcastTo(Tensor x, Shape shape, Location loc) {
  if (!valid({&x}))
    return poison();
  Shape out;
  std::string why;
  if (!checkShape(shape, why))
    return fail("broadcast_to: " + why);
  why = broadcastShapes(x.shape(), shape, out);
  if (!why.empty() || out != shape)
    return fail("broadcast_to: cannot broadcast " + x.type().str() + " to " +
                join(shape));
  Node n;
  n.op = "tg.broadcast_to";
  n.type = {x.dtype(), shape};
  n.operands = {x.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::slice(Tensor x, std::vector<int64_t> start,
                      std::vector<int64_t> limit, std::vector<int64_t> step,
                      Location loc) {
  if (!valid({&x}))
    return poison();
  const Shape &s = x.shape();
  if (start.size() != s.size() || limit.size() != s.size() || step.size() != s.size())
    return fail("slice: " + std::to_string(start.size()) +
                " indices given for " + x.type().str() + " of rank " +
                std::to_string(s.size()));
  Node n;
  n.op = "tg.slice";
  n.type.dtype = x.dtype();
  for (size_t i = 0; i < s.size(); ++i) {
    if (step[i] <= 0)
      return fail("slice: step must be positive, got " + std::to_string(step[i]));
    if (start[i] < 0 || start[i] >= limit[i] || limit[i] > s[i])
      return fail("slice: range " + std::to_string(start[i]) + ":" +
                  std::to_string(limit[i]) + " of axis " + std::to_string(i) +
                  " is empty or outside " + x.type().str());
    n.type.shape.push_back((limit[i] - start[i] + step[i] - 1) / step[i]);
  }
  n.operands = {x.id()};
  n.attrs.emplace_back("start", start);
  n.attrs.emplace_back("limit", limit);
  n.attrs.emplace_back("step", step);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::concat(std::vector<Tensor> xs, int64_t axis, Location loc) {
  for (const Tensor &t : xs)
    if (!valid({&t}))
      return poison();
  if (xs.empty())
    return fail("concat needs at least one tensor");
  TensorType out = xs[0].type();
  int64_t a = axis;
  if (!normAxis(a, out.shape.size()))
    return fail("concat: axis " + std::to_string(axis) + " is out of range for " +
                out.str());
  Node n;
  for (size_t i = 1; i < xs.size(); ++i) {
    const TensorType &t = xs[i].type();
    bool match = t.dtype == out.dtype && t.shape.size() == out.shape.size();
    for (size_t d = 0; match && d < t.shape.size(); ++d)
      match = d == static_cast<size_t>(a) || t.shape[d] == out.shape[d];
    if (!match)
      return fail("concat: " + t.str() + " does not match " + xs[0].type().str() +
                  " outside axis " + std::to_string(axis));
    out.shape[a] += t.shape[a];
  }
  n.op = "tg.concat";
  n.type = out;
  for (const Tensor &t : xs)
    n.operands.push_back(t.id());
  n.attrs.emplace_back("axis", a);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::causalMask(Tensor x, double value, Location loc) {
  if (!valid({&x}))
    return poison();
  if (x.shape().size() < 2 || !isFloat(x.dtype()))
    return fail("causal_mask needs a floating-point tensor of rank 2 or more, "
                "got " + x.type().str());
  Node n;
  n.op = "tg.causal_mask";
  n.type = x.type();
  n.operands = {x.id()};
  n.attrs.emplace_back("value", value);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::dropout(Tensor x, Tensor seed, double p, Location loc) {
  if (!valid({&x, &seed}))
    return poison();
  if (!isFloat(x.dtype()))
    return fail("dropout needs a floating-point tensor, not " + x.type().str());
  if (!(seed.type() == TensorType{DType::I64, {}}))
    return fail("dropout: the seed must be a scalar i64 input (i64[]), got " +
                seed.type().str());
  if (!(p >= 0 && p < 1))
    return fail("dropout: p must be in [0, 1), got " + std::to_string(p));
  Node n;
  n.op = "tg.dropout";
  n.type = x.type();
  n.operands = {x.id(), seed.id()};
  n.attrs.emplace_back("p", p);
  n.attrs.emplace_back("stream", dropoutStreams++);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::oneHot(Tensor indices, int64_t classes, DType dtype, Location loc) {
  if (!valid({&indices}))
    return poison();
  if (!isInteger(indices.dtype()))
    return fail("one_hot: indices must be i32 or i64, got " + indices.type().str());
  if (classes <= 0)
    return fail("one_hot: the number of classes must be positive");
  if (!isFloat(dtype))
    return fail(std::string("one_hot: the result type must be floating-point, not ") +
                dtypeName(dtype));
  Node n;
  n.op = "tg.one_hot";
  n.type = {dtype, indices.shape()};
  n.type.shape.push_back(classes);
  std::string why;
  if (!checkShape(n.type.shape, why))
    return fail("one_hot: " + why);
  n.operands = {indices.id()};
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Output extent of a window op; <= 0 when the window does not fit.
static int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

static bool pairOk(const std::vector<int64_t> &v, int64_t min) {
  return v.size() == 2 && v[0] >= min && v[1] >= min && v[0] < (1 << 20) &&
         v[1] < (1 << 20);
}

Tensor Builder::conv2d(Tensor x, Tensor w, std::vector<int64_t> stride,
                       std::vector<int64_t> padding, std::vector<int64_t> dilation,
                       int64_t groups, Location loc) {
  if (!valid({&x, &w}))
    return poison();
  const TensorType &tx = x.type(), &tw = w.type();
  std::string pair = tx.str() + " and weight " + tw.str();
  if (tx.shape.size() != 4 || tw.shape.size() != 4)
    return fail("conv2d needs an NCHW input and an [out, in, kh, kw] weight, got " + pair);
  if (tx.dtype != tw.dtype || !isFloat(tx.dtype))
    return fail("conv2d: input " + pair + " need the same floating-point type");
  if (!pairOk(stride, 1) || !pairOk(padding, 0) || !pairOk(dilation, 1))
    return fail("conv2d: stride, padding and dilation take two values each "
                "(stride and dilation >= 1, padding >= 0)");
  if (groups < 1 || tx.shape[1] % groups || tw.shape[0] % groups)
    return fail("conv2d: groups " + std::to_string(groups) +
                " must divide the channels of input " + pair);
  if (tw.shape[1] * groups != tx.shape[1])
    return fail("conv2d: input " + pair + " disagree on input channels (" +
                std::to_string(tx.shape[1]) + " vs " +
                std::to_string(tw.shape[1] * groups) + ")");
  int64_t oh = windowOut(tx.shape[2], tw.shape[2], stride[0], padding[0], dilation[0]);
  int64_t ow = windowOut(tx.shape[3], tw.shape[3], stride[1], padding[1], dilation[1]);
  if (oh <= 0 || ow <= 0)
    return fail("conv2d: the kernel of " + pair + " does not fit the padded input");
  Node n;
  n.op = "tg.conv2d";
  n.type = {tx.dtype, {tx.shape[0], tw.shape[0], oh, ow}};
  n.operands = {x.id(), w.id()};
  n.attrs.emplace_back("stride", stride);
  n.attrs.emplace_back("padding", padding);
  n.attrs.emplace_back("dilation", dilation);
  n.attrs.emplace_back("groups", groups);
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::poolOp(const char *op, Tensor x, std::vector<int64_t> kernel,
                       std::vector<int64_t> stride, std::vector<int64_t> padding,
                       Location loc,
                       std::vector<std::pair<std::string, NodeAttr>> extra) {
  if (!valid({&x}))
    return poison();
  std::string name = op + 3;
  if (x.shape().size() != 4 || !isFloat(x.dtype()))
    return fail(name + " needs a floating-point NCHW tensor, got " + x.type().str());
  if (!pairOk(kernel, 1) || !pairOk(stride, 1) || !pairOk(padding, 0))
    return fail(name + ": kernel, stride and padding take two values each "
                       "(kernel and stride >= 1, padding >= 0)");
  if (2 * padding[0] > kernel[0] || 2 * padding[1] > kernel[1])
    return fail(name + ": padding " + join(padding) +
                " is more than half the window " + join(kernel));
  int64_t oh = windowOut(x.shape()[2], kernel[0], stride[0], padding[0], 1);
  int64_t ow = windowOut(x.shape()[3], kernel[1], stride[1], padding[1], 1);
  if (oh <= 0 || ow <= 0)
    return fail(name + ": the window " + join(kernel) + " does not fit " +
                x.type().str());
  Node n;
  n.op = op;
  n.type = {x.dtype(), {x.shape()[0], x.shape()[1], oh, ow}};
  n.operands = {x.id()};
  n.attrs.emplace_back("kernel", kernel);
  n.attrs.emplace_back("stride", stride);
  n.attrs.emplace_back("padding", padding);
  for (auto &attr : extra)
    n.attrs.push_back(std::move(attr));
  n.loc = std::move(loc);
  return add_node(std::move(n));
}

Tensor Builder::maxPool2d(Tensor x, std::vector<int64_t> k, std::vector<int64_t> s,
                          std::vector<int64_t> p, Location l) {
  return poolOp("tg.max_pool2d", x, std::move(k), std::move(s), std::move(p), l);
}
Tensor Builder::avgPool2d(Tensor x, std::vector<int64_t> k, std::vector<int64_t> s,
                          std::vector<int64_t> p, bool countIncludePad, Location l) {
  return poolOp("tg.avg_pool2d", x, std::move(k), std::move(s), std::move(p), l,
                {{"count_include_pad", countIncludePad}});
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

void Builder::minimize(Tensor loss, const std::string &name, Location loc) {
  if (!valid({&loss})) {
    poison();
    return;
  }
  if (!loss.shape().empty() || !isFloat(loss.dtype())) {
    fail("minimize needs a floating-point scalar loss, got " + loss.type().str() +
         " (reduce it with mean or sum)");
    return;
  }
  for (const Result &r : g.results)
    if (r.role == "loss") {
      fail("the model already minimizes '" + r.name + "'; only one loss is allowed");
      return;
    }
  g.results.push_back({name, "loss", loss.id(), std::move(loc)});
}

void Builder::output(const std::string &name, Tensor value, Location loc) {
  if (!valid({&value})) {
    poison();
    return;
  }
  for (const Result &r : g.results)
    if (r.name == name) {
      fail("'" + name + "' is already a result of the model");
      return;
    }
  g.results.push_back({name, "output", value.id(), std::move(loc)});
}

std::vector<ParamInfo> tgc::listParams(const Graph &g) {
  std::vector<ParamInfo> out;
  for (int a : g.args) {
    const Node &n = g.nodes[a];
    if (n.role == "param")
      out.push_back({n.name, n.type, n.type.numElements()});
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Operators
//===----------------------------------------------------------------------===//

static Builder *owner(const Tensor &a, const Tensor &b) {
  return a.builder() ? a.builder() : b.builder();
}

Tensor tgc::operator+(const Tensor &a, const Tensor &b) {
  Builder *bl = owner(a, b);
  return bl ? bl->add(a, b) : Tensor();
}
Tensor tgc::operator-(const Tensor &a, const Tensor &b) {
  Builder *bl = owner(a, b);
  return bl ? bl->sub(a, b) : Tensor();
}
Tensor tgc::operator*(const Tensor &a, const Tensor &b) {
  Builder *bl = owner(a, b);
  return bl ? bl->mul(a, b) : Tensor();
}
Tensor tgc::operator/(const Tensor &a, const Tensor &b) {
  Builder *bl = owner(a, b);
  return bl ? bl->div(a, b) : Tensor();
}
Tensor tgc::operator-(const Tensor &a) {
  return a.builder() ? a.builder()->neg(a) : Tensor();
}
Tensor tgc::operator*(const Tensor &a, double s) {
  if (!a)
    return Tensor();
  Builder *b = a.builder();
  return b->mul(a, b->constant(s, {a.dtype(), {}}));
}
Tensor tgc::operator+(const Tensor &a, double s) {
  if (!a)
    return Tensor();
  Builder *b = a.builder();
  return b->add(a, b->constant(s, {a.dtype(), {}}));
}
