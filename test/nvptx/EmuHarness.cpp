//===- EmuHarness.cpp - run generated kernels on the PTX emulator -*- C++ -*-===//
//
// See EmuHarness.h.
//
//===----------------------------------------------------------------------===//
#include "EmuHarness.h"

#include "codegen/nvptx/Gemm.h"
#include "dialects/TGDialect.h"
#include "runtime/emulator/Emulator.h"
#include "runtime/emulator/TensorMap.h"


#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <limits>

using namespace mlir;

namespace tgtest {

namespace {

size_t storageBytes(DType d) {
  switch (d) {
  case DType::F64:
  case DType::I64:
  case DType::Index:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I1:
    return 1;
  }
  return 8;
}

template <typename T> void put(uint8_t *p, T v) { std::memcpy(p, &v, sizeof v); }
template <typename T> T get(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

int64_t argAlias(Operation *op, unsigned result) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(mlir::tg::attr::aliasArgs))
    return result < a.size() ? a[result] : -1;
  if (auto a = op->getAttrOfType<IntegerAttr>(mlir::tg::attr::aliasArg))
    return a.getInt();
  return -1;
}

} // namespace

std::string printModule(ModuleOp m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os);
  return text;
}

std::vector<uint8_t> pack(const Tensor &t) {
  size_t w = storageBytes(t.dtype);
  std::vector<uint8_t> out(t.data.size() * w);
  for (size_t i = 0; i < t.data.size(); ++i) {
    uint8_t *p = out.data() + i * w;
    double v = t.data[i];
    switch (t.dtype) {
    case DType::F64:
      put(p, v);
      break;
    case DType::F32:
      put(p, static_cast<float>(v));
      break;
    case DType::BF16: { // exact: the value is a bf16 already
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      put(p, static_cast<uint16_t>(bits >> 16));
      break;
    }
    case DType::F16:
      put(p, static_cast<_Float16>(v));
      break;
    case DType::I64:
    case DType::Index:
      put(p, static_cast<int64_t>(v));
      break;
    case DType::I32:
      put(p, static_cast<int32_t>(v));
      break;
    case DType::I1:
      put(p, static_cast<uint8_t>(v != 0));
      break;
    }
  }
  return out;
}

Tensor unpack(const std::vector<uint8_t> &bytes, ArrayRef<int64_t> shape,
              DType dtype) {
  Tensor t;
  t.shape.assign(shape.begin(), shape.end());
  t.dtype = dtype;
  size_t w = storageBytes(dtype), n = bytes.size() / w;
  t.data.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t *p = bytes.data() + i * w;
    switch (dtype) {
    case DType::F64:
      t.data[i] = get<double>(p);
      break;
    case DType::F32:
      t.data[i] = get<float>(p);
      break;
    case DType::BF16: {
      uint32_t bits = uint32_t(get<uint16_t>(p)) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      t.data[i] = f;
      break;
    }
    case DType::F16:
      t.data[i] = static_cast<double>(get<_Float16>(p));
      break;
    case DType::I64:
    case DType::Index:
      t.data[i] = static_cast<double>(get<int64_t>(p));
      break;
    case DType::I32:
      t.data[i] = get<int32_t>(p);
      break;
    case DType::I1:
      t.data[i] = get<uint8_t>(p) != 0;
      break;
    }
  }
  return t;
}

OwningOpRef<ModuleOp> standaloneFunction(Operation *op) {
  MLIRContext *ctx = op->getContext();
  Location loc = op->getLoc();
  OwningOpRef<ModuleOp> m = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockEnd(m->getBody());
  auto fn = func::FuncOp::create(
      b, loc, "f",
      FunctionType::get(ctx, op->getOperandTypes(), op->getResultTypes()));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping map;
  for (auto [v, a] : llvm::zip(op->getOperands(), entry->getArguments()))
    map.map(v, a);
  Operation *copy = b.clone(*op, map);
  func::ReturnOp::create(b, loc, copy->getResults());
  return m;
}

