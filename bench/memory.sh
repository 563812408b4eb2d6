#!/usr/bin/env bash
# bench/memory.sh BUILD - the planned peak of one training step against the
# lower bound (most bytes live at once) and the naive sum of all buffers, for
# the example models. Writes bench/results/memory-<date>.md and prints it.
set -euo pipefail
build=${1:-build}
tgc=$build/bin/tgc
here=$(cd "$(dirname "$0")" && pwd)
out=$here/results/memory-$(date -u +%Y-%m-%d).md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

models=(
  "mlp|examples/mlp.tg|"
  "cnn (LeNet)|examples/cnn.tg|"
  "GPT-2 small, batch 8 x 1024|examples/gpt.tg|"
  "BERT-large, batch 32 x 512, fp32|examples/bert_large.tg|--memory-budget 1TiB"
  "BERT-large in 16 GiB|examples/bert_large.tg|"
)

{
  echo "# Memory plans of one training step"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "- command: bench/memory.sh (tgc MODEL --report=memory --format=json)"
  echo "- git: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  echo "| model | params | peak | op scratch after the plan | lower bound | peak / lower bound (goal <= 1.05) | naive sum | peak / naive | report time |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for entry in "${models[@]}"; do
    IFS='|' read -r name file flags <<<"$entry"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$tgc" "$here/../$file" --report=memory --format=json $flags >"$tmp" 2>/dev/null
    end=$(date +%s.%N)
    python3 - "$name" "$start" "$end" "$tmp" <<'PY'
import json, sys
name, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
p = json.load(open(sys.argv[4]))
gib = lambda b: f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.2f} MiB"
peak, lb, naive = p["peak_bytes"], p["lower_bound_bytes"], p["naive_bytes"]
above = p.get("scratch_bytes", 0)
print(f"| {name} | {gib(p['params_bytes'])} | {gib(peak)} | {gib(above) if above else '-'} | {gib(lb)} | {peak / lb:.3f} | {gib(naive)} | {peak / naive:.3f} | {end - start:.1f} s |")
PY
  done
  echo
  echo "Peak = persistent region (parameters, optimizer state, inputs) + the"
  echo "planned transient arena, which holds each op's CPU scratch (f32"
  echo "accumulators, padded conv inputs, pooling argmax; tg-size-scratch) as a"
  echo "buffer live at that op's moment, + any scratch the backend appends after"
  echo "the plan (ops it could not size). The lower bound is the persistent"
  echo "region plus the most transient bytes live at one moment of the chosen"
  echo "schedule, op scratch included. Report time includes lowering each"
  echo "distinct op alone as far as the scratch planner."
} | tee "$out"
