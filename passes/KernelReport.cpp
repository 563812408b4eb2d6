//===- KernelReport.cpp - what one step costs, kernel by kernel -*- C++ -*-===//
//
// See KernelReport.h. A kernel's bytes are its operands read once and its
// results written once (the roofline's traffic); a reshape is a view and a
// constant lives in the code, so neither is a kernel.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelReport.h"
#include "passes/Fusion.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Peak rates from the vendors' datasheets (dense, no sparsity; docs/fusion.md
/// gives the sources). The CPU row is nominal for the 2-core AVX-512
/// development machine, not measured.
constexpr Device devices[] = {
    // H200 SXM: 989 TFLOP/s bf16, 494 TF32, 67 FP32; 4.8 TB/s HBM3e; 700 W.
    {"h200", 989e12, 494e12, 67e12, 4.8e12, 700},
    // A100 SXM 80 GB: 312 TFLOP/s bf16, 156 TF32, 19.5 FP32; 2.039 TB/s; 400 W.
    {"a100", 312e12, 156e12, 19.5e12, 2.039e12, 400},
    // 2 cores x 2 AVX-512 FMA units x 16 f32 lanes x 2 FLOP x 2.5 GHz; bf16
    // is converted to f32; 20 GB/s and 65 W are assumptions.
    {"cpu", 320e9, 320e9, 320e9, 20e9, 65},
};

/// The ops of a group, "matmul+add+relu" (a repeated op is named once per
/// run of it).
std::string opNames(Operation *op) {
  auto shortName = [](Operation *o) {
    return o->getName().getStringRef().drop_front(3).str(); // "tg."
  };
  auto fused = dyn_cast<FusedOp>(op);
  if (!fused)
    return shortName(op);
  std::string names, last;
  for (Operation &inner : fused.getBodyBlock().without_terminator()) {
    if (isa<ConstantOp>(inner))
      continue;
    std::string n = shortName(&inner);
    if (n == last)
      continue;
    names += (names.empty() ? "" : "+") + n;
    last = n;
  }
  return names;
}

/// True if the kernel's FLOPs run on tensor cores (a matmul or convolution).
bool onTensorCores(Operation *op) {
  if (auto fused = dyn_cast<FusedOp>(op))
    return fused.getKind() == KernelKind::gemm;
  return isContraction(op);
}

/// The element type the kernel's contraction reads.
bool sixteenBit(Operation *op) {
  Operation *mm = op;
  if (auto fused = dyn_cast<FusedOp>(op))
    for (Operation &inner : fused.getBodyBlock())
      if (isContraction(&inner))
        mm = &inner;
  auto t = dyn_cast<RankedTensorType>(mm->getOperand(0).getType());
  return t && t.getElementType().getIntOrFloatBitWidth() == 16;
}

class Collector {
public:
  Collector(KernelReport &report) : report(report) {}

  void block(Block &b, int64_t times) {
    for (Operation &op : b.without_terminator())
      visit(&op, times);
  }

private:
  void visit(Operation *op, int64_t times) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              call, call.getCalleeAttr()))
        if (!callee.isExternal())
          block(callee.getBody().front(), times);
      return;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      int64_t trips = 1;
      auto lb = getConstantIntValue(loop.getLowerBound());
      auto ub = getConstantIntValue(loop.getUpperBound());
      auto st = getConstantIntValue(loop.getStep());
      if (lb && ub && st && *st > 0)
        trips = std::max<int64_t>(0, (*ub - *lb + *st - 1) / *st);
      block(*loop.getBody(), times * trips);
      return;
    }
    // A communicator (tg.comm_world) has no code either.
    if (isa<ConstantOp, arith::ConstantOp, ReshapeOp, CommWorldOp>(op) ||
        !isa<TGDialect>(op->getDialect()))
      return;
    Kernel k;
    auto fused = dyn_cast<FusedOp>(op);
    k.kind = fused ? stringifyKernelKind(fused.getKind()).str()
                   : op->getName().getStringRef().str();
    k.ops = opNames(op);
    k.loc = locString(op->getLoc());
    if (fused && k.loc.empty())
      for (Operation &inner : fused.getBodyBlock())
        if (!(k.loc = locString(inner.getLoc())).empty())
          break;
    k.count = times;
    k.flops = opFlops(op);
    DenseSet<Value> seen;
    for (Value v : op->getOperands())
      if (seen.insert(v).second && !isa_and_present<ConstantOp>(v.getDefiningOp()))
        k.bytesRead += tensorBytes(v.getType());
    for (Value v : op->getResults())
      k.bytesWritten += tensorBytes(v.getType());
    k.tensorCores = onTensorCores(op);
    const Device &d = report.device;
    double peak = !k.tensorCores  ? d.vectorFlops
                  : sixteenBit(op) ? d.tensorFlops16
                                   : d.tensorFlops32;
    double once = std::max(double(k.flops) / peak,
                           double(k.bytesRead + k.bytesWritten) / d.bandwidth);
    k.seconds = once * double(times);
    report.flops += k.flops * times;
    report.bytes += (k.bytesRead + k.bytesWritten) * times;
    report.seconds += k.seconds;
    // Without fusion every op of a group is a kernel of its own.
    if (fused) {
      for (Operation &inner : fused.getBodyBlock().without_terminator()) {
        if (isa<ConstantOp>(inner))
          continue;
        ++report.unfusedKernels;
        for (Value v : inner.getOperands())
          if (!isa_and_present<ConstantOp>(v.getDefiningOp()))
            report.unfusedBytes += tensorBytes(v.getType()) * times;
        report.unfusedBytes += tensorBytes(inner.getResult(0).getType()) * times;
      }
    } else {
      ++report.unfusedKernels;
      int64_t all = 0;
      for (Value v : op->getOperands())
        if (!isa_and_present<ConstantOp>(v.getDefiningOp()))
          all += tensorBytes(v.getType());
      report.unfusedBytes += (all + k.bytesWritten) * times;
    }
    report.kernels.push_back(std::move(k));
  }

  KernelReport &report;
};

