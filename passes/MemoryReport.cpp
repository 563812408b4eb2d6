//===- MemoryReport.cpp - printing a memory plan ----------------*- C++ -*-===//
//
// The three forms of tgc --report=memory: a table for people, JSON for
// tools, and an SVG picture of the arena over the schedule.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::tg;

std::string mlir::tg::formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  if (u == 0)
    os << bytes << " B";
  else
    os << llvm::format("%.2f", v) << " " << units[u];
  return s;
}

/// Indices of the `count` largest buffers, largest first.
static std::vector<size_t> largest(const MemoryPlan &plan, size_t count) {
  std::vector<size_t> idx(plan.buffers.size());
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = i;
  llvm::sort(idx, [&](size_t a, size_t b) {
    if (plan.buffers[a].bytes != plan.buffers[b].bytes)
      return plan.buffers[a].bytes > plan.buffers[b].bytes;
    return a < b;
  });
  idx.resize(std::min(count, idx.size()));
  return idx;
}

void mlir::tg::printMemoryTable(const MemoryPlan &plan, llvm::raw_ostream &os) {
  auto row = [&](StringRef what, int64_t bytes) {
    os << llvm::left_justify(what, 22) << llvm::right_justify(formatBytes(bytes), 12)
       << llvm::right_justify(std::to_string(bytes), 16) << "\n";
  };
  if (plan.ranks > 1)
    os << "per rank of " << plan.ranks << " ("
       << (plan.zero ? "ZeRO stage 1: optimizer state sharded over the ranks"
                     : "optimizer state replicated; --zero 1 shards it")
       << ")\n";
  os << llvm::left_justify("memory", 22) << llvm::right_justify("size", 12)
     << llvm::right_justify("bytes", 16) << "\n";
  row("parameters", plan.bytesOf(BufferKind::Param));
  // Mixed precision: the fp32 masters above, their bf16/f16 copies here
  // (transient buffers, also counted in activations or workspace).
  if (int64_t copies = plan.computeCopyBytes())
    row("  compute copies", copies);
  row("gradients", plan.bytesOf(BufferKind::Gradient));
  row("optimizer state", plan.bytesOf(BufferKind::Optimizer));
  row("inputs", plan.bytesOf(BufferKind::Input));
  row("activations", plan.bytesOf(BufferKind::Activation));
  row("workspace", plan.bytesOf(BufferKind::Workspace));
  // Data parallelism: the largest flat buffer a collective packs its
  // bucket into, a workspace buffer of the plan live while it runs (in the
  // row above when that is the worst moment).
  if (plan.bucketBufferBytes)
    row("  bucket buffer", plan.bucketBufferBytes);
  // Op scratch (tg.scratch): planned at its op's step, live at the worst
  // moment; with the rows above it adds up to the lower bound. What a
  // backend appends after the plan is a row of its own, added to the peak.
  row("op scratch", plan.bytesOf(BufferKind::Scratch));
  if (plan.scratchBytes)
    row("  after the plan (cpu)", plan.scratchBytes);
  row("peak (planned arena)", plan.peakBytes());
  row("lower bound", plan.persistentBytes + plan.lowerBoundBytes);
  row("naive (no reuse)", plan.persistentBytes + plan.naiveBytes);
  os << "\nlargest buffers:\n";
  for (size_t i : largest(plan, 10)) {
    const Buffer &b = plan.buffers[i];
    os << "  " << llvm::right_justify(formatBytes(b.bytes), 11) << "  "
       << llvm::left_justify(kindName(b.kind), 12) << "  " << b.name;
    if (!b.loc.empty())
      os << "  (" << b.loc << ")";
    os << "\n";
  }
  // What the backward pass saves, and why: each activation live at the
  // worst moment with the op that reads it last (JSON: every buffer's
  // needed_by).
  std::vector<size_t> saved;
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].atPeak && plan.buffers[i].kind == BufferKind::Activation)
      saved.push_back(i);
  llvm::sort(saved, [&](size_t a, size_t b) {
    if (plan.buffers[a].bytes != plan.buffers[b].bytes)
      return plan.buffers[a].bytes > plan.buffers[b].bytes;
    return a < b;
  });
  if (saved.empty())
    return;
  os << "\nactivations live at the peak, each with the op that needs it:\n";
  for (size_t i : saved) {
    const Buffer &b = plan.buffers[i];
    os << "  " << llvm::right_justify(formatBytes(b.bytes), 11) << "  "
       << b.name;
    if (!b.loc.empty())
      os << "  (" << b.loc << ")";
    os << "  needed by " << (b.neededBy.empty() ? "the step's results" : b.neededBy)
       << "\n";
  }
}

llvm::json::Object mlir::tg::memorySummaryJson(const MemoryPlan &plan) {
  return llvm::json::Object{
      {"params_bytes", plan.bytesOf(BufferKind::Param)},
      {"compute_copy_bytes", plan.computeCopyBytes()},
      {"grads_bytes", plan.bytesOf(BufferKind::Gradient)},
      {"optimizer_bytes", plan.bytesOf(BufferKind::Optimizer)},
      {"inputs_bytes", plan.bytesOf(BufferKind::Input)},
      {"activations_bytes", plan.bytesOf(BufferKind::Activation)},
      {"workspace_bytes", plan.bytesOf(BufferKind::Workspace)},
      {"op_scratch_bytes", plan.bytesOf(BufferKind::Scratch)},
      {"persistent_bytes", plan.persistentBytes},
      {"transient_bytes", plan.transientBytes},
      {"scratch_bytes", plan.scratchBytes},
      {"peak_bytes", plan.peakBytes()},
      {"lower_bound_bytes", plan.persistentBytes + plan.lowerBoundBytes},
      {"naive_bytes", plan.persistentBytes + plan.naiveBytes},
      {"ranks", plan.ranks},
      {"zero", plan.zero},
      {"bucket_buffer_bytes", plan.bucketBufferBytes}};
}

