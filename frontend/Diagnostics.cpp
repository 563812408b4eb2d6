//===- Diagnostics.cpp - source buffers and user-facing errors -*- C++ -*-===//
//
// Located diagnostics through llvm::SourceMgr (line lookup, the source line
// and caret), the error cap and de-duplication, and the nearest-name helper
// used for "did you mean" suggestions.
//
//===----------------------------------------------------------------------===//

#include "frontend/Diagnostics.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace tgc;

SourceFile::SourceFile(std::string name, std::string text)
    : fileName(std::move(name)) {
  bufferId = mgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, fileName), llvm::SMLoc());
}

llvm::StringRef SourceFile::text() const {
  return mgr.getMemoryBuffer(bufferId)->getBuffer();
}

llvm::SMDiagnostic SourceFile::diagnostic(SrcLoc loc,
                                          llvm::SourceMgr::DiagKind kind,
                                          llvm::StringRef message) const {
  if (!loc.line)
    return llvm::SMDiagnostic(fileName, kind, message);
  llvm::SMLoc at = mgr.FindLocForLineAndColumn(bufferId, loc.line, loc.col);
  if (at.isValid())
    return mgr.GetMessage(at, kind, message);
  // A column past the end of its line (SourceMgr refuses those): keep the
  // position the lexer reported and put the caret after the line.
  llvm::SMLoc lineStart = mgr.FindLocForLineAndColumn(bufferId, loc.line, 1);
  llvm::StringRef line;
  if (lineStart.isValid())
    line = llvm::StringRef(lineStart.getPointer(),
                           text().end() - lineStart.getPointer())
               .split('\n')
               .first.rtrim("\r");
  return llvm::SMDiagnostic(mgr, lineStart, fileName, loc.line,
                            loc.col ? loc.col - 1 : 0, kind, message, line,
                            /*Ranges=*/{});
}

bool DiagEngine::error(SrcLoc loc, const llvm::Twine &message) {
  ++reports;
  std::string text = message.str();
  // The same mistake inside a def called from a loop would otherwise be
  // reported once per iteration.
  for (const Diag &d : diags)
    if (d.severity == Severity::Error && d.loc.line == loc.line &&
        d.loc.col == loc.col && d.message == text) {
      suppressNotes = true;
      return false;
    }
  suppressNotes = false;
  ++errorCount;
  if (errorCount <= maxErrors)
    diags.push_back({Severity::Error, loc, std::move(text)});
  return false;
}

void DiagEngine::note(SrcLoc loc, const llvm::Twine &message) {
  if (errorCount <= maxErrors && !suppressNotes)
    diags.push_back({Severity::Note, loc, message.str()});
}

void DiagEngine::print(llvm::raw_ostream &os) const {
  for (const Diag &d : diags)
    file.diagnostic(d.loc,
                    d.severity == Severity::Error ? llvm::SourceMgr::DK_Error
                                                  : llvm::SourceMgr::DK_Note,
                    d.message)
        .print(/*ProgName=*/nullptr, os, /*ShowColors=*/false);
  if (errorCount > maxErrors)
    os << file.name() << ": error: too many errors (" << errorCount
       << "), stopping\n";
}

std::string tgc::nearestName(llvm::StringRef name,
                             llvm::ArrayRef<std::string> candidates) {
  std::string best;
  unsigned bestDist = ~0u;
  // A typo changes a few characters; beyond a third of the name it is a
  // different word and suggesting it would mislead.
  unsigned limit = std::max<unsigned>(1, name.size() / 3);
  for (const std::string &c : candidates) {
    if (c == name)
      continue;
    unsigned d = name.edit_distance(c, /*AllowReplacements=*/true, limit + 1);
    if (d <= limit && d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

std::string tgc::withSuggestion(const std::string &msg, llvm::StringRef name,
                                llvm::ArrayRef<std::string> candidates) {
  std::string best = nearestName(name, candidates);
  if (best.empty())
    return msg;
  return msg + "; did you mean '" + best + "'?";
}
