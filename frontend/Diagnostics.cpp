//===- Diagnostics.cpp - source buffers and user-facing errors -*- C++ -*-===//
//
// Printing of `file:line:col: error:` diagnostics with a source snippet, and
// the nearest-name helper used for "did you mean" suggestions.
//
//===----------------------------------------------------------------------===//

#include "frontend/Diagnostics.h"

#include "llvm/ADT/Twine.h"

using namespace tgc;

SourceFile::SourceFile(std::string name, std::string text)
    : fileName(std::move(name)), contents(std::move(text)) {
  lineStarts.push_back(0);
  for (size_t i = 0; i < contents.size(); ++i)
    if (contents[i] == '\n')
      lineStarts.push_back(i + 1);
}

llvm::StringRef SourceFile::lineText(unsigned line) const {
  if (line == 0 || line > lineStarts.size())
    return {};
  size_t begin = lineStarts[line - 1];
  size_t end = line < lineStarts.size() ? lineStarts[line] - 1 : contents.size();
  llvm::StringRef text = llvm::StringRef(contents).slice(begin, end);
  return text.rtrim("\r");
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
  for (const Diag &d : diags) {
    os << file.name();
    if (d.loc.line)
      os << ':' << d.loc.line << ':' << d.loc.col;
    os << (d.severity == Severity::Error ? ": error: " : ": note: ")
       << d.message << '\n';
    llvm::StringRef line = file.lineText(d.loc.line);
    // Very long lines (minified or fuzzed input) are not worth echoing.
    if (line.empty() || line.size() > 400)
      continue;
    os << line << '\n';
    // Keep tabs so the caret lines up under the column in a terminal.
    for (unsigned i = 1; i < d.loc.col && i <= line.size(); ++i)
      os << (line[i - 1] == '\t' ? '\t' : ' ');
    os << "^\n";
  }
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
