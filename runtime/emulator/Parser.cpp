//===- Parser.cpp - PTX text to the emulator's decoded form ---------------===//
//
// Parses the subset of PTX that LLVM's NVPTX printer emits for TGC's
// kernels (module directives, .entry with parameters, .reg/.shared/.local
// declarations, labels, guarded instructions) and decodes every instruction
// once: opcode modifiers become fields, registers numbers, labels program
// counters and symbols offsets in their state space. Anything it does not
// know is a "line:col: ..." error naming it, never a guess, so a kernel
// that runs here runs what its PTX says.
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Emulator.h"
#include "runtime/emulator/Opcode.h"
#include "runtime/emulator/Ptx.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <unordered_map>

namespace tgrt::emu {
namespace {

using detail::decodeOpcode;
using detail::parseType;
using detail::shapeMatches;
using detail::typeBytes;

struct Token {
  enum Kind { End, Ident, Number, Punct, String } kind = End;
  std::string_view text;
  uint32_t line = 0, col = 0;
};

/// Splits PTX into tokens; comments are skipped. Identifiers take dots and
/// `::` so opcodes (`ld.global.nc.v4.b32`), directives and special
/// registers (`%tid.x`) are one token each.
class Lexer {
public:
  explicit Lexer(std::string_view s) : s_(s) { advance(); }
  const Token &peek() const { return tok_; }
  Token next() {
    Token t = tok_;
    advance();
    return t;
  }
  bool isPunct(char c) const {
    return tok_.kind == Token::Punct && tok_.text[0] == c;
  }

private:
  static bool identStart(char c) {
    return std::isalpha((unsigned char)c) || c == '_' || c == '$' ||
           c == '%' || c == '.';
  }
  static bool identChar(char c) {
    return std::isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
  }
  void advance() {
    for (;;) {
      while (pos_ < s_.size() && std::isspace((unsigned char)s_[pos_])) {
        if (s_[pos_] == '\n') {
          ++line_;
          lineStart_ = pos_ + 1;
        }
        ++pos_;
      }
      if (s_.compare(pos_, 2, "//") == 0) {
        while (pos_ < s_.size() && s_[pos_] != '\n')
          ++pos_;
        continue;
      }
      if (s_.compare(pos_, 2, "/*") == 0) {
        size_t end = s_.find("*/", pos_ + 2);
        end = end == std::string_view::npos ? s_.size() : end + 2;
        for (size_t i = pos_; i < end; ++i)
          if (s_[i] == '\n') {
            ++line_;
            lineStart_ = i + 1;
          }
        pos_ = end;
        continue;
      }
      break;
    }
    tok_.line = line_;
    tok_.col = uint32_t(pos_ - lineStart_ + 1);
    if (pos_ >= s_.size()) {
      tok_.kind = Token::End;
      tok_.text = {};
      return;
    }
    size_t start = pos_;
    char c = s_[pos_];
    if (identStart(c)) {
      ++pos_;
      while (pos_ < s_.size()) {
        if (identChar(s_[pos_]))
          ++pos_;
        else if (s_.compare(pos_, 2, "::") == 0)
          pos_ += 2;
        else
          break;
      }
      tok_.kind = Token::Ident;
    } else if (std::isdigit((unsigned char)c)) {
      while (pos_ < s_.size() &&
             (std::isalnum((unsigned char)s_[pos_]) || s_[pos_] == '.'))
        ++pos_;
      tok_.kind = Token::Number;
    } else if (c == '"') {
      ++pos_;
      while (pos_ < s_.size() && s_[pos_] != '"' && s_[pos_] != '\n')
        ++pos_;
      if (pos_ < s_.size() && s_[pos_] == '"')
        ++pos_;
      tok_.kind = Token::String;
    } else {
      ++pos_;
      tok_.kind = Token::Punct;
    }
    tok_.text = s_.substr(start, pos_ - start);
  }

