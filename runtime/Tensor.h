//===- Tensor.h - dense host tensors of the runtime -------------*- C++ -*-===//
//
// The runtime moves data between files, the data loaders and the compiled
// entry points as dense row-major host buffers. A Tensor owns its bytes; i1
// is stored as one byte per element (0 or 1), as safetensors' BOOL is.
// No MLIR or LLVM header is included anywhere in runtime/, by design.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_TENSOR_H
#define TG_RUNTIME_TENSOR_H

#include "tgc/DType.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace tgrt {

/// Element types, with the manifest's names (`f32`, ...): TGC's one
/// definition (include/tgc/DType.h), shared with the compiler's APIs.
using tgc::DType;
using tgc::dtypeName;
using tgc::dtypeSize;
using tgc::isFloat;
using tgc::parseDType;

/// Safetensors spelling: "F32" ... "BOOL".
const char *dtypeSafetensorsName(DType t);
/// Parses the safetensors spelling; false if unknown or unsupported.
bool parseSafetensorsDType(std::string_view s, DType &out);

/// Number of elements of `shape`; false on a negative dimension or overflow
/// of `limit` (elements).
bool shapeNumel(const std::vector<int64_t> &shape, uint64_t &numel,
                uint64_t limit = (uint64_t(1) << 50));
/// "[128,784]".
std::string shapeString(const std::vector<int64_t> &shape);

/// Allocates on 64-byte boundaries (a cache line, the widest vector
/// register), which the wrapper ABI promises compiled code for every buffer.
template <class T> struct AlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  AlignedAllocator() = default;
  template <class U> AlignedAllocator(const AlignedAllocator<U> &) {}
  T *allocate(size_t n) {
    return static_cast<T *>(::operator new(n * sizeof(T), kAlign));
  }
  void deallocate(T *p, size_t) { ::operator delete(p, kAlign); }
  template <class U> bool operator==(const AlignedAllocator<U> &) const {
    return true;
  }
  template <class U> bool operator!=(const AlignedAllocator<U> &) const {
    return false;
  }
};

/// The storage of a tensor.
using Bytes = std::vector<uint8_t, AlignedAllocator<uint8_t>>;

/// A dense row-major host tensor that owns its bytes.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  Bytes bytes;

  /// A zero-filled tensor (shape must be valid).
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  /// A scalar (rank 0) tensor.
  static Tensor scalarI64(int64_t v);
  static Tensor scalarF32(float v);

  uint64_t numel() const;
  void *data() { return bytes.data(); }
  const void *data() const { return bytes.data(); }
  template <class T> T *as() { return reinterpret_cast<T *>(bytes.data()); }
  template <class T> const T *as() const {
    return reinterpret_cast<const T *>(bytes.data());
  }
  /// Element `i` converted to double (any dtype).
  double at(uint64_t i) const;
  /// Stores `v` converted to the dtype at element `i`.
  void set(uint64_t i, double v);
};

/// Tensors by name, in name order.
using TensorMap = std::map<std::string, Tensor>;

/// Copies `src` into a new tensor of `dtype` and `shape` (same element
/// count), converting each element. Returns false with `err` on mismatch.
bool convertTensor(const Tensor &src, DType dtype,
                   const std::vector<int64_t> &shape, Tensor &out,
                   std::string &err);

} // namespace tgrt

#endif // TG_RUNTIME_TENSOR_H
