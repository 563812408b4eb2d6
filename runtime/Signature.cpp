//===- Signature.cpp - the interface compiled code says it has --*- C++ -*-===//
//
// See Signature.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/Signature.h"
#include "runtime/Manifest.h"

#include <sstream>

namespace tgrt {

namespace {
constexpr std::string_view kMagic = "tgx-signature 1";

/// "f32 [32,10] (1280 bytes)" or "i64 of 256 bytes".
std::string describe(const SignatureBuffer &b) {
  return std::string(dtypeName(b.dtype)) + " of " + std::to_string(b.bytes) +
         " bytes";
}
} // namespace

std::string renderSignature(const std::vector<SignatureEntry> &entries) {
  std::ostringstream os;
  os << kMagic << "\n";
  for (const SignatureEntry &e : entries) {
    os << "entry " << e.name << " " << e.args.size() << " "
       << e.results.size() << " " << e.arenaBytes << "\n";
    for (const SignatureBuffer &b : e.args)
      os << "arg " << dtypeName(b.dtype) << " " << b.bytes << "\n";
    for (const SignatureBuffer &b : e.results)
      os << "result " << dtypeName(b.dtype) << " " << b.bytes << "\n";
  }
  return os.str();
}

bool parseSignature(std::string_view text, std::vector<SignatureEntry> &out,
                    std::string &err) {
  out.clear();
  std::istringstream in{std::string(text)};
  std::string line;
  int lineNo = 0;
  auto fail = [&](const std::string &msg) {
    err = "the code's signature table, line " + std::to_string(lineNo) +
          ": " + msg;
    return false;
  };
  size_t argsLeft = 0, resultsLeft = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (lineNo == 1) {
      if (line != kMagic)
        return fail("expected '" + std::string(kMagic) + "'");
      continue;
    }
    std::istringstream fields(line);
    std::string kind, word;
    fields >> kind;
    if (kind == "entry") {
      if (argsLeft || resultsLeft)
        return fail("entry '" + out.back().name + "' lists fewer buffers "
                    "than it declares");
      SignatureEntry e;
      uint64_t nArgs = 0, nResults = 0;
      if (!(fields >> e.name >> nArgs >> nResults >> e.arenaBytes) ||
          e.arenaBytes < 0 || nArgs > 100000 || nResults > 100000)
        return fail("malformed entry line");
      argsLeft = nArgs;
      resultsLeft = nResults;
      out.push_back(std::move(e));
      continue;
    }
    if (kind != "arg" && kind != "result")
      return fail("unknown line kind '" + kind + "'");
    if (out.empty())
      return fail("'" + kind + "' before any entry");
    SignatureBuffer b;
    std::optional<DType> dtype;
    if (!(fields >> word >> b.bytes) || !(dtype = parseDType(word)))
      return fail("malformed " + kind + " line");
    b.dtype = *dtype;
    if (kind == "arg") {
      if (!argsLeft || out.back().results.size())
        return fail("unexpected arg line");
      --argsLeft;
      out.back().args.push_back(b);
    } else {
      if (argsLeft || !resultsLeft)
        return fail("unexpected result line");
      --resultsLeft;
      out.back().results.push_back(b);
    }
  }
  if (lineNo == 0)
    return fail("empty");
  if (argsLeft || resultsLeft)
    return fail("entry '" + out.back().name + "' lists fewer buffers than "
                "it declares");
  return true;
}

bool checkSignature(const Manifest &manifest,
                    const std::vector<SignatureEntry> &code, std::string &err) {
  auto fail = [&](const std::string &msg) {
    err = "the manifest disagrees with the compiled code: " + msg;
    return false;
  };
  for (const SignatureEntry &c : code)
    if (!manifest.entry(c.name))
      return fail("the code has entry point '" + c.name +
                  "', which the manifest leaves out");
  for (const EntrySpec &m : manifest.entries) {
    const SignatureEntry *c = nullptr;
    for (const SignatureEntry &e : code)
      if (e.name == m.name)
        c = &e;
    if (!c)
      return fail("the manifest lists entry point '" + m.name +
                  "', which the code does not have");
    auto compare = [&](const char *what, const std::vector<TensorSpec> &specs,
                       const std::vector<SignatureBuffer> &bufs) {
      if (specs.size() != bufs.size())
        return fail("entry '" + m.name + "' has " +
                    std::to_string(specs.size()) + " " + what +
                    "s in the manifest, " + std::to_string(bufs.size()) +
                    " in the code");
      for (size_t i = 0; i < specs.size(); ++i) {
        SignatureBuffer mine{specs[i].dtype, specs[i].byteSize()};
        if (!(mine == bufs[i]))
          return fail("entry '" + m.name + "' " + what + " #" +
                      std::to_string(i) + " ('" + specs[i].name + "') is " +
                      specs[i].str() + " (" + describe(mine) +
                      ") in the manifest, " + describe(bufs[i]) +
                      " in the code");
      }
      return true;
    };
    if (!compare("argument", m.args, c->args) ||
        !compare("result", m.results, c->results))
      return false;
    if (m.arenaBytes != c->arenaBytes)
      return fail("entry '" + m.name + "' has an arena of " +
                  std::to_string(m.arenaBytes) + " bytes in the manifest, " +
                  std::to_string(c->arenaBytes) + " in the code");
  }
  return true;
}

} // namespace tgrt