  std::string_view s_;
  size_t pos_ = 0, lineStart_ = 0;
  uint32_t line_ = 1;
  Token tok_;
};

struct ParseError {
  std::string msg;
};

[[noreturn]] void fail(const Token &t, const std::string &what) {
  throw ParseError{std::to_string(t.line) + ":" + std::to_string(t.col) +
                   ": " + what};
}

bool parseNumber(std::string_view s, int64_t &v) {
  auto hex = [&](std::string_view h) {
    if (h.empty() || h.size() > 16)
      return false;
    uint64_t x = 0;
    for (char c : h) {
      if (!std::isxdigit((unsigned char)c))
        return false;
      x = x * 16 + (std::isdigit((unsigned char)c)
                        ? c - '0'
                        : std::tolower((unsigned char)c) - 'a' + 10);
    }
    v = int64_t(x);
    return true;
  };
  if (!s.empty() && (s.back() == 'U' || s.back() == 'u'))
    s.remove_suffix(1);
  if (s.size() > 2 && s[0] == '0') {
    char k = s[1];
    if (k == 'f' || k == 'F')
      return s.size() == 10 && hex(s.substr(2));
    if (k == 'd' || k == 'D')
      return s.size() == 18 && hex(s.substr(2));
    if (k == 'x' || k == 'X')
      return hex(s.substr(2));
  }
  uint64_t x = 0;
  for (char c : s) {
    if (!std::isdigit((unsigned char)c))
      return false;
    uint64_t next = x * 10 + uint64_t(c - '0');
    if (next / 10 != x)
      return false;
    x = next;
  }
  v = int64_t(x);
  return !s.empty();
}

const std::pair<const char *, Sreg> kSregs[] = {
    {"%tid.x", Sreg::TidX},           {"%tid.y", Sreg::TidY},
    {"%tid.z", Sreg::TidZ},           {"%ntid.x", Sreg::NtidX},
    {"%ntid.y", Sreg::NtidY},         {"%ntid.z", Sreg::NtidZ},
    {"%ctaid.x", Sreg::CtaidX},       {"%ctaid.y", Sreg::CtaidY},
    {"%ctaid.z", Sreg::CtaidZ},       {"%nctaid.x", Sreg::NctaidX},
    {"%nctaid.y", Sreg::NctaidY},     {"%nctaid.z", Sreg::NctaidZ},
    {"%laneid", Sreg::Laneid},        {"%warpid", Sreg::Warpid},
    {"%nwarpid", Sreg::Nwarpid},      {"%lanemask_eq", Sreg::LanemaskEq},
    {"%lanemask_lt", Sreg::LanemaskLt}, {"%lanemask_le", Sreg::LanemaskLe},
    {"%lanemask_gt", Sreg::LanemaskGt}, {"%lanemask_ge", Sreg::LanemaskGe},
    {"%clock", Sreg::Clock},          {"%clock64", Sreg::Clock64},
    {"%dynamic_smem_size", Sreg::DynSmem},
    {"%total_smem_size", Sreg::TotalSmem},
    {"%cluster_ctarank", Sreg::ClusterCtarank},
    {"%cluster_nctarank", Sreg::ClusterNctarank}};

/// Limits of the hardware (per thread local; per CTA shared): past them a
/// declaration is an error, not an allocation.
constexpr uint32_t kMaxLocal = 512 * 1024;
constexpr uint32_t kMaxSharedDecl = 232448;

struct Symbol {
  Space space;
  uint32_t offset;
  bool dynamic; // extern shared array: at the kernel's dynSharedOffset
};

struct SharedDecl {
  std::string name;
  uint32_t align, bytes;
  bool external;
};

/// An operand naming a label or symbol, resolved once its target is known.
struct Fixup {
  size_t inst;
  unsigned op;
  Token tok;
};

class Parser {
public:
  explicit Parser(std::string_view text) : lex_(text) {}

