//===- AST.h - syntax tree of the .tg model language -----------*- C++ -*-===//
//
// The parser's output: a model declaration, `def` sub-graphs and an optional
// `train` block. Nodes are plain structs owning their children; every node
// records its source position for diagnostics and IR locations.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_AST_H
#define TGC_FRONTEND_AST_H

#include "frontend/Diagnostics.h"
#include "frontend/Lexer.h"

#include <memory>
#include <string>
#include <vector>

namespace tgc {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// One segment of a call-site name: `as h[i]` is {h} then {[i]}.
struct PathSeg {
  std::string name; ///< identifier segment, or empty when `index` is set
  ExprPtr index;    ///< `[expr]` segment, evaluated to an integer
  SrcLoc loc;
};

/// An expression. One struct for all kinds keeps the tree easy to walk.
struct Expr {
  enum Kind {
    Int,    ///< intValue
    Float,  ///< floatValue
    String, ///< text
    Name,   ///< text
    Unary,  ///< op, args[0]
    Binary, ///< op, args[0], args[1]
    Call,   ///< text (callee), args, argNames ("" = positional), asPath
    Index,  ///< args[0] = base, args[1..] = subscripts (Slice or others)
    Slice,  ///< args[0..2] = start, stop, step; null when omitted
    Member, ///< args[0] = base, text = member name (`x.shape`)
    List,   ///< args = elements
  };
  Kind kind;
  SrcLoc loc;
  Tok op = Tok::Eof;
  std::string text;
  int64_t intValue = 0;
  double floatValue = 0;
  std::vector<ExprPtr> args;
  std::vector<std::string> argNames;
  std::vector<PathSeg> asPath;
  bool hasAs = false;
  unsigned depth = 1; ///< height of this subtree (bounded by the parser)

  Expr(Kind kind, SrcLoc loc) : kind(kind), loc(loc) {}
};

/// `f32[batch, 784]`.
struct TypeExpr {
  std::string dtype;
  SrcLoc loc;
  std::vector<ExprPtr> dims;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

/// A statement of a model or def body.
struct Stmt {
  enum Kind {
    Input,    ///< input name: type
    Param,    ///< param name: type [= init]   (value = init expression)
    Assign,   ///< name = value
    For,      ///< for name in value { body }
    Return,   ///< return value
    Minimize, ///< minimize value
    Output,   ///< output name [= value]
  };
  Kind kind;
  SrcLoc loc;
  std::string name;
  SrcLoc nameLoc;
  TypeExpr type;
  ExprPtr value;
  std::vector<StmtPtr> body;

  Stmt(Kind kind, SrcLoc loc) : kind(kind), loc(loc) {}
};

/// `name = default` in a model header.
struct HyperDecl {
  std::string name;
  SrcLoc loc;
  ExprPtr value;
};

struct ModelDecl {
  std::string name;
  SrcLoc loc;
  std::vector<HyperDecl> hypers;
  std::vector<StmtPtr> body;
};

struct DefDecl {
  std::string name;
  SrcLoc loc;
  std::vector<std::string> params;
  std::vector<SrcLoc> paramLocs;
  std::vector<StmtPtr> body;
};

/// `key = value` in a train block.
struct TrainEntry {
  std::string key;
  SrcLoc loc;
  ExprPtr value;
};

struct TrainDecl {
  SrcLoc loc;
  std::vector<TrainEntry> entries;
};

/// A whole .tg file.
struct Program {
  std::vector<ModelDecl> models;
  std::vector<DefDecl> defs;
  std::vector<TrainDecl> trains;
};

} // namespace tgc

#endif // TGC_FRONTEND_AST_H