bool runOnEmulator(Operation *op, ArrayRef<Tensor> inputs,
                   std::vector<Tensor> &outputs, std::string &error,
                   ::tg::nvptx::Target target) {
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(op->getLoc());
  FailureOr<std::vector<::tg::nvptx::KernelLaunch>> launches =
      ::tg::nvptx::lowerOpToKernels(op, target, *kernels);
  if (failed(launches)) {
    error = "lowerOpToKernels failed";
    return false;
  }
  std::string ptx;
  if (!::tg::nvptx::compileMLIRToPTX(printModule(*kernels), target, ptx,
                                     error))
    return false;
  std::unique_ptr<tgrt::emu::PtxModule> mod =
      tgrt::emu::PtxModule::parse(ptx, error);
  if (!mod)
    return false;

  // One buffer per operand, then per result unless it lives in place of an
  // operand (the function argument the plan names).
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<size_t> operandBuf, resultBuf;
  for (const Tensor &t : inputs) {
    operandBuf.push_back(buffers.size());
    buffers.push_back(pack(t));
  }
  std::vector<DType> resultTypes;
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    auto type = cast<ShapedType>(op->getResult(r).getType());
    DType d = *mlir::tg::ref::dtypeOf(type.getElementType());
    resultTypes.push_back(d);
    int64_t arg = argAlias(op, r);
    size_t buf = buffers.size();
    for (unsigned k = 0; k < op->getNumOperands(); ++k)
      if (auto ba = dyn_cast<BlockArgument>(op->getOperand(k)))
        if (arg >= 0 && ba.getArgNumber() == arg)
          buf = operandBuf[k];
    if (buf == buffers.size())
      buffers.emplace_back(type.getNumElements() * storageBytes(d), 0xcd);
    resultBuf.push_back(buf);
  }
  tgrt::emu::Memory mem;
  for (auto &b : buffers)
    mem.add(b.data(), b.size());
  TensorMaps maps;
  // The op's scratch: one buffer every launch of it shares (a split
  // reduction's partials), garbage at the start as on the device.
  uint64_t scratchBytes = 0;
  for (const ::tg::nvptx::KernelLaunch &l : *launches)
    scratchBytes = std::max(scratchBytes, l.scratchBytes);
  std::vector<uint8_t> scratch(scratchBytes, 0xcd);
  if (scratchBytes)
    mem.add(scratch.data(), scratch.size());
  for (const ::tg::nvptx::KernelLaunch &l : *launches) {
    std::vector<uint64_t> params;
    for (const ::tg::nvptx::KernelParam &p : l.params) {
      using Kind = ::tg::nvptx::KernelParam::Kind;
      if (p.kind == Kind::Scratch) {
        params.push_back(reinterpret_cast<uint64_t>(scratch.data()));
        continue;
      }
      size_t buf = p.kind == Kind::Result ? resultBuf[p.index]
                                          : operandBuf[p.index];
      params.push_back(reinterpret_cast<uint64_t>(buffers[buf].data()));
      // A staged map (kernel = "wgmma_staged") reads the operand's
      // realigned copy, which an earlier launch wrote into the scratch.
      if (p.kind == Kind::TensorMap && p.map.staged)
        params.back() =
            reinterpret_cast<uint64_t>(scratch.data()) + p.map.scratchOffset;
      if (p.kind != Kind::TensorMap)
        continue;
      params.back() = maps.add(p.map, params.back(), mem, error);
      if (!params.back())
        return false;
    }
    if (!mod->launch(l.symbol, l.grid, l.block, l.dynamicSharedBytes, params,
                     mem, error))
      return false;
  }
  outputs.clear();
  for (unsigned r = 0; r < op->getNumResults(); ++r)
    outputs.push_back(unpack(
        buffers[resultBuf[r]],
        cast<ShapedType>(op->getResult(r).getType()).getShape(),
        resultTypes[r]));
  return true;
}

uint64_t TensorMaps::add(const ::tg::nvptx::TensorMapParam &m, uint64_t base,
                         tgrt::emu::Memory &mem, std::string &error) {
  static_assert(sizeof(Map) == tgrt::emu::kTensorMapBytes);
  maps_.emplace_back();
  // Every argument the schedule writes for the runtime (the row pitch of a
  // staged copy included), through the fake driver's encoder.
  ::tg::rt::cuda::TensorMapArgs a = m.driverArgs();
  std::string why = tgrt::emu::encodeTensorMapTiled(
      maps_.back().bytes, uint32_t(a.dataType), a.rank,
      reinterpret_cast<void *>(static_cast<uintptr_t>(base)), a.dims.data(),
      a.strides.data(), a.box.data(), a.elementStrides.data(),
      uint32_t(a.interleave), uint32_t(a.swizzle), uint32_t(a.l2Promotion),
      uint32_t(a.oobFill));
  if (!why.empty()) {
    error = "tensor map: " + why;
    return 0;
  }
  mem.add(maps_.back().bytes, sizeof(Map));
  return reinterpret_cast<uint64_t>(maps_.back().bytes);
}

double worstError(const Tensor &got, const Tensor &want, double rtol,
                  double atol) {
  if (got.data.size() != want.data.size())
    return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < got.data.size(); ++i) {
    double g = got.data[i], w = want.data[i];
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g))
        return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w)
        return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, std::fabs(g - w) / (atol + rtol * std::fabs(w)));
  }
  return worst;
}

std::pair<double, double> tolerance(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::F64:
    // A few ulp of the f32 formulas, and erf's 1.4e-7 absolute.
    return {4e-6, 4e-7};
  case DType::BF16:
    // One bf16 ulp (2^-8 relative): f32 and float64 may round apart.
    return {8e-3, 1e-6};
  case DType::F16:
    return {1e-3, 1e-6};
  default:
    return {0, 0}; // integers and booleans: exact
  }
}

} // namespace tgtest
