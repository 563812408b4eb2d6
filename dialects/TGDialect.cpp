//===- TGDialect.cpp - the tg dialect ---------------------------*- C++ -*-===//
//
// Dialect registration, the !tg.comm type, the #tg.init attribute, constant
// materialisation and the verifiers of the attributes that tag model
// functions (tg.name, tg.role, tg.init on arguments and results; tg.model,
// tg.hyper, tg.train on modules).
//
//===----------------------------------------------------------------------===//

#include "dialects/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tg;

#include "dialects/TGDialect.cpp.inc"
#include "dialects/TGEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TGAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/TGTypes.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/TGOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/TGTypes.cpp.inc"
      >();
  registerAttributes();
}

void TGDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/TGAttrs.cpp.inc"
      >();
}

Operation *TGDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

//===----------------------------------------------------------------------===//
// !tg.comm
//===----------------------------------------------------------------------===//

LogicalResult CommType::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t ranks) {
  if (ranks < 1)
    return emitError() << "a communicator has at least 1 rank, got " << ranks;
  return success();
}

//===----------------------------------------------------------------------===//
// #tg.init
//===----------------------------------------------------------------------===//

/// Number of arguments each initializer kind takes, or -1 if unknown.
static int initializerArity(StringRef kind) {
  return llvm::StringSwitch<int>(kind)
      .Cases({"zeros", "ones", "glorot_uniform", "glorot_normal"}, 0)
      .Cases({"kaiming_uniform", "kaiming_normal"}, 0)
      .Case("constant", 1)
      .Cases({"normal", "uniform"}, 2)
      .Default(-1);
}

LogicalResult
InitializerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        StringRef kind, DenseF64ArrayAttr argsAttr) {
  ArrayRef<double> args = argsAttr.asArrayRef();
  int arity = initializerArity(kind);
  if (arity < 0)
    return emitError() << "unknown initializer '" << kind
                       << "' (expected zeros, ones, constant, normal, uniform, "
                          "glorot_uniform, glorot_normal, kaiming_uniform or "
                          "kaiming_normal)";
  if (static_cast<int>(args.size()) != arity)
    return emitError() << "initializer '" << kind << "' takes " << arity
                       << " argument(s), got " << args.size();
  if (kind == "normal" && !(args[1] > 0))
    return emitError() << "normal initializer needs std > 0, got " << args[1];
  if (kind == "uniform" && !(args[0] < args[1]))
    return emitError() << "uniform initializer needs lo < hi, got (" << args[0]
                       << ", " << args[1] << ")";
  return success();
}

Attribute InitializerAttr::parse(AsmParser &parser, Type) {
  std::string kind;
  SmallVector<double> args;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeywordOrString(&kind))
    return {};
  if (succeeded(parser.parseOptionalLParen())) {
    if (parser.parseCommaSeparatedList([&] {
          double v;
          if (parser.parseFloat(v))
            return failure();
          args.push_back(v);
          return success();
        }) ||
        parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return InitializerAttr::getChecked(
      [&] { return parser.emitError(loc); }, parser.getContext(), kind,
      DenseF64ArrayAttr::get(parser.getContext(), args));
}

void InitializerAttr::print(AsmPrinter &printer) const {
  printer << '<' << getKind();
  if (!getValues().empty()) {
    printer << '(';
    llvm::interleaveComma(getValues(), printer,
                          [&](double v) { printer << APFloat(v); });
    printer << ')';
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// Attributes on model functions and modules
//===----------------------------------------------------------------------===//

/// Checks one tg.* attribute on a function argument (isArg) or result.
static LogicalResult verifyModelAttr(Operation *op, NamedAttribute attr,
                                     unsigned index, bool isArg) {
  StringRef name = attr.getName().strref();
  StringRef what = isArg ? "argument" : "result";
  auto fail = [&]() {
    return op->emitOpError() << what << " #" << index << ": ";
  };
  if (name == attr::name) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || str.getValue().empty())
      return fail() << "'" << name << "' must be a non-empty string";
    return success();
  }
  if (name == attr::role) {
    auto role = dyn_cast<RoleAttr>(attr.getValue());
    // Training-step functions also pass optimizer state and the step
    // counter in and out; parameters come back updated.
    static constexpr Role argRoles[] = {Role::param, Role::input, Role::state,
                                        Role::step};
    static constexpr Role resultRoles[] = {Role::loss,  Role::output,
                                           Role::grad,  Role::param,
                                           Role::state, Role::step};
    bool ok = role && (isArg ? llvm::is_contained(argRoles, role.getValue())
                             : llvm::is_contained(resultRoles, role.getValue()));
    if (!ok)
      return fail() << "'" << name << "' must be #tg.role<R> with R one of "
                    << (isArg ? "param, input, state, step"
                              : "loss, output, grad, param, state, step");
    return success();
  }
  if (name == attr::init && isArg) {
    if (!isa<InitializerAttr>(attr.getValue()))
      return fail() << "'" << name << "' must be a #tg.init attribute";
    return success();
  }
  if (name == attr::shardOf) { // ZeRO: a flat shard of this shape
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!shape || llvm::any_of(shape.asArrayRef(),
                               [](int64_t d) { return d < 0; }))
      return fail() << "'" << name
                    << "' must be an i64 array of non-negative dimensions";
    return success();
  }
  if (name == attr::arena && isArg) { // tg-bind-arena's appended arena
    if (!isa<UnitAttr>(attr.getValue()))
      return fail() << "'" << name << "' must be a unit attribute";
    return success();
  }
  return fail() << "unknown tg attribute '" << name << "'";
}

