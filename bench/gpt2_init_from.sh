#!/usr/bin/env bash
# bench/gpt2_init_from.sh BUILD - fine-tuning GPT-2 small from a checkpoint:
# compile examples/gpt.tg at GPT-2 small (batch 1, 8 tokens, -O0: the
# point is the load, not the kernels), write a safetensors file with exactly
# the released GPT-2 small keys and shapes (random f32 values, 523 MiB;
# lit-tests/tgc/Inputs/gpt2_checkpoint.py), then time `tg-run --init-from`
# with two train steps. Writes bench/results/gpt2-init-from-<date>.md and
# prints it. Needs about 3 GB of memory and 1.1 GB in $TMPDIR.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export PATH=$root/$build/bin:$PATH
out=$here/results/gpt2-init-from-$(date -u +%Y-%m-%d).md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seconds() { local t0=$SECONDS; "$@" > "$tmp/last.out"; echo $((SECONDS - t0)); }

compile=$(seconds tgc "$root/examples/gpt.tg" -D batch=1 -D seq=8 -D accumulate=1 -O0 -o "$tmp/gpt2.tgx")
write=$(seconds python3 "$root/lit-tests/tgc/Inputs/gpt2_checkpoint.py" write "$tmp/gpt2.safetensors")
python3 "$root/lit-tests/tgc/Inputs/batch.py" "$tmp/batch.safetensors" \
  'tokens=i64[1,8]:text' 'targets=i64[1,8]:text+1'
run=$(seconds tg-run "$tmp/gpt2.tgx" --init-from "$tmp/gpt2.safetensors" \
  --batch "$tmp/batch.safetensors" --steps 2 --print-loss)
losses=$(grep -o 'loss [0-9.]*' "$tmp/last.out" | cut -d' ' -f2 | paste -sd' ')
{
  echo "# GPT-2 small from a checkpoint ($(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m))"
  echo
  echo "| step | seconds |"
  echo "|---|---:|"
  echo "| tgc examples/gpt.tg -D batch=1 -D seq=8 -O0 | $compile |"
  echo "| write the checkpoint (Python, $(du -m "$tmp/gpt2.safetensors" | cut -f1) MiB) | $write |"
  echo "| tg-run --init-from + 2 steps (losses $losses) | $run |"
} | tee "$out"
