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
#include "runtime/emulator/Ptx.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <unordered_map>

namespace tgrt::emu {
namespace {

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

Ty parseType(std::string_view m) {
  static const std::pair<const char *, Ty> table[] = {
      {"b8", Ty::B8},     {"b16", Ty::B16},       {"b32", Ty::B32},
      {"b64", Ty::B64},   {"b128", Ty::B128},     {"u8", Ty::U8},
      {"u16", Ty::U16},   {"u32", Ty::U32},       {"u64", Ty::U64},
      {"s8", Ty::S8},     {"s16", Ty::S16},       {"s32", Ty::S32},
      {"s64", Ty::S64},   {"f16", Ty::F16},       {"f16x2", Ty::F16x2},
      {"bf16", Ty::BF16}, {"bf16x2", Ty::BF16x2}, {"f32", Ty::F32},
      {"f64", Ty::F64},   {"pred", Ty::Pred}};
  for (auto &[n, t] : table)
    if (m == n)
      return t;
  return Ty::None;
}

uint32_t typeBytes(Ty t) {
  switch (t) {
  case Ty::B8: case Ty::U8: case Ty::S8: case Ty::Pred: return 1;
  case Ty::B16: case Ty::U16: case Ty::S16: case Ty::F16: case Ty::BF16:
    return 2;
  case Ty::B32: case Ty::U32: case Ty::S32: case Ty::F32: case Ty::F16x2:
  case Ty::BF16x2:
    return 4;
  case Ty::B64: case Ty::U64: case Ty::S64: case Ty::F64: return 8;
  case Ty::B128: return 16;
  case Ty::None: return 0;
  }
  return 0;
}

bool parseSpace(std::string_view m, Space &s) {
  if (m == "global") s = Space::Global;
  else if (m == "shared" || m == "shared::cta") s = Space::Shared;
  else if (m == "local") s = Space::Local;
  else if (m == "param") s = Space::Param;
  else return false;
  return true;
}

bool parseRnd(std::string_view m, Rnd &r) {
  static const std::pair<const char *, Rnd> table[] = {
      {"rn", Rnd::Rn},   {"rz", Rnd::Rz},   {"rm", Rnd::Rm},
      {"rp", Rnd::Rp},   {"rni", Rnd::Rni}, {"rzi", Rnd::Rzi},
      {"rmi", Rnd::Rmi}, {"rpi", Rnd::Rpi}};
  for (auto &[n, v] : table)
    if (m == n) {
      r = v;
      return true;
    }
  return false;
}

bool parseCmp(std::string_view m, uint8_t &c) {
  static const char *names[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",
                                "lo",  "ls",  "hi",  "hs",  "equ", "neu",
                                "ltu", "leu", "gtu", "geu", "num", "nan"};
  for (uint8_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
    if (m == names[i]) {
      c = i;
      return true;
    }
  return false;
}

/// Modifiers that do not change what one thread at a time computes
/// (ordering, scope, cache hints, the `.sync/.aligned` of collectives whose
/// semantics the scheduler gives anyway).
bool ignorable(std::string_view m) {
  static const char *names[] = {
      "sync", "aligned", "uni", "volatile", "relaxed", "acquire", "release",
      "acq_rel", "weak", "cta", "gpu", "sys", "nc", "async", "ca", "cg",
      "cs", "lu", "cv", "full", "ptr"};
  for (const char *n : names)
    if (m == n)
      return true;
  return m.substr(0, 4) == "L1::" || m.substr(0, 4) == "L2::";
}

/// Expected operand shapes per op: alternatives separated by '|'; d: dest
/// register, D: dest register or vector, P: predicate dest (or p|q),
/// s: register/immediate/special, S: source or vector, a: address,
/// v: vector, l: label.
const char *shapes(Op op) {
  switch (op) {
  case Op::Ld: return "D,a";
  case Op::St: return "a,S";
  case Op::Mov: return "D,S";
  case Op::Cvta: case Op::CvtaTo: case Op::Neg: case Op::Abs: case Op::Not:
  case Op::Cnot: case Op::Popc: case Op::Clz: case Op::Brev: case Op::Ex2:
  case Op::Lg2: case Op::Rcp: case Op::Rsqrt: case Op::Sqrt: case Op::Sin:
  case Op::Cos: case Op::Tanh:
    return "d,s";
  case Op::Cvt: return "d,s|d,s,s";
  case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem:
  case Op::Min: case Op::Max: case Op::And: case Op::Or: case Op::Xor:
  case Op::Shl: case Op::Shr: case Op::Copysign:
    return "d,s,s";
  case Op::Mad: case Op::Fma: case Op::Bfe: case Op::Prmt: case Op::Selp:
    return "d,s,s,s";
  case Op::Bfi: case Op::Lop3: return "d,s,s,s,s";
  case Op::Setp: return "P,s,s|P,s,s,s";
  case Op::Bra: return "l";
  case Op::Ret: case Op::Nop: return "";
  case Op::BarSync: return "s|s,s";
  case Op::BarWarpSync: return "s";
  case Op::Shfl: return "P,s,s,s,s";
  case Op::Vote: return "d,s,s";
  case Op::Activemask: return "d";
  case Op::Atom: return "d,a,s|d,a,s,s";
  case Op::Red: return "a,s";
  case Op::CpAsync: return "a,a,s|a,a,s,s|a,a,s,s,s";
  case Op::Ldmatrix: return "v,a";
  case Op::Mma: return "v,v,v,v";
  }
  return "";
}

bool fits(char want, const Operand &o) {
  switch (want) {
  case 'd': return o.kind == Operand::Reg;
  case 'D': return o.kind == Operand::Reg || o.kind == Operand::Vec;
  case 'P':
    return o.kind == Operand::Reg || o.kind == Operand::Sink ||
           (o.kind == Operand::Vec && o.count == 2);
  case 's':
    return o.kind == Operand::Reg || o.kind == Operand::Imm ||
           o.kind == Operand::Special;
  case 'S':
    return o.kind == Operand::Reg || o.kind == Operand::Imm ||
           o.kind == Operand::Special || o.kind == Operand::Vec;
  case 'a': return o.kind == Operand::Addr;
  case 'v': return o.kind == Operand::Vec;
  case 'l': return o.kind == Operand::Label;
  }
  return false;
}

bool shapeMatches(const Inst &in) {
  if (in.op == Op::Nop) // fences, cp.async groups, nanosleep: no effect here
    return true;
  if ((in.op == Op::Ld || in.op == Op::St) &&
      in.ops[in.op == Op::Ld ? 0 : 1].kind == Operand::Vec &&
      in.ops[in.op == Op::Ld ? 0 : 1].count != in.vec)
    return false;
  if (in.vec > 1 && (in.op == Op::Ld || in.op == Op::St) &&
      in.ops[in.op == Op::Ld ? 0 : 1].kind != Operand::Vec)
    return false;
  if (in.op == Op::Ldmatrix && in.ops[0].count != in.vec)
    return false;
  if (in.op == Op::Mma && (in.ops[0].count != 4 || in.ops[1].count != 4 ||
                           in.ops[2].count != 2 || in.ops[3].count != 4))
    return false;
  std::string_view alts = shapes(in.op);
  for (;;) {
    size_t bar = alts.find('|');
    std::string_view alt = alts.substr(0, bar);
    unsigned n = 0;
    bool ok = true;
    for (char c : alt) {
      if (c == ',')
        continue;
      if (n >= in.nops || !fits(c, in.ops[n])) {
        ok = false;
        break;
      }
      ++n;
    }
    if (ok && n == in.nops)
      return true;
    if (bar == std::string_view::npos)
      return false;
    alts = alts.substr(bar + 1);
  }
}

struct Base {
  const char *name;
  Op op;
};
const Base kBases[] = {
    {"ld", Op::Ld},         {"ldu", Op::Ld},        {"st", Op::St},
    {"mov", Op::Mov},       {"cvta", Op::Cvta},     {"add", Op::Add},
    {"sub", Op::Sub},       {"mul", Op::Mul},       {"mad", Op::Mad},
    {"fma", Op::Fma},       {"div", Op::Div},       {"rem", Op::Rem},
    {"min", Op::Min},       {"max", Op::Max},       {"neg", Op::Neg},
    {"abs", Op::Abs},       {"and", Op::And},       {"or", Op::Or},
    {"xor", Op::Xor},       {"not", Op::Not},       {"cnot", Op::Cnot},
    {"shl", Op::Shl},       {"shr", Op::Shr},       {"bfe", Op::Bfe},
    {"bfi", Op::Bfi},       {"prmt", Op::Prmt},     {"lop3", Op::Lop3},
    {"popc", Op::Popc},     {"clz", Op::Clz},       {"brev", Op::Brev},
    {"setp", Op::Setp},     {"selp", Op::Selp},     {"cvt", Op::Cvt},
    {"ex2", Op::Ex2},       {"lg2", Op::Lg2},       {"rcp", Op::Rcp},
    {"rsqrt", Op::Rsqrt},   {"sqrt", Op::Sqrt},     {"sin", Op::Sin},
    {"cos", Op::Cos},       {"tanh", Op::Tanh},     {"copysign", Op::Copysign},
    {"bra", Op::Bra},       {"ret", Op::Ret},       {"exit", Op::Ret},
    {"bar", Op::BarSync},   {"barrier", Op::BarSync}, {"shfl", Op::Shfl},
    {"vote", Op::Vote},     {"activemask", Op::Activemask},
    {"atom", Op::Atom},     {"red", Op::Red},       {"membar", Op::Nop},
    {"fence", Op::Nop},     {"cp", Op::CpAsync},    {"ldmatrix", Op::Ldmatrix},
    {"mma", Op::Mma},       {"nanosleep", Op::Nop}};

/// Decodes `opcode` (e.g. "setp.ltu.and.f32") into `in`'s fields; "" or
/// what is not supported.
std::string decodeOpcode(std::string_view opcode, Inst &in) {
  std::vector<std::string_view> mods;
  for (size_t p = 0;;) {
    size_t dot = opcode.find('.', p);
    // `::` qualifiers belong to their modifier (.shared::cta, .L2::128B).
    mods.push_back(opcode.substr(p, dot - p));
    if (dot == std::string_view::npos)
      break;
    p = dot + 1;
  }
  std::string_view base = mods[0];
  const Base *b = nullptr;
  for (const Base &c : kBases)
    if (base == c.name)
      b = &c;
  std::string unsupported = "unsupported instruction '" +
                            std::string(opcode) + "'";
  if (!b)
    return unsupported;
  in.op = b->op;
  std::vector<Ty> types;
  bool to = false, sawShape = false, sawRow = false, sawCol = false;
  for (size_t i = 1; i < mods.size(); ++i) {
    std::string_view m = mods[i];
    Ty t = parseType(m);
    uint8_t code;
    if (t != Ty::None) {
      types.push_back(t);
    } else if (parseSpace(m, in.space)) {
    } else if (m == "v2" || m == "v4") {
      in.vec = m == "v2" ? 2 : 4;
    } else if (in.op == Op::Setp && parseCmp(m, code)) {
      in.mode = code;
    } else if (in.op == Op::Setp && (m == "and" || m == "or" || m == "xor")) {
      in.boolOp = m == "and" ? BoolOp::And : m == "or" ? BoolOp::Or
                                                       : BoolOp::Xor;
    } else if (parseRnd(m, in.rnd)) {
    } else if (m == "ftz") {
      in.flags |= kFtz;
    } else if (m == "sat") {
      in.flags |= kSat;
    } else if (m == "approx") {
      in.flags |= kApprox;
    } else if (m == "NaN") {
      in.flags |= kNanMode;
    } else if (m == "wide" && (in.op == Op::Mul || in.op == Op::Mad)) {
      in.flags |= kWide;
    } else if (m == "hi" && (in.op == Op::Mul || in.op == Op::Mad)) {
      in.flags |= kHi;
    } else if (m == "lo" && (in.op == Op::Mul || in.op == Op::Mad)) {
      in.flags |= kLo;
    } else if (m == "to" && in.op == Op::Cvta) {
      to = true;
    } else if (in.op == Op::Shfl &&
               (m == "up" || m == "down" || m == "bfly" || m == "idx")) {
      in.mode = m == "up" ? kShflUp : m == "down" ? kShflDown
                                      : m == "bfly" ? kShflBfly : kShflIdx;
    } else if (in.op == Op::Vote &&
               (m == "all" || m == "any" || m == "uni" || m == "ballot")) {
      in.mode = m == "all" ? kVoteAll : m == "any" ? kVoteAny
                                      : m == "uni" ? kVoteUni : kVoteBallot;
    } else if ((in.op == Op::Atom || in.op == Op::Red) &&
               (m == "add" || m == "min" || m == "max" || m == "inc" ||
                m == "dec" || m == "and" || m == "or" || m == "xor" ||
                m == "cas" || m == "exch")) {
      static const char *ops[] = {"add", "min", "max", "inc", "dec",
                                  "and", "or",  "xor", "cas", "exch"};
      for (uint8_t k = 0; k < 10; ++k)
        if (m == ops[k])
          in.mode = k;
    } else if (in.op == Op::BarSync && m == "warp" && base == "bar") {
      in.op = Op::BarWarpSync;
    } else if (in.op == Op::CpAsync &&
               (m == "commit_group" || m == "wait_group" || m == "wait_all")) {
      in.op = Op::Nop;
      return "";
    } else if (in.op == Op::Ldmatrix && (m == "x1" || m == "x2" || m == "x4")) {
      in.vec = uint8_t(m[1] - '0');
    } else if (in.op == Op::Ldmatrix && m == "trans") {
      in.flags |= kTrans;
    } else if ((in.op == Op::Ldmatrix && m == "m8n8") ||
               (in.op == Op::Mma && m == "m16n8k16")) {
      sawShape = true;
    } else if (in.op == Op::Mma && m == "row") {
      sawRow = true;
    } else if (in.op == Op::Mma && m == "col") {
      sawCol = true;
    } else if (in.op == Op::Nop || ignorable(m)) {
    } else {
      return "unsupported modifier '." + std::string(m) + "' in '" +
             std::string(opcode) + "'";
    }
  }
  if (to)
    in.op = Op::CvtaTo;
  if (in.op == Op::BarSync && base == "bar" &&
      (mods.size() < 2 || mods[1] != "sync"))
    return unsupported; // bar.arrive, bar.red: not emitted by TGC.
  if (in.op == Op::CpAsync && in.space != Space::Global)
    return unsupported; // cp.async.bulk and friends (sm_90 TMA)
  if (in.op == Op::CpAsync)
    in.space = Space::Shared;
  if (in.op == Op::Cvt) {
    if (types.size() != 2)
      return "cvt needs a destination and a source type in '" +
             std::string(opcode) + "'";
    in.ty = types[0];
    in.ty2 = types[1];
    return "";
  }
  if (in.op == Op::Mma) {
    // mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32
    if (!sawShape || !sawRow || !sawCol || types.size() != 4 ||
        types[0] != Ty::F32 || types[3] != Ty::F32 || types[1] != types[2] ||
        (types[1] != Ty::BF16 && types[1] != Ty::F16))
      return unsupported;
    in.ty = Ty::F32;
    in.ty2 = types[1];
    return "";
  }
  if (in.op == Op::Ldmatrix) {
    if (!sawShape || in.space != Space::Shared || types.size() != 1 ||
        types[0] != Ty::B16)
      return unsupported;
    return "";
  }
  if (types.size() > 1)
    return unsupported;
  if (!types.empty())
    in.ty = types[0];
  bool needsType = in.op != Op::Bra && in.op != Op::Ret && in.op != Op::Nop &&
                   in.op != Op::BarSync && in.op != Op::BarWarpSync &&
                   in.op != Op::CpAsync;
  if (needsType && in.ty == Ty::None)
    return "missing type in '" + std::string(opcode) + "'";
  // Types the interpreter does not compute in (packed halves, b128).
  if (in.ty == Ty::B128 || ((in.ty == Ty::F16x2 || in.ty == Ty::BF16x2 ||
                             in.ty == Ty::F16 || in.ty == Ty::BF16) &&
                            in.op != Op::Ld && in.op != Op::St &&
                            in.op != Op::Mov))
    return unsupported;
  return "";
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
    {"%total_smem_size", Sreg::TotalSmem}};

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
    std::unordered_map<std::string, uint32_t> regs, labels;
    struct Fixup {
      size_t inst;
      unsigned op;
      Token tok;
    };
    std::vector<Fixup> fixups;
    int depth = 1;
    uint32_t localBytes = 0;
    while (depth > 0) {
      Token t = lex_.next();
      if (t.kind == Token::End)
        fail(t, "unterminated body of " + k->name);
      if (t.kind == Token::Punct && t.text[0] == '{') {
        ++depth;
        continue;
      }
      if (t.kind == Token::Punct && t.text[0] == '}') {
        --depth;
        continue;
      }
      if (t.kind == Token::Ident && lex_.isPunct(':')) {
        lex_.next();
        if (!labels.emplace(std::string(t.text), uint32_t(k->code.size()))
                 .second)
          fail(t, "label " + std::string(t.text) + " defined twice");
        continue;
      }
      if (t.text == ".reg") {
        while (!lex_.isPunct(';') && lex_.peek().kind != Token::End)
          lex_.next();
        expectPunct(';');
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
        if (p.text[0] != '%')
          fail(p, "expected a predicate register");
        in.pred = reg(regs, p.text);
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
      // Operands.
      while (!lex_.isPunct(';')) {
        if (in.nops == 5)
          fail(lex_.peek(), "too many operands");
        if (in.nops > 0)
          expectPunct(',');
        Token at = lex_.peek();
        Operand &o = in.ops[in.nops];
        parseOperand(in, o, regs, [&](const Token &sym) {
          fixups.push_back({k->code.size(), in.nops, sym});
        });
        (void)at;
        ++in.nops;
      }
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
      if (k->code[f.inst].op == Op::Bra) {
        auto it = labels.find(name);
        if (it == labels.end())
          fail(f.tok, "unknown label " + name);
        o.imm = it->second;
        continue;
      }
      auto it = syms.find(name);
      if (it == syms.end())
        fail(f.tok, "unknown symbol " + name);
      o.imm += it->second.offset; // Addr: [sym+off]; Imm: address of sym
    }
    k->numRegs = uint32_t(regs.size());
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

  static uint32_t reg(std::unordered_map<std::string, uint32_t> &regs,
                      std::string_view name) {
    auto [it, added] = regs.emplace(std::string(name), uint32_t(regs.size()));
    return it->second;
  }

  template <typename OnSymbol>
  void parseOperand(Inst &in, Operand &o,
                    std::unordered_map<std::string, uint32_t> &regs,
                    OnSymbol onSymbol) {
    if (lex_.isPunct('[')) {
      lex_.next();
      o.kind = Operand::Addr;
      Token b = lex_.next();
      bool haveBase = true;
      if (b.kind == Token::Ident && b.text[0] == '%') {
        o.reg = reg(regs, b.text);
      } else if (b.kind == Token::Ident) {
        onSymbol(b);
      } else if (b.kind == Token::Number) {
        if (!parseNumber(b.text, o.imm))
          fail(b, "bad number '" + std::string(b.text) + "'");
      } else {
        haveBase = false;
      }
      if (!haveBase)
        fail(b, "bad address");
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
        o.imm += minus ? -v : v;
      }
      expectPunct(']');
      return;
    }
    if (lex_.isPunct('{')) {
      lex_.next();
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
          v = minus ? -v : v;
          uint32_t r = reg(regs, "$imm" + std::to_string(v));
          consts_.emplace_back(r, uint64_t(v));
          in.vregs.push_back(r);
        } else {
          Token r = expectIdent();
          if (r.text == "_")
            in.vregs.push_back(kNoReg);
          else if (r.text[0] == '%')
            in.vregs.push_back(reg(regs, r.text));
          else
            fail(r, "expected a register in a vector");
        }
        if (++o.count > 8)
          fail(lex_.peek(), "vector too long");
        if (lex_.isPunct('}'))
          break;
        expectPunct(',');
      }
      lex_.next();
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
        o.imm = -o.imm;
      o.kind = Operand::Imm;
      return;
    }
    bool neg = false;
    if (lex_.isPunct('!')) {
      lex_.next();
      neg = true;
    }
    Token r = expectIdent();
    if (r.text == "_") {
      o.kind = Operand::Sink;
      return;
    }
    if (r.text[0] == '%') {
      for (auto &[n, s] : kSregs)
        if (r.text == n) {
          o.kind = Operand::Special;
          o.imm = int64_t(s);
          return;
        }
      o.kind = Operand::Reg;
      o.neg = neg;
      o.reg = reg(regs, r.text);
      if (lex_.isPunct('|')) { // setp/shfl second predicate: p|q
        lex_.next();
        Token q = expectIdent();
        o.kind = Operand::Vec;
        o.count = 2;
        uint32_t first = o.reg;
        o.reg = uint32_t(in.vregs.size());
        in.vregs.push_back(first);
        in.vregs.push_back(q.text == "_" ? kNoReg : reg(regs, q.text));
      }
      return;
    }
    o.kind = in.op == Op::Bra ? Operand::Label : Operand::Imm;
    onSymbol(r);
  }

  Lexer lex_;
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

std::vector<std::string> PtxModule::kernelNames() const {
  std::vector<std::string> names;
  for (const auto &k : kernels_)
    names.push_back(k->name);
  return names;
}

} // namespace tgrt::emu
