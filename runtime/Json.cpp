//===- Json.cpp - a small, strict JSON value, parser and writer -----------===//
//
// A recursive-descent parser over a string_view. Depth is bounded so hostile
// input cannot exhaust the stack; every error names the byte offset.
//
//===----------------------------------------------------------------------===//
#include "runtime/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tgrt {

Json Json::boolean(bool b) {
  Json j;
  j.kind_ = Kind::Bool;
  j.b_ = b;
  return j;
}
Json Json::number(double d) {
  Json j;
  j.kind_ = Kind::Number;
  j.d_ = d;
  // Integral doubles within the exact range print and compare as integers.
  if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e15) {
    j.isInt_ = true;
    j.i_ = static_cast<int64_t>(d);
  }
  return j;
}
Json Json::integer(int64_t i) {
  Json j;
  j.kind_ = Kind::Number;
  j.isInt_ = true;
  j.i_ = i;
  j.d_ = static_cast<double>(i);
  return j;
}
Json Json::string(std::string s) {
  Json j;
  j.kind_ = Kind::String;
  j.s_ = std::move(s);
  return j;
}
Json Json::array() {
  Json j;
  j.kind_ = Kind::Array;
  return j;
}
Json Json::object() {
  Json j;
  j.kind_ = Kind::Object;
  return j;
}

