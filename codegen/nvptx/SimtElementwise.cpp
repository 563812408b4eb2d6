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
// Aliasing (KernelGen.h): a thread reads all its operand elements before it
// stores, so a result may share the buffer of an operand that is read
// only at the result's own elements (same shape and element size, read in
// the result's domain only). Any other pairing the planner asked for
// (tg.alias_arg(s)) is refused with an error.
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
  Emitter(KernelBuilder &w, const Source &src, ArrayRef<Value> params, Type it,
          Operation *prologue, unsigned numDomains)
      : w(w), src(src), params(params), it(it), prologue(prologue),
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
    // Compute everything first: a result may share an operand's buffer.
    SmallVector<SmallVector<Value>> vals;
    for (unsigned o : d.outputs) {
      SmallVector<Value> lanes;
      for (int64_t lane = 0; lane < d.vec; ++lane) {
        FailureOr<Value> v = value(src.outputs[o], coords, lane,
                                   /*inner=*/true);
        if (failed(v))
          return failure();
        lanes.push_back(*v);
      }
      vals.push_back(lanes);
    }
    for (auto [k, o] : llvm::enumerate(d.outputs))
      store(params[src.inputs.size() + o], shapedOf(src.outputs[o]).getElementType(),
            vals[k]);
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
      Value base = params[in->second];
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
  ArrayRef<Value> params;
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

/// The domains of `src`'s results, with their vector widths and segments.
SmallVector<Domain> makeDomains(const Source &src) {
  SmallVector<Domain> domains;
  for (auto [i, v] : llvm::enumerate(src.outputs)) {
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
    d->outputs.push_back(static_cast<unsigned>(i));
  }
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

} // namespace

bool isElementwiseKernelOp(Operation *op) {
  if (auto g = dyn_cast<tgd::FusedOp>(op))
    return g.getKind() == tgd::KernelKind::elementwise ||
           g.getKind() == tgd::KernelKind::optimizer;
  // A constant that is a result of its own is the movement generator's
  // fill kernel (SimtMovement.cpp).
  return isScalarOp(op) && !isa<tgd::ConstantOp>(op);
}

FailureOr<std::vector<KernelLaunch>>
lowerElementwiseOp(Operation *op, Target t, ModuleOp kernels) {
  Source src = makeSource(op);
  SmallVector<Domain> domains = makeDomains(src);
  int64_t units = 0, elements = 0;
  for (const Domain &d : domains) {
    units += d.units();
    elements += d.elements;
  }
  bool optimizer = isa<tgd::FusedOp>(op) &&
                   cast<tgd::FusedOp>(op).getKind() == tgd::KernelKind::optimizer;
  std::string symbol = kernelSymbol(op, optimizer ? "tg_opt" : "tg_ew", t);

  KernelLaunch launch;
  launch.symbol = symbol;
  launch.block = {kBlock, 1, 1};
  launch.grid = {static_cast<uint32_t>(std::clamp<int64_t>(
                     (units + kBlock - 1) / kBlock, 1, kMaxGrid)),
                 1, 1};
  for (unsigned i = 0; i < src.inputs.size(); ++i)
    launch.params.push_back({KernelParam::Kind::Operand, i});
  for (unsigned i = 0; i < src.outputs.size(); ++i)
    launch.params.push_back({KernelParam::Kind::Result, i});

  MLIRContext *ctx = kernels.getContext();
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  ctx->getOrLoadDialect<NVVM::NVVMDialect>();
  ctx->getOrLoadDialect<scf::SCFDialect>();
  Location loc = op->getLoc();
  OpBuilder mb = OpBuilder::atBlockEnd(kernels.getBody());
  Type ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
  SmallVector<Type> argTys(launch.params.size(), ptr1);
  auto fn = LLVM::LLVMFuncOp::create(
      mb, loc, symbol,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), argTys));
  fn->setAttr("nvvm.kernel", mb.getUnitAttr());
  fn->setAttr("nvvm.maxntid", mb.getDenseI32ArrayAttr({kBlock, 1, 1}));
  Block *entry = fn.addEntryBlock(mb);
  KernelBuilder w(entry, loc);
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
  SmallVector<Value> params(entry->getArguments());
  Emitter em(w, src, params, it, loop, static_cast<unsigned>(domains.size()));
  LogicalResult ok = success();
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
      ok = failure();
      break;
    }
  }
  if (failed(ok)) {
    fn.erase();
    return op->emitOpError("cannot be compiled to a GPU kernel (see the "
                           "error at the op inside)");
  }
  w.b.setInsertionPointToEnd(entry);
  LLVM::ReturnOp::create(w.b, loc, ValueRange{});

  // The planner's in-place choices must be ones this kernel is safe for:
  // an operand sharing a result's buffer is read only at the elements the
  // same thread writes.
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    std::optional<Placement> rp = placementOf(op->getResult(r));
    unsigned dr = 0;
    for (auto [di, d] : llvm::enumerate(domains))
      if (llvm::is_contained(d.outputs, r))
        dr = static_cast<unsigned>(di);
    for (unsigned k = 0; rp && k < op->getNumOperands(); ++k) {
      std::optional<Placement> kp = placementOf(op->getOperand(k));
      if (!kp || !rp->overlaps(*kp))
        continue;
      auto ri = em.reads().find(src.inputIndex.lookup(src.inputs[k]));
      bool safe =
          ri == em.reads().end() ||
          (ri->second.identity && ri->second.domains == std::set<unsigned>{dr} &&
           rp->bytes == kp->bytes &&
           storageBytes(storageType(shapedOf(src.inputs[k]).getElementType())) ==
               storageBytes(
                   storageType(shapedOf(src.outputs[r]).getElementType())));
      if (!safe) {
        fn.erase();
        return op->emitOpError("result #")
               << r << " shares the buffer of operand #" << k
               << ", which the GPU kernel reads at other elements than it "
                  "writes";
      }
    }
  }
  // Two ops that print alike share one kernel (KernelGen.h).
  if (hasKernel(kernels, symbol) && kernels.lookupSymbol(symbol) != fn)
    fn.erase();
  return std::vector<KernelLaunch>{launch};
}

} // namespace tg::nvptx
