#!/usr/bin/env bash
# bench/precision_training.sh BUILD PART - training with precision = bf16
# against fp32 on the CPU backend, same seed, same data and order (issue 13):
#
#   PART=cnn|mlp  examples/cnn.tg / examples/mlp.tg on Fashion-MNIST for
#                 EPOCHS epochs (default 5): test accuracy after every epoch.
#   PART=gpt      a 2-layer GPT (examples/gpt.tg with GPT_DEFINES) for STEPS
#                 steps (default 300) on TEXT as bytes (u8 tokens; default:
#                 the repository's docs and README, as
#                 scripts/device-train-check.sh uses, 269 KB on 2026-12-01:
#                 300 batches of 8 x 64 read 154 KB, no byte twice): the
#                 loss of every step, from tg-run --metrics.
#
# PRECISIONS (default "fp32 bf16") picks the runs. One training at a time, under `nice -n 10` (the machine is shared). Each
# tg-run's output and metrics CSV go to OUT (default /tmp/precision-training);
# prints the per-epoch / per-step table for bench/results/.
set -euo pipefail
build=${1:-build}
part=${2:-cnn}
bin=$(cd "$build/bin" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/precision-training}
epochs=${EPOCHS:-5}
steps=${STEPS:-300}
gpt_defines=${GPT_DEFINES:--D layers=2 -D d_model=64 -D heads=4 -D seq=64 -D ctx=64 -D vocab=256 -D batch=8 -D accumulate=1}
mkdir -p "$out"
text=${TEXT:-$out/text.u8}
[[ -n ${TEXT:-} ]] || cat "$here"/docs/*.md "$here/README.md" >"$text"

echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "- git: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"

# The model source with `precision = P` (and, for the GPT, a constant
# schedule: its cosine schedule warms up over 2000 steps).
source_for() {
  local model=$1 p=$2 gpt=()
  [[ $model == gpt ]] && gpt=(-e 's/^( *schedule *= *).*/\1constant/' -e '/memory_budget/d')
  sed -E -e "s/^( *precision *= *)[a-z0-9]+/\1$p/" "${gpt[@]}" \
    "$here/examples/$model.tg" >"$out/$model-$p.tg"
}

for p in ${PRECISIONS:-fp32 bf16}; do
  source_for "$part" "$p"
  src=$out/$part-$p.tg
  defines=()
  [[ $part == gpt ]] && read -r -a defines <<<"$gpt_defines"
  "$bin/tgc" "$src" "${defines[@]}" -o "$out/$part-$p.tgx"
  if [[ $part == gpt ]]; then
    data=(--data "u8:$text" --epochs 1 --batch-limit "$steps")
  else
    data=(--data fashion-mnist --epochs "$epochs")
  fi
  start=$(date +%s)
  nice -n 10 "$bin/tg-run" "$out/$part-$p.tgx" "${data[@]}" --seed 1 \
    --metrics "$out/$part-$p.csv" >"$out/$part-$p.log" 2>&1
  echo "- $part $p: $(( $(date +%s) - start )) s, load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
