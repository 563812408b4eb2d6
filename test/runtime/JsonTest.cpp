//===- JsonTest.cpp - the strict JSON parser and writer -------------------===//
#include "runtime/Json.h"

#include <catch2/catch.hpp>

using tgrt::Json;

static std::string parseError(const std::string &text) {
  Json j;
  std::string err;
  REQUIRE_FALSE(Json::parse(text, j, err));
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
    REQUIRE(Json::parse(text, a, err));
    for (int indent : {-1, 2}) {
      std::string out = a.dump(indent);
      REQUIRE(Json::parse(out, b, err));
      CHECK(a == b);
    }
  }
}

TEST_CASE("JSON keeps integers exact and key order", "[runtime][json]") {
  Json j;
  std::string err;
  REQUIRE(Json::parse(R"({"z":9007199254740993,"a":[1.0,2],"m":"\ud83d\ude00"})", j, err));
  REQUIRE(j.get("z")->isInt());
  CHECK(j.get("z")->asInt() == 9007199254740993LL);
  CHECK_FALSE(j.get("a")->items()[0].isInt());
  CHECK(j.get("a")->items()[1].isInt());
  CHECK(j.members()[0].first == "z");
  CHECK(j.members()[1].first == "a");
  CHECK(j.get("m")->asString() == "\xF0\x9F\x98\x80");
  CHECK(j.dump() == R"({"z":9007199254740993,"a":[1.0,2],"m":"😀"})");
  CHECK(j.get("missing") == nullptr);
}

TEST_CASE("JSON rejects malformed input with a byte offset", "[runtime][json]") {
  CHECK(parseError("") == "byte 0: unexpected end of input, expected a value");
  CHECK(parseError("{\"a\" 1}") == "byte 5: expected ':' after an object key");
  CHECK(parseError("[1,]") == "byte 3: unexpected character ']'");
  CHECK(parseError("{\"a\":1,}") == "byte 7: expected a string key");
  CHECK(parseError("{\"a\":1,\"a\":2}") == "byte 7: duplicate key \"a\"");
  CHECK(parseError("01") == "byte 1: leading zeros are not allowed");
  CHECK(parseError("1 2") == "byte 2: unexpected data after the JSON value");
  CHECK(parseError("\"abc") == "byte 4: unterminated string");
  CHECK(parseError("\"\\x\"") == "byte 2: invalid escape \\x");
  CHECK(parseError("\"\\ud800\"") == "byte 7: unpaired high surrogate in a \\u escape");
  CHECK(parseError("\"\\udc00\"") == "byte 7: unpaired low surrogate in a \\u escape");
  CHECK(parseError("\"a\nb\"") == "byte 2: control character 0x0a in a string");
  CHECK(parseError("\"\xff\"") == "byte 1: invalid UTF-8 byte 0xff");
  CHECK(parseError("\"\xc3") == "byte 1: truncated UTF-8 sequence");
  CHECK(parseError("\"\xe0\x80\x80\"") == "byte 1: invalid UTF-8 sequence");
  CHECK(parseError("1e999") == "byte 0: number out of range");
  CHECK(parseError("-") == "byte 1: expected a digit");
  CHECK(parseError("1.") == "byte 2: expected a digit after '.'");
  CHECK(parseError("tru") == "byte 0: invalid literal");
  CHECK(parseError("NaN") == "byte 0: unexpected character 'N'");
  CHECK(parseError("// c\n1") == "byte 0: unexpected character '/'");
}

TEST_CASE("JSON bounds the nesting depth", "[runtime][json]") {
  std::string deep(100000, '[');
  std::string err = parseError(deep);
  CHECK(err == "byte 64: nesting deeper than 64");
  Json j;
  std::string ok = std::string(64, '[') + std::string(64, ']');
  CHECK(Json::parse(ok, j, err));
  CHECK_FALSE(Json::parse(ok, j, err, 63));
}

TEST_CASE("JSON never accepts a prefix of a valid document", "[runtime][json]") {
  std::string doc = R"({"a":[1,2.5,"x\u00e9",true,null],"b":{"c":-3e2}})";
  for (size_t n = 0; n < doc.size(); ++n) {
    Json j;
    std::string err;
    INFO(doc.substr(0, n));
    CHECK_FALSE(Json::parse(doc.substr(0, n), j, err));
    CHECK(err.rfind("byte ", 0) == 0);
  }
}
