//===- Lexer.h - tokens of the .tg model language --------------*- C++ -*-===//
//
// A hand-written lexer in the style of Toy's: it turns the whole file into a
// token vector up front, so the parser can look ahead freely and recover from
// errors by skipping to the next line. Newlines are tokens (statements end
// at a newline); the parser ignores them inside brackets.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_LEXER_H
#define TGC_FRONTEND_LEXER_H

#include "frontend/Diagnostics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

enum class Tok {
  Eof,
  Newline,
  Ident,
  Int,
  Float,
  String,
  // Keywords.
  KwModel,
  KwDef,
  KwInput,
  KwParam,
  KwFor,
  KwIn,
  KwReturn,
  KwMinimize,
  KwOutput,
  KwTrain,
  KwAs,
  // Punctuation.
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Semi,
  Dot,
  Assign,
  Plus,
  Minus,
  Star,
  Slash,
  At,
  StarStar,
  Less,
  LessEq,
  Greater,
  GreaterEq,
  EqEq,
  NotEq,
  Error,
};

/// A token with its spelling and position. Numbers are decoded here; a
/// size literal such as `16GiB` is an Int holding the byte count.
struct Token {
  Tok kind = Tok::Eof;
  SrcLoc loc;
  std::string text;
  int64_t intValue = 0;
  double floatValue = 0;
};

/// Human-readable name of a token kind, for "expected X" messages.
const char *tokName(Tok kind);

/// Lexes `file`; lexical errors go to `diag` and produce Tok::Error tokens.
std::vector<Token> lex(const SourceFile &file, DiagEngine &diag);

} // namespace tgc

#endif // TGC_FRONTEND_LEXER_H