std::string seconds(double s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (s >= 1)
    os << llvm::format("%.3f s", s);
  else if (s >= 1e-3)
    os << llvm::format("%.3f ms", s * 1e3);
  else
    os << llvm::format("%.3f us", s * 1e6);
  return out;
}

double intensity(int64_t flops, int64_t bytes) {
  return bytes ? double(flops) / double(bytes) : 0.0;
}

} // namespace

std::optional<Device> mlir::tg::lookupDevice(llvm::StringRef name) {
  for (const Device &d : devices)
    if (name == d.name)
      return d;
  return std::nullopt;
}

std::string mlir::tg::deviceNames() {
  std::string names;
  for (const Device &d : devices)
    names += (names.empty() ? "" : ", ") + std::string(d.name);
  return names;
}

KernelReport mlir::tg::buildKernelReport(func::FuncOp step,
                                         const Device &device) {
  KernelReport report;
  report.device = device;
  Collector(report).block(step.getBody().front(), 1);
  return report;
}

void mlir::tg::printKernelTable(const KernelReport &r, llvm::raw_ostream &os) {
  os << llvm::format("%-14s %-40s %-22s %6s %12s %12s %8s %11s\n", "kind",
                     "ops", "location", "count", "FLOPs", "bytes", "FLOP/B",
                     "roofline");
  for (const Kernel &k : r.kernels) {
    std::string ops = k.ops.size() > 40 ? k.ops.substr(0, 37) + "..." : k.ops;
    std::string loc = k.loc.size() > 22 ? "..." + k.loc.substr(k.loc.size() - 19)
                                        : k.loc;
    int64_t bytes = k.bytesRead + k.bytesWritten;
    os << llvm::format("%-14s %-40s %-22s %6lld %12lld %12lld %8.2f %11s\n",
                       k.kind.c_str(), ops.c_str(), loc.c_str(),
                       (long long)k.count, (long long)k.flops,
                       (long long)bytes, intensity(k.flops, bytes),
                       seconds(k.seconds).c_str());
  }
  os << "\nstep on " << r.device.name << " (" << r.kernels.size()
     << " kernels):\n";
  os << "  FLOPs              " << r.flops << "\n";
  os << "  bytes moved        " << r.bytes << " (" << formatBytes(r.bytes)
     << "); without fusion " << r.unfusedBytes << " ("
     << formatBytes(r.unfusedBytes) << ") in " << r.unfusedKernels
     << " kernels\n";
  os << llvm::format("  FLOP/B             %.2f\n", intensity(r.flops, r.bytes));
  os << "  roofline bound     " << seconds(r.seconds) << "\n";
  os << llvm::format("  energy             %.4g J at %.0f W\n",
                     r.seconds * r.device.watts, r.device.watts);
}

void mlir::tg::printKernelJson(const KernelReport &r, llvm::raw_ostream &os) {
  llvm::json::Array kernels;
  for (const Kernel &k : r.kernels)
    kernels.push_back(llvm::json::Object{
        {"kind", k.kind},
        {"ops", k.ops},
        {"loc", k.loc},
        {"count", k.count},
        {"flops", k.flops},
        {"bytes_read", k.bytesRead},
        {"bytes_written", k.bytesWritten},
        {"intensity", intensity(k.flops, k.bytesRead + k.bytesWritten)},
        {"tensor_cores", k.tensorCores},
        {"seconds", k.seconds}});
  llvm::json::Object root{
      {"device",
       llvm::json::Object{{"name", r.device.name},
                          {"tensor_flops_16", r.device.tensorFlops16},
                          {"tensor_flops_32", r.device.tensorFlops32},
                          {"vector_flops", r.device.vectorFlops},
                          {"bandwidth", r.device.bandwidth},
                          {"watts", r.device.watts}}},
      {"kernels", std::move(kernels)},
      {"totals",
       llvm::json::Object{{"kernels", int64_t(r.kernels.size())},
                          {"flops", r.flops},
                          {"bytes", r.bytes},
                          {"seconds", r.seconds},
                          {"joules", r.seconds * r.device.watts},
                          {"unfused_kernels", r.unfusedKernels},
                          {"unfused_bytes", r.unfusedBytes}}}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