const Json *Json::get(std::string_view key) const {
  for (const auto &m : obj_)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

Json &Json::push(Json v) {
  arr_.push_back(std::move(v));
  return arr_.back();
}

Json &Json::set(std::string key, Json v) {
  for (auto &m : obj_)
    if (m.first == key)
      return m.second = std::move(v);
  obj_.emplace_back(std::move(key), std::move(v));
  return obj_.back().second;
}

bool Json::operator==(const Json &o) const {
  if (kind_ != o.kind_)
    return false;
  switch (kind_) {
  case Kind::Null: return true;
  case Kind::Bool: return b_ == o.b_;
  case Kind::Number:
    return isInt_ && o.isInt_ ? i_ == o.i_ : d_ == o.d_;
  case Kind::String: return s_ == o.s_;
  case Kind::Array: return arr_ == o.arr_;
  case Kind::Object: return obj_ == o.obj_;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

class JsonParser {
public:
  JsonParser(std::string_view t, unsigned maxDepth) : t_(t), maxDepth_(maxDepth) {}

  bool run(Json &out, std::string &err) {
    skipWs();
    bool ok = value(out, 0);
    if (ok) {
      skipWs();
      if (pos_ != t_.size())
        ok = fail("unexpected data after the JSON value");
    }
    if (!ok)
      err = "byte " + std::to_string(pos_) + ": " + err_;
    return ok;
  }

private:
  std::string_view t_;
  size_t pos_ = 0;
  unsigned maxDepth_;
  std::string err_;

  bool fail(std::string msg) {
    if (err_.empty())
      err_ = std::move(msg);
    return false;
  }
  bool eof() const { return pos_ >= t_.size(); }
  void skipWs() {
    while (!eof() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' ||
                      t_[pos_] == '\r'))
      ++pos_;
  }
  bool literal(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word)
      return fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool value(Json &out, unsigned depth) {
    if (eof())
      return fail("unexpected end of input, expected a value");
    char c = t_[pos_];
    switch (c) {
    case '{': return object(out, depth + 1);
    case '[': return array(out, depth + 1);
    case '"': out.kind_ = Json::Kind::String; return string(out.s_);
    case 't': out = Json::boolean(true); return literal("true");
    case 'f': out = Json::boolean(false); return literal("false");
    case 'n': out = Json(); return literal("null");
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return number(out);
      return fail(std::string("unexpected character ") + describe(c));
    }
  }

  static std::string describe(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f)
      return std::string("'") + c + "'";
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", u);
    return buf;
  }

  bool object(Json &out, unsigned depth) {
    if (depth > maxDepth_)
      return fail("nesting deeper than " + std::to_string(maxDepth_));
    out = Json::object();
    ++pos_;
    skipWs();
    if (!eof() && t_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skipWs();
      if (eof() || t_[pos_] != '"')
        return fail("expected a string key");
      size_t keyPos = pos_;
      std::string key;
      if (!string(key))
        return false;
      if (out.get(key)) {
        pos_ = keyPos;
        return fail("duplicate key \"" + key + "\"");
      }
      skipWs();
      if (eof() || t_[pos_] != ':')
        return fail("expected ':' after an object key");
      ++pos_;
      skipWs();
      Json v;
      if (!value(v, depth))
        return false;
      out.obj_.emplace_back(std::move(key), std::move(v));
      skipWs();
      if (eof())
        return fail("unexpected end of input in an object");
      if (t_[pos_] == '}') {
        ++pos_;
        return true;
      }
      if (t_[pos_] != ',')
        return fail("expected ',' or '}' in an object");
      ++pos_;
    }
  }

  bool array(Json &out, unsigned depth) {
    if (depth > maxDepth_)
      return fail("nesting deeper than " + std::to_string(maxDepth_));
    out = Json::array();
    ++pos_;
    skipWs();
    if (!eof() && t_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skipWs();
      Json v;
      if (!value(v, depth))
        return false;
      out.arr_.push_back(std::move(v));
      skipWs();
      if (eof())
        return fail("unexpected end of input in an array");
      if (t_[pos_] == ']') {
        ++pos_;
        return true;
      }
      if (t_[pos_] != ',')
        return fail("expected ',' or ']' in an array");
      ++pos_;
    }
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool hex4(uint32_t &v) {
    if (t_.size() - pos_ < 4)
      return fail("unexpected end of input in a \\u escape");
    v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = t_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else { --pos_; return fail("invalid hex digit in a \\u escape"); }
    }
    return true;
  }

  /// Validates one UTF-8 sequence starting at pos_ and appends it.
  bool utf8(std::string &s) {
    unsigned char c = static_cast<unsigned char>(t_[pos_]);
    size_t n;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; min = 0x10000; }
    else return fail("invalid UTF-8 byte " + describe(t_[pos_]));
    if (t_.size() - pos_ <= n)
      return fail("truncated UTF-8 sequence");
    for (size_t i = 1; i <= n; ++i) {
      unsigned char cc = static_cast<unsigned char>(t_[pos_ + i]);
      if ((cc & 0xc0) != 0x80)
        return fail("invalid UTF-8 sequence");
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return fail("invalid UTF-8 sequence");
    s.append(t_.substr(pos_, n + 1));
    pos_ += n + 1;
    return true;
  }

  bool string(std::string &s) {
    ++pos_; // opening quote
    while (true) {
      if (eof())
        return fail("unterminated string");
      char c = t_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character " + describe(c) + " in a string");
      if (static_cast<unsigned char>(c) >= 0x80) {
        if (!utf8(s))
          return false;
        continue;
      }
      ++pos_;
      if (c != '\\') {
        s += c;
        continue;
      }
      if (eof())
        return fail("unterminated string");
      char e = t_[pos_++];
      switch (e) {
      case '"': s += '"'; break;
      case '\\': s += '\\'; break;
      case '/': s += '/'; break;
      case 'b': s += '\b'; break;
      case 'f': s += '\f'; break;
      case 'n': s += '\n'; break;
      case 'r': s += '\r'; break;
      case 't': s += '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xdc00 && cp <= 0xdfff)
          return fail("unpaired low surrogate in a \\u escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          uint32_t lo;
          if (t_.substr(pos_, 2) != "\\u")
            return fail("unpaired high surrogate in a \\u escape");
          pos_ += 2;
          if (!hex4(lo))
            return false;
          if (lo < 0xdc00 || lo > 0xdfff)
            return fail("unpaired high surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        appendUtf8(s, cp);
        break;
      }
      default:
        --pos_;
        return fail("invalid escape \\" + std::string(1, e));
      }
    }
  }

  bool number(Json &out) {
    size_t start = pos_;
    bool integral = true;
    if (t_[pos_] == '-')
      ++pos_;
    if (eof() || !isdigit(t_[pos_]))
      return fail("expected a digit");
    if (t_[pos_] == '0') {
      ++pos_;
      if (!eof() && isdigit(t_[pos_]))
        return fail("leading zeros are not allowed");
    } else {
      while (!eof() && isdigit(t_[pos_]))
        ++pos_;
    }
    if (!eof() && t_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (eof() || !isdigit(t_[pos_]))
        return fail("expected a digit after '.'");
      while (!eof() && isdigit(t_[pos_]))
        ++pos_;
    }
    if (!eof() && (t_[pos_] == 'e' || t_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (!eof() && (t_[pos_] == '+' || t_[pos_] == '-'))
        ++pos_;
      if (eof() || !isdigit(t_[pos_]))
        return fail("expected a digit in the exponent");
      while (!eof() && isdigit(t_[pos_]))
        ++pos_;
    }
    std::string text(t_.substr(start, pos_ - start));
    if (integral) {
      errno = 0;
      char *end = nullptr;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end == text.c_str() + text.size()) {
        out = Json::integer(v);
        return true;
      }
    }
    double d = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(d)) {
      pos_ = start;
      return fail("number out of range");
    }
    out = Json();
    out.kind_ = Json::Kind::Number;
    out.d_ = d;
    return true;
  }

  static bool isdigit(char c) { return c >= '0' && c <= '9'; }
};

bool Json::parse(std::string_view text, Json &out, std::string &err,
                 unsigned maxDepth) {
  JsonParser p(text, maxDepth);
  Json v;
  if (!p.run(v, err))
    return false;
  out = std::move(v);
  return true;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

std::string jsonQuote(std::string_view s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
    case '"': o += "\\\""; break;
    case '\\': o += "\\\\"; break;
    case '\n': o += "\\n"; break;
    case '\r': o += "\\r"; break;
    case '\t': o += "\\t"; break;
    case '\b': o += "\\b"; break;
    case '\f': o += "\\f"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        o += buf;
      } else {
        o += c;
      }
    }
  }
  return o + "\"";
}

