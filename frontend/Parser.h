//===- Parser.h - recursive-descent parser for .tg files -------*- C++ -*-===//
//
// Builds the AST from the token vector. On a syntax error it reports once,
// skips to the end of the statement and carries on, so one run shows several
// independent mistakes. Nesting depth is bounded: no input can overflow the
// stack of the parser or of the passes that walk the tree after it.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_PARSER_H
#define TGC_FRONTEND_PARSER_H

#include "frontend/AST.h"

namespace tgc {

/// Deepest expression or block nesting accepted.
constexpr unsigned kMaxNesting = 128;

/// Parses `file`; errors go to `diag`. The program is partial on error.
Program parseProgram(const SourceFile &file, DiagEngine &diag);

} // namespace tgc

#endif // TGC_FRONTEND_PARSER_H