  std::vector<std::unique_ptr<Kernel>> parseModule() {
    std::vector<std::unique_ptr<Kernel>> kernels;
    while (lex_.peek().kind != Token::End) {
      Token t = lex_.next();
      std::string_view d = t.text;
      if (d == ".version" || d == ".address_size") {
        expect(Token::Number, "a number");
      } else if (d == ".target") {
        expectIdent();
        while (lex_.isPunct(',')) {
          lex_.next();
          expectIdent();
        }
      } else if (d == ".file" || d == ".loc") {
        unsigned line = t.line;
        while (lex_.peek().kind != Token::End && lex_.peek().line == line)
          lex_.next();
      } else if (d == ".section") {
        skipBalanced();
      } else if (d == ".visible" || d == ".extern" || d == ".weak") {
        external_ = d == ".extern";
        continue; // linkage of the next declaration
      } else if (d == ".entry") {
        kernels.push_back(parseEntry());
      } else if (d == ".func") {
        skipFunc();
      } else if (d == ".shared") {
        sharedDecls_.push_back(parseArrayDecl(t));
      } else if (d == ".global" || d == ".const") {
        fail(t, "module-scope " + std::string(d) +
                    " variables are not supported by the emulator");
      } else {
        fail(t, "unexpected '" + std::string(d) + "' at module scope");
      }
      external_ = false;
    }
    return kernels;
  }

private:
  Token expect(Token::Kind k, const char *what) {
    if (lex_.peek().kind != k)
      fail(lex_.peek(), std::string("expected ") + what + ", found '" +
                            std::string(lex_.peek().text) + "'");
    return lex_.next();
  }
  Token expectIdent() { return expect(Token::Ident, "an identifier"); }
  void expectPunct(char c) {
    if (!lex_.isPunct(c))
      fail(lex_.peek(), std::string("expected '") + c + "', found '" +
                            std::string(lex_.peek().text) + "'");
    lex_.next();
  }
  uint64_t expectUnsigned() {
    Token t = expect(Token::Number, "a number");
    int64_t v;
    if (!parseNumber(t.text, v) || v < 0)
      fail(t, "bad number '" + std::string(t.text) + "'");
    return uint64_t(v);
  }
  /// Skips to the end of a `{ ... }` block that follows (or a `;`).
  void skipBalanced() {
    int depth = 0;
    while (lex_.peek().kind != Token::End) {
      Token t = lex_.next();
      if (t.kind == Token::Punct && t.text[0] == '{')
        ++depth;
      else if (t.kind == Token::Punct && t.text[0] == '}' && --depth <= 0)
        return;
      else if (depth == 0 && t.kind == Token::Punct && t.text[0] == ';')
        return;
    }
  }
  /// A device function: its declaration or its body is skipped; a `call`
  /// is what the emulator refuses (TGC's kernels call nothing).
  void skipFunc() {
    int parens = 0;
    while (lex_.peek().kind != Token::End) {
      if (lex_.isPunct('('))
        ++parens;
      else if (lex_.isPunct(')'))
        --parens;
      else if (parens == 0 && lex_.isPunct(';')) {
        lex_.next();
        return;
      } else if (parens == 0 && lex_.isPunct('{')) {
        skipBalanced();
        return;
      }
      lex_.next();
    }
  }
  /// `[.align N] .type name[N]` or `name[]` (extern) or `name`; after the
  /// state-space directive. Ends at `;`.
  SharedDecl parseArrayDecl(const Token &at) {
    SharedDecl d{"", 0, 0, external_};
    Ty ty = Ty::None;
    while (lex_.peek().kind == Token::Ident && lex_.peek().text[0] == '.') {
      Token m = lex_.next();
      if (m.text == ".align")
        d.align = uint32_t(expectUnsigned());
      else if ((ty = parseType(m.text.substr(1))) == Ty::None)
        fail(m, "unexpected '" + std::string(m.text) + "' in a declaration");
    }
    if (ty == Ty::None)
      fail(at, "declaration without a type");
    d.name = std::string(expectIdent().text);
    uint64_t count = 1;
    if (lex_.isPunct('[')) {
      lex_.next();
      if (lex_.isPunct(']')) {
        count = 0;
        d.external = true;
      } else {
        count = expectUnsigned();
      }
      expectPunct(']');
    }
    if (lex_.isPunct('='))
      fail(lex_.peek(), "initialised " + d.name + " is not supported");
    expectPunct(';');
    uint64_t bytes = count * typeBytes(ty);
    if (bytes > (1u << 30))
      fail(at, "declaration of " + d.name + " is too large");
    d.bytes = uint32_t(bytes);
    if (d.align == 0)
      d.align = typeBytes(ty);
    if (d.align == 0 || (d.align & (d.align - 1)) || d.align > 4096)
      fail(at, "bad alignment in the declaration of " + d.name);
    return d;
  }

  static uint32_t alignTo(uint64_t x, uint32_t a) {
    return uint32_t((x + a - 1) / a * a);
  }