static void dumpTo(const Json &j, std::string &o, int indent, int level) {
  auto newline = [&](int l) {
    if (indent >= 0) {
      o += '\n';
      o.append(static_cast<size_t>(indent * l), ' ');
    }
  };
  switch (j.kind()) {
  case Json::Kind::Null: o += "null"; return;
  case Json::Kind::Bool: o += j.asBool() ? "true" : "false"; return;
  case Json::Kind::Number: {
    if (j.isInt()) {
      o += std::to_string(j.asInt());
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", j.asDouble());
      o += buf;
      // Keep a fraction so the value reads back as a non-integer.
      if (std::string_view(buf).find_first_of(".eEn") == std::string_view::npos)
        o += ".0";
    }
    return;
  }
  case Json::Kind::String: o += jsonQuote(j.asString()); return;
  case Json::Kind::Array: {
    o += '[';
    bool first = true;
    for (const Json &v : j.items()) {
      o += first ? "" : (indent >= 0 ? "," : ",");
      first = false;
      newline(level + 1);
      dumpTo(v, o, indent, level + 1);
    }
    if (!j.items().empty())
      newline(level);
    o += ']';
    return;
  }
  case Json::Kind::Object: {
    o += '{';
    bool first = true;
    for (const auto &m : j.members()) {
      o += first ? "" : ",";
      first = false;
      newline(level + 1);
      o += jsonQuote(m.first);
      o += indent >= 0 ? ": " : ":";
      dumpTo(m.second, o, indent, level + 1);
    }
    if (!j.members().empty())
      newline(level);
    o += '}';
    return;
  }
  }
}

std::string Json::dump(int indent) const {
  std::string o;
  dumpTo(*this, o, indent, 0);
  return o;
}

} // namespace tgrt
