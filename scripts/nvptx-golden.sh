#!/bin/bash
# nvptx-golden.sh - snapshot and compare the generated GEMM and attention
# kernels.
#
#   scripts/nvptx-golden.sh write DIR [TG_BENCH_GEMM]   # MLIR + PTX of every case
#   scripts/nvptx-golden.sh compare OLD NEW              # PTX bytes, MLIR via mlir-opt
#
# GEMM cases: every candidate config of sm_80 and sm_90a, forms nn/nt/tn, four
# epilogue variants (none; f16 in + bias + relu; scale + gelu + residual +
# bf16 out; f16 in + bias + relu + residual + f16 out), aligned and ragged
# shapes. Attention cases (tg-bench-attention beside TG_BENCH_GEMM, when
# built): forward and backward kernels (PTX and launches) of sm_80 and
# sm_90a, head dims 64 and 128, a ragged and an aligned T, bf16 and f16,
# causal or not. Run `write` before a generator change and again after, then
# `compare`: a refactoring of the generator must leave the PTX byte-identical.
set -euo pipefail
cmd=${1:-}
case "$cmd" in
write)
  out=$2
  bin=${3:-build/bin/tg-bench-gemm}
  mkdir -p "$out"
  for t in sm_80 sm_90a; do
    for cfg in $("$bin" 128 128 128 --target $t --list-configs); do
      for f in nn nt tn; do
        for v in 0 1 2 3; do
          case $v in
          0) args="1024 1024 1024" ;;
          1) args="2048 768 512 --dtype f16 --bias --act relu" ;;
          2) args="1000 776 504 --alpha 0.5 --act gelu --residual --out bf16" ;;
          3) args="1000 776 504 --dtype f16 --bias --residual --out f16 --act relu" ;;
          esac
          n=${t}_${cfg}_${f}_$v
          echo "$bin $args --form $f --target $t --config $cfg --emit-mlir $out/$n.mlir --emit-ptx $out/$n.ptx"
        done
      done
    done
  done | xargs -P2 -I{} sh -c "{}"
  attn=$(dirname "$bin")/tg-bench-attention
  if [ -x "$attn" ]; then
    for t in sm_80 sm_90a; do
      for shape in "2 3 200 64" "1 2 256 128"; do
        for flags in "" "--causal" "--f16" "--f16 --causal"; do
          n=attn_${t}_$(echo "$shape $flags" | tr -d '-' | tr ' ' _)
          "$attn" $shape $flags --target $t --emit-ptx "$out/$n.ptx" \
            --emit-launches "$out/$n.launches"
        done
      done
    done
  fi
  echo "wrote $(ls "$out"/*.ptx | wc -l) kernels to $out"
  ;;
compare)
  old=$2 new=$3
  opt=${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  bad=0
  for f in "$old"/*.ptx; do
    n=$(basename "$f" .ptx)
    cmp -s "$f" "$new/$n.ptx" || { echo "PTX differs: $n"; bad=1; }
    if [ -f "$old/$n.launches" ]; then
      cmp -s "$old/$n.launches" "$new/$n.launches" ||
        { echo "launches differ: $n"; bad=1; }
    fi
    [ -f "$old/$n.mlir" ] || continue
    "$opt" "$old/$n.mlir" >"$tmp/old.mlir"
    "$opt" "$new/$n.mlir" >"$tmp/new.mlir"
    cmp -s "$tmp/old.mlir" "$tmp/new.mlir" || { echo "MLIR differs: $n"; bad=1; }
  done
  [ $bad = 0 ] && echo "identical: $(ls "$old"/*.ptx | wc -l) kernels"
  exit $bad
  ;;
*)
  echo "usage: $0 write DIR [TG_BENCH_GEMM] | compare OLD NEW" >&2
  exit 2
  ;;
esac