  std::unique_ptr<Kernel> parseEntry() {
    auto k = std::make_unique<Kernel>();
    k->name = std::string(expectIdent().text);
    consts_.clear();
    std::unordered_map<std::string, Symbol> syms;
    std::vector<SharedDecl> shared = sharedDecls_;
    expectPunct('(');
    while (!lex_.isPunct(')')) {
      Token p = expectIdent();
      if (p.text != ".param")
        fail(p, "expected .param, found '" + std::string(p.text) + "'");
      SharedDecl d = parseParam(p);
      uint32_t off = alignTo(k->paramBytes, d.align);
      k->paramOffset.push_back(off);
      k->paramSize.push_back(d.bytes);
      k->paramBytes = off + d.bytes;
      syms[d.name] = {Space::Param, off, false};
      if (lex_.isPunct(','))
        lex_.next();
      else if (!lex_.isPunct(')'))
        fail(lex_.peek(), "expected ',' or ')' in the parameter list");
    }
    lex_.next();
    // Performance directives (.maxntid 128, 1, 1; .reqntid; .pragma ...).
    while (!lex_.isPunct('{')) {
      if (lex_.peek().kind == Token::End)
        fail(lex_.peek(), "missing body of " + k->name);
      lex_.next();
    }
    lex_.next();
    std::vector<Fixup> fixups; // symbols
    regs_.clear();
    numRegs_ = 0;
    scopes_.assign(1, Scope());
    uint32_t localBytes = 0;
    while (!scopes_.empty()) {
      Token t = lex_.next();
      if (t.kind == Token::End)
        fail(t, "unterminated body of " + k->name);
      // `{ ... }` opens a scope for registers and labels (NVPTX wraps each
      // inline asm statement in one, so their labels repeat).
      if (t.kind == Token::Punct && t.text[0] == '{') {
        scopes_.emplace_back();
        continue;
      }
      if (t.kind == Token::Punct && t.text[0] == '}') {
        closeScope(*k);
        continue;
      }
      if (t.kind == Token::Ident && lex_.isPunct(':')) {
        lex_.next();
        if (!scopes_.back()
                 .labels.emplace(std::string(t.text), uint32_t(k->code.size()))
                 .second)
          fail(t, "label " + std::string(t.text) + " defined twice");
        continue;
      }
      if (t.text == ".reg") {
        parseRegDecl();
        continue;
      }
      if (t.text == ".pragma") {
        expect(Token::String, "a string");
        expectPunct(';');
        continue;
      }
      if (t.text == ".local") {
        SharedDecl d = parseArrayDecl(t);
        uint32_t off = alignTo(localBytes, d.align);
        syms[d.name] = {Space::Local, off, false};
        localBytes = off + d.bytes;
        if (localBytes > kMaxLocal)
          fail(t, "over " + std::to_string(kMaxLocal) +
                      " bytes of local memory per thread");
        continue;
      }
      if (t.text == ".shared") {
        shared.push_back(parseArrayDecl(t));
        continue;
      }
      Inst in;
      in.line = t.line;
      if (t.kind == Token::Punct && t.text[0] == '@') {
        bool neg = lex_.isPunct('!');
        if (neg)
          lex_.next();
        Token p = expectIdent();
        in.pred = reg(p.text);
        if (in.pred == kNoReg)
          fail(p, "expected a predicate register");
        in.predNeg = neg;
        t = lex_.next();
      }
      if (t.kind != Token::Ident || t.text[0] == '.' || t.text[0] == '%')
        fail(t, "expected an instruction, found '" + std::string(t.text) +
                    "'");
      if (t.text == "call" || t.text.substr(0, 5) == "call.")
        fail(t, "unsupported instruction 'call' (the emulator runs "
                "kernels without device-function calls)");
      std::string why = decodeOpcode(t.text, in);
      if (!why.empty())
        fail(t, why);
      // Operands, into a scratch array: wgmma has eight, whose trailing
      // immediates fold into Inst::mode (foldWgmma).
      Operand ops[kMaxOperands];
      unsigned nops = 0;
      while (!lex_.isPunct(';')) {
        if (nops > 0)
          expectPunct(',');
        if (nops + 2 > kMaxOperands)
          fail(lex_.peek(), "too many operands");
        Operand extra;
        parseOperand(in, ops[nops], extra, [&](const Token &sym) {
          (in.op == Op::Bra ? scopes_.back().branches : fixups)
              .push_back({k->code.size(), nops, sym});
        });
        ++nops;
        if (extra.kind != Operand::None) // [tensorMap, {coordinates}]
          ops[nops++] = extra;
      }
      if (in.op == Op::Wgmma)
        nops = foldWgmma(t, in, ops, nops);
      if (nops > 5)
        fail(t, "too many operands for '" + std::string(t.text) + "'");
      std::copy(ops, ops + nops, in.ops);
      in.nops = uint8_t(nops);
      if (in.op == Op::MbarInit || in.op == Op::MbarArrive ||
          in.op == Op::MbarWait || in.op == Op::TmaLoad)
        k->mbarriers = true;
      if (in.op == Op::WgFence || in.op == Op::WgCommit ||
          in.op == Op::WgWait || in.op == Op::Wgmma || in.op == Op::Setmaxnreg)
        k->warpgroups = true;
      lex_.next();
      if (!shapeMatches(in))
        fail(t, "wrong operands for '" + std::string(t.text) + "'");
      k->code.push_back(std::move(in));
    }
    // An implicit return: a kernel that falls off its end returns.
    Inst ret;
    ret.op = Op::Ret;
    ret.line = lex_.peek().line;
    k->code.push_back(ret);
    // Shared layout: static declarations, then the dynamic extern arrays.
    uint32_t off = 0, dynAlign = 16;
    for (const SharedDecl &d : shared) {
      if (d.external) {
        dynAlign = std::max(dynAlign, d.align);
        continue;
      }
      off = alignTo(off, d.align);
      syms[d.name] = {Space::Shared, off, false};
      off += d.bytes;
      if (off > kMaxSharedDecl)
        fail(lex_.peek(), "over " + std::to_string(kMaxSharedDecl) +
                              " bytes of shared memory declared");
    }
    k->staticShared = off;
    k->dynSharedOffset = alignTo(off, dynAlign);
    for (const SharedDecl &d : shared)
      if (d.external)
        syms[d.name] = {Space::Shared, k->dynSharedOffset, true};
    k->localBytes = localBytes;
    for (const Fixup &f : fixups) {
      Operand &o = k->code[f.inst].ops[f.op];
      std::string name(f.tok.text);
      auto it = syms.find(name);
      if (it == syms.end())
        fail(f.tok, "unknown symbol " + name);
      // Addr: [sym+off]; Imm: the address of sym (wrapping, as PTX's).
      o.imm = int64_t(uint64_t(o.imm) + it->second.offset);
    }
    k->numRegs = numRegs_;
    k->constRegs = consts_;
    return k;
  }

