#!/usr/bin/env bash
# bench/remat.sh BUILD - activation memory against extra FLOPs for the
# rematerialisation levels of tg-fit-budget (0 = none ... 4 = everything
# replayable), on the planner's output (tg-opt, no backend lowering), and
# tgc's budget fit at 16 GiB and 8 GiB. GPT-2 small (batch 8 x 1024) and
# BERT-large (32 x 512), each in fp32 and bf16. Prints markdown. MODELS
# and BUDGETS (space-separated; empty for none) narrow it.
set -euo pipefail
build=${1:-build}
bin=$build/bin
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "- git: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
for model in ${MODELS-gpt bert_large}; do
  for p in fp32 bf16; do
    sed -E "s/^( *precision *= *)[a-z0-9]+/\1$p/" "$here/../examples/$model.tg" >"$tmp/$model-$p.tg"
    "$bin/tgc" "$tmp/$model-$p.tg" --emit=tg >"$tmp/$model-$p.mlir"
    echo
    echo "### $model, $p"
    echo
    echo "| level | activations at peak | peak | lower bound | activations / level 0 | extra FLOPs / step | time |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    for level in 0 1 2 3 4; do
      start=$(date +%s.%N)
      "$bin/tg-opt" "$tmp/$model-$p.mlir" \
        --tg-training-pipeline="decompose=1 remat-level=$level plan-memory=1" \
        | grep -o 'tg.memory = #tg.memory<[^>]*>\|tg.remat = #tg.remat<[^>]*>' >"$tmp/attrs"
      end=$(date +%s.%N)
      python3 - "$level" "$start" "$end" "$tmp/attrs" "$tmp/base-$model-$p" <<'PY'
import re, sys, os
level, start, end, path, base = sys.argv[1:]
text = open(path).read()
num = lambda k: int(re.search(k + r' = (\d+)', text).group(1))
act, peak, lb = num('activations_bytes'), num('peak_bytes'), num('lower_bound_bytes')
if level == '0':
    open(base, 'w').write(str(act))
ref = int(open(base).read())
extra = '0.0%'
if 'tg.remat' in text:
    f, s = num(r'remat<bytes = \d+, flops'), num('step_flops')
    extra = '%.1f%%' % (100.0 * f / max(1, s - f))
gib = lambda b: '%.2f GiB' % (b / 2**30)
print(f'| {level} | {gib(act)} | {gib(peak)} | {gib(lb)} | {act / ref:.3f} | {extra} | {float(end) - float(start):.1f} s |')
PY
    done
    for budget in ${BUDGETS-16GiB 8GiB}; do
      echo
      echo "tgc --memory-budget $budget:"
      echo
      echo '```'
      "$bin/tgc" "$tmp/$model-$p.tg" --report=memory --memory-budget "$budget" 2>&1 \
        | grep -E 'note|error|activations|peak' || true
      echo '```'
    done
  done
done
