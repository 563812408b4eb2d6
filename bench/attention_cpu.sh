#!/usr/bin/env bash
# bench/attention_cpu.sh BEFORE AFTER [OUT] - the CPU's fused attention
# (codegen/cpu/AttentionToLoops.cpp) against the decomposition it replaced:
# two build trees (BEFORE: a tree whose tgc decomposes attention for the
# CPU, e.g. main at 444fd39; AFTER: this one), the 2-layer GPT of
# bench/cpu_speed.sh (fp32, d 256, 4 heads, batch 8, vocab 512) at seq 128
# and 512: the planned peak (tgc --report=memory) and, at seq 128, the
# step time measured as cpu_speed.sh does (tg-run for WARM and WARM + STEPS
# steps, the difference over STEPS), the two builds alternating REPEATS
# times so that both see the same load. Writes OUT (default
# bench/results/attention-cpu-<date>.md) and prints it. A report, never a
# pass/fail.
set -euo pipefail
before=$1
after=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$here/..
out=${3:-$here/results/attention-cpu-$(date -u +%Y-%m-%d).md}
steps=${STEPS:-10}
warm=${WARM:-2}
repeats=${REPEATS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's/precision = bf16/precision = fp32/' -e '/memory_budget/d' \
  "$root/examples/gpt.tg" >"$tmp/gpt.tg"
python3 "$root/lit-tests/tgc/Inputs/batch.py" "$tmp/batch.safetensors" \
  tokens=i64[8,128]:text targets=i64[8,128]:text+1
gpt() { echo "-D layers=2 -D d_model=256 -D heads=4 -D seq=$1 -D batch=8 -D vocab=512 -D ctx=$1 -D accumulate=1"; }
# The report's row NAME of BUILD's plan at sequence length SEQ, in MiB.
row() {
  # shellcheck disable=SC2046
  "$1/bin/tgc" "$tmp/gpt.tg" --report=memory $(gpt "$2") |
    awk -v n="$3" 'index($0, n) == 1 && !done { printf "%.2f", $(NF) / 1048576; done = 1 }'
}
run_s() {
  local t0 t1
  t0=$(date +%s.%N)
  "$1/bin/tg-run" "$2" --batch "$tmp/batch.safetensors" --steps "$3" >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
{
  echo "# CPU attention: fused loop nests against the decomposition"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores"
  echo "- command: bench/attention_cpu.sh $before $after (STEPS=$steps WARM=$warm REPEATS=$repeats)"
  echo "- git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- load before: $(uptime | sed 's/.*load average/load average/')"
  echo
  echo "| 2-layer GPT, fp32 | build | peak (planned arena) | activations | workspace | op scratch (cpu) | naive (no reuse) |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for seq in 128 512; do
    for which in before after; do
      b=$before
      [[ $which == after ]] && b=$after
      echo "| seq $seq | $which | $(row "$b" $seq peak) | $(row "$b" $seq activations) | $(row "$b" $seq workspace) | $(row "$b" $seq 'op scratch') | $(row "$b" $seq naive) |"
    done
  done
  echo
  echo "MiB. Step time at seq 128 (ms per step; tg-run, one thread):"
  echo
  # shellcheck disable=SC2046
  "$before/bin/tgc" "$tmp/gpt.tg" $(gpt 128) -o "$tmp/before.tgx"
  # shellcheck disable=SC2046
  "$after/bin/tgc" "$tmp/gpt.tg" $(gpt 128) -o "$tmp/after.tgx"
  echo "| repeat | before | after | load (1 min) |"
  echo "|---:|---:|---:|---:|"
  for ((r = 1; r <= repeats; r++)); do
    ms=()
    for which in before after; do
      b=$before
      [[ $which == after ]] && b=$after
      a=$(run_s "$b" "$tmp/$which.tgx" "$warm")
      z=$(run_s "$b" "$tmp/$which.tgx" $((warm + steps)))
      ms+=("$(printf '%.1f' "$(echo "($z - $a) * 1000 / $steps" | bc -l)")")
    done
    echo "| $r | ${ms[0]} | ${ms[1]} | $(cut -d' ' -f1 /proc/loadavg) |"
  done
  echo
  echo "- load after: $(uptime | sed 's/.*load average/load average/')"
} | tee "$out"