  SharedDecl parseParam(const Token &at) {
    SharedDecl d{"", 0, 0, false};
    Ty ty = Ty::None;
    bool ptr = false; // `.ptr [.space] .align N`: the pointee's alignment
    while (lex_.peek().kind == Token::Ident && lex_.peek().text[0] == '.') {
      Token m = lex_.next();
      if (m.text == ".align" && ptr)
        (void)expectUnsigned();
      else if (m.text == ".align")
        d.align = uint32_t(expectUnsigned());
      else if (m.text == ".ptr")
        ptr = true;
      else if (m.text == ".global" ||
               m.text == ".shared" || m.text == ".local" ||
               m.text == ".const")
        continue;
      else if ((ty = parseType(m.text.substr(1))) == Ty::None)
        fail(m, "unexpected '" + std::string(m.text) + "' in a parameter");
    }
    if (ty == Ty::None)
      fail(at, "parameter without a type");
    d.name = std::string(expectIdent().text);
    uint64_t count = 1;
    if (lex_.isPunct('[')) {
      lex_.next();
      count = expectUnsigned();
      expectPunct(']');
    }
    if (count * typeBytes(ty) > 4096)
      fail(at, "parameter " + d.name + " is too large");
    d.bytes = uint32_t(count * typeBytes(ty));
    d.align = std::max(d.align, typeBytes(ty));
    if (d.align == 0 || (d.align & (d.align - 1)) || d.align > 256)
      fail(at, "bad alignment of parameter " + d.name);
    return d;
  }

  /// A register operand or fail.
  uint32_t expectReg(const Token &r) {
    uint32_t n = reg(r.text);
    if (n == kNoReg)
      fail(r, "expected a register, found '" + std::string(r.text) + "'");
    return n;
  }

