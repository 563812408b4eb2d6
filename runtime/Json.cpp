//===- Json.cpp - strict JSON on top of nlohmann-json ---------------------===//
//
// nlohmann's parser is iterative and validates the grammar, escapes, UTF-8
// and number ranges; its SAX interface lets us build the document ourselves
// and stop at the first container nested too deep or key seen twice, before
// the input can cost more than a bounded stack of frames.
//
//===----------------------------------------------------------------------===//
#include "runtime/Json.h"

#include <unordered_set>
#include <vector>

namespace tgrt {

namespace {

/// Builds a Json like nlohmann's own DOM builder, with the two checks.
class StrictBuilder final : public nlohmann::json_sax<Json> {
public:
  StrictBuilder(Json &root, unsigned maxDepth)
      : root(root), maxDepth(maxDepth) {}

  std::string error;

  bool null() override { return add(nullptr); }
  bool boolean(bool v) override { return add(v); }
  bool number_integer(number_integer_t v) override { return add(v); }
  bool number_unsigned(number_unsigned_t v) override { return add(v); }
  bool number_float(number_float_t v, const string_t &) override {
    return add(v);
  }
  bool string(string_t &v) override { return add(std::move(v)); }
  // Only the binary formats (CBOR, ...) produce these; JSON text never does.
  bool binary(binary_t &) override { return fail("unexpected binary value"); }

  bool start_object(std::size_t) override { return open(Json::object()); }
  bool key(string_t &k) override {
    if (!frames.back().keys.insert(k).second)
      return fail("duplicate key \"" + k + "\"");
    pendingKey = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &ex) override {
    // what() is "[json.exception.parse_error.101] parse error at line 1,
    // column 6: syntax error ..."; the byte offset says the same in one
    // number and matches the runtime's other messages.
    std::string_view what = ex.what();
    if (size_t p = what.find("] "); p != std::string_view::npos)
      what.remove_prefix(p + 2);
    if (what.rfind("parse error", 0) == 0)
      if (size_t p = what.find(": "); p != std::string_view::npos)
        what.remove_prefix(p + 2);
    // `position` counts the byte the lexer stopped on; report its 0-based
    // offset, where an editor's "go to byte" lands.
    error = "byte " + std::to_string(position ? position - 1 : 0) + ": " +
            std::string(what);
    return false;
  }

private:
  /// A container being filled, and (for objects) the keys seen so far: a
  /// hash set keeps hostile objects with many keys linear.
  struct Frame {
    Json *value;
    std::unordered_set<std::string> keys;
  };
  Json &root;
  unsigned maxDepth;
  std::vector<Frame> frames;
  std::string pendingKey;

  bool fail(std::string msg) {
    error = std::move(msg);
    return false;
  }
  /// Stores `v` where the grammar puts it; the slot stays valid while it is
  /// the innermost open container, because only that container grows.
  Json &place(Json v) {
    if (frames.empty())
      return root = std::move(v);
    Json &top = *frames.back().value;
    if (top.is_array()) {
      top.push_back(std::move(v));
      return top.back();
    }
    return top[pendingKey] = std::move(v);
  }
  bool add(Json v) {
    place(std::move(v));
    return true;
  }
  bool open(Json empty) {
    if (frames.size() >= maxDepth)
      return fail("nesting deeper than " + std::to_string(maxDepth));
    frames.push_back({&place(std::move(empty)), {}});
    return true;
  }
  bool close() {
    frames.pop_back();
    return true;
  }
};

} // namespace

bool parseJson(std::string_view text, Json &out, std::string &err,
               unsigned maxDepth) {
  Json doc;
  StrictBuilder builder(doc, maxDepth);
  if (!Json::sax_parse(text.begin(), text.end(), &builder,
                       nlohmann::json::input_format_t::json, /*strict=*/true,
                       /*ignore_comments=*/false)) {
    err = builder.error.empty() ? "invalid JSON" : builder.error;
    return false;
  }
  out = std::move(doc);
  return true;
}

std::string dumpJson(const Json &j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false,
                nlohmann::json::error_handler_t::replace);
}

const Json *jsonGet(const Json &j, std::string_view key) {
  if (!j.is_object())
    return nullptr;
  auto it = j.find(std::string(key));
  return it == j.end() ? nullptr : &*it;
}

std::optional<int64_t> jsonInt(const Json &j) {
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v > uint64_t(INT64_MAX))
      return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer())
    return j.get<int64_t>();
  return std::nullopt;
}

} // namespace tgrt
