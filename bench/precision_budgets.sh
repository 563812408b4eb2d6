#!/usr/bin/env bash
# bench/precision_budgets.sh BUILD - issue 13's report per model: GPT-2
# small (batch 8 x 1024) and BERT-large (32 x 512) at fp32 and bf16,
# unconstrained and at 16 GiB and 8 GiB (`tgc --report=memory
# --format=json [--memory-budget B]`: compile only, no training), with the
# fitter's note; then GPT-2 small's activation memory against extra FLOPs
# at a fixed batch: tgc's fit at the budgets in CURVE_BUDGETS, and the
# rematerialisation levels on the planner alone (bench/remat.sh). Each
# model's train block is used as written except `precision` and
# `memory_budget` (removed; the budget comes from the command line).
# Prints markdown.
set -euo pipefail
build=${1:-build}
bin=$(cd "$build/bin" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curve_budgets=${CURVE_BUDGETS-11.5GiB 10.5GiB 10GiB 9.5GiB}
# MODELS limits the per-model rows (e.g. MODELS=bert_large); CURVE=0 skips
# GPT-2 small's curve sections (a rerun of the per-model rows alone).
models=${MODELS:-gpt bert_large}
curve=${CURVE:-1}

echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "- git: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"

# One row: tgc's JSON report of MODEL at PRECISION and BUDGET ("-" for
# none), and its note or error line.
row() {
  local model=$1 p=$2 budget=$3 src=$tmp/$1-$2.tg
  [[ -f $src ]] || sed -E -e "s/^( *precision *= *)[a-z0-9]+/\1$p/" \
    -e '/^ *memory_budget *=/d' "$here/../examples/$model.tg" >"$src"
  local args=() start end
  [[ $budget == - ]] || args=(--memory-budget "$budget")
  start=$(date +%s)
  "$bin/tgc" "$src" --report=memory --format=json "${args[@]}" \
    >"$tmp/out.json" 2>"$tmp/err.txt" || true
  end=$(date +%s)
  python3 - "$model" "$p" "$budget" "$tmp/out.json" "$tmp/err.txt" "$((end - start))" <<'PY'
import json, sys
model, p, budget, out, err, secs = sys.argv[1:]
note = " ".join(l.strip() for l in open(err) if l.strip()) or "-"
note = note.replace("tgc: note: ", "").replace("|", "/")
gib = lambda b: "%.2f GiB" % (b / 2**30)
try:
    d = json.load(open(out))
except ValueError:
    print(f"| {model} | {p} | {budget} | - | - | - | - | - | - | - | {secs} s | {note} |")
    sys.exit()
print(f"| {model} | {p} | {budget} | {gib(d['peak_bytes'])} | {gib(d['lower_bound_bytes'])} "
      f"| {d['peak_bytes'] / d['lower_bound_bytes']:.3f} "
      f"| {gib(d['activations_bytes'])} | {gib(d['workspace_bytes'])} "
      f"| {gib(d['compute_copy_bytes'])} | {gib(d['scratch_bytes'])} | {secs} s | {note} |")
PY
}

header() {
  echo
  echo "| model | precision | budget | peak | lower bound | peak / lower bound | activations | workspace (op scratch in the plan included) | compute copies | op scratch after the plan | compile | fitter's note |"
  echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
}

echo
echo "## Per model (tgc --report=memory)"
header
for model in $models; do
  for p in fp32 bf16; do
    for budget in - 16GiB 8GiB; do
      row "$model" "$p" "$budget"
    done
  done
done

[[ $curve == 0 ]] && exit 0
echo
echo "## GPT-2 small at a fixed batch: tgc's fit at budgets between the levels' peaks"
header
for p in fp32 bf16; do
  for budget in $curve_budgets; do
    row gpt "$p" "$budget"
  done
done

echo
echo "## GPT-2 small: every rematerialisation level (bench/remat.sh, planner only)"
MODELS=gpt BUDGETS= "$here/remat.sh" "$build" | grep -v '^- '