void mlir::tg::printMemoryJson(const MemoryPlan &plan, llvm::raw_ostream &os) {
  llvm::json::Array buffers;
  for (const Buffer &b : plan.buffers)
    buffers.push_back(llvm::json::Object{
        {"name", b.name},     {"op", b.op},         {"loc", b.loc},
        {"kind", kindName(b.kind)}, {"bytes", b.bytes}, {"offset", b.offset},
        {"start", b.start},   {"end", b.end},       {"persistent", b.persistent},
        {"nested", b.nested}, {"needed_by", b.neededBy},
        {"at_peak", b.atPeak}});
  llvm::json::Object root = memorySummaryJson(plan);
  root["steps"] = plan.steps;
  root["buffers"] = std::move(buffers);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}

void mlir::tg::printMemorySvg(const MemoryPlan &plan, llvm::raw_ostream &os) {
  // x: schedule step; y: address in the transient region, growing upwards;
  // the persistent region is a band below it. One rectangle per buffer.
  const double width = 960, height = 540, left = 70, bottom = 60, top = 40;
  double steps = std::max<int64_t>(plan.steps, 1) + 1;
  double persistent = double(plan.persistentBytes);
  double total = std::max(1.0, persistent + double(plan.transientBytes));
  double plotH = height - bottom - top, plotW = width - left - 180;
  auto y = [&](double addr) { return height - bottom - addr / total * plotH; };
  auto x = [&](double s) { return left + s / steps * plotW; };
  auto colour = [](BufferKind k) {
    switch (k) {
    case BufferKind::Param: return "#4e79a7";
    case BufferKind::Optimizer: return "#9c755f";
    case BufferKind::Input: return "#bab0ab";
    case BufferKind::Gradient: return "#e15759";
    case BufferKind::Activation: return "#59a14f";
    case BufferKind::Workspace: return "#f28e2b";
    case BufferKind::Scratch: return "#edc948";
    }
    return "#888888";
  };
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" font-family=\"sans-serif\" "
        "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << "<text x=\"" << left << "\" y=\"24\" font-size=\"15\">Arena over the "
        "schedule: peak " << formatBytes(plan.peakBytes()) << ", lower bound "
     << formatBytes(plan.persistentBytes + plan.lowerBoundBytes) << "</text>\n";
  for (const Buffer &b : plan.buffers) {
    if (b.nested || b.bytes == 0)
      continue;
    double addr = b.persistent ? b.offset : persistent + b.offset;
    double s0 = b.persistent ? 0 : b.start, s1 = b.persistent ? steps : b.end + 1;
    double y0 = y(addr + b.bytes), y1 = y(addr);
    os << "<rect x=\"" << x(s0) << "\" y=\"" << y0 << "\" width=\""
       << std::max(0.5, x(s1) - x(s0)) << "\" height=\""
       << std::max(0.5, y1 - y0) << "\" fill=\"" << colour(b.kind)
       << "\" fill-opacity=\"0.8\" stroke=\"white\" stroke-width=\"0.3\"><title>"
       << b.name << " (" << kindName(b.kind) << ", " << formatBytes(b.bytes)
       << ")</title></rect>\n";
  }
  // Axes and legend.
  os << "<line x1=\"" << left << "\" y1=\"" << y(0) << "\" x2=\"" << x(steps)
     << "\" y2=\"" << y(0) << "\" stroke=\"black\"/>\n<line x1=\"" << left
     << "\" y1=\"" << y(0) << "\" x2=\"" << left << "\" y2=\"" << y(total)
     << "\" stroke=\"black\"/>\n<text x=\"" << left << "\" y=\""
     << height - 20 << "\">schedule step (0 to " << plan.steps
     << ")</text>\n<text x=\"10\" y=\"" << y(total) - 6 << "\">"
     << formatBytes(int64_t(total)) << "</text>\n<text x=\"10\" y=\"" << y(persistent)
     << "\">" << formatBytes(plan.persistentBytes) << "</text>\n";
  double ly = top + 10;
  for (BufferKind k : {BufferKind::Param, BufferKind::Optimizer, BufferKind::Input,
                       BufferKind::Gradient, BufferKind::Activation,
                       BufferKind::Workspace, BufferKind::Scratch}) {
    os << "<rect x=\"" << width - 160 << "\" y=\"" << ly << "\" width=\"14\" "
       << "height=\"14\" fill=\"" << colour(k) << "\"/><text x=\""
       << width - 140 << "\" y=\"" << ly + 12 << "\">" << kindName(k) << " ("
       << formatBytes(plan.bytesOf(k)) << ")</text>\n";
    ly += 22;
  }
  os << "</svg>\n";
}
