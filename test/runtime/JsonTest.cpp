//===- JsonTest.cpp - strict JSON parsing on top of nlohmann-json ---------===//
//
// What the runtime adds to nlohmann-json (depth bound, duplicate keys, one
// line errors with a byte offset, integers exact, file order kept) and that
// the library's own checks still reach our callers.
//
//===----------------------------------------------------------------------===//
#include "runtime/Json.h"

#include <catch2/catch.hpp>

using tgrt::Json;
using tgrt::parseJson;

static std::string parseError(const std::string &text) {
  Json j;
  std::string err;
  REQUIRE_FALSE(parseJson(text, j, err));
  CHECK(err.find('\n') == std::string::npos);
  return err;
}

TEST_CASE("JSON round-trips through dump and parse", "[runtime][json]") {
  const char *docs[] = {
      "null", "true", "false", "0", "-12", "3.5", "1e-7", "\"\"",
      R"("a\"b\\c\n\t\u0001é€😀")", "[]", "{}", "[1,[2,[3]],{\"k\":null}]",
      R"({"format":1,"entries":{"e":{"args":[{"shape":[2,3]}]}},"x":-0.25})",
      "9223372036854775807", "-9223372036854775808", "1e300"};
  for (const char *text : docs) {
    INFO(text);
    Json a, b;
    std::string err;
    REQUIRE(parseJson(text, a, err));
    for (int indent : {-1, 2}) {
      std::string out = tgrt::dumpJson(a, indent);
      REQUIRE(parseJson(out, b, err));
      CHECK(a == b);
    }
  }
}

TEST_CASE("JSON keeps integers exact and key order", "[runtime][json]") {
  Json j;
  std::string err;
  REQUIRE(parseJson(R"({"z":9007199254740993,"a":[1.0,2],"m":"\ud83d\ude00"})",
                    j, err));
  CHECK(tgrt::jsonInt(*tgrt::jsonGet(j, "z")) == 9007199254740993LL);
  CHECK_FALSE(tgrt::jsonInt(j["a"][0]));
  CHECK(tgrt::jsonInt(j["a"][1]) == 2);
  CHECK(j.begin().key() == "z");
  CHECK(std::next(j.begin()).key() == "a");
  CHECK(j["m"] == "\xF0\x9F\x98\x80");
  CHECK(tgrt::dumpJson(j) == R"({"z":9007199254740993,"a":[1.0,2],"m":"😀"})");
  CHECK(tgrt::jsonGet(j, "missing") == nullptr);
  CHECK(tgrt::jsonGet(j["a"], "z") == nullptr);
}

TEST_CASE("JSON integers outside int64 are not integers", "[runtime][json]") {
  Json j;
  std::string err;
  REQUIRE(parseJson("[9223372036854775808, 18446744073709551615, -1, 2.0]", j,
                    err));
  CHECK_FALSE(tgrt::jsonInt(j[0]));
  CHECK_FALSE(tgrt::jsonInt(j[1]));
  CHECK(tgrt::jsonInt(j[2]) == -1);
  CHECK_FALSE(tgrt::jsonInt(j[3]));
}

TEST_CASE("JSON rejects malformed input with a byte offset", "[runtime][json]") {
  // The messages are nlohmann's; the offset is where its lexer stopped.
  const char *bad[] = {"",         "{\"a\" 1}", "[1,]",     "{\"a\":1,}",
                       "01",       "1 2",       "\"abc",    "\"\\x\"",
                       "\"\\ud800\"", "\"\\udc00\"", "\"a\nb\"", "\"\xff\"",
                       "\"\xc3",   "\"\xe0\x80\x80\"", "-", "1.", "tru",
                       "NaN",      "// c\n1",  "[1] x"};
  for (const char *text : bad) {
    INFO(text);
    std::string err = parseError(text);
    CHECK(err.rfind("byte ", 0) == 0);
  }
  CHECK(parseError("{\"a\" 1}").find("expected ':'") != std::string::npos);
  CHECK(parseError("1e999") == "byte 4: number overflow parsing '1e999'");
}

TEST_CASE("JSON rejects duplicate keys at any depth", "[runtime][json]") {
  CHECK(parseError(R"({"a":1,"a":2})") == "duplicate key \"a\"");
  CHECK(parseError(R"({"x":{"b":[],"c":0,"b":{}}})") == "duplicate key \"b\"");
  // The same key in sibling objects is fine.
  Json j;
  std::string err;
  CHECK(parseJson(R"([{"a":1},{"a":2}])", j, err));
}

TEST_CASE("JSON bounds the nesting depth", "[runtime][json]") {
  std::string deep(100000, '[');
  CHECK(parseError(deep) == "nesting deeper than 64");
  CHECK(parseError(std::string(200000, '{')) != "");
  Json j;
  std::string err;
  std::string ok = std::string(64, '[') + std::string(64, ']');
  CHECK(parseJson(ok, j, err));
  CHECK_FALSE(parseJson(ok, j, err, 63));
  CHECK(err == "nesting deeper than 63");
}

TEST_CASE("JSON never accepts a prefix of a valid document", "[runtime][json]") {
  std::string doc = R"({"a":[1,2.5,"x\u00e9",true,null],"b":{"c":-3e2}})";
  for (size_t n = 0; n < doc.size(); ++n) {
    Json j = 7;
    std::string err;
    INFO(doc.substr(0, n));
    CHECK_FALSE(parseJson(doc.substr(0, n), j, err));
    CHECK(err.rfind("byte ", 0) == 0);
    CHECK(j == 7); // untouched on failure
  }
}

TEST_CASE("JSON writing never throws on bytes that are not UTF-8",
          "[runtime][json]") {
  Json j = {{"k", std::string("a\xff")}};
  std::string out = tgrt::dumpJson(j);
  Json back;
  std::string err;
  REQUIRE(parseJson(out, back, err));
  CHECK(back["k"] == "a\xEF\xBF\xBD");
}
