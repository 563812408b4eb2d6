//===- HostTensor.cpp - the public API's host buffers -----------*- C++ -*-===//
//
// tgc::HostTensor (include/tgc/HostTensor.h): element access with exactly
// one rounding from double to bf16/f16 (APFloat, nearest even), as the
// reference evaluator rounds. Used by the JIT API and the CPU backend's
// JitModule, so it lives in TGCpu, below both.
//
//===----------------------------------------------------------------------===//

#include "tgc/HostTensor.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/ErrorHandling.h"

using tgc::HostTensor;
using tgc::HostType;

int64_t tgc::HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

HostTensor tgc::HostTensor::zeros(const std::vector<int64_t> &shape,
                                  HostType type) {
  HostTensor t;
  t.shape = shape;
  t.type = type;
  t.bytes.assign(t.numElements() * tgc::dtypeSize(type), 0);
  return t;
}

namespace {
const llvm::fltSemantics &halfSemantics(HostType t) {
  return t == HostType::F16 ? llvm::APFloat::IEEEhalf()
                            : llvm::APFloat::BFloat();
}
} // namespace

double tgc::HostTensor::get(int64_t i) const {
  switch (type) {
  case HostType::F32: return data<float>()[i];
  case HostType::F64: return data<double>()[i];
  case HostType::I32: return data<int32_t>()[i];
  case HostType::I64: return static_cast<double>(data<int64_t>()[i]);
  case HostType::I1: return data<uint8_t>()[i] ? 1.0 : 0.0;
  case HostType::F16:
  case HostType::BF16: {
    llvm::APFloat f(halfSemantics(type), llvm::APInt(16, data<uint16_t>()[i]));
    return f.convertToDouble();
  }
  }
  llvm_unreachable("unknown host type");
}

void tgc::HostTensor::set(int64_t i, double v) {
  switch (type) {
  case HostType::F32: data<float>()[i] = static_cast<float>(v); return;
  case HostType::F64: data<double>()[i] = v; return;
  case HostType::I32: data<int32_t>()[i] = static_cast<int32_t>(v); return;
  case HostType::I64: data<int64_t>()[i] = static_cast<int64_t>(v); return;
  case HostType::I1: data<uint8_t>()[i] = v != 0; return;
  case HostType::F16:
  case HostType::BF16: {
    llvm::APFloat f(v);
    bool lost;
    f.convert(halfSemantics(type), llvm::APFloat::rmNearestTiesToEven, &lost);
    data<uint16_t>()[i] =
        static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
    return;
  }
  }
}

