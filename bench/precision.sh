#!/usr/bin/env bash
# bench/precision.sh BUILD - precision = bf16 and fp16 (dynamic loss
# scaling) against fp32: the MLP's test accuracy on Fashion-MNIST after
# EPOCHS epochs (CPU backend, seed 1; PRECISIONS picks which), and
# the planned activation bytes of GPT-2 small (batch 8 x 1024) with no
# budget pressure. Prints the numbers that bench/results/*-precision.md
# records.
set -euo pipefail
build=${1:-build}
epochs=${EPOCHS:-5}
bin=$(cd "$build/bin" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for p in ${PRECISIONS:-fp32 bf16 fp16}; do
  sed "s/precision = fp32/precision = $p/" "$here/examples/mlp.tg" > "$tmp/mlp-$p.tg"
  "$bin/tgc" "$tmp/mlp-$p.tg" -o "$tmp/mlp-$p.tgx"
  echo "== mlp $p"
  "$bin/tg-run" "$tmp/mlp-$p.tgx" --data fashion-mnist --epochs "$epochs" --seed 1 |
    grep -E '^(memory|epoch [0-9]+:)'
done
for p in fp32 bf16; do
  sed "s/precision = bf16/precision = $p/" "$here/examples/gpt.tg" > "$tmp/gpt-$p.tg"
  echo "== GPT-2 small $p"
  "$bin/tgc" "$tmp/gpt-$p.tg" --report=memory --memory-budget 64GiB | head -n 11
done
