//===- SimtElementwise.cpp - elementwise and optimizer kernels --*- C++ -*-===//
//
// One kernel per `tg.fused <elementwise>` / `<optimizer>` group or single
// elementwise op. The results are grouped by shape into domains (one for
// an elementwise group, one per parameter shape for an optimizer); the
// domains' work units are laid end to end in one flat index space whose
// segment boundaries are constants, and a grid-stride loop walks it, so
// one launch updates every parameter and state tensor.
//
// A work unit is V consecutive elements of the innermost dimension (V = 16
// bytes over the widest element, when the innermost dimension and the
// element count are multiples of V): operands that vary along that
// dimension are read with one 16-byte (or narrower) vector load, results
// written with one vector store; operands broadcast along it (strides 0)
// are read once. Each value of the body is computed at the coordinates its
// shape takes from the unit's (NumPy broadcasting: size-1 dimensions read
// index 0), memoised per unit; a single-element value (an optimizer's step
// size, a clip scale) is computed once per thread before the loop, never
// stored.
//
// Results are computed and stored by cluster (the results connected through
// the multi-element operands they read: one parameter's update), so only
// one cluster's values are live; a group with more buffers than a kernel
// takes (PTX: 544 pointers) is split into launches of whole clusters.
//
// Aliasing (KernelGen.h): a cluster reads all its operand elements before
// it stores, so a result may share the buffer of an operand read only at
// the result's own elements (same shape and element size, same domain and
// launch) by its own or an earlier cluster; the plan's in-place choices
// order the clusters. Any other pairing the plan asks for (tg.offset(s),
// tg.alias_arg(s)) is refused with an error.
//
//===----------------------------------------------------------------------===//
#include "codegen/nvptx/SimtElementwise.h"

#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/SimtScalar.h"
#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

#include <numeric>

#include <map>
#include <set>

namespace tg::nvptx {

using namespace mlir;
using namespace detail;
namespace tgd = mlir::tg;

namespace {

constexpr int kBlock = 256;
/// Enough blocks to fill an H200 (132 SMs x 8 blocks of 256) several
/// times; larger tensors loop (grid-stride).
constexpr int64_t kMaxGrid = 4096;

ShapedType shapedOf(Value v) { return cast<ShapedType>(v.getType()); }

int64_t storageBytes(Type elem) {
  return std::max<int64_t>(1, elem.getIntOrFloatBitWidth() / 8);
}

/// What the kernel reads and writes: the group's block arguments (or the
/// single op's operands), one kernel parameter each, then its results.
struct Source {
  Operation *op;
  SmallVector<Value> inputs, outputs;
  llvm::DenseMap<Value, unsigned> inputIndex;
};

Source makeSource(Operation *op) {
  Source s;
  s.op = op;
  if (auto g = dyn_cast<tgd::FusedOp>(op)) {
    llvm::append_range(s.inputs, g.getBodyBlock().getArguments());
    llvm::append_range(s.outputs, g.getYield().getValues());
  } else {
    llvm::append_range(s.inputs, op->getOperands());
    llvm::append_range(s.outputs, op->getResults());
  }
  for (auto [i, v] : llvm::enumerate(s.inputs))
    s.inputIndex.try_emplace(v, i);
  return s;
}

/// The results of one shape.
struct Domain {
  SmallVector<int64_t> shape;
  SmallVector<unsigned> outputs;
  int64_t elements = 1, vec = 1, start = 0;
  int64_t units() const { return elements / vec; }
};

/// How one input is read: in which domains, and whether only at the
/// computing thread's own elements.
struct ReadInfo {
  std::set<unsigned> domains;
  bool identity = true;
};

/// Builds the kernel body: one value of the source per (value, coordinates,
/// lane), memoised within a work unit. Single-element values (rank 0 or
/// all dimensions 1) are the same for every unit: they are computed once,
/// before the loop over units (`prologue`), and shared by every domain.
class Emitter {
public:
  /// `inputArg`/`outputArg`: the kernel argument of each input and output
  /// (null for those another launch handles).
  Emitter(KernelBuilder &w, const Source &src, ArrayRef<Value> inputArg,
          ArrayRef<Value> outputArg, ArrayRef<unsigned> clusterOf, Type it,
          Operation *prologue, unsigned numDomains)
      : w(w), src(src), inputArg(inputArg), outputArg(outputArg),
        clusterOf(clusterOf), it(it), prologue(prologue),
        numDomains(numDomains) {}

