//===- Signature.h - the interface compiled code says it has ----*- C++ -*-===//
//
// The CPU code of an artifact exports `tgx_signature`, a text table written
// by the compiler from the same IR as the code: per entry point, the number
// of arguments and results, each one's dtype and byte size, and the arena
// size. The loader checks the manifest against it, so a manifest that
// disagrees with the code (edited, or paired with another model's code,
// with valid checksums) is one error line instead of a double free or a
// SIGSEGV.
//
//   tgx-signature 1
//   entry train_step 7 6 123456     (name, #args, #results, arena bytes)
//   arg f32 31360
//   ...
//   result f32 4
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_SIGNATURE_H
#define TG_RUNTIME_SIGNATURE_H

#include "runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tgrt {

struct Manifest;

/// The symbol compiled code exports its table under.
inline constexpr const char *kSignatureSymbol = "tgx_signature";
/// The table's longest accepted text: a bound for reading it out of a
/// shared object whose terminator could be missing.
inline constexpr size_t kSignatureMaxBytes = size_t(1) << 22;

/// One buffer of an entry point: element type and bytes.
struct SignatureBuffer {
  DType dtype = DType::F32;
  uint64_t bytes = 0;
  bool operator==(const SignatureBuffer &o) const {
    return dtype == o.dtype && bytes == o.bytes;
  }
};

/// One entry point as the compiled code has it.
struct SignatureEntry {
  std::string name;
  std::vector<SignatureBuffer> args, results;
  int64_t arenaBytes = 0;
};

/// The table's text (what the compiler embeds).
std::string renderSignature(const std::vector<SignatureEntry> &entries);

/// Parses a table; false with `err` on malformed text.
bool parseSignature(std::string_view text, std::vector<SignatureEntry> &out,
                    std::string &err);

/// Checks `manifest` against the table: the same entry points, and for each
/// the same arguments and results (count, dtype, bytes) and arena size.
/// `err` names the first difference ("manifest and code disagree: entry
/// 'eval' argument #2 is f32 [32,10] (1280 bytes) in the manifest, i64 of
/// 256 bytes in the code").
bool checkSignature(const Manifest &manifest,
                    const std::vector<SignatureEntry> &code, std::string &err);

} // namespace tgrt

#endif // TG_RUNTIME_SIGNATURE_H
