//===- Json.h - strict JSON on top of nlohmann-json -------------*- C++ -*-===//
//
// The manifest of a `.tgx` artifact and the header of a safetensors file are
// JSON. Values, the writer and the RFC 8259 lexer are nlohmann-json's
// (Debian `nlohmann-json3-dev`, header-only, no LLVM). What it does not do by
// itself, and the runtime needs against hostile files, is added here by a
// SAX handler: a bound on the nesting depth and the rejection of duplicate
// object keys (nlohmann keeps the last one silently). Errors are one line;
// nothing throws on bad input (runtime/fuzz checks that).
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_JSON_H
#define TG_RUNTIME_JSON_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tgrt {

/// One JSON value. Objects keep their keys in file order, so a written file
/// reads back equal and `tg-run --describe` lists entries as compiled.
using Json = nlohmann::ordered_json;

/// Parses `text` as one JSON document: RFC 8259 exactly (no comments, no
/// trailing commas, valid UTF-8), no duplicate keys, containers nested at
/// most `maxDepth` deep. On failure returns false, leaves `out` unchanged and
/// sets `err` to one line ("byte 5: syntax error while parsing ...",
/// "duplicate key \"a\"", "nesting deeper than 64").
bool parseJson(std::string_view text, Json &out, std::string &err,
               unsigned maxDepth = 64);

/// Serialises `j` on one line (`indent` < 0) or pretty-printed. Never
/// throws: a string that is not UTF-8 is written with U+FFFD in its place.
std::string dumpJson(const Json &j, int indent = -1);

/// The member `key` of `j`, or null when `j` is not an object or lacks it.
const Json *jsonGet(const Json &j, std::string_view key);

/// The value of an integer written without fraction or exponent that fits
/// int64; nullopt for anything else (a float, 2^63, a string...).
std::optional<int64_t> jsonInt(const Json &j);

} // namespace tgrt

#endif // TG_RUNTIME_JSON_H