  /// Computes and stores the results of `d` for the unit at `local`.
  LogicalResult emitUnit(const Domain &d, unsigned domainIndex, Value local) {
    memo.clear();
    vecLoads.clear();
    dom = &d;
    domIndex = domainIndex;
    lin0 = d.vec == 1 ? local : w.mul(local, c(d.vec));
    SmallVector<Value> coords;
    int64_t stride = d.elements;
    for (int64_t size : d.shape) {
      stride /= size;
      if (size == 1) {
        coords.push_back(c(0));
        continue;
      }
      Value q = stride == 1 ? lin0 : w.udiv(lin0, c(stride));
      // The outermost coordinate needs no remainder: lin0 < elements.
      coords.push_back(coords.empty() ? q : w.urem(q, c(size)));
    }
    // A cluster (the results that read the same operands, e.g. one
    // parameter's Adam update) is computed whole before it is stored: a
    // result may share an operand's buffer. Storing cluster by cluster keeps
    // only one cluster's values live (a GPT's optimizer domain holds every
    // layer's copy of a weight).
    SmallVector<std::pair<unsigned, SmallVector<Value>>> pending;
    for (auto [i, o] : llvm::enumerate(d.outputs)) {
      SmallVector<Value> lanes;
      for (int64_t lane = 0; lane < d.vec; ++lane) {
        FailureOr<Value> v = value(src.outputs[o], coords, lane,
                                   /*inner=*/true);
        if (failed(v))
          return failure();
        lanes.push_back(*v);
      }
      pending.push_back({o, lanes});
      if (i + 1 < d.outputs.size() &&
          clusterOf[d.outputs[i + 1]] == clusterOf[o])
        continue;
      for (auto &[po, vals] : pending)
        store(outputArg[po], shapedOf(src.outputs[po]).getElementType(), vals);
      pending.clear();
    }
    return success();
  }

  const std::map<unsigned, ReadInfo> &reads() const { return readInfo; }

private:
  Value c(int64_t v) { return it == w.i32 ? w.i32c(v) : w.i64c(v); }

  /// Row-major offset of `coords` in `shape` (size-1 dimensions add 0).
  Value offset(ArrayRef<int64_t> shape, ArrayRef<Value> coords) {
    if (llvm::all_of(shape, [](int64_t s) { return s == 1; }))
      return c(0);
    if (shape == ArrayRef<int64_t>(dom->shape))
      return lin0;
    Value off = c(0);
    int64_t stride = 1;
    for (int64_t j = static_cast<int64_t>(shape.size()) - 1; j >= 0; --j) {
      if (shape[j] != 1)
        off = w.add(off, stride == 1 ? coords[j] : w.mul(coords[j], c(stride)));
      stride *= shape[j];
    }
    return off;
  }

  /// The coordinates an operand of shape `shape` is read at when its user
  /// has coordinates `coords` (right-aligned broadcasting).
  SmallVector<Value> project(ArrayRef<int64_t> shape, ArrayRef<Value> coords) {
    SmallVector<Value> r;
    size_t lead = coords.size() - shape.size();
    for (auto [j, size] : llvm::enumerate(shape))
      r.push_back(size == 1 ? c(0) : coords[lead + j]);
    return r;
  }

  /// Whether a value of shape `shape` varies along the unit's lanes:
  /// `inner` says its last coordinate is the domain's innermost one.
  bool laneVarying(ArrayRef<int64_t> shape, bool inner) const {
    return dom->vec > 1 && inner && !shape.empty() && shape.back() != 1;
  }

  std::vector<const void *> key(Value v, ArrayRef<Value> coords, int64_t lane) {
    std::vector<const void *> k{v.getAsOpaquePointer(),
                                reinterpret_cast<const void *>(lane)};
    for (Value x : coords)
      k.push_back(x.getAsOpaquePointer());
    return k;
  }

