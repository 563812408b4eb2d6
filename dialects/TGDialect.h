//===- TGDialect.h - the tg dialect -----------------------------*- C++ -*-===//
//
// Declares the tg dialect, its enums, attributes and types.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TGDIALECT_H
#define TGC_DIALECTS_TGDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Operation.h"

// Attributes before the dialect: its discardable-attribute helpers name them.
#include "dialects/TGEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TGAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/TGTypes.h.inc"

#include "dialects/TGDialect.h.inc"

namespace mlir::tg {
/// The names of the tg dialect's discardable attributes, spelled once in
/// TGDialect.td (`discardableAttrs`); typed access goes through the
/// generated helpers (`tg::dialect(ctx).getOffsetAttrHelper()`).
namespace attr {
inline constexpr llvm::StringLiteral name = TGDialect::NameAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral role = TGDialect::RoleAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral init = TGDialect::InitAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral model = TGDialect::ModelAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral hyper = TGDialect::HyperAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral train = TGDialect::TrainAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral offset = TGDialect::OffsetAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral offsets = TGDialect::OffsetsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral bytes = TGDialect::BytesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral aliasArg = TGDialect::AliasArgAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral aliasArgs = TGDialect::AliasArgsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral memory = TGDialect::MemoryAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral scratch =
    TGDialect::ScratchAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral scratchOffset =
    TGDialect::ScratchOffsetAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral recomputed = TGDialect::RecomputedAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral remat = TGDialect::RematAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral budgetFit = TGDialect::BudgetFitAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral acc = TGDialect::AccAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral precision = TGDialect::PrecisionAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral arena = TGDialect::ArenaAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral arenaBytes = TGDialect::ArenaBytesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral flops = TGDialect::FlopsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral bytesRead = TGDialect::BytesReadAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral bytesWritten = TGDialect::BytesWrittenAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral tileConfigs = TGDialect::TileConfigsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral ranks = TGDialect::RanksAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral zero = TGDialect::ZeroAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral shardOf = TGDialect::ShardOfAttrHelper::getNameStr();
} // namespace attr

/// The tg dialect of `ctx`, loaded on demand: the owner of the typed
/// discardable-attribute helpers.
inline TGDialect &dialect(MLIRContext *ctx) {
  return *ctx->getOrLoadDialect<TGDialect>();
}

/// The tg.role of argument `i` of a function (func.func, llvm.func...), if
/// it has one.
template <typename FnOp>
std::optional<Role> getArgRole(FnOp fn, unsigned i) {
  if (auto r = fn.template getArgAttrOfType<RoleAttr>(i, attr::role))
    return r.getValue();
  return std::nullopt;
}
/// The tg.role of result `i` of a function, if it has one.
template <typename FnOp>
std::optional<Role> getResultRole(FnOp fn, unsigned i) {
  if (auto r = fn.template getResultAttrOfType<RoleAttr>(i, attr::role))
    return r.getValue();
  return std::nullopt;
}

/// The memory plan summary of a planned function (tg-plan-memory), if any.
inline MemoryPlanAttr getMemoryPlan(Operation *fn) {
  return dialect(fn->getContext()).getMemoryAttrHelper().getAttr(fn);
}

/// The op's tg.scratch bytes (tg-size-scratch), or null.
inline IntegerAttr getScratchBytes(Operation *op) {
  return dialect(op->getContext()).getScratchAttrHelper().getAttr(op);
}
/// The op's tg.scratch_offset in the arena (tg-plan-memory), or null.
inline IntegerAttr getScratchOffset(Operation *op) {
  return dialect(op->getContext()).getScratchOffsetAttrHelper().getAttr(op);
}
/// Sets the op's tg.scratch to `bytes` (an i64, as the verifier requires).
inline void setScratchBytes(Operation *op, int64_t bytes) {
  MLIRContext *ctx = op->getContext();
  dialect(ctx).getScratchAttrHelper().setAttr(
      op, IntegerAttr::get(IntegerType::get(ctx, 64), bytes));
}
/// Sets the op's tg.scratch_offset to `offset` (an i64).
inline void setScratchOffset(Operation *op, int64_t offset) {
  MLIRContext *ctx = op->getContext();
  dialect(ctx).getScratchOffsetAttrHelper().setAttr(
      op, IntegerAttr::get(IntegerType::get(ctx, 64), offset));
}
} // namespace mlir::tg

#endif // TGC_DIALECTS_TGDIALECT_H
