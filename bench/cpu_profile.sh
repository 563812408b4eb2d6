#!/usr/bin/env bash
# bench/cpu_profile.sh BUILD - where the CPU step of the 2-layer GPT of
# bench/cpu_speed.sh (fp32, d_model 256, seq 128, batch 8, vocab 512) spends
# its time: `perf record` on tg-run, each sample attributed to the loop nest
# (tg_kernel_N) it ran in, the kernels grouped by kind (bench/cpu_profile.py).
# STEPS (default 10) steps; init and loading are in the profile too, a few
# percent. Needs perf (linux-perf, TGC_SETUP_BENCH=1 scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: cpu_profile.sh BUILD}" && pwd)
steps=${STEPS:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's/precision = bf16/precision = fp32/' -e '/memory_budget/d' \
  "$here/../examples/gpt.tg" >"$tmp/gpt.tg"
defs=(-D layers=2 -D d_model=256 -D heads=4 -D seq=128 -D batch=8 -D vocab=512 -D ctx=128 -D accumulate=1)
"$build/bin/tgc" "$tmp/gpt.tg" "${defs[@]}" -o "$tmp/gpt.tgx"
"$build/bin/tgc" "$tmp/gpt.tg" "${defs[@]}" --emit=train -o "$tmp/train.mlir"
# The same step through the artifact's CPU pipeline, to name the kernels.
"$build/bin/tg-opt" "$tmp/train.mlir" --tg-plan-memory --tg-cpu-pipeline="arena=1" \
  --mlir-print-ir-after=tg-outline-kernels -o /dev/null 2>"$tmp/outlined.mlir"
python3 "$here/../lit-tests/tgc/Inputs/batch.py" "$tmp/batch.safetensors" \
  tokens=i64[8,128]:text targets=i64[8,128]:text+1
perf record -q -o "$tmp/perf.data" "$build/bin/tg-run" "$tmp/gpt.tgx" \
  --batch "$tmp/batch.safetensors" --steps "$steps" >/dev/null 2>&1
echo "# tg-run, $steps steps of the 2-layer GPT (fp32), $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/cpu_profile.py" "$tmp/gpt.tgx" "$tmp/perf.data" "$tmp/outlined.mlir"
