//===- CallPathTest.cpp - keep_fp32 patterns over call paths ---*- C++ -*-===//
//
// The matching rules of dialects/CallPath.h, which the frontend (to
// diagnose a keep_fp32 entry that selects nothing) and tg-assign-precision
// (to honour it) share.
//
//===----------------------------------------------------------------------===//

#include "dialects/CallPath.h"
#include "dialects/TGDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

using namespace mlir;

TEST_CASE("call-path patterns: whole segments, '*' inside one segment",
          "[callpath]") {
  using tg::callPathMatches;
  // A name selects the call and everything it calls.
  CHECK(callPathMatches("ln_f", "ln_f"));
  CHECK(callPathMatches("h.3", "h.3.attn.c_attn"));
  CHECK_FALSE(callPathMatches("h.3", "h.31"));    // a prefix of whole segments
  CHECK_FALSE(callPathMatches("ln_f", "ln_f_2")); // not of characters
  CHECK_FALSE(callPathMatches("h.3.attn", "h.3")); // longer than the path
  // '*' matches within a segment, never across a '.'.
  CHECK(callPathMatches("h.*.ln_*", "h.0.ln_1"));
  CHECK(callPathMatches("h.*.ln_*", "h.11.ln_2"));
  CHECK(callPathMatches("h.*.ln_*", "h.11.ln_"));
  CHECK_FALSE(callPathMatches("h.*.ln_*", "h.0.attn"));
  CHECK_FALSE(callPathMatches("h.*", "g.0"));
  CHECK(callPathMatches("*", "anything.at.all"));
  CHECK(callPathMatches("h.*1", "h.11"));
  CHECK(callPathMatches("h.1*1", "h.11"));
  CHECK_FALSE(callPathMatches("h.1*1", "h.1"));
  CHECK(callPathMatches("*_*_*", "a_b_c"));
  CHECK_FALSE(callPathMatches("*_*_*", "a_b"));
  // Nothing matches the top level (no call path), nor an empty pattern.
  CHECK_FALSE(callPathMatches("ln_f", ""));
  CHECK_FALSE(callPathMatches("", "ln_f"));
}

TEST_CASE("call paths live in NameLocs, through fused locations",
          "[callpath]") {
  MLIRContext ctx;
  Location file = FileLineColLoc::get(&ctx, "m.tg", 3, 5);
  CHECK(tg::withCallPath(file, "") == file);
  Location named = tg::withCallPath(file, "h.0.fc");
  CHECK(tg::callPath(named) == "h.0.fc");
  CHECK(tg::callPath(file).empty());
  CHECK(tg::callPath(FusedLoc::get(&ctx, {file, named})) == "h.0.fc");
}
