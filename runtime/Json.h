//===- Json.h - a small, strict JSON value, parser and writer ---*- C++ -*-===//
//
// The manifest of a `.tgx` artifact and the header of a safetensors file are
// JSON. This parser accepts RFC 8259 exactly (no comments, no trailing
// commas, no duplicate keys, valid UTF-8 only), bounds the nesting depth, and
// reports the first problem with its byte offset; it never crashes or
// allocates without bound on malformed input (runtime/fuzz checks that).
// Objects keep their keys in file order so a written file reads back equal.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_JSON_H
#define TG_RUNTIME_JSON_H

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tgrt {

/// One JSON value. Numbers written without fraction or exponent that fit in
/// int64 are kept exactly (isInt()); all numbers also have a double value.
class Json {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Json() = default;
  static Json null() { return Json(); }
  static Json boolean(bool b);
  static Json number(double d);
  static Json integer(int64_t i);
  static Json string(std::string s);
  static Json array();
  static Json object();

  /// Parses `text` as one JSON document. On failure returns false and sets
  /// `err` to "byte 17: expected ':' after an object key".
  static bool parse(std::string_view text, Json &out, std::string &err,
                    unsigned maxDepth = 64);

  /// Serialises; `indent` < 0 writes one line, otherwise pretty-prints.
  std::string dump(int indent = -1) const;

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isInt() const { return kind_ == Kind::Number && isInt_; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool asBool() const { return b_; }
  double asDouble() const { return d_; }
  int64_t asInt() const { return i_; }
  const std::string &asString() const { return s_; }
  const std::vector<Json> &items() const { return arr_; }
  const std::vector<std::pair<std::string, Json>> &members() const {
    return obj_;
  }

  /// The member named `key` of an object, or null if absent / not an object.
  const Json *get(std::string_view key) const;
  /// Appends to an array.
  Json &push(Json v);
  /// Sets (replacing) a member of an object.
  Json &set(std::string key, Json v);

  bool operator==(const Json &o) const;
  bool operator!=(const Json &o) const { return !(*this == o); }

private:
  Kind kind_ = Kind::Null;
  bool b_ = false, isInt_ = false;
  double d_ = 0;
  int64_t i_ = 0;
  std::string s_;
  std::vector<Json> arr_;
  std::vector<std::pair<std::string, Json>> obj_;
  friend class JsonParser;
};

/// A JSON string literal for `s` (with quotes).
std::string jsonQuote(std::string_view s);

} // namespace tgrt

#endif // TG_RUNTIME_JSON_H