  FailureOr<Value> value(Value v, ArrayRef<Value> coords, int64_t lane,
                         bool inner) {
    ShapedType type = shapedOf(v);
    if (type.getNumElements() == 1) {
      auto found = uniform.find(v);
      if (found != uniform.end())
        return found->second;
      OpBuilder::InsertionGuard guard(w.b);
      w.b.setInsertionPoint(prologue);
      bool outer = inPrologue;
      inPrologue = true;
      FailureOr<Value> r = compute(v, type, coords, 0, /*varying=*/false);
      inPrologue = outer;
      if (succeeded(r))
        uniform[v] = *r;
      return r;
    }
    bool varying = laneVarying(type.getShape(), inner);
    if (!varying)
      lane = 0;
    auto k = key(v, coords, lane);
    auto it = memo.find(k);
    if (it != memo.end())
      return it->second;
    FailureOr<Value> r = compute(v, type, coords, lane, varying);
    if (succeeded(r))
      memo[k] = *r;
    return r;
  }

  FailureOr<Value> compute(Value v, ShapedType type, ArrayRef<Value> coords,
                           int64_t lane, bool varying) {
    Type elem = type.getElementType();
    auto in = src.inputIndex.find(v);
    if (in != src.inputIndex.end()) {
      ReadInfo &ri = readInfo[in->second];
      ri.domains.insert(domIndex);
      // Read before the loop: by every thread, whatever domain it serves.
      for (unsigned d = 0; inPrologue && d < numDomains; ++d)
        ri.domains.insert(d);
      if (type.getShape() != ArrayRef<int64_t>(dom->shape))
        ri.identity = false;
      Value base = inputArg[in->second];
      if (!varying)
        return loadElement(w, base, offset(type.getShape(), coords), elem);
      // A vector of the unit's lanes, loaded once.
      auto vk = key(v, coords, -1);
      auto found = vecLoads.find(vk);
      if (found == vecLoads.end()) {
        Type st = storageType(elem);
        auto vt = VectorType::get({dom->vec}, st);
        Value p = w.gep(base, offset(type.getShape(), coords), st);
        Value loaded = LLVM::LoadOp::create(
            w.b, w.loc, vt, p,
            /*alignment=*/static_cast<unsigned>(dom->vec * storageBytes(st)));
        found = vecLoads.emplace(vk, loaded).first;
      }
      Value x = LLVM::ExtractElementOp::create(w.b, w.loc, found->second,
                                               w.i32c(lane));
      return toCompute(w, x, elem);
    }
    Operation *def = v.getDefiningOp();
    if (!def)
      return emitError(w.loc, "a value of the group is neither an operand nor "
                              "computed in it");
    SmallVector<Value> operands;
    for (Value u : def->getOperands()) {
      ArrayRef<int64_t> us = shapedOf(u).getShape();
      SmallVector<Value> uc =
          isa<tgd::OneHotOp>(def) ? SmallVector<Value>(coords.drop_back())
                                  : project(us, coords);
      // one_hot's operand lacks the class dimension, the innermost one.
      FailureOr<Value> uv = value(u, uc, lane,
                                  varying && !isa<tgd::OneHotOp>(def));
      if (failed(uv))
        return failure();
      operands.push_back(*uv);
    }
    Value linear = offset(type.getShape(), coords);
    if (lane)
      linear = w.add(linear, c(lane));
    ElementPosition pos{linear};
    return emitScalarOp(w, def, operands, &pos);
  }

  void store(Value base, Type elem, ArrayRef<Value> lanes) {
    Type st = storageType(elem);
    if (lanes.size() == 1) {
      storeElement(w, base, lin0, elem, lanes[0]);
      return;
    }
    Type ct = lanes[0].getType();
    Value vec = LLVM::UndefOp::create(
        w.b, w.loc, VectorType::get({static_cast<int64_t>(lanes.size())}, ct));
    for (auto [i, x] : llvm::enumerate(lanes))
      vec = LLVM::InsertElementOp::create(w.b, w.loc, vec, x,
                                          w.i32c(static_cast<int64_t>(i)));
    Value p = w.gep(base, lin0, st);
    LLVM::StoreOp::create(
        w.b, w.loc, toStorage(w, vec, elem), p,
        /*alignment=*/static_cast<unsigned>(lanes.size() * storageBytes(st)));
  }

