#!/usr/bin/env bash
# bench/cpu_train_step.sh BUILD - samples/s of the MLP train step (batch 128)
# on the CPU: TGC (tgc -o, tg-run on Fashion-MNIST) against PyTorch (Debian's
# python3-torch with OpenBLAS, 2 threads) in the same run. Writes
# bench/results/cpu_train_step-<date>.md. A report, never a pass/fail.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$here/..
out=$here/results/cpu_train_step-$(date -u +%Y-%m-%d).md
steps=${STEPS:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$build/bin/tgc" "$root/examples/mlp.tg" -D batch=128 -o "$tmp/mlp.tgx"
# tg-run prints "epoch 1: mean loss L, T s, S samples/s, ..." after the epoch.
tgc_line=$("$build/bin/tg-run" "$tmp/mlp.tgx" --data fashion-mnist --epochs 1 \
  --batch-limit "$steps" | grep '^epoch 1:')
tgc_sps=$(sed -E 's/.* ([0-9.]+) samples\/s.*/\1/' <<<"$tgc_line")

torch_line=$(/usr/bin/python3 "$here/cpu_train_step.py" "$steps" 128 2 2>/dev/null ||
  echo "pytorch unavailable samples/s 0")
torch_sps=$(sed -E 's/.*samples\/s ([0-9.]+).*/\1/' <<<"$torch_line")
ratio=$(python3 -c "t=float('$torch_sps'); print(f'{float(\"$tgc_sps\")/t:.2f}' if t else 'n/a')")

{
  echo "# CPU train step: MLP 784-256-10, batch 128, AdamW"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
  echo "- command: bench/cpu_train_step.sh (STEPS=$steps)"
  echo "- git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  echo "| system | samples/s |"
  echo "|---|---:|"
  echo "| TGC (tg-run, includes data loading) | $tgc_sps |"
  echo "| $(cut -d' ' -f1-4 <<<"$torch_line") | $torch_sps |"
  echo
  echo "Ratio TGC / PyTorch: **$ratio** (goal >= 1.0)."
} | tee "$out"
