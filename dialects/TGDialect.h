//===- TGDialect.h - the tg dialect -----------------------------*- C++ -*-===//
//
// Declares the tg dialect, its enums and attributes.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TGDIALECT_H
#define TGC_DIALECTS_TGDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/TGDialect.h.inc"
#include "dialects/TGEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TGAttrs.h.inc"

namespace mlir::tg {
/// Argument, result and module attribute names of model functions.
namespace attr {
inline constexpr llvm::StringLiteral name = "tg.name";
inline constexpr llvm::StringLiteral role = "tg.role";
inline constexpr llvm::StringLiteral init = "tg.init";
inline constexpr llvm::StringLiteral model = "tg.model";
inline constexpr llvm::StringLiteral hyper = "tg.hyper";
inline constexpr llvm::StringLiteral train = "tg.train";
} // namespace attr
} // namespace mlir::tg

#endif // TGC_DIALECTS_TGDIALECT_H
