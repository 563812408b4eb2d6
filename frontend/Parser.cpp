//===- Parser.cpp - recursive-descent parser for .tg files -----*- C++ -*-===//
//
// Grammar (see docs/language.md for the full description):
//
//   file    := (model | def | train)*
//   model   := 'model' NAME '(' [NAME '=' expr {',' NAME '=' expr}] ')' block
//   def     := 'def' NAME '(' [NAME {',' NAME}] ')' block
//   train   := 'train' '{' {NAME '=' expr} '}'
//   stmt    := 'input' NAME ':' type | 'param' NAME ':' type ['=' expr]
//            | NAME '=' expr | 'for' NAME 'in' expr block | 'return' expr
//            | 'minimize' expr | 'output' NAME ['=' expr]
//   expr    := sum [cmpop sum];  sum := prod {(+|-) prod}
//   prod    := unary {(*|/|@) unary};  unary := (-|+) unary | power
//   power   := postfix ['**' unary]
//   postfix := primary {'(' args ')' ['as' path] | '[' subscripts ']' | '.' NAME}
//
//===----------------------------------------------------------------------===//

#include "frontend/Parser.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>

using namespace tgc;

namespace {

class Parser {
public:
  Parser(std::vector<Token> toks, DiagEngine &diag)
      : toks(std::move(toks)), diag(diag) {}

