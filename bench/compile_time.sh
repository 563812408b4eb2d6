#!/usr/bin/env bash
# compile_time.sh - issue 14's compile-time goal: GPT-2 small
# (examples/gpt.tg) to a CPU artifact in at most 15 s at the default
# optimisation level, with at most 20 MB of code.
#
#   bench/compile_time.sh [BUILD] [OUT.md]
#
# Compiles the model with `tgc --time-phases` and records the process's
# user CPU time, wall time, peak memory, the artifact's and its shared
# object's size, the 1-minute load before and after, and the phase table.
# The phase table is wall time: on a loaded machine only the CPU line and
# the phases' shares mean anything. JOBS=N passes --jobs N (the threads of
# LLVM's optimisation and code generation; default: every core); the
# threads and partitions that ran are recorded.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$here/..
out=${2:-$here/results/compile-time-$(date -u +%Y-%m-%d).md}
model=${MODEL:-$root/examples/gpt.tg}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

load0=$(cut -d' ' -f1 /proc/loadavg)
/usr/bin/time -f '%U %e %M' -o "$tmp/time" \
  "$build/bin/tgc" "$model" -o "$tmp/model.tgx" --time-phases \
  ${JOBS:+--jobs "$JOBS"} 2>"$tmp/phases"
load1=$(cut -d' ' -f1 /proc/loadavg)
read -r user wall rss <"$tmp/time"
# The shared object is the artifact's `cpu.so` section (docs/artifact.md).
so_bytes=$(python3 - "$tmp/model.tgx" "$root/scripts" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from tgx import sections
print(len(sections(sys.argv[1])["cpu.so"]))
PY
)
{
  echo "# Compile time: $(basename "$model") to a CPU artifact"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
  echo "- git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- command: tgc $(basename "$model") -o MODEL.tgx --time-phases (default -O3)"
  echo "- 1-minute load before/after: $load0 / $load1 on $(nproc) cores"
  echo "- LLVM's optimisation and code generation: $(grep -o '([0-9]* partitions\?[^)]*threads\?)' "$tmp/phases" | tr -d '()') (--jobs ${JOBS:-default, $(nproc)})"
  echo
  echo "| user CPU (s) | wall (s) | peak memory (MB) | artifact (bytes) | cpu.so (bytes) | goal |"
  echo "|---:|---:|---:|---:|---:|---|"
  echo "| $user | $wall | $((rss / 1024)) | $(stat -c %s "$tmp/model.tgx") | $so_bytes | <= 15 s, <= 20 MB of code |"
  echo
  echo '```'
  cat "$tmp/phases"
  echo '```'
} | tee "$out"
