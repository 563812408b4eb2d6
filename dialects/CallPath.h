//===- CallPath.h - call-site names of ops and keep_fp32 patterns -*- C++ -*-===//
//
// The frontend names every op built inside a def call with the call's path
// (`h.3.ln_1`: the `as` names from the model down), as a NameLoc around the
// op's file:line:col. The train block's `keep_fp32` patterns select ops by
// that path or by op kind; the frontend (to diagnose patterns that match
// nothing) and tg-assign-precision (to honour them) share these rules.
// docs/language.md "keep_fp32" has the syntax and why a location.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_CALLPATH_H
#define TGC_DIALECTS_CALLPATH_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

namespace mlir::tg {

/// `loc` named with call path `path` (unchanged when `path` is empty).
Location withCallPath(Location loc, StringRef path);

/// The call path recorded in `loc` (the name of its outermost NameLoc,
/// looking through FusedLocs), or "" for an op built at the model's top
/// level.
StringRef callPath(Location loc);

/// Whether call-path pattern `pattern` matches `path`. Both are segments
/// separated by '.'; a `*` matches any run of characters inside one segment.
/// A pattern matches a path that it spells out completely or one that it
/// prefixes by whole segments (`h.*` selects `h.0.attn.c_attn` too: a layer
/// includes its sub-layers).
bool callPathMatches(StringRef pattern, StringRef path);

/// Whether keep_fp32 pattern `pattern` selects `op`: its op kind (the name
/// without `tg.`, e.g. `softmax`) is the pattern, or its call path matches.
/// Only tg ops are selected, and never a tg.constant or tg.cast.
bool keepFp32Selects(StringRef pattern, Operation *op);

} // namespace mlir::tg

#endif // TGC_DIALECTS_CALLPATH_H
