//===- ScheduleTest.cpp - planned entries as GPU launch schedules -*- C++ -*-===//
//
// The schedule builder (codegen/nvptx/Schedule.h) with a small stand-in
// generator of its own (one thread per element of a binary f32 op), so the
// mapping of parameters and results to buffers is tested apart from the
// real generators: arguments, arena offsets, constants, an in-place
// parameter update, a reshape copied to its planned slot. The schedule then
// runs through the runtime on the PTX emulator and matches plain C++.
//
//===----------------------------------------------------------------------===//
#include "codegen/artifact/Manifest.h"
#include "codegen/nvptx/GemmCommon.h"
#include "codegen/nvptx/Schedule.h"
#include "codegen/nvptx/Toolchain.h"
#include "codegen/registry/InitAll.h"
#include "dialects/TGOps.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "runtime/Executor.h"
#include "runtime/GpuSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/JSON.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <set>

using namespace mlir;
using namespace ::tg::nvptx;

namespace {

const char *kStep = R"mlir(
func.func @train_step(
    %w: tensor<4x8xf32> {tg.name = "w", tg.role = #tg.role<param>},
    %x: tensor<4x8xf32> {tg.name = "x", tg.role = #tg.role<input>})
    -> (tensor<32xf32> {tg.name = "y", tg.role = #tg.role<output>},
        tensor<4x8xf32> {tg.name = "w", tg.role = #tg.role<param>},
        tensor<4x8xf32> {tg.name = "c", tg.role = #tg.role<output>}) {
  %c = tg.constant dense<2.0> : tensor<4x8xf32>
  %0 = tg.mul %x, %c : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = tg.add %0, %w : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = tg.reshape %1 : tensor<4x8xf32> to tensor<32xf32>
  %3 = tg.sub %w, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %2, %3, %c : tensor<32xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
)mlir";

/// The stand-in generator: `out[i] = lhs[i] op rhs[i]` for tg.add, tg.sub
/// and tg.mul on f32 operands of the result's shape, one thread per
/// element; other ops move no data (a reshape) or are refused.
FailureOr<std::vector<KernelLaunch>> lowerBinary(Operation *op, Target t,
                                                 ModuleOp kernels) {
  if (isa<mlir::tg::ReshapeOp>(op))
    return std::vector<KernelLaunch>{};
  if (!isa<mlir::tg::AddOp, mlir::tg::SubOp, mlir::tg::MulOp>(op))
    return op->emitOpError() << "the test generator cannot compile this op";
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t n = type.getNumElements();
  std::string symbol = kernelSymbol(op, "tg_test", t);
  if (!hasKernel(kernels, symbol)) {
    MLIRContext *ctx = kernels.getContext();
    OpBuilder mb = OpBuilder::atBlockEnd(kernels.getBody());
    Type ptr1 = LLVM::LLVMPointerType::get(ctx, 1);
    auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                            {ptr1, ptr1, ptr1});
    auto fn = LLVM::LLVMFuncOp::create(mb, op->getLoc(), symbol, fnTy);
    fn->setAttr("nvvm.kernel", mb.getUnitAttr());
    Block *entry = fn.addEntryBlock(mb);
    ::tg::nvptx::detail::KernelBuilder w(entry, op->getLoc());
    Value tid = NVVM::ThreadIdXOp::create(w.b, w.loc, w.i32);
    Value cta = NVVM::BlockIdXOp::create(w.b, w.loc, w.i32);
    Value i = w.add(w.muli(cta, 128), tid);
    w.openIf(w.ult(i, w.i32c(n)));
    Value i64 = w.zext64(i);
    Value a = LLVM::LoadOp::create(w.b, w.loc, w.f32,
                                   w.gep(entry->getArgument(0), i64, w.f32));
    Value b = LLVM::LoadOp::create(w.b, w.loc, w.f32,
                                   w.gep(entry->getArgument(1), i64, w.f32));
    Value r = isa<mlir::tg::AddOp>(op)   ? w.fadd(a, b)
              : isa<mlir::tg::MulOp>(op) ? w.fmul(a, b)
                                         : LLVM::FSubOp::create(w.b, w.loc, a, b)
                                               .getResult();
    LLVM::StoreOp::create(w.b, w.loc, r, w.gep(entry->getArgument(2), i64, w.f32));
    w.b.setInsertionPointToEnd(entry);
    LLVM::ReturnOp::create(w.b, w.loc, ValueRange{});
  }
  KernelLaunch l;
  l.symbol = symbol;
  l.grid = {uint32_t((n + 127) / 128), 1, 1};
  l.block = {128, 1, 1};
  l.params = {{KernelParam::Kind::Operand, 0},
              {KernelParam::Kind::Operand, 1},
              {KernelParam::Kind::Result, 0}};
  return std::vector<KernelLaunch>{l};
}

struct Fixture {
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  Fixture() {
    mlir::tg::registerAllDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kStep, ctx.get());
    REQUIRE(module);
    auto step = module->lookupSymbol<func::FuncOp>("train_step");
    REQUIRE(succeeded(mlir::tg::planMemory(step, {})));
  }
};

/// lowerBinary, then kernel scratch: tg.add two launches sharing 1000 bytes,
/// tg.mul one launch with 40 (tg.sub none).
FailureOr<std::vector<KernelLaunch>> withScratch(Operation *op, Target t,
                                                 ModuleOp kernels) {
  FailureOr<std::vector<KernelLaunch>> l = lowerBinary(op, t, kernels);
  if (failed(l) || l->empty() || isa<mlir::tg::SubOp>(op))
    return l;
  uint64_t bytes = isa<mlir::tg::AddOp>(op) ? 1000 : 40;
  for (KernelLaunch &k : *l) {
    k.params.push_back({KernelParam::Kind::Scratch, 0});
    k.scratchBytes = bytes;
  }
  if (isa<mlir::tg::AddOp>(op))
    l->push_back(l->front());
  return l;
}

} // namespace

TEST_CASE("schedule: parameters and results map to the plan's buffers",
          "[nvptx][schedule]") {
  Fixture f;
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(f.module->getLoc());
  FailureOr<GpuSchedule> s = buildGpuSchedule(
      *f.module, Target::SM80, *kernels, {"train_step"}, lowerBinary);
  REQUIRE(succeeded(s));
  REQUIRE(s->entries.size() == 1);
  const EntrySchedule &e = s->entries[0];
  CHECK(e.arenaBytes > 0);
  // The splat 2.0 is one constant of 32 floats.
  REQUIRE(s->constants.size() == 1);
  CHECK(s->constants[0].repeat == 32);
  CHECK(s->constants[0].bytes() == 128);
  int launches = 0, copies = 0;
  bool readsConstant = false;
  for (const ScheduleStep &st : e.steps) {
    if (st.isCopy) {
      ++copies;
      CHECK(st.src.bytes == 128);
      continue;
    }
    ++launches;
    REQUIRE(st.params.size() == 3);
    for (const BufferRef &p : st.params) {
      CHECK(p.bytes == 128);
      readsConstant |= p.kind == BufferRef::Kind::Const;
    }
  }
  CHECK(launches == 3);
  CHECK(readsConstant);
  REQUIRE(e.results.size() == 3);
  // w's next value is planned in w's own storage (argument 0).
  CHECK(e.results[1].kind == BufferRef::Kind::Arg);
  CHECK(e.results[1].index == 0);
  CHECK(e.results[2].kind == BufferRef::Kind::Const);
  // The reshape's result: copied to its own slot, or read where it is.
  CHECK(copies <= 1);
  llvm::json::Object j = scheduleJson(*s);
  CHECK(j.getArray("constants")->size() == 1);
}

TEST_CASE("schedule: kernel scratch goes after the plan in the arena",
          "[nvptx][schedule]") {
  Fixture f;
  // The stand-in generator gives tg.add two launches sharing 1000 bytes of
  // scratch and tg.mul one with 40: every op's scratch starts at one arena
  // offset past the planned values, and the arena grows by the largest.
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(f.module->getLoc());
  FailureOr<GpuSchedule> plain = buildGpuSchedule(
      *f.module, Target::SM80, *kernels, {"train_step"}, lowerBinary);
  REQUIRE(succeeded(plain));
  int64_t planned = plain->entries[0].arenaBytes;
  kernels = ModuleOp::create(f.module->getLoc());
  FailureOr<GpuSchedule> s = buildGpuSchedule(
      *f.module, Target::SM80, *kernels, {"train_step"}, withScratch);
  REQUIRE(succeeded(s));
  const EntrySchedule &e = s->entries[0];
  int64_t base = (planned + 255) / 256 * 256;
  CHECK(e.arenaBytes == base + 1000);
  int scratchParams = 0;
  for (const ScheduleStep &st : e.steps)
    for (auto [i, p] : llvm::enumerate(st.params)) {
      if (st.launch.params[i].kind != KernelParam::Kind::Scratch) {
        // No planned buffer reaches into the scratch.
        if (p.kind == BufferRef::Kind::Arena)
          CHECK(p.offset + p.bytes <= base);
        continue;
      }
      ++scratchParams;
      CHECK(p.kind == BufferRef::Kind::Arena);
      CHECK(p.offset == base);
      CHECK(p.bytes == int64_t(st.launch.scratchBytes));
    }
  CHECK(scratchParams == 3); // add's two launches, mul's one
  CHECK(scheduleJson(*s)
            .getObject("entries")
            ->getObject("train_step")
            ->getInteger("arena_bytes") == base + 1000);
}

TEST_CASE("schedule: kernel scratch the plan placed (tg.scratch_offset)",
          "[nvptx][schedule]") {
  // As tg-size-gpu-scratch leaves them: tg.add's launches take 1000 bytes
  // of scratch, tg.mul's 40. The plan places each as a buffer live at its
  // op's step, and the schedule reads the op's tg.scratch_offset: the
  // arena is the plan's, nothing after it.
  DialectRegistry registry;
  mlir::tg::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto parse = [&](int64_t addBytes) {
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(kStep, &ctx);
    REQUIRE(m);
    auto step = m->lookupSymbol<func::FuncOp>("train_step");
    step.walk([&](Operation *op) {
      if (isa<mlir::tg::AddOp>(op))
        mlir::tg::setScratchBytes(op, addBytes);
      if (isa<mlir::tg::MulOp>(op))
        mlir::tg::setScratchBytes(op, 40);
    });
    REQUIRE(succeeded(mlir::tg::planMemory(step, {})));
    return m;
  };
  OwningOpRef<ModuleOp> m = parse(1000);
  auto step = m->lookupSymbol<func::FuncOp>("train_step");
  int64_t transient = mlir::tg::getMemoryPlan(step).getTransientBytes();
  std::map<std::string, int64_t> at;
  step.walk([&](Operation *op) {
    if (auto o = mlir::tg::getScratchOffset(op))
      at[op->getName().getStringRef().str()] = o.getInt();
  });
  REQUIRE(at.size() == 2);
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(m->getLoc());
  FailureOr<GpuSchedule> s = buildGpuSchedule(*m, Target::SM80, *kernels,
                                              {"train_step"}, withScratch);
  REQUIRE(succeeded(s));
  const EntrySchedule &e = s->entries[0];
  CHECK(e.arenaBytes == transient);
  int scratchParams = 0;
  for (const ScheduleStep &st : e.steps) {
    const BufferRef *scratch = nullptr;
    for (auto [i, p] : llvm::enumerate(st.params))
      if (st.launch.params[i].kind == KernelParam::Kind::Scratch)
        scratch = &p;
    if (!scratch)
      continue;
    ++scratchParams;
    int64_t want = st.launch.scratchBytes == 1000 ? at["tg.add"] : at["tg.mul"];
    CHECK(scratch->kind == BufferRef::Kind::Arena);
    CHECK(scratch->offset == want);
    CHECK(scratch->bytes == int64_t(st.launch.scratchBytes));
    CHECK(scratch->offset + scratch->bytes <= transient);
    // The op's operands and results are live at its step: no overlap.
    for (const BufferRef &p : st.params)
      if (&p != scratch && p.kind == BufferRef::Kind::Arena)
        CHECK((p.offset + p.bytes <= scratch->offset ||
               scratch->offset + scratch->bytes <= p.offset));
  }
  CHECK(scratchParams == 3); // add's two launches, mul's one

  // A launch that needs more than its op's tg.scratch is refused at the op:
  // the plan may have put other values right after the smaller buffer.
  OwningOpRef<ModuleOp> small = parse(500);
  std::string diag;
  ScopedDiagnosticHandler h(&ctx, [&](Diagnostic &d) {
    diag = d.str();
    return success();
  });
  kernels = ModuleOp::create(small->getLoc());
  CHECK(failed(buildGpuSchedule(*small, Target::SM80, *kernels, {"train_step"},
                                withScratch)));
  CHECK(diag.find("needs 1000 bytes of scratch, more than the op's planned "
                  "tg.scratch of 500") != std::string::npos);
}

TEST_CASE("schedule: an op no generator takes is a located error",
          "[nvptx][schedule]") {
  Fixture f;
  std::string diag;
  ScopedDiagnosticHandler h(f.ctx.get(), [&](Diagnostic &d) {
    diag = d.str();
    return success();
  });
  // A generator that takes no subtraction: the schedule fails at the op.
  auto noSub = [](Operation *op, Target t, ModuleOp kernels)
      -> FailureOr<std::vector<KernelLaunch>> {
    if (isa<mlir::tg::SubOp>(op))
      return op->emitOpError() << "the GPU backend cannot compile this op yet";
    return lowerBinary(op, t, kernels);
  };
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(f.module->getLoc());
  FailureOr<GpuSchedule> s = buildGpuSchedule(*f.module, Target::SM80,
                                              *kernels, {"train_step"}, noSub);
  CHECK(failed(s));
  CHECK(diag == "'tg.sub' op the GPU backend cannot compile this op yet");
  // A kernel parameter naming an operand the op does not have.
  auto badParam = [](Operation *op, Target t, ModuleOp kernels)
      -> FailureOr<std::vector<KernelLaunch>> {
    FailureOr<std::vector<KernelLaunch>> l = lowerBinary(op, t, kernels);
    if (succeeded(l) && !l->empty())
      (*l)[0].params[0].index = 7;
    return l;
  };
  kernels = ModuleOp::create(f.module->getLoc());
  CHECK(failed(buildGpuSchedule(*f.module, Target::SM80, *kernels,
                                {"train_step"}, badParam)));
  CHECK(diag.find("parameter #0 names operand #7, which the op does not "
                  "have") != std::string::npos);
}

TEST_CASE("schedule: the kernels run on the emulator through the runtime",
          "[nvptx][schedule][emulator]") {
  Fixture f;
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(f.module->getLoc());
  FailureOr<GpuSchedule> s = buildGpuSchedule(
      *f.module, Target::SM80, *kernels, {"train_step"}, lowerBinary);
  REQUIRE(succeeded(s));
  std::string ptx, err;
  bool compiled = compileKernelsToPTX(*kernels, Target::SM80, ptx, err);
  INFO(err);
  REQUIRE(compiled);
  if (haveCudaTool("ptxas")) {
    PtxasReport r = assemblePtx(ptx, "sm_80");
    INFO(r.log);
    CHECK(r.ok);
    CHECK(r.spillStores == 0);
    CHECK(r.perfWarnings.empty());
  }
  FailureOr<llvm::json::Object> manifest = mlir::tg::buildManifest(*f.module, nullptr);
  REQUIRE(succeeded(manifest));
  (*manifest)["gpu"] = llvm::json::Object{
      {"targets", llvm::json::Array{"sm_80"}},
      {"schedules", llvm::json::Object{{"sm_80", scheduleJson(*s)}}}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(*manifest));
  tgrt::ArtifactWriter w;
  REQUIRE(w.addSection("manifest", text, err));
  REQUIRE(w.addSection("gpu.sm_80.ptx", ptx, err));
  auto artifact = tgrt::Artifact::fromBytes(w.bytes(), "step.tgx", err);
  REQUIRE(artifact);
  // Without cpu.so the CPU cannot run it, and says why.
  CHECK_FALSE(tgrt::Executor::load(*artifact, err));
  auto ex = tgrt::Executor::load(*artifact, err, tgrt::DeviceKind::Emulator);
  INFO(err);
  REQUIRE(ex);
  CHECK(ex->deviceDescription() == "emulator (PTX sm_80)");
  tgrt::Tensor wv = tgrt::Tensor::zeros(tgrt::DType::F32, {4, 8});
  tgrt::Tensor xv = tgrt::Tensor::zeros(tgrt::DType::F32, {4, 8});
  for (int i = 0; i < 32; ++i) {
    wv.set(i, 0.5 * i);
    xv.set(i, 1.0 - 0.25 * i);
  }
  REQUIRE(ex->setState("w", wv, err));
  tgrt::TensorMap out;
  REQUIRE(ex->call("train_step", {{"x", xv}}, out, err));
  const tgrt::Tensor &y = out.at("y"), &c = out.at("c");
  const tgrt::Tensor &w2 = ex->state().at("w");
  for (int i = 0; i < 32; ++i) {
    CHECK(y.at(i) == 2 * xv.at(i) + wv.at(i));
    CHECK(c.at(i) == 2.0);
    CHECK(w2.at(i) == wv.at(i) - xv.at(i));
  }
}

TEST_CASE("schedule: kernel symbols tell apart ops whose operands differ",
          "[nvptx][schedule]") {
  DialectRegistry registry;
  mlir::tg::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(R"mlir(
func.func @f(%a: tensor<2x64xf32>, %b: tensor<2x32xf32>, %c: tensor<2x32xf32>)
    -> (tensor<2x96xf32>, tensor<2x96xf32>, tensor<2x32xf32>, tensor<2x32xf32>,
        tensor<2x32xf32>) {
  %0 = tg.concat %a, %b axis = 1 : tensor<2x64xf32>, tensor<2x32xf32> -> tensor<2x96xf32>
  %1 = tg.concat %b, %c, %b axis = 1 : tensor<2x32xf32>, tensor<2x32xf32>, tensor<2x32xf32> -> tensor<2x96xf32>
  %2 = tg.mul %b, %b : tensor<2x32xf32>, tensor<2x32xf32> -> tensor<2x32xf32>
  %3 = tg.mul %b, %c : tensor<2x32xf32>, tensor<2x32xf32> -> tensor<2x32xf32>
  %4 = tg.mul %c, %b {tg.offset = 256 : i64} : tensor<2x32xf32>, tensor<2x32xf32> -> tensor<2x32xf32>
  return %0, %1, %2, %3, %4 : tensor<2x96xf32>, tensor<2x96xf32>, tensor<2x32xf32>, tensor<2x32xf32>, tensor<2x32xf32>
}
)mlir",
                                                    &ctx);
  REQUIRE(m);
  std::vector<std::string> sym;
  m->walk([&](Operation *op) {
    if (isa<mlir::tg::ConcatOp, mlir::tg::MulOp>(op))
      sym.push_back(kernelSymbol(op, "k", Target::SM80));
  });
  REQUIRE(sym.size() == 5);
  // A concat of 64 + 32 columns is not one of 32 + 32 + 32 (their kernels
  // put the inputs at other columns).
  CHECK(sym[0] != sym[1]);
  // x * x is not x * y; x * y on other buffers is the same kernel.
  CHECK(sym[2] != sym[3]);
  CHECK(sym[3] == sym[4]);
}

TEST_CASE("schedule: sm_90a GEMMs' tensor maps describe their operands, "
          "through the manifest to the runtime",
          "[nvptx][schedule][tma]") {
  namespace cu = ::tg::rt::cuda;
  DialectRegistry registry;
  mlir::tg::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // A plain product (A [64, 32] and B [32, 128], both rows 16-byte
  // aligned: wgmma with TMA) and a batched one with B transposed.
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(R"mlir(
func.func @train_step(
    %a: tensor<64x32xbf16> {tg.name = "a", tg.role = #tg.role<input>},
    %b: tensor<32x128xbf16> {tg.name = "b", tg.role = #tg.role<input>},
    %q: tensor<4x64x64xbf16> {tg.name = "q", tg.role = #tg.role<input>},
    %k: tensor<4x64x64xbf16> {tg.name = "k", tg.role = #tg.role<input>})
    -> (tensor<64x128xbf16> {tg.name = "y", tg.role = #tg.role<output>},
        tensor<4x64x64xbf16> {tg.name = "s", tg.role = #tg.role<output>}) {
  %y = tg.matmul %a, %b {tg.acc = f32} : tensor<64x32xbf16>, tensor<32x128xbf16> -> tensor<64x128xbf16>
  %s = tg.matmul %q, %k {transpose_rhs, tg.acc = f32} : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
  return %y, %s : tensor<64x128xbf16>, tensor<4x64x64xbf16>
}
)mlir",
                                                    &ctx);
  REQUIRE(m);
  REQUIRE(succeeded(prepareGpuModule(*m, {"train_step"})));
  // What the generator chose, operand by operand.
  std::vector<std::pair<Value, TensorMapParam>> generated;
  auto record = [&](Operation *op, Target t, ModuleOp kernels)
      -> FailureOr<std::vector<KernelLaunch>> {
    FailureOr<std::vector<KernelLaunch>> l = lowerOpToKernels(op, t, kernels);
    if (succeeded(l))
      for (const KernelLaunch &launch : *l)
        for (const KernelParam &p : launch.params)
          if (p.kind == KernelParam::Kind::TensorMap)
            generated.push_back({op->getOperand(p.index), p.map});
    return l;
  };
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(m->getLoc());
  FailureOr<GpuSchedule> s =
      buildGpuSchedule(*m, Target::SM90a, *kernels, {"train_step"}, record);
  REQUIRE(succeeded(s));
  REQUIRE(generated.size() == 4);
  // Each map covers exactly its operand's bytes, in the driver's order.
  for (const auto &[v, p] : generated) {
    cu::TensorMapArgs a = p.driverArgs();
    INFO(cu::describeTensorMap(a));
    CHECK(cu::checkTensorMap(a).empty());
    CHECK(uint64_t(cu::tensorMapSpan(a)) ==
          uint64_t(mlir::tg::tensorBytes(v.getType())));
    CHECK(a.dataType == cu::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    CHECK(a.swizzle == cu::CU_TENSOR_MAP_SWIZZLE_128B);
    CHECK(a.box[0] == 64); // 128 bytes: the swizzle's span
  }
  // A is K-major [64 rows, 32 columns]; B of the plain product is read as
  // stored, [32 rows, 128 columns]; the batched operands are 3-D.
  CHECK(generated[0].second.driverArgs().dims ==
        std::array<uint64_t, 5>{32, 64, 0, 0, 0});
  CHECK(generated[0].second.driverArgs().strides ==
        std::array<uint64_t, 4>{64, 0, 0, 0});
  CHECK(generated[1].second.driverArgs().dims ==
        std::array<uint64_t, 5>{128, 32, 0, 0, 0});
  CHECK(generated[2].second.driverArgs().rank == 3);
  CHECK(generated[2].second.driverArgs().dims ==
        std::array<uint64_t, 5>{64, 64, 4, 0, 0});
  CHECK(generated[2].second.driverArgs().strides ==
        std::array<uint64_t, 4>{128, 8192, 0, 0});
  // The runtime reads back from the manifest exactly those maps, over
  // buffers of the operands' sizes.
  FailureOr<llvm::json::Object> manifest = mlir::tg::buildManifest(*m, nullptr);
  REQUIRE(succeeded(manifest));
  (*manifest)["gpu"] = llvm::json::Object{
      {"targets", llvm::json::Array{"sm_90a"}},
      {"schedules", llvm::json::Object{{"sm_90a", scheduleJson(*s)}}}};
  std::string text, err;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(*manifest));
  tgrt::Manifest parsed;
  REQUIRE(tgrt::Manifest::parse(text, parsed, err));
  std::set<std::string> names;
  for (const ScheduleStep &st : s->entries[0].steps)
    names.insert(st.launch.symbol);
  tgrt::GpuSchedule back;
  INFO(err);
  REQUIRE(tgrt::parseGpuSchedule(parsed, "sm_90a", names, back, err));
  size_t next = 0;
  for (const tgrt::GpuStep &st : back.entries[0].steps)
    for (size_t i = 0; i < st.maps.size(); ++i) {
      if (!st.maps[i])
        continue;
      REQUIRE(next < generated.size());
      CHECK(*st.maps[i] == generated[next].second.driverArgs());
      CHECK(st.params[i].bytes ==
            mlir::tg::tensorBytes(generated[next].first.getType()));
      ++next;
    }
  CHECK(next == generated.size());
}
