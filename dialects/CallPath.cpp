//===- CallPath.cpp - call-site names of ops and keep_fp32 patterns -------===//
//
// See CallPath.h.
//
//===----------------------------------------------------------------------===//

#include "dialects/CallPath.h"

#include "dialects/TGDialect.h"
#include "dialects/TGOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

Location tg::withCallPath(Location loc, StringRef path) {
  if (path.empty())
    return loc;
  return NameLoc::get(StringAttr::get(loc.getContext(), path), loc);
}

StringRef tg::callPath(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  // A pass that merges ops fuses their locations; the first named one
  // stands for the group.
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (StringRef p = callPath(l); !p.empty())
        return p;
  return "";
}

/// Whether one segment matches a pattern segment with `*` wildcards.
static bool segmentMatches(StringRef pat, StringRef seg) {
  size_t star = pat.find('*');
  if (star == StringRef::npos)
    return pat == seg;
  if (!seg.starts_with(pat.take_front(star)))
    return false;
  StringRef rest = pat.drop_front(star + 1);
  seg = seg.drop_front(star);
  // Try every split for the star: segments are short identifiers.
  for (size_t i = 0; i <= seg.size(); ++i)
    if (segmentMatches(rest, seg.drop_front(i)))
      return true;
  return false;
}

bool tg::callPathMatches(StringRef pattern, StringRef path) {
  if (pattern.empty() || path.empty())
    return false;
  SmallVector<StringRef> pat, segs;
  pattern.split(pat, '.');
  path.split(segs, '.');
  if (pat.size() > segs.size())
    return false;
  for (auto [p, s] : llvm::zip(pat, segs))
    if (!segmentMatches(p, s))
      return false;
  return true;
}

bool tg::keepFp32Selects(StringRef pattern, Operation *op) {
  // A constant has no precision to keep and a cast is the user's explicit
  // choice; neither is selected, so a pattern that names only those is
  // reported as matching nothing.
  if (!isa<TGDialect>(op->getDialect()) || isa<CastOp, ConstantOp>(op))
    return false;
  if (op->getName().getStringRef() == ("tg." + pattern).str())
    return true;
  return callPathMatches(pattern, callPath(op->getLoc()));
}
