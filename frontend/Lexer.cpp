//===- Lexer.cpp - tokens of the .tg model language ------------*- C++ -*-===//
//
// Numbers, identifiers, keywords, strings, punctuation and `#` comments.
// Every malformed character sequence becomes a diagnostic plus an Error token,
// never an abort.
//
//===----------------------------------------------------------------------===//

#include "frontend/Lexer.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

using namespace tgc;

const char *tgc::tokName(Tok kind) {
  switch (kind) {
  case Tok::Eof: return "end of file";
  case Tok::Newline: return "end of line";
  case Tok::Ident: return "identifier";
  case Tok::Int: return "integer";
  case Tok::Float: return "number";
  case Tok::String: return "string";
  case Tok::KwModel: return "'model'";
  case Tok::KwDef: return "'def'";
  case Tok::KwInput: return "'input'";
  case Tok::KwParam: return "'param'";
  case Tok::KwFor: return "'for'";
  case Tok::KwIn: return "'in'";
  case Tok::KwReturn: return "'return'";
  case Tok::KwMinimize: return "'minimize'";
  case Tok::KwOutput: return "'output'";
  case Tok::KwTrain: return "'train'";
  case Tok::KwAs: return "'as'";
  case Tok::LParen: return "'('";
  case Tok::RParen: return "')'";
  case Tok::LBracket: return "'['";
  case Tok::RBracket: return "']'";
  case Tok::LBrace: return "'{'";
  case Tok::RBrace: return "'}'";
  case Tok::Comma: return "','";
  case Tok::Colon: return "':'";
  case Tok::Semi: return "';'";
  case Tok::Dot: return "'.'";
  case Tok::Assign: return "'='";
  case Tok::Plus: return "'+'";
  case Tok::Minus: return "'-'";
  case Tok::Star: return "'*'";
  case Tok::Slash: return "'/'";
  case Tok::At: return "'@'";
  case Tok::StarStar: return "'**'";
  case Tok::Less: return "'<'";
  case Tok::LessEq: return "'<='";
  case Tok::Greater: return "'>'";
  case Tok::GreaterEq: return "'>='";
  case Tok::EqEq: return "'=='";
  case Tok::NotEq: return "'!='";
  case Tok::Error: return "invalid token";
  }
  return "token";
}

namespace {
/// Byte multipliers of the size suffixes accepted after a number.
int64_t unitScale(llvm::StringRef unit) {
  return llvm::StringSwitch<int64_t>(unit)
      .Case("B", 1)
      .Case("KB", 1000)
      .Case("MB", 1000 * 1000)
      .Case("GB", 1000LL * 1000 * 1000)
      .Case("TB", 1000LL * 1000 * 1000 * 1000)
      .Case("KiB", 1LL << 10)
      .Case("MiB", 1LL << 20)
      .Case("GiB", 1LL << 30)
      .Case("TiB", 1LL << 40)
      .Default(0);
}

class Lexer {
public:
  Lexer(const SourceFile &file, DiagEngine &diag)
      : src(file.text()), diag(diag) {}

  std::vector<Token> run() {
    std::vector<Token> toks;
    while (true) {
      Token t = next();
      // Blank lines and comment lines collapse into one Newline token.
      if (t.kind == Tok::Newline && (toks.empty() || toks.back().kind == Tok::Newline))
        continue;
      bool eof = t.kind == Tok::Eof;
      toks.push_back(std::move(t));
      if (eof)
        break;
    }
    return toks;
  }

private:
  char peek(size_t ahead = 0) const {
    return pos + ahead < src.size() ? src[pos + ahead] : '\0';
  }
  char advance() {
    char c = src[pos++];
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    return c;
  }

  Token make(Tok kind, SrcLoc loc, size_t begin) {
    Token t;
    t.kind = kind;
    t.loc = loc;
    t.text = src.slice(begin, pos).str();
    return t;
  }