  /// `{a, b, ...}` (registers, `_`, immediates) after the `{`.
  void parseVec(Inst &in, Operand &o) {
    o.kind = Operand::Vec;
    o.reg = uint32_t(in.vregs.size());
    for (;;) {
      if (lex_.isPunct('-') || lex_.peek().kind == Token::Number) {
        // An immediate element: a hidden register every thread starts
        // with that value in.
        bool minus = lex_.isPunct('-');
        if (minus)
          lex_.next();
        Token n = expect(Token::Number, "a number");
        int64_t v;
        if (!parseNumber(n.text, v))
          fail(n, "bad number '" + std::string(n.text) + "'");
        v = minus ? int64_t(0 - uint64_t(v)) : v;
        uint32_t r = implicitReg("$imm" + std::to_string(v));
        consts_.emplace_back(r, uint64_t(v));
        in.vregs.push_back(r);
      } else {
        Token r = expectIdent();
        in.vregs.push_back(r.text == "_" ? kNoReg : expectReg(r));
      }
      // wgmma m64n256 has the longest: 128 accumulator registers.
      if (++o.count > 128)
        fail(lex_.peek(), "vector too long");
      if (lex_.isPunct('}'))
        break;
      expectPunct(',');
    }
    lex_.next();
  }

  /// One operand; `extra` receives the coordinate vector of a
  /// `[tensorMap, {x, y}]` operand.
  template <typename OnSymbol>
  void parseOperand(Inst &in, Operand &o, Operand &extra,
                    OnSymbol onSymbol) {
    if (lex_.isPunct('[')) {
      lex_.next();
      o.kind = Operand::Addr;
      Token b = lex_.next();
      if (b.kind == Token::Ident && reg(b.text) != kNoReg) {
        o.reg = reg(b.text);
      } else if (b.kind == Token::Ident) {
        onSymbol(b);
      } else if (b.kind == Token::Number) {
        if (!parseNumber(b.text, o.imm))
          fail(b, "bad number '" + std::string(b.text) + "'");
      } else {
        fail(b, "bad address");
      }
      if (lex_.isPunct('+') || lex_.isPunct('-')) {
        bool minus = lex_.next().text[0] == '-';
        if (lex_.isPunct('-')) {
          lex_.next();
          minus = !minus;
        }
        Token n = expect(Token::Number, "an offset");
        int64_t v;
        if (!parseNumber(n.text, v))
          fail(n, "bad offset '" + std::string(n.text) + "'");
        o.imm = int64_t(minus ? uint64_t(o.imm) - uint64_t(v)
                              : uint64_t(o.imm) + uint64_t(v));
      }
      if (lex_.isPunct(',')) { // [tensorMap, {coordinates}]
        lex_.next();
        expectPunct('{');
        parseVec(in, extra);
      }
      expectPunct(']');
      return;
    }
    if (lex_.isPunct('{')) {
      lex_.next();
      parseVec(in, o);
      return;
    }
    if (lex_.isPunct('-') || lex_.peek().kind == Token::Number) {
      bool minus = lex_.isPunct('-');
      if (minus)
        lex_.next();
      Token n = expect(Token::Number, "a number");
      if (!parseNumber(n.text, o.imm))
        fail(n, "bad number '" + std::string(n.text) + "'");
      if (minus)
        o.imm = int64_t(0 - uint64_t(o.imm));
      o.kind = Operand::Imm;
      return;
    }
    bool neg = false;
    if (lex_.isPunct('!')) {
      lex_.next();
      neg = true;
    }
    Token r = expectIdent();
    for (auto &[n, s] : kSregs)
      if (r.text == n) {
        o.kind = Operand::Special;
        o.imm = int64_t(s);
        return;
      }
    uint32_t first = r.text == "_" ? kNoReg : reg(r.text);
    if (r.text != "_" && first == kNoReg) {
      o.kind = in.op == Op::Bra ? Operand::Label : Operand::Imm;
      onSymbol(r);
      return;
    }
    if (lex_.isPunct('|')) { // setp/shfl/elect second result: p|q
      lex_.next();
      Token q = expectIdent();
      o.kind = Operand::Vec;
      o.count = 2;
      o.reg = uint32_t(in.vregs.size());
      in.vregs.push_back(first);
      in.vregs.push_back(q.text == "_" ? kNoReg : expectReg(q));
      return;
    }
    if (first == kNoReg) {
      o.kind = Operand::Sink;
      return;
    }
    o.kind = Operand::Reg;
    o.neg = neg;
    o.reg = first;
  }

  /// A `{ }` block of a kernel body: registers declared in it, its labels
  /// and the branches in it not yet resolved.
  struct Scope {
    std::unordered_map<std::string, uint32_t> regs, labels;
    std::vector<Fixup> branches;
  };

