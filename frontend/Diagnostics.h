//===- Diagnostics.h - source buffers and user-facing errors ---*- C++ -*-===//
//
// Every mistake in a model file is reported as `file:line:col: error: msg`,
// followed by the source line and a caret under the column, as LLVM's
// SourceMgr prints them. The engine
// collects diagnostics so a run can report several independent errors, and
// caps the count so a pathological input cannot flood the terminal.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_FRONTEND_DIAGNOSTICS_H
#define TGC_FRONTEND_DIAGNOSTICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace tgc {

/// A position in a source file (1-based line and column; 0 means unknown).
struct SrcLoc {
  unsigned line = 0;
  unsigned col = 0;
};

/// One model file held in memory by an llvm::SourceMgr, which finds lines
/// and columns and prints located messages with the source line and caret.
class SourceFile {
public:
  SourceFile(std::string name, std::string text);
  llvm::StringRef name() const { return fileName; }
  llvm::StringRef text() const;
  /// The message `message` at `loc` ("file:line:col: error: ..." and the
  /// source line with a caret when `loc` is known; "file: error: ..." when
  /// it is not).
  llvm::SMDiagnostic diagnostic(SrcLoc loc, llvm::SourceMgr::DiagKind kind,
                                llvm::StringRef message) const;

private:
  std::string fileName;
  /// Mutable: looking up a line builds SourceMgr's line cache.
  mutable llvm::SourceMgr mgr;
  unsigned bufferId;
};

/// Collects and prints diagnostics against one SourceFile.
class DiagEngine {
public:
  enum class Severity { Error, Note };
  struct Diag {
    Severity severity;
    SrcLoc loc;
    std::string message;
  };

  explicit DiagEngine(const SourceFile &file) : file(file) {}

  /// Records an error; returns false so callers can `return diag.error(...)`.
  bool error(SrcLoc loc, const llvm::Twine &message);
  /// Attaches a note (shown after the preceding error).
  void note(SrcLoc loc, const llvm::Twine &message);

  unsigned numErrors() const { return errorCount; }
  bool hasErrors() const { return errorCount != 0; }
  /// True once the error cap is reached; parsers stop early then.
  /// Repeated (suppressed) reports count too, so that a loop that keeps
  /// failing the same way still ends.
  bool tooMany() const {
    return errorCount >= maxErrors || reports >= 50 * maxErrors;
  }
  llvm::ArrayRef<Diag> diagnostics() const { return diags; }
  const SourceFile &source() const { return file; }

  /// Prints every diagnostic, with the source line and a caret.
  void print(llvm::raw_ostream &os) const;

  /// Errors beyond this count are dropped (one line says so).
  static constexpr unsigned maxErrors = 20;

private:
  const SourceFile &file;
  std::vector<Diag> diags;
  unsigned errorCount = 0;
  unsigned reports = 0;
  bool suppressNotes = false;
};

/// The candidate closest to `name` by edit distance, or "" when none is close
/// enough to be a plausible typo.
std::string nearestName(llvm::StringRef name,
                        llvm::ArrayRef<std::string> candidates);

/// `msg` plus "; did you mean 'x'?" when a close candidate exists.
std::string withSuggestion(const std::string &msg, llvm::StringRef name,
                           llvm::ArrayRef<std::string> candidates);

} // namespace tgc

#endif // TGC_FRONTEND_DIAGNOSTICS_H
