#!/usr/bin/env bash
# Every public header (include/tgc/*.h) compiles on its own with include/ as
# the only include path: no MLIR, LLVM or generated header, and no header of
# the compiler's own folders (codegen/, passes/, ...), can hide behind it.
# Usage: public_headers.sh CXX SOURCE_DIR
set -euo pipefail
cxx=$1 src=$2
n=0
for h in "$src"/include/tgc/*.h; do
  if ! "$cxx" -std=c++17 -fsyntax-only -I "$src/include" -x c++ -include "$h" \
       /dev/null; then
    echo "public_headers: $h does not compile with include/ alone" >&2
    exit 1
  fi
  n=$((n + 1))
done
echo "public_headers: $n headers compile without MLIR"