  /// The register `name` names: the innermost declaration, else (a `%`
  /// name) the kernel-wide register of that name, created on first use as
  /// NVPTX's `%r<N>` ranges declare them. kNoReg: not a register.
  uint32_t reg(std::string_view name) {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      if (auto it = s->regs.find(std::string(name)); it != s->regs.end())
        return it->second;
    if (name.empty() || name[0] != '%')
      return kNoReg;
    return implicitReg(name);
  }
  uint32_t implicitReg(std::string_view name) {
    auto [it, added] = regs_.emplace(std::string(name), numRegs_);
    numRegs_ += added;
    return it->second;
  }

  /// `.reg .type a, b<N>;`: a range declares the `%` registers used by
  /// number; a plain name inside a nested scope is a fresh register there
  /// (inline asm's `.reg .pred p;`), at the kernel's scope the kernel-wide
  /// one.
  void parseRegDecl() {
    while (lex_.peek().kind == Token::Ident && lex_.peek().text[0] == '.')
      lex_.next(); // .type, .v2
    for (;;) {
      Token n = expectIdent();
      if (lex_.isPunct('<')) {
        lex_.next();
        expectUnsigned();
        expectPunct('>');
      } else if (scopes_.size() > 1) {
        scopes_.back().regs[std::string(n.text)] = numRegs_++;
      } else if (n.text[0] != '%') {
        scopes_.back().regs[std::string(n.text)] = implicitReg(n.text);
      }
      if (!lex_.isPunct(','))
        break;
      lex_.next();
    }
    expectPunct(';');
  }

  /// Resolves the branches of the innermost scope to its labels and hands
  /// the rest to the enclosing scope (an error at the kernel's).
  void closeScope(Kernel &k) {
    Scope s = std::move(scopes_.back());
    scopes_.pop_back();
    for (Fixup &f : s.branches) {
      auto it = s.labels.find(std::string(f.tok.text));
      if (it != s.labels.end())
        k.code[f.inst].ops[f.op].imm = it->second;
      else if (scopes_.empty())
        fail(f.tok, "unknown label " + std::string(f.tok.text));
      else
        scopes_.back().branches.push_back(f);
    }
  }

  /// wgmma's `d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b,
  /// imm-trans-a, imm-trans-b`: the immediates become Inst::mode bits.
  static unsigned foldWgmma(const Token &t, Inst &in, Operand *ops,
                            unsigned nops) {
    if (nops != 8)
      fail(t, "wgmma takes a register vector, two descriptors, scale-d "
              "and four immediates");
    for (unsigned i = 4; i < 8; ++i) {
      bool scale = i < 6;
      int64_t v = ops[i].imm;
      if (ops[i].kind != Operand::Imm ||
          (scale ? (v != 1 && v != -1) : (v != 0 && v != 1)))
        fail(t, std::string("wgmma's imm-") + (scale ? "scale" : "trans") +
                    " operands are " + (scale ? "1 or -1" : "0 or 1"));
      if (scale && v == -1)
        in.mode |= i == 4 ? kWgNegA : kWgNegB;
      if (!scale && v == 1)
        in.mode |= i == 6 ? kWgTransA : kWgTransB;
    }
    return 4;
  }

  static constexpr unsigned kMaxOperands = 10;

  Lexer lex_;
  std::vector<Scope> scopes_;
  std::unordered_map<std::string, uint32_t> regs_; // kernel-wide % names
  uint32_t numRegs_ = 0;
  std::vector<SharedDecl> sharedDecls_;
  std::vector<std::pair<uint32_t, uint64_t>> consts_; // of the current entry
  bool external_ = false;
};

} // namespace

PtxModule::PtxModule() = default;
PtxModule::~PtxModule() = default;

std::unique_ptr<PtxModule> PtxModule::parse(std::string_view ptx,
                                            std::string &err) {
  std::unique_ptr<PtxModule> m(new PtxModule());
  try {
    Parser p(ptx);
    m->kernels_ = p.parseModule();
  } catch (const ParseError &e) {
    err = e.msg;
    return nullptr;
  }
  if (m->kernels_.empty()) {
    err = "1:1: no .entry kernel in the PTX";
    return nullptr;
  }
  return m;
}

int PtxModule::numParams(const std::string &name) const {
  for (const auto &k : kernels_)
    if (k->name == name)
      return int(k->paramOffset.size());
  return -1;
}

std::vector<std::string> PtxModule::kernelNames() const {
  std::vector<std::string> names;
  for (const auto &k : kernels_)
    names.push_back(k->name);
  return names;
}

} // namespace tgrt::emu
