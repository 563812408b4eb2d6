#!/usr/bin/env bash
# bench/scaling/run.sh [BUILD] [OUT] - compile time and peak memory of tgc
# against the size of the training step (issue 12, class 2), written as a
# markdown table to OUT (default bench/results/scaling-<date>.md):
#
#   params-train   tgc --emit=train     of N parameters (params.tg)
#   params-report  tgc --report=memory  of N parameters
#   chain-O0       tgc -O0 -o x.tgx     of a chain of N relus (chain.tg)
#   chain-nofuse   tgc -O0 --no-fuse -o x.tgx of the same chain: the step
#                  unfused, every op its own value and buffer
#   chain-fuse     tg-opt --tg-convert-to-linalg on the fused step of N
#                  relus (the lowering of the fusion groups alone: up to
#                  256 ops a group grows with N; FusedToLoops.cpp)
#   chain-lower    tg-opt --tg-cpu-pipeline="arena=1" on the planned, unfused
#                  step of N relus (the CPU lowering alone: bufferization
#                  of one long function; tg-inline-splat-operands)
#   plan           tg-opt --tg-plan-memory on the training step of N
#                  parameters (the planner alone: its schedule and offsets)
#   plan-wide      tg-opt --tg-plan-memory on N buffers all live at once
#                  (wide_step.py: the planner's offset search at its worst)
#   gpt-report     tgc --report=memory examples/gpt.tg -D layers=N at small
#                  widths (a step that reads splat constants: its CPU
#                  scratch estimate, op by op since each reader fills its
#                  own copy)
#   bert-train     tgc --emit=train examples/bert_large.tg -D layers=N (the
#                  model of issue 12's 70 s "hang": the budget fit plans
#                  and lowers the step's scratch for each candidate)
#
# Each case runs under /usr/bin/time: wall seconds, CPU seconds (user +
# system: what the compile itself cost, the better number on a loaded
# machine) and peak resident MiB. Each case ends with the ratio of its last
# to its first N in CPU time and the exponent k of time ~ N^k between them
# (1 is linear, 2 quadratic). Environment: PARAM_NS (default
# "500 1000 2000 4000 8000"), CHAIN_NS (default "250 500 1000 2000"),
# NOFUSE_NS (default "500 1000 2000"),
# FUSE_NS (default "16 32 64 128 256"), LOWER_NS
# (default "250 500 1000 2000"), PLAN_NS (default "2000 4000 8000 16000"),
# WIDE_NS (default "4000 8000 16000 32000 64000"), GPT_NS (default "4 8
# 16 32"), LAYER_NS (default "2 8");
# an empty list skips.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
out=${2:-$root/bench/results/scaling-$(date -u +%Y-%m-%d).md}
param_ns=${PARAM_NS-"500 1000 2000 4000 8000"}
chain_ns=${CHAIN_NS-"250 500 1000 2000"}
nofuse_ns=${NOFUSE_NS-"500 1000 2000"}
fuse_ns=${FUSE_NS-"16 32 64 128 256"}
lower_ns=${LOWER_NS-"250 500 1000 2000"}
plan_ns=${PLAN_NS-"2000 4000 8000 16000"}
wide_ns=${WIDE_NS-"4000 8000 16000 32000 64000"}
gpt_ns=${GPT_NS-"4 8 16 32"}
layer_ns=${LAYER_NS-"2 8"}
tgc=$build/bin/tgc
tgopt=$build/bin/tg-opt
[ -x "$tgc" ] || { echo "run.sh: error: no $tgc (build first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rows=()
# measure LABEL N CMD...: one row "| LABEL | N | wall | cpu | MiB |" for CMD.
measure() {
  local label=$1 n=$2
  shift 2
  /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$@" >/dev/null
  read -r wall user sys kib <"$tmp/time"
  local cpu
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  rows+=("| $label | $n | $wall | $cpu | $((kib / 1024)) |")
  echo "$n $cpu" >>"$tmp/$label"
  echo "${rows[-1]}" >&2
}

# fit LABEL: the ratio and exponent between the first and the last N.
fit() {
  [ -s "$tmp/$1" ] || return 0
  awk -v label="$1" 'NR == 1 { n0 = $1; t0 = $2 } { n1 = $1; t1 = $2 }
    END { if (n1 > n0 && t0 > 0)
            printf "- %s: N x%d costs x%.1f CPU time, time ~ N^%.2f (N = %d to %d)\n",
                   label, n1 / n0, t1 / t0, log(t1 / t0) / log(n1 / n0), n0, n1 }' "$tmp/$1"
}

for n in $param_ns; do
  measure params-train "$n" "$tgc" -D "n=$n" --emit=train "$here/params.tg" -o "$tmp/p.mlir"
done
for n in $param_ns; do
  measure params-report "$n" "$tgc" -D "n=$n" --report=memory "$here/params.tg"
done
for n in $chain_ns; do
  measure chain-O0 "$n" "$tgc" -D "n=$n" -O0 "$here/chain.tg" -o "$tmp/c.tgx"
done
for n in $nofuse_ns; do
  measure chain-nofuse "$n" "$tgc" -D "n=$n" -O0 --no-fuse "$here/chain.tg" -o "$tmp/u.tgx"
done
for n in $fuse_ns; do
  "$tgc" -D "n=$n" --emit=train "$here/chain.tg" -o "$tmp/fused.mlir"
  measure chain-fuse "$n" "$tgopt" "$tmp/fused.mlir" --tg-convert-to-linalg -o /dev/null
done
for n in $lower_ns; do
  "$tgc" -D "n=$n" --no-fuse --emit=train "$here/chain.tg" -o "$tmp/chain.mlir"
  "$tgopt" "$tmp/chain.mlir" --tg-plan-memory -o "$tmp/chain-planned.mlir"
  measure chain-lower "$n" "$tgopt" "$tmp/chain-planned.mlir" \
    --tg-cpu-pipeline="arena=1 entry-points=train_step" -o /dev/null
done
for n in $plan_ns; do
  "$tgc" -D "n=$n" --emit=train "$here/params.tg" -o "$tmp/plan.mlir"
  measure plan "$n" "$tgopt" "$tmp/plan.mlir" --tg-plan-memory -o /dev/null
done
for n in $wide_ns; do
  python3 "$here/wide_step.py" "$n" >"$tmp/wide.mlir"
  measure plan-wide "$n" "$tgopt" "$tmp/wide.mlir" --tg-plan-memory=func=wide -o /dev/null
done
for n in $gpt_ns; do
  measure gpt-report "$n" "$tgc" -D "layers=$n" -D batch=2 -D seq=16 -D ctx=16 -D d_model=32 \
    -D heads=2 -D vocab=64 --report=memory "$root/examples/gpt.tg"
done
for n in $layer_ns; do
  measure bert-train "$n" "$tgc" -D "layers=$n" --emit=train "$root/examples/bert_large.tg" -o "$tmp/b.mlir"
done

{
  echo "# tgc compile-time scaling ($(date -u +%Y-%m-%d))"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- command: bench/scaling/run.sh $build (PARAM_NS=\"$param_ns\" CHAIN_NS=\"$chain_ns\" NOFUSE_NS=\"$nofuse_ns\" FUSE_NS=\"$fuse_ns\" LOWER_NS=\"$lower_ns\" PLAN_NS=\"$plan_ns\" WIDE_NS=\"$wide_ns\" GPT_NS=\"$gpt_ns\" LAYER_NS=\"$layer_ns\")"
  echo "- other builds and tests may have run beside it: wall times are upper"
  echo "  bounds; CPU time (user + system) is the compile's own cost"
  echo
  echo "| case | N | wall s | CPU s | peak MiB |"
  echo "|---|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  fit params-train
  fit params-report
  fit chain-O0
  fit chain-nofuse
  fit chain-fuse
  fit chain-lower
  fit plan
  fit plan-wide
  fit gpt-report
  fit bert-train
} >"$out"
echo "run.sh: wrote $out" >&2