  Program run() {
    Program prog;
    while (!diag.tooMany()) {
      stmtStart = pos;
      const Token &t = cur();
      switch (t.kind) {
      case Tok::Eof:
        return prog;
      case Tok::Newline:
      case Tok::Semi:
        consume();
        break;
      case Tok::KwModel: {
        ModelDecl m;
        if (parseModel(m))
          prog.models.push_back(std::move(m));
        else
          syncTopLevel();
        break;
      }
      case Tok::KwDef: {
        DefDecl d;
        if (parseDef(d))
          prog.defs.push_back(std::move(d));
        else
          syncTopLevel();
        break;
      }
      case Tok::KwTrain: {
        TrainDecl tr;
        if (parseTrain(tr))
          prog.trains.push_back(std::move(tr));
        else
          syncTopLevel();
        break;
      }
      default:
        if (t.kind != Tok::Error)
          diag.error(t.loc, llvm::Twine("expected 'model', 'def' or 'train' at "
                                        "top level, found ") +
                                describe(t));
        consume();
        syncTopLevel();
        break;
      }
    }
    return prog;
  }

private:
  //===--------------------------------------------------------------------===//
  // Token access. Inside brackets newlines are insignificant.
  //===--------------------------------------------------------------------===//
  const Token &cur() {
    if (nest > 0)
      while (toks[pos].kind == Tok::Newline)
        ++pos;
    return toks[pos];
  }
  Tok kind() { return cur().kind; }
  bool at(Tok k) { return kind() == k; }
  Token consume() {
    Token t = cur();
    if (t.kind != Tok::Eof)
      ++pos;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k))
      return false;
    consume();
    return true;
  }

  static std::string describe(const Token &t) {
    switch (t.kind) {
    case Tok::Ident:
    case Tok::Int:
    case Tok::Float:
      return "'" + t.text + "'";
    case Tok::String:
      return "string \"" + t.text + "\"";
    default:
      return tokName(t.kind);
    }
  }

  /// Reports "expected X" unless the current token is already an error token
  /// (the lexer has reported it).
  bool expected(const llvm::Twine &what) {
    const Token &t = cur();
    if (t.kind == Tok::Error)
      return false;
    // Inside brackets the parser skipped line ends to get here. The mistake
    // is almost always an unclosed bracket on the earlier line: report it
    // there, and resume at that line end so the next line is still parsed.
    size_t k = pos;
    while (k > stmtStart && toks[k - 1].kind == Tok::Newline)
      --k;
    if (k < pos && k > stmtStart) {
      const Token &last = toks[k - 1];
      SrcLoc end{last.loc.line, last.loc.col + static_cast<unsigned>(
                                                   last.kind == Tok::String
                                                       ? last.text.size() + 2
                                                       : last.text.size())};
      pos = k;
      return diag.error(end, "expected " + what + ", found end of line");
    }
    return diag.error(t.loc, "expected " + what + ", found " + describe(t));
  }
  bool expect(Tok k, const llvm::Twine &context = "") {
    if (accept(k))
      return true;
    if (context.isTriviallyEmpty())
      return expected(tokName(k));
    return expected(llvm::Twine(tokName(k)) + " " + context);
  }
  bool expectIdent(std::string &name, SrcLoc &loc, const char *what) {
    if (!at(Tok::Ident))
      return expected(what);
    Token t = consume();
    name = t.text;
    loc = t.loc;
    return true;
  }

  /// After an error inside a statement: skip to its end.
  void syncStmt() {
    nest = 0;
    unsigned braces = 0;
    while (true) {
      Tok k = toks[pos].kind;
      if (k == Tok::Eof)
        return;
      if (braces == 0 && (k == Tok::Newline || k == Tok::Semi || k == Tok::RBrace))
        return;
      if (k == Tok::LBrace)
        ++braces;
      if (k == Tok::RBrace)
        --braces;
      ++pos;
    }
  }
  /// After an error in a declaration header: skip to the next top-level
  /// keyword at the start of a line.
  void syncTopLevel() {
    nest = 0;
    while (toks[pos].kind != Tok::Eof) {
      Tok k = toks[pos].kind;
      if ((k == Tok::KwModel || k == Tok::KwDef || k == Tok::KwTrain) &&
          (pos == 0 || toks[pos - 1].kind == Tok::Newline))
        return;
      ++pos;
    }
  }

  /// RAII depth counter for recursive productions.
  struct DepthGuard {
    Parser &p;
    explicit DepthGuard(Parser &p) : p(p) { ++p.depth; }
    ~DepthGuard() { --p.depth; }
  };
  bool tooDeep(SrcLoc loc) {
    if (depth <= kMaxNesting)
      return false;
    if (!reportedDepth)
      diag.error(loc, "nesting is too deep (the limit is " +
                          llvm::Twine(kMaxNesting) + " levels)");
    reportedDepth = true;
    return true;
  }

  ExprPtr node(Expr::Kind k, SrcLoc loc) { return std::make_unique<Expr>(k, loc); }

  /// Adds `child` to `e` and updates the height; null on excessive height.
  bool adopt(Expr &e, ExprPtr child) {
    if (child)
      e.depth = std::max(e.depth, child->depth + 1);
    e.args.push_back(std::move(child));
    if (e.depth > kMaxNesting) {
      if (!reportedDepth)
        diag.error(e.loc, "expression is too deeply nested (the limit is " +
                              llvm::Twine(kMaxNesting) + " levels)");
      reportedDepth = true;
      return false;
    }
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Declarations.
  //===--------------------------------------------------------------------===//
  bool parseModel(ModelDecl &m) {
    m.loc = consume().loc;
    if (!expectIdent(m.name, m.loc, "a model name after 'model'"))
      return false;
    if (!expect(Tok::LParen, "after the model name"))
      return false;
    ++nest;
    while (!at(Tok::RParen)) {
      HyperDecl h;
      if (!expectIdent(h.name, h.loc, "a hyper-parameter name"))
        return false;
      if (!expect(Tok::Assign, "and a default value after the hyper-parameter "
                               "name (hyper-parameters need defaults)"))
        return false;
      h.value = parseExpr();
      if (!h.value)
        return false;
      m.hypers.push_back(std::move(h));
      if (!accept(Tok::Comma))
        break;
    }
    if (!expect(Tok::RParen, "to close the hyper-parameter list"))
      return false;
    --nest;
    return parseBlock(m.body);
  }

  bool parseDef(DefDecl &d) {
    d.loc = consume().loc;
    if (!expectIdent(d.name, d.loc, "a name after 'def'"))
      return false;
    if (!expect(Tok::LParen, "after the def name"))
      return false;
    ++nest;
    while (!at(Tok::RParen)) {
      std::string name;
      SrcLoc loc;
      if (!expectIdent(name, loc, "an argument name"))
        return false;
      d.params.push_back(name);
      d.paramLocs.push_back(loc);
      if (!accept(Tok::Comma))
        break;
    }
    if (!expect(Tok::RParen, "to close the argument list"))
      return false;
    --nest;
    return parseBlock(d.body);
  }

  bool parseTrain(TrainDecl &tr) {
    tr.loc = consume().loc;
    if (!expect(Tok::LBrace, "after 'train'"))
      return false;
    while (!at(Tok::RBrace) && !at(Tok::Eof) && !diag.tooMany()) {
      if (accept(Tok::Newline) || accept(Tok::Semi))
        continue;
      size_t start = pos;
      stmtStart = pos;
      TrainEntry e;
      bool ok = expectIdent(e.key, e.loc, "a setting name such as 'optimizer'") &&
                expect(Tok::Assign, "after the setting name");
      if (ok) {
        e.value = parseExpr();
        ok = e.value && endOfStmt();
      }
      if (ok) {
        tr.entries.push_back(std::move(e));
      } else {
        syncStmt();
        if (pos <= start && toks[pos].kind != Tok::Eof)
          pos = start + 1;
      }
    }
    return expect(Tok::RBrace, "to close the train block");
  }

  /// `{ stmt* }`, recovering statement by statement.
  bool parseBlock(std::vector<StmtPtr> &body) {
    if (!expect(Tok::LBrace))
      return false;
    // The enclosing statement resumes after this block.
    struct Restore {
      size_t &ref, saved;
      ~Restore() { ref = saved; }
    } restore{stmtStart, stmtStart};
    DepthGuard g(*this);
    if (tooDeep(toks[pos - 1].loc))
      return false;
    while (!at(Tok::RBrace) && !at(Tok::Eof) && !diag.tooMany()) {
      if (accept(Tok::Newline) || accept(Tok::Semi))
        continue;
      size_t start = pos;
      stmtStart = pos;
      StmtPtr s = parseStmt();
      if (s && endOfStmt()) {
        body.push_back(std::move(s));
      } else {
        syncStmt();
        // Recovery must make progress, whatever the error path did.
        if (pos <= start && toks[pos].kind != Tok::Eof)
          pos = start + 1;
      }
    }
    return expect(Tok::RBrace, "to close the block");
  }

  /// A statement ends at a newline, ';' or before a closing brace.
  bool endOfStmt() {
    if (at(Tok::Newline) || at(Tok::Semi)) {
      consume();
      return true;
    }
    if (at(Tok::RBrace) || at(Tok::Eof))
      return true;
    return expected("end of statement");
  }

  //===--------------------------------------------------------------------===//
  // Statements.
  //===--------------------------------------------------------------------===//
  StmtPtr parseStmt() {
    const Token &t = cur();
    switch (t.kind) {
    case Tok::KwInput:
    case Tok::KwParam: {
      auto s = std::make_unique<Stmt>(
          t.kind == Tok::KwInput ? Stmt::Input : Stmt::Param, t.loc);
      const char *what = s->kind == Stmt::Input ? "an input name" : "a parameter name";
      consume();
      if (!expectIdent(s->name, s->nameLoc, what) ||
          !expect(Tok::Colon, "and a type after the name, as in 'x: f32[4, 8]'") ||
          !parseType(s->type))
        return nullptr;
      if (s->kind == Stmt::Param && accept(Tok::Assign)) {
        s->value = parseExpr();
        if (!s->value)
          return nullptr;
      }
      return s;
    }
    case Tok::KwFor: {
      auto s = std::make_unique<Stmt>(Stmt::For, t.loc);
      consume();
      if (!expectIdent(s->name, s->nameLoc, "a loop variable after 'for'") ||
          !expect(Tok::KwIn, "after the loop variable"))
        return nullptr;
      s->value = parseExpr();
      if (!s->value || !parseBlock(s->body))
        return nullptr;
      return s;
    }
    case Tok::KwReturn:
    case Tok::KwMinimize: {
      auto s = std::make_unique<Stmt>(
          t.kind == Tok::KwReturn ? Stmt::Return : Stmt::Minimize, t.loc);
      consume();
      s->value = parseExpr();
      return s->value ? std::move(s) : nullptr;
    }
    case Tok::KwOutput: {
      auto s = std::make_unique<Stmt>(Stmt::Output, t.loc);
      consume();
      if (!expectIdent(s->name, s->nameLoc, "a name after 'output'"))
        return nullptr;
      if (accept(Tok::Assign)) {
        s->value = parseExpr();
        if (!s->value)
          return nullptr;
      }
      return s;
    }
    case Tok::Ident: {
      if (toks[pos + 1].kind != Tok::Assign) {
        // An expression on its own computes nothing anyone can use.
        expected("'=' after '" + t.text + "' (a statement is 'name = expr', "
                 "'input', 'param', 'for', 'return', 'minimize' or 'output')");
        return nullptr;
      }
      auto s = std::make_unique<Stmt>(Stmt::Assign, t.loc);
      s->name = t.text;
      s->nameLoc = t.loc;
      consume();
      consume();
      s->value = parseExpr();
      return s->value ? std::move(s) : nullptr;
    }
    default:
      expected("a statement");
      return nullptr;
    }
  }

  bool parseType(TypeExpr &ty) {
    if (!at(Tok::Ident))
      return expected("an element type such as f32");
    Token t = consume();
    ty.dtype = t.text;
    ty.loc = t.loc;
    if (!expect(Tok::LBracket, "and a shape after the element type, as in "
                               "'f32[4, 8]' ('f32[]' is a scalar)"))
      return false;
    ++nest;
    while (!at(Tok::RBracket)) {
      ExprPtr d = parseExpr();
      if (!d)
        return false;
      ty.dims.push_back(std::move(d));
      if (!accept(Tok::Comma))
        break;
    }
    --nest;
    return expect(Tok::RBracket, "to close the shape");
  }

  //===--------------------------------------------------------------------===//
  // Expressions.
  //===--------------------------------------------------------------------===//
  ExprPtr parseExpr() {
    DepthGuard g(*this);
    if (tooDeep(cur().loc))
      return nullptr;
    ExprPtr lhs = parseSum();
    if (!lhs)
      return nullptr;
    Tok k = kind();
    if (k == Tok::Less || k == Tok::LessEq || k == Tok::Greater ||
        k == Tok::GreaterEq || k == Tok::EqEq || k == Tok::NotEq) {
      Token opTok = consume();
      ExprPtr rhs = parseSum();
      if (!rhs)
        return nullptr;
      return binary(opTok, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr binary(const Token &opTok, ExprPtr lhs, ExprPtr rhs) {
    ExprPtr e = node(Expr::Binary, opTok.loc);
    e->op = opTok.kind;
    if (!adopt(*e, std::move(lhs)) || !adopt(*e, std::move(rhs)))
      return nullptr;
    return e;
  }

  ExprPtr parseSum() {
    ExprPtr lhs = parseProduct();
    while (lhs && (at(Tok::Plus) || at(Tok::Minus))) {
      Token opTok = consume();
      ExprPtr rhs = parseProduct();
      if (!rhs)
        return nullptr;
      lhs = binary(opTok, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parseProduct() {
    ExprPtr lhs = parseUnary();
    while (lhs && (at(Tok::Star) || at(Tok::Slash) || at(Tok::At))) {
      Token opTok = consume();
      ExprPtr rhs = parseUnary();
      if (!rhs)
        return nullptr;
      lhs = binary(opTok, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  ExprPtr parseUnary() {
    DepthGuard g(*this);
    if (tooDeep(cur().loc))
      return nullptr;
    if (at(Tok::Minus) || at(Tok::Plus)) {
      Token opTok = consume();
      ExprPtr operand = parseUnary();
      if (!operand)
        return nullptr;
      if (opTok.kind == Tok::Plus)
        return operand;
      ExprPtr e = node(Expr::Unary, opTok.loc);
      e->op = Tok::Minus;
      if (!adopt(*e, std::move(operand)))
        return nullptr;
      return e;
    }
    ExprPtr base = parsePostfix();
    if (base && at(Tok::StarStar)) {
      Token opTok = consume();
      ExprPtr exponent = parseUnary();
      if (!exponent)
        return nullptr;
      return binary(opTok, std::move(base), std::move(exponent));
    }
    return base;
  }

  ExprPtr parsePostfix() {
    ExprPtr e = parsePrimary();
    while (e) {
      if (at(Tok::LParen)) {
        if (e->kind != Expr::Name) {
          diag.error(cur().loc, "only a named op or def can be called");
          return nullptr;
        }
        e = parseCall(std::move(e));
      } else if (at(Tok::LBracket)) {
        e = parseIndex(std::move(e));
      } else if (at(Tok::Dot)) {
        SrcLoc loc = consume().loc;
        ExprPtr m = node(Expr::Member, loc);
        if (!expectIdent(m->text, m->loc, "a member name after '.'"))
          return nullptr;
        if (!adopt(*m, std::move(e)))
          return nullptr;
        e = std::move(m);
      } else {
        break;
      }
    }
    return e;
  }

  ExprPtr parseCall(ExprPtr callee) {
    ExprPtr call = node(Expr::Call, callee->loc);
    call->text = callee->text;
    consume(); // (
    ++nest;
    bool sawNamed = false;
    while (!at(Tok::RParen)) {
      std::string argName;
      if (at(Tok::Ident) && peekKind(1) == Tok::Assign) {
        argName = consume().text;
        consume();
        sawNamed = true;
      } else if (sawNamed) {
        diag.error(cur().loc, "positional argument after a named argument");
        return nullptr;
      }
      ExprPtr arg = parseExpr();
      if (!arg)
        return nullptr;
      call->argNames.push_back(argName);
      if (!adopt(*call, std::move(arg)))
        return nullptr;
      if (!accept(Tok::Comma))
        break;
    }
    if (!expect(Tok::RParen, "to close the argument list"))
      return nullptr;
    --nest;
    if (accept(Tok::KwAs)) {
      call->hasAs = true;
      PathSeg first;
      if (!expectIdent(first.name, first.loc, "a name after 'as'"))
        return nullptr;
      call->asPath.push_back(std::move(first));
      while (at(Tok::Dot) || at(Tok::LBracket)) {
        PathSeg seg;
        if (accept(Tok::Dot)) {
          if (at(Tok::Int)) {
            Token t = consume();
            seg.name = t.text;
            seg.loc = t.loc;
          } else if (!expectIdent(seg.name, seg.loc, "a name after '.'")) {
            return nullptr;
          }
        } else {
          seg.loc = consume().loc;
          ++nest;
          seg.index = parseExpr();
          if (!seg.index || !expect(Tok::RBracket, "to close the name index"))
            return nullptr;
          --nest;
        }
        call->asPath.push_back(std::move(seg));
      }
    }
    return call;
  }

  Tok peekKind(unsigned ahead) {
    size_t p = pos;
    for (unsigned n = 0;; ++p) {
      if (toks[p].kind == Tok::Eof)
        return Tok::Eof;
      if (nest > 0 && toks[p].kind == Tok::Newline)
        continue;
      if (n++ == ahead)
        return toks[p].kind;
    }
  }

  ExprPtr parseIndex(ExprPtr base) {
    ExprPtr e = node(Expr::Index, cur().loc);
    consume(); // [
    ++nest;
    if (!adopt(*e, std::move(base)))
      return nullptr;
    while (!at(Tok::RBracket)) {
      ExprPtr sub;
      SrcLoc loc = cur().loc;
      ExprPtr start;
      if (!at(Tok::Colon)) {
        start = parseExpr();
        if (!start)
          return nullptr;
      }
      if (accept(Tok::Colon)) {
        sub = node(Expr::Slice, loc);
        ExprPtr stop, step;
        if (!at(Tok::Colon) && !at(Tok::Comma) && !at(Tok::RBracket)) {
          stop = parseExpr();
          if (!stop)
            return nullptr;
        }
        if (accept(Tok::Colon) && !at(Tok::Comma) && !at(Tok::RBracket)) {
          step = parseExpr();
          if (!step)
            return nullptr;
        }
        if (!adopt(*sub, std::move(start)) || !adopt(*sub, std::move(stop)) ||
            !adopt(*sub, std::move(step)))
          return nullptr;
      } else {
        sub = std::move(start);
      }
      if (!adopt(*e, std::move(sub)))
        return nullptr;
      if (!accept(Tok::Comma))
        break;
    }
    if (!expect(Tok::RBracket, "to close the subscript"))
      return nullptr;
    --nest;
    return e;
  }

  ExprPtr parsePrimary() {
    const Token &t = cur();
    switch (t.kind) {
    case Tok::Int: {
      ExprPtr e = node(Expr::Int, t.loc);
      e->intValue = t.intValue;
      e->floatValue = t.floatValue;
      e->text = t.text;
      consume();
      return e;
    }
    case Tok::Float: {
      ExprPtr e = node(Expr::Float, t.loc);
      e->floatValue = t.floatValue;
      e->text = t.text;
      consume();
      return e;
    }
    case Tok::String: {
      ExprPtr e = node(Expr::String, t.loc);
      e->text = t.text;
      consume();
      return e;
    }
    case Tok::Ident: {
      ExprPtr e = node(Expr::Name, t.loc);
      e->text = t.text;
      consume();
      return e;
    }
    case Tok::LParen: {
      consume();
      ++nest;
      ExprPtr e = parseExpr();
      if (!e || !expect(Tok::RParen, "to close the parenthesis"))
        return nullptr;
      --nest;
      return e;
    }
    case Tok::LBracket: {
      ExprPtr e = node(Expr::List, t.loc);
      consume();
      ++nest;
      while (!at(Tok::RBracket)) {
        ExprPtr elt = parseExpr();
        if (!elt || !adopt(*e, std::move(elt)))
          return nullptr;
        if (!accept(Tok::Comma))
          break;
      }
      if (!expect(Tok::RBracket, "to close the list"))
        return nullptr;
      --nest;
      return e;
    }
    default:
      expected("an expression");
      return nullptr;
    }
  }

  std::vector<Token> toks;
  DiagEngine &diag;
  size_t pos = 0;
  unsigned nest = 0;
  /// First token of the statement being parsed; error look-back stops here.
  size_t stmtStart = 0;
  unsigned depth = 0;
  bool reportedDepth = false;
};

} // namespace

Program tgc::parseProgram(const SourceFile &file, DiagEngine &diag) {
  return Parser(lex(file, diag), diag).run();
}
