//===- EmuHarness.h - run generated kernels on the PTX emulator -*- C++ -*-===//
//
// Test support for the SIMT generators: one tg op (a group or a single op)
// becomes a standalone function the reference evaluator runs, and kernels
// (lowerOpToKernels) that the PTX emulator runs on the same inputs, with
// the reference tensors packed into and out of device layouts (bf16, f16,
// i1 as a byte, ...).
//
//===----------------------------------------------------------------------===//
#ifndef TG_TEST_NVPTX_EMUHARNESS_H
#define TG_TEST_NVPTX_EMUHARNESS_H

#include "codegen/nvptx/KernelGen.h"
#include "codegen/reference/Evaluator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace tgrt::emu {
class Memory;
}

namespace tgtest {

using mlir::tg::ref::DType;
using mlir::tg::ref::Tensor;

/// `m` printed (generic form not needed: kernels are llvm/nvvm/scf).
std::string printModule(mlir::ModuleOp m);

/// `t` in device layout (row-major, its element type's storage).
std::vector<uint8_t> pack(const Tensor &t);
/// The tensor of `shape` and `dtype` held in `bytes`.
Tensor unpack(const std::vector<uint8_t> &bytes,
              llvm::ArrayRef<int64_t> shape, DType dtype);

/// A module with one function @f whose arguments are `op`'s operands and
/// whose results are `op`'s results, the body a clone of `op`.
mlir::OwningOpRef<mlir::ModuleOp> standaloneFunction(mlir::Operation *op);

/// Runs `op` the GPU way: lowerOpToKernels for `target`, PTX, the emulator.
/// `inputs` are the operands; the results come back in `outputs`. Results
/// the plan puts in place of an operand (tg.alias_arg(s) naming the
/// function argument that operand is) share its buffer, as on the device.
/// A tensor-map parameter (sm_90a) receives a map encoded over its
/// operand's buffer as the runtime encodes it (16-bit, 128B swizzle, zero
/// fill). False and `error` on failure.
bool runOnEmulator(mlir::Operation *op, llvm::ArrayRef<Tensor> inputs,
                   std::vector<Tensor> &outputs, std::string &error,
                   ::tg::nvptx::Target target = ::tg::nvptx::Target::SM80);

/// The tensor maps of sm_90a launches on the PTX emulator: each one the
/// map a KernelParam::Kind::TensorMap parameter describes, encoded over
/// its operand's buffer as the runtime encodes it (16-bit, 128B swizzle,
/// zero fill), 64-byte aligned and registered as device memory.
class TensorMaps {
public:
  /// The address of a new map of `m` over the buffer at `base`; 0 and
  /// `error` when the driver's rules refuse it.
  uint64_t add(const ::tg::nvptx::TensorMapParam &m, uint64_t base,
               tgrt::emu::Memory &mem, std::string &error);

private:
  struct alignas(64) Map {
    uint8_t bytes[128];
  };
  std::deque<Map> maps_; // a deque: maps stay where they were encoded
};

/// The largest |got - want| / (atol + rtol |want|) over all elements (NaN
/// matches NaN, inf matches the same inf); > 1 means out of tolerance.
double worstError(const Tensor &got, const Tensor &want, double rtol,
                  double atol);

/// Tolerances for results of `dtype` computed in f32 with the libm-free
/// math of SimtScalar: (rtol, atol).
std::pair<double, double> tolerance(DType dtype);

} // namespace tgtest

#endif // TG_TEST_NVPTX_EMUHARNESS_H