LogicalResult TGDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  if (failed(verifyModelAttr(op, attr, argIndex, /*isArg=*/true)))
    return failure();
  // An initializer only makes sense on a float parameter.
  if (attr.getName() == attr::init) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    if (fn && argIndex < fn.getNumArguments() &&
        !isa<FloatType>(getElementTypeOrSelf(fn.getArgumentTypes()[argIndex])))
      return op->emitOpError()
             << "argument #" << argIndex
             << ": 'tg.init' on a non-float argument; only float parameters "
                "are initialised";
  }
  return success();
}

LogicalResult TGDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  return verifyModelAttr(op, attr, resultIndex, /*isArg=*/false);
}

LogicalResult TGDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  Attribute value = attr.getValue();
  auto expect = [&](bool ok, StringRef kind) -> LogicalResult {
    if (ok)
      return success();
    return op->emitOpError() << "'" << name << "' must be " << kind;
  };
  if (name == attr::model)
    return expect(isa<StringAttr>(value), "a string");
  if (name == attr::hyper || name == attr::train || name == attr::arenaBytes)
    return expect(isa<DictionaryAttr>(value), "a dictionary");
  // The memory plan (tg-plan-memory): offsets and sizes on ops, a summary
  // on the planned function.
  if (name == attr::offset || name == attr::bytes || name == attr::aliasArg)
    return expect(isa<IntegerAttr>(value), "an integer");
  if (name == attr::offsets || name == attr::aliasArgs) // per result of a multi-result op (-1: none)
    return expect(isa<DenseI64ArrayAttr>(value), "an i64 array");
  if (name == attr::memory)
    return expect(isa<MemoryPlanAttr>(value), "a #tg.memory<...> plan");
  // Op scratch (tg-size-scratch, tg-plan-memory): bytes and arena offset,
  // i64 like every byte count of the plan.
  if (name == attr::scratch || name == attr::scratchOffset) {
    auto n = dyn_cast<IntegerAttr>(value);
    return expect(n && n.getType().isSignlessInteger(64) &&
                      !n.getValue().isNegative(),
                  "a non-negative i64 (bytes)");
  }
  // Rematerialisation (tg-rematerialize).
  if (name == attr::recomputed)
    return expect(isa<UnitAttr>(value), "a unit attribute");
  if (name == attr::remat)
    return expect(isa<RematAttr>(value), "a #tg.remat<...> record");
  // Budget fitting (tg-fit-budget): on the module only.
  if (name == attr::budgetFit) {
    if (!isa<ModuleOp>(op))
      return op->emitOpError() << "'" << name << "' applies only to modules";
    return expect(isa<BudgetFitAttr>(value), "a #tg.budget_fit<...> record");
  }
  // Precision (tg-assign-precision): a float accumulator, on contractions
  // only, at least as wide as the result it is rounded to.
  if (name == attr::acc) {
    auto type = dyn_cast<TypeAttr>(value);
    auto acc = type ? dyn_cast<FloatType>(type.getValue()) : FloatType();
    if (failed(expect(bool(acc), "a float type")))
      return failure();
    if (!isContraction(op) || op->getNumResults() != 1)
      return op->emitOpError() << "'" << name
                               << "' applies only to matmul, conv2d and the "
                                  "conv2d gradients";
    auto elt = dyn_cast<FloatType>(
        cast<ShapedType>(op->getResult(0).getType()).getElementType());
    if (!elt || acc.getWidth() < elt.getWidth())
      return op->emitOpError()
             << "'" << name << "' = " << acc
             << " is narrower than the result's element type or the result "
                "is not a float";
    return success();
  }
  if (name == attr::precision)
    return expect(isa<StringAttr>(value), "a string (the precision rule)");
  // Fusion (tg-fuse): the cost model's numbers, on fusion groups only.
  if (name == attr::flops || name == attr::bytesRead ||
      name == attr::bytesWritten) {
    auto n = dyn_cast<IntegerAttr>(value);
    if (failed(expect(n && !n.getValue().isNegative(),
                      "a non-negative integer")))
      return failure();
    if (!isa<FusedOp>(op))
      return op->emitOpError() << "'" << name << "' applies only to tg.fused";
    return success();
  }
  // GPU backend (tg-configure-gemms): one tile config per target, on the
  // ops that become GEMM kernels.
  if (name == attr::tileConfigs) {
    auto list = dyn_cast<ArrayAttr>(value);
    if (failed(expect(list && !list.empty() &&
                          llvm::all_of(list, llvm::IsaPred<TileConfigAttr>),
                      "a non-empty array of #tg.tile_config<...>")))
      return failure();
    auto fused = dyn_cast<FusedOp>(op);
    if (!isa<MatmulOp>(op) && !(fused && fused.getKind() == KernelKind::gemm))
      return op->emitOpError()
             << "'" << name << "' applies only to tg.matmul and gemm groups";
    llvm::StringSet<> targets;
    for (Attribute a : list)
      if (!targets.insert(cast<TileConfigAttr>(a).getTarget()).second)
        return op->emitOpError() << "'" << name << "' has two configs for "
                                 << cast<TileConfigAttr>(a).getTarget();
    return success();
  }
  // Data parallelism (tg-data-parallel): the job's rank count.
  if (name == attr::ranks) {
    auto n = dyn_cast<IntegerAttr>(value);
    return expect(n && n.getValue().getSExtValue() >= 1,
                  "an integer of at least 1 (the number of ranks)");
  }
  if (name == attr::zero) {
    auto n = dyn_cast<IntegerAttr>(value);
    return expect(n && n.getValue().getSExtValue() == 1,
                  "1 (ZeRO stage 1, the one implemented)");
  }
  return op->emitOpError() << "unknown tg attribute '" << name << "'";
}

