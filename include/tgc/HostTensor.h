//===- HostTensor.h - a dense tensor in host memory -------------*- C++ -*-===//
//
// The buffer type of the in-process API (include/tgc/Jit.h) and of the CPU
// JIT underneath it (codegen/cpu/Jit.h): a shape, an element type and the
// bytes, row-major. Free of MLIR and LLVM, so that a program using the
// public API compiles against include/ alone.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_HOSTTENSOR_H
#define TGC_HOSTTENSOR_H

#include "tgc/DType.h"

#include <cstdint>
#include <vector>

namespace tgc {

/// Element types a host buffer can hold (tgc::dtypeSize gives bytes per
/// element, i1 taking one).
using HostType = DType;

/// A dense row-major tensor in host memory.
struct HostTensor {
  std::vector<int64_t> shape;
  HostType type = HostType::F32;
  std::vector<uint8_t> bytes;

  int64_t numElements() const;
  /// Zero-filled, with storage for every element.
  static HostTensor zeros(const std::vector<int64_t> &shape, HostType type);
  template <typename T> T *data() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *data() const {
    return reinterpret_cast<const T *>(bytes.data());
  }
  /// Element `i` widened to double (bf16/f16 decoded, integers exact).
  double get(int64_t i) const;
  /// Sets element `i` from a double, rounded once to the element type
  /// (nearest even for bf16/f16, as the reference evaluator rounds).
  void set(int64_t i, double v);
};

} // namespace tgc

#endif // TGC_HOSTTENSOR_H
