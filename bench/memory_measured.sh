#!/usr/bin/env bash
# bench/memory_measured.sh BUILD - the memory plan of one training step next
# to what the runtime measures while running it (tg-run's "memory:" line:
# the persistent block, the arena, and whatever the compiled code allocated
# on its own, counted by the artifact's allocator). Writes
# bench/results/memory-measured-<date>.md and prints it.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export PATH=$root/$build/bin:$PATH
out=$here/results/memory-measured-$(date -u +%Y-%m-%d).md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gpt=(-D layers=2 -D batch=8 -D seq=64 -D ctx=64 -D d_model=64 -D heads=2 -D vocab=256 -D accumulate=1)
python3 "$root/lit-tests/tgc/Inputs/batch.py" "$tmp/gpt.safetensors" \
  'tokens=i64[8,64]:text' 'targets=i64[8,64]:text+1'
peak=$(tgc "$root/examples/gpt.tg" "${gpt[@]}" --report=memory --format=json |
       python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_bytes"])')
budget=$((peak * 6 / 10))

row() { # name, then the tg-run output file
  python3 - "$1" "$2" <<'PY'
import re, sys
name, path = sys.argv[1], sys.argv[2]
m = re.search(r"planned peak (\d+) \(persistent (\d+), arena (\d+)\); measured (\d+) "
              r"\(persistent (\d+), arena (\d+), code heap peak (\d+) in (\d+)", open(path).read())
p, pp, pa, mm, mp, ma, h, n = (int(g) for g in m.groups())
print(f"| {name} | {p:,} | {pp:,} | {pa:,} | {mm:,} | {mp:,} | {ma:,} | {h:,} ({n}) | {'yes' if p == mm else 'NO'} |")
PY
}

{
  echo "# Planned vs measured memory of one training step"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores"
  echo "- command: bench/memory_measured.sh (tgc MODEL -o M.tgx; tg-run M.tgx ... prints the memory line after the first step)"
  echo "- git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  echo "| model | planned peak | planned persistent | planned arena | measured | measured persistent | measured arena | code heap peak (allocations) | equal |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
  for m in mlp cnn; do
    tgc "$root/examples/$m.tg" -o "$tmp/$m.tgx" >/dev/null
    tg-run "$tmp/$m.tgx" --data fashion-mnist --epochs 1 --batch-limit 2 >"$tmp/$m.out"
    row "examples/$m.tg (batch 64)" "$tmp/$m.out"
  done
  tgc "$root/examples/gpt.tg" "${gpt[@]}" -O0 -o "$tmp/gpt.tgx" >/dev/null
  tg-run "$tmp/gpt.tgx" --batch "$tmp/gpt.safetensors" --steps 3 --memory >"$tmp/gpt.out"
  row "2-layer GPT (width 64, batch 8 x 64)" "$tmp/gpt.out"
  tgc "$root/examples/gpt.tg" "${gpt[@]}" -O0 --memory-budget "$budget" -o "$tmp/fit.tgx" 2>"$tmp/note" >/dev/null
  tg-run "$tmp/fit.tgx" --batch "$tmp/gpt.safetensors" --steps 3 --memory >"$tmp/fit.out"
  row "the same GPT, budget 60% of its peak = $budget B" "$tmp/fit.out"
  echo
  echo "What tgc chose for the budget: $(cat "$tmp/note")"
  echo
  echo "Persistent = parameters, optimizer state, step and the staged batch (one"
  echo "block); arena = every planned intermediate (one block); the code heap"
  echo "column is what the compiled code allocated outside the arena."
} | tee "$out"
