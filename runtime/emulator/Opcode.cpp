//===- Opcode.cpp - PTX opcodes and their modifiers, decoded --------------===//
//
// Turns an opcode with its modifiers ("setp.ltu.and.f32",
// "ld.global.nc.v4.b32") into the fields of an Inst, and checks an
// instruction's operands against the shapes its op allows, so the
// interpreter never meets an operand it did not expect. A modifier that is
// neither understood nor known to be irrelevant to a one-thread-at-a-time
// execution is an error naming it.
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Opcode.h"

#include <algorithm>

namespace tgrt::emu::detail {

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

static bool parseSpace(std::string_view m, Space &s) {
  if (m == "global") s = Space::Global;
  // A cluster is one CTA here (launches have no cluster dimension), so its
  // shared::cluster window is the CTA's own shared memory.
  else if (m == "shared" || m == "shared::cta" || m == "shared::cluster")
    s = Space::Shared;
  else if (m == "local") s = Space::Local;
  else if (m == "param") s = Space::Param;
  else return false;
  return true;
}

static bool parseRnd(std::string_view m, Rnd &r) {
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

static bool parseCmp(std::string_view m, uint8_t &c) {
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
static bool ignorable(std::string_view m) {
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
static const char *shapes(Op op) {
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
  case Op::MbarInit: return "a,s";
  case Op::MbarArrive: return "R,a|R,a,s|a,s";
  case Op::MbarWait: return "d,a,s|d,a,s,s";
  case Op::MbarInval: return "a";
  case Op::TmaLoad: return "a,a,v,a";
  case Op::WgFence: case Op::WgCommit: return "";
  case Op::WgWait: case Op::Setmaxnreg: return "i";
  case Op::Wgmma: return "v,s,s,s";
  case Op::Elect: return "P,s";
  }
  return "";
}

static bool fits(char want, const Operand &o) {
  switch (want) {
  case 'd': return o.kind == Operand::Reg;
  case 'R': return o.kind == Operand::Reg || o.kind == Operand::Sink;
  case 'i': return o.kind == Operand::Imm;
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
  // wgmma m64nN with f32 accumulators: N/2 registers per thread.
  if (in.op == Op::Wgmma && in.ops[0].count != in.vec * 4)
    return false;
  if (in.op == Op::TmaLoad && in.ops[2].count != in.vec)
    return false;
  // The three forms of an mbarrier arrive: expect_tx alone takes no state.
  if (in.op == Op::MbarArrive &&
      ((in.mode & kMbarExpectOnly) != 0) != (in.nops == 2 &&
                                             in.ops[0].kind == Operand::Addr))
    return false;
  if (in.op == Op::MbarArrive && (in.mode & kMbarExpectTx) && in.nops != 3)
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

namespace {
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
    {"mma", Op::Mma},       {"nanosleep", Op::Nop},
    {"mbarrier", Op::MbarInit}, {"wgmma", Op::Wgmma},
    {"setmaxnreg", Op::Setmaxnreg}, {"elect", Op::Elect},
    {"griddepcontrol", Op::Nop}};

/// The sm_90a instructions (mbarrier, cp.async.bulk.tensor, wgmma,
/// setmaxnreg, elect): each is a handful of fixed spellings, so they are
/// matched whole rather than modifier by modifier. `mods` excludes the
/// base. "" or what is not supported.
std::string decodeSm90(std::string_view opcode,
                       const std::vector<std::string_view> &mods, Inst &in) {
  std::string unsupported =
      "unsupported instruction '" + std::string(opcode) + "'";
  auto has = [&](std::string_view m) {
    return std::find(mods.begin(), mods.end(), m) != mods.end();
  };
  // Modifiers allowed besides the ones each form names: ordering and scope
  // (one CTA per cluster, one thread at a time), the .sync/.aligned of
  // collectives, state spaces checked below.
  auto rest = [&](std::initializer_list<std::string_view> named) {
    for (std::string_view m : mods) {
      bool ok = ignorable(m) || m == "cluster" || m == "shared" ||
                m == "shared::cta" || m == "shared::cluster" || m == "b64";
      for (std::string_view n : named)
        ok |= m == n;
      if (!ok)
        return "unsupported modifier '." + std::string(m) + "' in '" +
               std::string(opcode) + "'";
    }
    return std::string();
  };
  in.space = Space::Shared;
  in.ty = Ty::B64;
  switch (in.op) {
  case Op::MbarInit: { // mbarrier.<op>...: Op::MbarInit is the base's
    if (mods.empty())
      return unsupported;
    std::string_view what = mods[0];
    if (!has("shared") && !has("shared::cta") && !has("shared::cluster"))
      return "mbarrier instructions need the .shared state space in '" +
             std::string(opcode) + "'";
    if (what == "init" || what == "inval") {
      in.op = what == "init" ? Op::MbarInit : Op::MbarInval;
      return rest({what});
    }
    if (what == "arrive") {
      in.op = Op::MbarArrive;
      if (has("expect_tx"))
        in.mode |= kMbarExpectTx;
      return rest({what, "expect_tx"});
    }
    if (what == "expect_tx") {
      in.op = Op::MbarArrive;
      in.mode |= kMbarExpectOnly;
      return rest({what});
    }
    if (what == "try_wait" || what == "test_wait") {
      in.op = Op::MbarWait;
      if (has("parity"))
        in.mode |= kMbarParity;
      return rest({what, "parity"});
    }
    return unsupported;
  }
  case Op::CpAsync: { // cp.async.bulk.tensor.Nd...
    in.op = Op::TmaLoad;
    in.ty = Ty::None;
    int dims = 0;
    bool tensor = false, global = false, tile = false, complete = false;
    for (std::string_view m : mods) {
      if (m.size() == 2 && m[1] == 'd' && m[0] >= '1' && m[0] <= '5')
        dims = m[0] - '0';
      else if (m == "tensor") tensor = true;
      else if (m == "global") global = true;
      else if (m == "tile") tile = true;
      else if (m == "mbarrier::complete_tx::bytes") complete = true;
      else if (m != "async" && m != "bulk" && m != "shared::cluster" &&
               m != "shared::cta")
        return "unsupported modifier '." + std::string(m) + "' in '" +
               std::string(opcode) + "'";
    }
    // Only global-to-shared tensor loads that complete on an mbarrier (what
    // TMA loads are); im2col, multicast, reductions and stores are not
    // emulated.
    if (!tensor || !dims || !global || !complete || mods[0] != "async" ||
        mods[1] != "bulk" || mods[2] != "tensor" ||
        (!has("shared::cluster") && !has("shared::cta")))
      return unsupported;
    (void)tile; // .tile is the default load mode
    in.vec = uint8_t(dims);
    return "";
  }
  case Op::Wgmma: {
    if (mods.empty())
      return unsupported;
    std::string_view what = mods[0];
    if (what == "fence" || what == "commit_group" || what == "wait_group") {
      in.op = what == "fence"          ? Op::WgFence
              : what == "commit_group" ? Op::WgCommit
                                       : Op::WgWait;
      in.ty = Ty::None;
      in.space = Space::Generic;
      if (!has("sync") || !has("aligned"))
        return "'" + std::string(opcode) + "' needs .sync.aligned";
      return rest({what});
    }
    // wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}.{bf16,f16}
    if (what != "mma_async" || mods.size() != 7 || mods[1] != "sync" ||
        mods[2] != "aligned" || mods[4] != "f32" || mods[5] != mods[6] ||
        (mods[5] != "bf16" && mods[5] != "f16"))
      return unsupported;
    std::string_view shape = mods[3];
    unsigned n = 0;
    if (shape.size() < 8 || shape.substr(0, 4) != "m64n" ||
        shape.substr(shape.size() - 3) != "k16")
      return unsupported;
    for (char c : shape.substr(4, shape.size() - 7)) {
      if (c < '0' || c > '9')
        return unsupported;
      n = n * 10 + unsigned(c - '0');
      if (n > 256)
        return unsupported;
    }
    if (n == 0 || n % 8)
      return unsupported;
    in.vec = uint8_t(n / 8);
    in.ty = Ty::F32;
    in.ty2 = mods[5] == "bf16" ? Ty::BF16 : Ty::F16;
    in.space = Space::Shared;
    return "";
  }
  case Op::Setmaxnreg:
    in.space = Space::Generic;
    in.ty = Ty::U32;
    if (mods.size() != 4 || (mods[0] != "inc" && mods[0] != "dec") ||
        mods[1] != "sync" || mods[2] != "aligned" || mods[3] != "u32")
      return unsupported;
    in.mode = mods[0] == "inc" ? kSetmaxnregInc : 0;
    return "";
  case Op::Elect:
    in.space = Space::Generic;
    in.ty = Ty::B32;
    if (mods.size() != 1 || mods[0] != "sync")
      return unsupported;
    return "";
  default:
    return unsupported;
  }
}
} // namespace

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
  if (in.op == Op::MbarInit || in.op == Op::Wgmma || in.op == Op::Setmaxnreg ||
      in.op == Op::Elect ||
      (in.op == Op::CpAsync && mods.size() > 2 && mods[2] == "bulk"))
    return decodeSm90(opcode,
                      std::vector<std::string_view>(mods.begin() + 1,
                                                    mods.end()),
                      in);
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
    } else if (m == "relu" && in.op != Op::Nop) {
      in.flags |= kRelu;
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
  // 16-bit floats (and their x2 pairs) are computed in by the arithmetic
  // NVPTX selects for them (sm_80: fma/neg/abs/min/max; sm_90: add/sub/mul,
  // setp, ex2/tanh approximations); b128 by nothing.
  bool half = in.ty == Ty::F16x2 || in.ty == Ty::BF16x2 || in.ty == Ty::F16 ||
              in.ty == Ty::BF16;
  if (in.ty == Ty::B128)
    return unsupported;
  if (half) {
    switch (in.op) {
    case Op::Ld: case Op::St: case Op::Mov: case Op::Add: case Op::Sub:
    case Op::Mul: case Op::Fma: case Op::Neg: case Op::Abs: case Op::Min:
    case Op::Max: case Op::Ex2: case Op::Tanh: case Op::Selp:
      break;
    case Op::Setp:
      if (in.ty == Ty::F16 || in.ty == Ty::BF16)
        break;
      return unsupported;
    default:
      return unsupported;
    }
  }
  return "";
}

} // namespace tgrt::emu::detail
