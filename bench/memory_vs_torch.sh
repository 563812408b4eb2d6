#!/usr/bin/env bash
# bench/memory_vs_torch.sh BUILD [OUT] - issue 19's comparison: the planned peak of
# one training step (tgc --report=memory) against PyTorch eager's measured
# peak for the same step (bench/torch_peers.py memory: the profiler's
# allocation timeline plus parameters, AdamW state and the batch), for the
# MLP, the LeNet and a 2-layer GPT at the same batch, fp32, AdamW.
# Writes OUT (default bench/results/memory-vs-torch-<date>.md; a second
# run on one day names its own) and prints it. Needs
# Debian's python3-torch (TGC_SETUP_BENCH=1 scripts/setup.sh).
set -euo pipefail
build=${1:-build}
tgc=$build/bin/tgc
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/results/memory-vs-torch-$(date -u +%Y-%m-%d).md}
source "$here/torch_common.sh" memory_vs_torch
gpt_d="layers=2 d_model=256 heads=4 seq=128 batch=8 vocab=512 ctx=128"

models=(
  "MLP (examples/mlp.tg, batch 64)|$here/../examples/mlp.tg|mlp|batch=64"
  "LeNet (examples/cnn.tg, batch 64)|$here/../examples/cnn.tg|lenet|batch=64"
  "2-layer GPT (d 256, seq 128, batch 8, vocab 512)|$tmp/gpt-fp32.tg|gpt|$gpt_d accumulate=1"
)

mib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'; }
{
  echo "# Planned peak against PyTorch eager's measured peak"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "- command: bench/memory_vs_torch.sh $build${2:+ $(basename "$2")}"
  echo "- git: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- peer: $("$py" -c 'import torch; print("PyTorch", torch.__version__)') eager, fp32, AdamW(foreach=True); torch.compile does not exist in 1.13"
  echo "- memory is counted, not timed, so the machine's load does not change these numbers"
  echo
  echo "| model | tgc planned peak (MiB) | params | optimizer | gradients | activations + workspace | PyTorch measured peak (MiB) | params | optimizer | gradients | activations + scratch | ratio (goal <= 0.8) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for entry in "${models[@]}"; do
    IFS='|' read -r name file peer defs <<<"$entry"
    dflags=()
    for d in $defs; do [[ $d == accumulate=* && $peer != gpt ]] || dflags+=(-D "$d"); done
    "$tgc" "$file" --report=memory --format=json "${dflags[@]}" >"$tmp/tgc.json"
    # shellcheck disable=SC2086
    "$py" "$here/torch_peers.py" memory "$peer" ${defs//accumulate=1/} >"$tmp/torch.json"
    "$py" - "$name" "$tmp/tgc.json" "$tmp/torch.json" <<'PY'
import json, sys
name, ours, theirs = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
m = lambda b: f"{b / 2**20:.2f}"
rest = ours["peak_bytes"] - ours["params_bytes"] - ours["optimizer_bytes"] - ours["grads_bytes"] - ours["inputs_bytes"]
print(f"| {name} | {m(ours['peak_bytes'])} | {m(ours['params_bytes'])} | {m(ours['optimizer_bytes'])} | {m(ours['grads_bytes'])} | {m(rest)} "
      f"| {m(theirs['peak_bytes'])} | {m(theirs['params_bytes'])} | {m(theirs['optimizer_bytes'])} | {m(theirs['gradients_bytes'])} | {m(theirs['activations_and_scratch_bytes'])} "
      f"| {ours['peak_bytes'] / theirs['peak_bytes']:.3f} |")
PY
  done
  echo
  echo "Both peaks include the batch (inputs). tgc's columns are the memory"
  echo "report's categories at the planned peak (activations + workspace = the"
  echo "rest of the peak: saved activations, backward temporaries and op"
  echo "scratch). PyTorch's: the allocation timeline of one step under"
  echo "torch.profiler (profile_memory=True) after a warm-up step, its running"
  echo "maximum plus the tensors that live across steps; gradients are one per"
  echo "parameter and allocated during the step, so activations + scratch is the"
  echo "step's transient peak minus the gradients."
} | tee "$out"