  KernelBuilder &w;
  const Source &src;
  ArrayRef<Value> inputArg, outputArg;
  ArrayRef<unsigned> clusterOf;
  Type it;
  const Domain *dom = nullptr;
  unsigned domIndex = 0;
  Value lin0;
  Operation *prologue;
  unsigned numDomains;
  bool inPrologue = false;
  llvm::DenseMap<Value, Value> uniform;
  std::map<std::vector<const void *>, Value> memo, vecLoads;
  std::map<unsigned, ReadInfo> readInfo;
};

/// The domains of the results `outputs` of `src` (grouped by cluster
/// within each), with their vector widths and segments.
SmallVector<Domain> makeDomains(const Source &src, ArrayRef<unsigned> outputs,
                                ArrayRef<unsigned> clusterOf) {
  SmallVector<Domain> domains;
  for (unsigned i : outputs) {
    Value v = src.outputs[i];
    ArrayRef<int64_t> shape = shapedOf(v).getShape();
    auto *d = llvm::find_if(domains, [&](const Domain &x) {
      return ArrayRef<int64_t>(x.shape) == shape;
    });
    if (d == domains.end()) {
      domains.push_back({});
      d = &domains.back();
      d->shape.assign(shape.begin(), shape.end());
      d->elements = shapedOf(v).getNumElements();
    }
    d->outputs.push_back(i);
  }
  for (Domain &d : domains)
    llvm::sort(d.outputs, [&](unsigned a, unsigned b) {
      return std::make_pair(clusterOf[a], a) < std::make_pair(clusterOf[b], b);
    });
  int64_t start = 0;
  for (Domain &d : domains) {
    int64_t inner = d.shape.empty() ? 1 : d.shape.back();
    // The widest element among what may be accessed as vectors here: the
    // arrays whose innermost dimension is this one (a rank-0 step counter
    // does not narrow the parameters' vectors).
    int64_t widest = 1;
    for (Value v : llvm::concat<const Value>(src.inputs, src.outputs)) {
      ArrayRef<int64_t> s = shapedOf(v).getShape();
      if (!s.empty() && s.back() == inner)
        widest = std::max(
            widest, storageBytes(storageType(shapedOf(v).getElementType())));
    }
    for (int64_t vec = 16 / widest; vec >= 2; vec /= 2)
      if (inner % vec == 0) {
        d.vec = vec;
        break;
      }
    d.start = start;
    start += d.units();
  }
  return domains;
}

} // namespace

bool isElementwiseKernelOp(Operation *op) {
  if (auto g = dyn_cast<tgd::FusedOp>(op))
    return g.getKind() == tgd::KernelKind::elementwise ||
           g.getKind() == tgd::KernelKind::optimizer;
  // A constant that is a result of its own is the movement generator's
  // fill kernel (SimtMovement.cpp).
  return isScalarOp(op) && !isa<tgd::ConstantOp>(op);
}

namespace {

/// Where the memory plan put a value: a function argument's buffer or a
/// byte range of the arena (tg.offset(s), tg.alias_arg(s)).
struct Placement {
  int64_t arg = -1, offset = -1, bytes = 0;
  bool overlaps(const Placement &o) const {
    if (arg >= 0 || o.arg >= 0)
      return arg == o.arg;
    return offset < o.offset + o.bytes && o.offset < offset + bytes;
  }
};

/// The planned placement of `v`, if the plan says (a value of an
/// unplanned function or a loop's carried value has none).
std::optional<Placement> placementOf(Value v) {
  ShapedType type = shapedOf(v);
  Placement p;
  p.bytes = type.getNumElements() *
            storageBytes(storageType(type.getElementType()));
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (!isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      return std::nullopt;
    p.arg = arg.getArgNumber();
    return p;
  }
  auto res = cast<OpResult>(v);
  Operation *def = res.getOwner();
  unsigned i = res.getResultNumber();
  auto pick = [&](StringRef many, StringRef one) -> int64_t {
    if (auto a = def->getAttrOfType<DenseI64ArrayAttr>(many))
      return i < a.size() ? a[i] : -1;
    if (auto a = def->getAttrOfType<IntegerAttr>(one))
      return def->getNumResults() == 1 ? a.getInt() : -1;
    return -1;
  };
  p.arg = pick(tgd::attr::aliasArgs, tgd::attr::aliasArg);
  p.offset = pick(tgd::attr::offsets, tgd::attr::offset);
  if (p.arg < 0 && p.offset < 0)
    return std::nullopt;
  return p;
}

/// At most this many pointer parameters per kernel: PTX before ISA 8.1
/// allows 4352 bytes of them (544), and a 12-layer GPT's optimizer group
/// reads and writes over a thousand buffers.
constexpr size_t kMaxParams = 512;

/// The results of `src` split into clusters (results connected through the
/// multi-element operands they read: one parameter's update) and clusters
/// packed into launches of at most kMaxParams buffers.
struct Partition {
  /// Per result: its cluster's place in the emission order.
  SmallVector<unsigned> clusterOf;
  /// The plan's in-place choices ordered the clusters (the code depends on
  /// the plan, so the kernel symbol says so).
  bool ordered = false;
  SmallVector<SmallVector<unsigned>> launches;  ///< results per launch
  SmallVector<llvm::SetVector<unsigned>> reads; ///< inputs per launch
  SmallVector<llvm::SetVector<unsigned>> outputReads; ///< inputs per result
};

/// The inputs each result reads, through the group's body.
SmallVector<llvm::SetVector<unsigned>> inputsOfOutputs(const Source &src) {
  SmallVector<llvm::SetVector<unsigned>> r(src.outputs.size());
  for (auto [o, out] : llvm::enumerate(src.outputs)) {
    SmallVector<Value> work{out};
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      auto in = src.inputIndex.find(v);
      if (in != src.inputIndex.end()) {
        r[o].insert(in->second);
        continue;
      }
      if (Operation *def = v.getDefiningOp())
        llvm::append_range(work, def->getOperands());
    }
  }
  return r;
}

FailureOr<Partition> partition(Operation *op, const Source &src) {
  Partition p;
  p.outputReads = inputsOfOutputs(src);
  const SmallVector<llvm::SetVector<unsigned>> &reads = p.outputReads;
  // Union-find over results sharing a multi-element input.
  SmallVector<unsigned> parent(src.outputs.size());
  std::iota(parent.begin(), parent.end(), 0u);
  auto find = [&](unsigned x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  };
  llvm::DenseMap<unsigned, unsigned> firstReader;
  for (auto [o, ins] : llvm::enumerate(reads))
    for (unsigned k : ins) {
      if (shapedOf(src.inputs[k]).getNumElements() == 1)
        continue; // uniform: read before the loop, shared by all
      auto [it, fresh] = firstReader.try_emplace(k, o);
      if (!fresh)
        parent[find(static_cast<unsigned>(o))] = find(it->second);
    }
  // The plan may put a result in the buffer of an operand another cluster
  // reads (a dying gradient's buffer reused for another parameter's
  // moment): that cluster must load it before the result's cluster stores.
  // Order clusters so (Kahn); clusters on a cycle become one.
  unsigned n = static_cast<unsigned>(src.outputs.size());
  llvm::DenseSet<std::pair<unsigned, unsigned>> edges; // before -> after
  for (unsigned r = 0; r < n; ++r) {
    std::optional<Placement> rp = placementOf(op->getResult(r));
    for (unsigned k = 0; rp && k < op->getNumOperands(); ++k) {
      std::optional<Placement> kp = placementOf(op->getOperand(k));
      if (!kp || !rp->overlaps(*kp))
        continue;
      unsigned in = src.inputIndex.lookup(src.inputs[k]);
      for (unsigned o = 0; o < n; ++o)
        if (reads[o].contains(in) && find(o) != find(r))
          edges.insert({find(o), find(r)});
    }
  }
  SmallVector<unsigned> order; // cluster roots, in emission order
  {
    llvm::SetVector<unsigned> left;
    for (unsigned o = 0; o < n; ++o)
      left.insert(find(o));
    while (!left.empty()) {
      auto ready = llvm::find_if(left, [&](unsigned c) {
        return llvm::none_of(edges, [&](auto e) {
          return e.second == c && e.first != c && left.contains(e.first);
        });
      });
      if (ready == left.end()) {
        // A cycle: what is left is one cluster.
        unsigned root = left.front();
        for (unsigned c : left)
          parent[find(c)] = find(root);
        order.push_back(find(root));
        break;
      }
      order.push_back(*ready);
      left.remove(*ready);
    }
  }
  p.ordered = !edges.empty();
  p.clusterOf.resize(n);
  llvm::MapVector<unsigned, SmallVector<unsigned>> clusters;
  for (unsigned root : order)
    clusters[find(root)];
  for (unsigned o = 0; o < n; ++o)
    clusters[find(o)].push_back(o);
  unsigned rank = 0;
  for (auto &[root, outs] : clusters) {
    for (unsigned o : outs)
      p.clusterOf[o] = rank;
    ++rank;
  }
  for (auto &[root, outs] : clusters) {
    llvm::SetVector<unsigned> ins;
    for (unsigned o : outs)
      ins.insert(reads[o].begin(), reads[o].end());
    if (ins.size() + outs.size() > kMaxParams)
      return op->emitOpError("one chain of its results reads and writes ")
             << ins.size() + outs.size() << " buffers, more than the "
             << kMaxParams << " one GPU kernel takes";
    bool fits = !p.launches.empty();
    if (fits) {
      llvm::SetVector<unsigned> merged = p.reads.back();
      merged.insert(ins.begin(), ins.end());
      fits = merged.size() + p.launches.back().size() + outs.size() <= kMaxParams;
    }
    if (!fits) {
      p.launches.emplace_back();
      p.reads.emplace_back();
    }
    llvm::append_range(p.launches.back(), outs);
    p.reads.back().insert(ins.begin(), ins.end());
  }
  return p;
}

} // namespace

