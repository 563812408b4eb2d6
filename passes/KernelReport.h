//===- KernelReport.h - what one step costs, kernel by kernel ---*- C++ -*-===//
//
// `tgc --report=kernels`: every kernel of a fused training step (each
// tg.fused group, and each op left on its own) with its kind, ops, source
// location, FLOPs, bytes moved, arithmetic intensity and roofline time on a
// named device, then the step's totals and energy. Read from the IR that
// tg-fuse leaves; nothing runs.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_KERNELREPORT_H
#define TGC_PASSES_KERNELREPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::tg {

/// Peak rates of one device: the roofline's two ceilings and the power
/// that turns time into energy. docs/fusion.md gives the sources.
struct Device {
  const char *name;
  double tensorFlops16; ///< FLOP/s of bf16/f16 matmuls (tensor cores, dense)
  double tensorFlops32; ///< FLOP/s of f32 matmuls (TF32 tensor cores, dense)
  double vectorFlops;   ///< FLOP/s of everything else (f32 vector units)
  double bandwidth;     ///< bytes/s of device memory
  double watts;         ///< board power
};

/// The device called `name` (h200, a100, cpu), if known.
std::optional<Device> lookupDevice(llvm::StringRef name);

/// The names lookupDevice knows, comma-separated.
std::string deviceNames();

/// One kernel of the step.
struct Kernel {
  std::string kind; ///< gemm, elementwise, ... or the op name of a single op
  std::string ops;  ///< the ops it runs, e.g. "matmul+add+relu"
  std::string loc;  ///< file:line:col of its first op with one
  int64_t count = 1; ///< launches per step (loop bodies run several times)
  int64_t flops = 0, bytesRead = 0, bytesWritten = 0;
  double seconds = 0; ///< roofline time of all `count` launches
  bool tensorCores = false;
};

/// The kernels of one step and their totals on a device.
struct KernelReport {
  Device device;
  std::vector<Kernel> kernels;
  int64_t flops = 0, bytes = 0;
  double seconds = 0;    ///< the roofline lower bound on step time
  int64_t unfusedBytes = 0; ///< bytes moved if every op were its own kernel
  int64_t unfusedKernels = 0;
};

/// Collects the kernels of `step` (calls are followed, loop bodies counted
/// once per iteration) and prices them on `device`.
KernelReport buildKernelReport(func::FuncOp step, const Device &device);

/// The report as a table.
void printKernelTable(const KernelReport &report, llvm::raw_ostream &os);
/// The report as one JSON object.
void printKernelJson(const KernelReport &report, llvm::raw_ostream &os);

} // namespace mlir::tg

#endif // TGC_PASSES_KERNELREPORT_H
