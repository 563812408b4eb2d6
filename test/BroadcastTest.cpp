//===- BroadcastTest.cpp - shape inference corner cases ---------*- C++ -*-===//
//
// Type inference of broadcasting, matmul and reductions, through the C++
// builders: what a user building IR in C++ meets first.
//
//===----------------------------------------------------------------------===//

#include "dialects/TGOps.h"
#include "codegen/registry/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <catch2/catch.hpp>

using namespace mlir;

namespace {
/// A context with TGC's dialects and a builder inside a scratch function
/// whose arguments have the given types.
struct Fixture {
  MLIRContext ctx;
  OpBuilder b{&ctx};
  OwningOpRef<ModuleOp> module;
  func::FuncOp fn;
  std::string diagnostics;

  explicit Fixture(ArrayRef<SmallVector<int64_t>> shapes,
                   Type elt = Type()) {
    DialectRegistry registry;
    tg::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    ctx.getDiagEngine().registerHandler([this](Diagnostic &d) {
      diagnostics += d.str();
      diagnostics += "\n";
    });
    if (!elt)
      elt = b.getF32Type();
    SmallVector<Type> types;
    for (auto &s : shapes)
      types.push_back(RankedTensorType::get(s, elt));
    module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    fn = func::FuncOp::create(b, b.getUnknownLoc(), "f",
                              b.getFunctionType(types, {}));
    b.setInsertionPointToStart(fn.addEntryBlock());
  }
  Value arg(unsigned i) { return fn.getArgument(i); }
  /// Terminates the scratch function and verifies the module.
  bool verifies() {
    func::ReturnOp::create(b, b.getUnknownLoc());
    return succeeded(verify(*module));
  }
};

SmallVector<int64_t> shapeOf(Value v) {
  return SmallVector<int64_t>(cast<RankedTensorType>(v.getType()).getShape());
}

/// Infers the result shape of tg.add over two shapes, or nullopt.
std::optional<SmallVector<int64_t>> addShape(SmallVector<int64_t> a,
                                             SmallVector<int64_t> b) {
  return tg::broadcastShapes(a, b);
}
} // namespace

TEST_CASE("broadcasting follows NumPy", "[shapes]") {
  using S = SmallVector<int64_t>;
  CHECK(*addShape({4, 1}, {3}) == S{4, 3});
  CHECK(*addShape({}, {2, 3}) == S{2, 3});        // rank 0 against anything
  CHECK(*addShape({2, 3}, {}) == S{2, 3});
  CHECK(*addShape({1}, {1}) == S{1});
  CHECK(*addShape({5, 1, 7}, {1, 6, 1}) == S{5, 6, 7});
  CHECK(*addShape({1, 1}, {0}) == S{1, 0});       // size-0 dimensions
  CHECK(*addShape({8, 1, 6, 1}, {7, 1, 5}) == S{8, 7, 6, 5});
  CHECK_FALSE(addShape({3}, {4}).has_value());
  CHECK_FALSE(addShape({2, 3}, {3, 2}).has_value());
  CHECK_FALSE(addShape({0}, {2}).has_value());    // 0 is not 1

  int64_t bad = -1;
  CHECK_FALSE(tg::broadcastShapes({4, 3}, {5, 3}, &bad).has_value());
  CHECK(bad == 0);
}

TEST_CASE("builders infer broadcast results", "[shapes]") {
  Fixture f({{4, 1}, {3}});
  Location loc = f.b.getUnknownLoc();
  Value sum = tg::AddOp::create(f.b, loc, f.arg(0), f.arg(1));
  CHECK(shapeOf(sum) == SmallVector<int64_t>{4, 3});
  Value cmp =
      tg::CmpOp::create(f.b, loc, tg::CmpPredicate::lt, f.arg(0), f.arg(1));
  CHECK(cast<RankedTensorType>(cmp.getType()).getElementType().isInteger(1));
  Value sel = tg::SelectOp::create(f.b, loc, cmp, f.arg(1), f.arg(0));
  CHECK(shapeOf(sel) == SmallVector<int64_t>{4, 3});
  CHECK(f.verifies());
}

TEST_CASE("matmul infers batched and transposed shapes", "[shapes]") {
  Fixture f({{8, 64, 32}, {16, 32}, {32, 64}});
  Location loc = f.b.getUnknownLoc();
  auto mm = tg::MatmulOp::create(f.b, loc, f.arg(0), f.arg(1),
                                 /*transpose_lhs=*/false,
                                 /*transpose_rhs=*/true);
  CHECK(shapeOf(mm) == SmallVector<int64_t>{8, 64, 16});
  auto tn = tg::MatmulOp::create(f.b, loc, f.arg(2), f.arg(2), true, false);
  CHECK(shapeOf(tn) == SmallVector<int64_t>{64, 64});
  CHECK(f.verifies());
}

TEST_CASE("matmul with mismatched K reports both shapes", "[shapes]") {
  Fixture f({{4, 5}, {6, 7}});
  SmallVector<Type> types;
  auto status = tg::MatmulOp::inferReturnTypes(
      &f.ctx, f.b.getUnknownLoc(),
      tg::MatmulOp::Adaptor({f.arg(0), f.arg(1)}), types);
  CHECK(failed(status));
  CHECK_THAT(f.diagnostics, Catch::Contains("contraction dimensions differ") &&
                                Catch::Contains("tensor<4x5xf32>") &&
                                Catch::Contains("tensor<6x7xf32>"));
}

TEST_CASE("reductions keep or drop dimensions", "[shapes]") {
  Fixture f({{2, 3, 4}});
  Location loc = f.b.getUnknownLoc();
  Value x = f.arg(0);
  CHECK(shapeOf(tg::SumOp::create(f.b, loc, x, ArrayRef<int64_t>{0, 2}, false)) ==
        SmallVector<int64_t>{3});
  CHECK(shapeOf(tg::MeanOp::create(f.b, loc, x, ArrayRef<int64_t>{1}, true)) ==
        SmallVector<int64_t>{2, 1, 4});
  CHECK(shapeOf(tg::MaxOp::create(f.b, loc, x, ArrayRef<int64_t>{0, 1, 2},
                                  false))
            .empty());
  CHECK(f.verifies());
}

TEST_CASE("conv2d and pooling output sizes", "[shapes]") {
  Fixture f({{8, 1, 28, 28}, {6, 1, 5, 5}});
  Location loc = f.b.getUnknownLoc();
  auto conv = tg::Conv2dOp::create(f.b, loc, f.arg(0), f.arg(1),
                                   ArrayRef<int64_t>{1, 1},
                                   ArrayRef<int64_t>{2, 2},
                                   ArrayRef<int64_t>{1, 1}, 1);
  CHECK(shapeOf(conv) == SmallVector<int64_t>{8, 6, 28, 28});
  auto pool = tg::MaxPool2dOp::create(f.b, loc, conv, ArrayRef<int64_t>{2, 2},
                                      ArrayRef<int64_t>{2, 2},
                                      ArrayRef<int64_t>{0, 0});
  CHECK(shapeOf(pool) == SmallVector<int64_t>{8, 6, 14, 14});
  CHECK(tg::windowOutputSize(5, 3, 2, 1, 1) == 3);
  CHECK(tg::windowOutputSize(2, 5, 1, 0, 1) == 0);
  CHECK(f.verifies());
}
