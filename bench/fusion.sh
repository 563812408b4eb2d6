#!/usr/bin/env bash
# Fusion at compile time: bytes moved by one training step before and after
# tg-fuse (tgc --report=kernels) and the planned arena peak before and after
# (tg-plan-memory on the unfused and on the fused step). Compile-time numbers
# only: nothing runs, so the machine's load does not change them.
#
#   bench/fusion.sh BUILD [MODEL.tg] [-D NAME=VALUE ...]
set -euo pipefail
build=${1:?usage: bench/fusion.sh BUILD [MODEL.tg] [-D NAME=VALUE ...]}
model=${2:-examples/gpt.tg}
shift $(( $# >= 2 ? 2 : 1 ))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -m), $(nproc) cores; $model $*"
"$build/bin/tgc" "$model" "$@" --report=kernels | tail -6
"$build/bin/tgc" "$model" "$@" --emit=train -o "$tmp/train.mlir"
peak() {
  "$build/bin/tg-opt" "$tmp/train.mlir" "$@" --tg-plan-memory \
      --mlir-elide-elementsattrs-if-larger=16 |
    grep -o 'peak_bytes = [0-9]*' | head -1
}
echo "planned peak, unfused: $(peak)"
echo "planned peak, fused:   $(peak --tg-fuse)"