LogicalResult
BudgetFitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef choice, int64_t level, int64_t microBatches,
                      int64_t zero, StringRef precision, int64_t budget, int64_t peak,
                      int64_t unconstrained, int64_t extraFlops,
                      int64_t stepFlops, bool fits) {
  if (!llvm::is_contained(
          {"none", "shard", "recompute", "micro-batch", "precision"}, choice))
    return emitError() << "#tg.budget_fit choice must be none, shard, "
                          "recompute, micro-batch or precision, got '"
                       << choice << "'";
  if (zero != 0 && zero != 1)
    return emitError() << "#tg.budget_fit zero must be 0 or 1";
  if (choice == "shard" && zero != 1)
    return emitError() << "#tg.budget_fit choice 'shard' needs zero = 1";
  if (level < 0 || level > 4)
    return emitError() << "#tg.budget_fit level must be 0 to 4";
  if (microBatches < 1)
    return emitError() << "#tg.budget_fit micro_batches must be at least 1";
  for (int64_t v : {budget, peak, unconstrained, extraFlops, stepFlops})
    if (v < 0)
      return emitError() << "#tg.budget_fit sizes must not be negative";
  if (extraFlops > stepFlops)
    return emitError() << "#tg.budget_fit extra_flops exceed step_flops";
  return success();
}