  Token next() {
    // Skip blanks and comments.
    while (pos < src.size()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (pos < src.size() && peek() != '\n')
          advance();
      } else if (c == '\\' && peek(1) == '\n') {
        advance(); // explicit line continuation
        advance();
      } else {
        break;
      }
    }
    SrcLoc loc{line, col};
    size_t begin = pos;
    if (pos >= src.size())
      return make(Tok::Eof, loc, begin);
    char c = advance();
    if (c == '\n')
      return make(Tok::Newline, loc, begin);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')
        advance();
      Token t = make(Tok::Ident, loc, begin);
      t.kind = llvm::StringSwitch<Tok>(t.text)
                   .Case("model", Tok::KwModel)
                   .Case("def", Tok::KwDef)
                   .Case("input", Tok::KwInput)
                   .Case("param", Tok::KwParam)
                   .Case("for", Tok::KwFor)
                   .Case("in", Tok::KwIn)
                   .Case("return", Tok::KwReturn)
                   .Case("minimize", Tok::KwMinimize)
                   .Case("output", Tok::KwOutput)
                   .Case("train", Tok::KwTrain)
                   .Case("as", Tok::KwAs)
                   .Default(Tok::Ident);
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && std::isdigit(static_cast<unsigned char>(peek()))))
      return number(loc, begin);
    if (c == '"')
      return string(loc, begin);
    switch (c) {
    case '(': return make(Tok::LParen, loc, begin);
    case ')': return make(Tok::RParen, loc, begin);
    case '[': return make(Tok::LBracket, loc, begin);
    case ']': return make(Tok::RBracket, loc, begin);
    case '{': return make(Tok::LBrace, loc, begin);
    case '}': return make(Tok::RBrace, loc, begin);
    case ',': return make(Tok::Comma, loc, begin);
    case ':': return make(Tok::Colon, loc, begin);
    case ';': return make(Tok::Semi, loc, begin);
    case '.': return make(Tok::Dot, loc, begin);
    case '+': return make(Tok::Plus, loc, begin);
    case '-': return make(Tok::Minus, loc, begin);
    case '/': return make(Tok::Slash, loc, begin);
    case '@': return make(Tok::At, loc, begin);
    case '*':
      if (peek() == '*') {
        advance();
        return make(Tok::StarStar, loc, begin);
      }
      return make(Tok::Star, loc, begin);
    case '<':
      if (peek() == '=') {
        advance();
        return make(Tok::LessEq, loc, begin);
      }
      return make(Tok::Less, loc, begin);
    case '>':
      if (peek() == '=') {
        advance();
        return make(Tok::GreaterEq, loc, begin);
      }
      return make(Tok::Greater, loc, begin);
    case '=':
      if (peek() == '=') {
        advance();
        return make(Tok::EqEq, loc, begin);
      }
      return make(Tok::Assign, loc, begin);
    case '!':
      if (peek() == '=') {
        advance();
        return make(Tok::NotEq, loc, begin);
      }
      break;
    default:
      break;
    }
    // A non-ASCII character is one error, shown as itself when it is
    // well-formed UTF-8.
    if (static_cast<unsigned char>(c) >= 0xC2 && static_cast<unsigned char>(c) <= 0xF4) {
      size_t n = 0;
      while (n < 3 && (static_cast<unsigned char>(peek(n)) & 0xC0) == 0x80)
        ++n;
      if (n) {
        for (size_t i = 0; i < n; ++i)
          advance();
        diag.error(loc, "unexpected character '" + src.slice(begin, pos) + "'");
        return make(Tok::Error, loc, begin);
      }
    }
    std::string shown = std::isprint(static_cast<unsigned char>(c))
                            ? std::string(1, c)
                            : llvm::formatv("\\x{0:x-2}", (unsigned)(unsigned char)c).str();
    diag.error(loc, "unexpected character '" + shown + "'");
    return make(Tok::Error, loc, begin);
  }

  Token number(SrcLoc loc, size_t begin) {
    bool isFloat = false;
    while (std::isdigit(static_cast<unsigned char>(peek())))
      advance();
    if (peek() == '.' && std::isdigit(static_cast<unsigned char>(peek(1)))) {
      isFloat = true;
      advance();
      while (std::isdigit(static_cast<unsigned char>(peek())))
        advance();
    } else if (src[begin] == '.') {
      isFloat = true;
      while (std::isdigit(static_cast<unsigned char>(peek())))
        advance();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (std::isdigit(static_cast<unsigned char>(peek(1))) ||
         ((peek(1) == '+' || peek(1) == '-') &&
          std::isdigit(static_cast<unsigned char>(peek(2)))))) {
      isFloat = true;
      advance();
      if (peek() == '+' || peek() == '-')
        advance();
      while (std::isdigit(static_cast<unsigned char>(peek())))
        advance();
    }
    std::string digits = src.slice(begin, pos).str();
    Token t;
    t.loc = loc;
    t.kind = isFloat ? Tok::Float : Tok::Int;
    errno = 0;
    if (isFloat) {
      t.floatValue = std::strtod(digits.c_str(), nullptr);
    } else {
      unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
      if (errno == ERANGE || v > (unsigned long long)INT64_MAX) {
        diag.error(loc, "integer literal '" + digits + "' is too large");
        t.kind = Tok::Error;
      }
      t.intValue = static_cast<int64_t>(v);
      t.floatValue = static_cast<double>(v);
    }
    // A unit suffix turns the number into a byte count: 16GiB, 512MB.
    if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') {
      size_t unitBegin = pos;
      while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')
        advance();
      llvm::StringRef unit = src.slice(unitBegin, pos);
      int64_t scale = unitScale(unit);
      t.text = src.slice(begin, pos).str();
      if (!scale) {
        diag.error(loc, "unknown unit '" + unit +
                            "' after number; expected B, KB, MB, GB, TB, "
                            "KiB, MiB, GiB or TiB");
        t.kind = Tok::Error;
        return t;
      }
      double bytes = t.floatValue * static_cast<double>(scale);
      if (!(bytes < 9.0e18)) {
        diag.error(loc, "size '" + t.text + "' is too large");
        t.kind = Tok::Error;
        return t;
      }
      t.kind = Tok::Int;
      t.intValue = static_cast<int64_t>(bytes);
      t.floatValue = bytes;
      return t;
    }
    t.text = std::move(digits);
    return t;
  }

  Token string(SrcLoc loc, size_t begin) {
    std::string value;
    while (pos < src.size() && peek() != '"' && peek() != '\n')
      value.push_back(advance());
    if (peek() != '"') {
      diag.error(loc, "unterminated string literal");
      return make(Tok::Error, loc, begin);
    }
    advance();
    Token t = make(Tok::String, loc, begin);
    t.text = std::move(value);
    return t;
  }

  llvm::StringRef src;
  DiagEngine &diag;
  size_t pos = 0;
  unsigned line = 1;
  unsigned col = 1;
};
} // namespace

std::vector<Token> tgc::lex(const SourceFile &file, DiagEngine &diag) {
  return Lexer(file, diag).run();
}