FailureOr<std::vector<KernelLaunch>>
lowerElementwiseOp(Operation *op, Target t, ModuleOp kernels) {
  Source src = makeSource(op);
  FailureOr<Partition> parts = partition(op, src);
  if (failed(parts))
    return failure();
  bool optimizer = isa<tgd::FusedOp>(op) &&
                   cast<tgd::FusedOp>(op).getKind() == tgd::KernelKind::optimizer;
  std::string base = kernelSymbol(op, optimizer ? "tg_opt" : "tg_ew", t);
  if (parts->ordered) {
    std::string key;
    for (unsigned c : parts->clusterOf)
      key += std::to_string(c) + ",";
    base += "_o" + llvm::utohexstr(llvm::xxh3_64bits(key));
  }
  MLIRContext *ctx = kernels.getContext();
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  ctx->getOrLoadDialect<NVVM::NVVMDialect>();
  ctx->getOrLoadDialect<scf::SCFDialect>();
  Location loc = op->getLoc();
  Type ptr1 = LLVM::LLVMPointerType::get(ctx, 1);

  std::vector<KernelLaunch> launches;
  SmallVector<LLVM::LLVMFuncOp> built;
  // Per launch: the domains, and how each input was read.
  SmallVector<SmallVector<Domain>> launchDomains;
  SmallVector<std::map<unsigned, ReadInfo>> launchReads;
  auto dropBuilt = [&] {
    for (LLVM::LLVMFuncOp f : built)
      f.erase();
  };
  for (auto [li, outs] : llvm::enumerate(parts->launches)) {
    SmallVector<Domain> domains = makeDomains(src, outs, parts->clusterOf);
    int64_t units = 0, elements = 0;
    for (const Domain &d : domains) {
      units += d.units();
      elements += d.elements;
    }
    KernelLaunch launch;
    launch.symbol = parts->launches.size() == 1
                        ? base
                        : base + "_" + std::to_string(li);
    launch.block = {kBlock, 1, 1};
    launch.grid = {static_cast<uint32_t>(std::clamp<int64_t>(
                       (units + kBlock - 1) / kBlock, 1, kMaxGrid)),
                   1, 1};
    for (unsigned k : parts->reads[li])
      launch.params.push_back({KernelParam::Kind::Operand, k});
    for (unsigned o : outs)
      launch.params.push_back({KernelParam::Kind::Result, o});

    OpBuilder mb = OpBuilder::atBlockEnd(kernels.getBody());
    SmallVector<Type> argTys(launch.params.size(), ptr1);
    auto fn = LLVM::LLVMFuncOp::create(
        mb, loc, launch.symbol,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), argTys));
    built.push_back(fn);
    fn->setAttr("nvvm.kernel", mb.getUnitAttr());
    fn->setAttr("nvvm.maxntid", mb.getDenseI32ArrayAttr({kBlock, 1, 1}));
    Block *entry = fn.addEntryBlock(mb);
    KernelBuilder w(entry, loc);
    SmallVector<Value> inputArg(src.inputs.size()), outputArg(src.outputs.size());
    unsigned a = 0;
    for (unsigned k : parts->reads[li])
      inputArg[k] = entry->getArgument(a++);
    for (unsigned o : outs)
      outputArg[o] = entry->getArgument(a++);
    // 32-bit index arithmetic unless a tensor has 2^31 elements or more.
    Type it = elements < (int64_t(1) << 31) - kMaxGrid * kBlock ? w.i32 : w.i64;
    auto cast = [&](Value x) { return it == w.i32 ? x : w.zext64(x); };
    auto c = [&](int64_t v) { return it == w.i32 ? w.i32c(v) : w.i64c(v); };
    Value tid = NVVM::ThreadIdXOp::create(w.b, loc, w.i32);
    Value bid = NVVM::BlockIdXOp::create(w.b, loc, w.i32);
    Value nblk = NVVM::GridDimXOp::create(w.b, loc, w.i32);
    Value first = cast(w.add(w.muli(bid, kBlock), tid));
    Value step = w.mul(cast(nblk), c(kBlock));
    auto loop = scf::ForOp::create(w.b, loc, first, c(units), step);
    w.b.setInsertionPoint(loop.getBody()->getTerminator());
    Value u = loop.getInductionVar();
    Emitter em(w, src, inputArg, outputArg, parts->clusterOf, it, loop,
               static_cast<unsigned>(domains.size()));
    for (auto [di, d] : llvm::enumerate(domains)) {
      if (d.units() == 0)
        continue; // an empty tensor: nothing to write
      OpBuilder::InsertionGuard guard(w.b);
      Value local = u;
      if (domains.size() > 1) {
        // The segment [start, start + units) of the flat index space.
        Value in = w.ult(w.sub(u, c(d.start)), c(d.units()));
        w.openIf(in);
        local = w.sub(u, c(d.start));
      }
      if (failed(em.emitUnit(d, static_cast<unsigned>(di), local))) {
        dropBuilt();
        return op->emitOpError("cannot be compiled to a GPU kernel (see the "
                               "error at the op inside)");
      }
    }
    w.b.setInsertionPointToEnd(entry);
    LLVM::ReturnOp::create(w.b, loc, ValueRange{});
    launches.push_back(launch);
    launchDomains.push_back(domains);
    launchReads.push_back(em.reads());
  }

  // The planner's in-place choices must be ones these kernels are safe
  // for: an operand sharing a result's buffer is read only at the elements
  // the same thread writes, in the same launch, before the result's
  // cluster is stored.
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    std::optional<Placement> rp = placementOf(op->getResult(r));
    unsigned lr = 0, dr = 0;
    for (auto [li, domains] : llvm::enumerate(launchDomains))
      for (auto [di, d] : llvm::enumerate(domains))
        if (llvm::is_contained(d.outputs, r)) {
          lr = static_cast<unsigned>(li);
          dr = static_cast<unsigned>(di);
        }
    for (unsigned k = 0; rp && k < op->getNumOperands(); ++k) {
      std::optional<Placement> kp = placementOf(op->getOperand(k));
      if (!kp || !rp->overlaps(*kp))
        continue;
      unsigned in = src.inputIndex.lookup(src.inputs[k]);
      bool safe = rp->bytes == kp->bytes &&
                  storageBytes(storageType(shapedOf(src.inputs[k]).getElementType())) ==
                      storageBytes(storageType(
                          shapedOf(src.outputs[r]).getElementType()));
      // Reads by an earlier launch are over; in the result's launch only
      // this thread's own elements; none after it.
      for (auto [li, reads] : llvm::enumerate(launchReads)) {
        auto ri = reads.find(in);
        if (ri == reads.end() || li < lr)
          continue;
        safe = safe && li == lr && ri->second.identity &&
               ri->second.domains == std::set<unsigned>{dr};
      }
      // A multi-element operand is loaded by the clusters that read it:
      // they must come no later than the result's cluster, which stores last.
      if (shapedOf(src.inputs[k]).getNumElements() > 1)
        for (auto [o, ins] : llvm::enumerate(parts->outputReads))
          if (ins.contains(in))
            safe = safe && parts->clusterOf[o] <= parts->clusterOf[r];
      if (!safe) {
        dropBuilt();
        return op->emitOpError("result #")
               << r << " shares the buffer of operand #" << k
               << ", which the GPU kernel reads at other elements than it "
                  "writes";
      }
    }
  }
  // Two ops that print alike share their kernels (KernelGen.h).
  for (LLVM::LLVMFuncOp f : built)
    if (kernels.lookupSymbol(f.getSymName()) != f)
      f.erase();
  return launches;
}

} // namespace tg::nvptx