LogicalResult
TileConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t bm, int64_t bn, int64_t bk, int64_t stages,
                       int64_t groupM, int64_t warpsM, int64_t warpsN,
                       int64_t consumers, bool persistent, StringRef target,
                       StringRef kernel) {
  // The shapes the generators in codegen/nvptx can build; a config outside
  // them would be a miscompiled kernel, not a slow one.
  auto bad = [&]() { return emitError() << "#tg.tile_config: "; };
  if (target != "sm_80" && target != "sm_90a")
    return bad() << "target must be sm_80 or sm_90a, got '" << target << "'";
  if (kernel == "simt") {
    // SimtGemm.cpp's one tile.
    if (bm != 64 || bn != 64 || bk != 16 || stages != 1 || groupM != 1 ||
        warpsM != 1 || warpsN != 1 || consumers != 0 || persistent)
      return bad() << "the simt kernel has one tile: bm = bn = 64, bk = 16, "
                      "stages = group_m = warps_m = warps_n = 1, no "
                      "consumer_warpgroups, not persistent";
    return success();
  }
  if (kernel == "mma_sync") {
    if (target != "sm_90a")
      return bad() << "kernel \"mma_sync\" is sm_80's kernel on sm_90a; on "
                      "sm_80 it is the tensor_core kernel";
    target = "sm_80"; // the sm_80 generator's fields and limits
  } else if (kernel == "wgmma_staged") {
    // sm_90a's wgmma kernel over realigned copies of odd-pitch operands.
    if (target != "sm_90a")
      return bad() << "kernel \"wgmma_staged\" is sm_90a's wgmma kernel "
                      "over realigned copies; sm_80 has no TMA";
  } else if (kernel != "tensor_core") {
    return bad() << "kernel must be tensor_core, mma_sync, wgmma_staged or "
                    "simt, got '"
                 << kernel << "'";
  }
  for (int64_t v : {bm, bn, bk, stages, groupM})
    if (v < 1)
      return bad() << "bm, bn, bk, stages and group_m must be positive";
  if (bk % 16 || stages < 2)
    return bad() << "bk must be a multiple of 16 and stages at least 2";
  int64_t ringBytes = stages * (bm + bn) * bk * 2;
  if (target == "sm_80") {
    if (warpsM < 1 || warpsN < 1 || bm % (16 * warpsM) || bn % (16 * warpsN))
      return bad() << "on sm_80 each warp's tile (bm/warps_m x bn/warps_n) "
                      "must be a multiple of 16x16";
    if (consumers != 0 || persistent)
      return bad() << "consumer_warpgroups and persistent are sm_90a's; on "
                      "sm_80 they must be 0 and false";
    // 163 KiB: the most dynamic shared memory a CTA may have on sm_80.
    if (ringBytes > 163 * 1024)
      return bad() << "the operand ring needs " << ringBytes
                   << " bytes of shared memory, over sm_80's 166912";
    return success();
  }
  if (consumers < 1 || consumers > 2 || bm != 64 * consumers)
    return bad() << "on sm_90a bm must be 64 x consumer_warpgroups (1 or 2)";
  if (bn % 64 || bn > 256 || bk != 64)
    return bad() << "on sm_90a bn must be a multiple of 64 up to 256 and bk "
                    "64 (one 128-byte swizzle row)";
  if (warpsM != 1 || warpsN != 1 || !persistent)
    return bad() << "on sm_90a warps_m and warps_n must be 1 and the grid "
                    "persistent";
  // 227 KiB less the ring's mbarriers.
  if (ringBytes + 16 * stages > 227 * 1024)
    return bad() << "the operand ring needs " << ringBytes
                 << " bytes of shared memory, over sm_90a's 232448";
  return success();
}

LogicalResult
MemoryPlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t params, int64_t optimizer, int64_t inputs,
                       int64_t grads, int64_t activations, int64_t workspace,
                       int64_t persistent, int64_t transient, int64_t peak,
                       int64_t lowerBound, int64_t naive) {
  for (int64_t v : {params, optimizer, inputs, grads, activations, workspace,
                    persistent, transient, peak, lowerBound, naive})
    if (v < 0)
      return emitError() << "#tg.memory sizes must not be negative";
  return success();
}
