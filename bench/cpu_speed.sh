#!/usr/bin/env bash
# bench/cpu_speed.sh BUILD [OUT] - issue 14's CPU goal: the step time of the
# MLP (examples/mlp.tg, batch 64), the LeNet (examples/cnn.tg, batch 64) and
# a 2-layer GPT (d_model 256, seq 128, batch 8, vocab 512, fp32, one
# micro-batch: the config of bench/results/memory-vs-torch-2026-12-01b.md),
# compiled by tgc fused (the default) and with --no-fuse, against PyTorch
# eager (bench/torch_peers.py time: AdamW foreach, the same clipping, at
# each thread count 1..nproc, the best reported), all in one run.
#
# tgc's step time is what tg-run's step costs without loading: tg-run
# --batch B --steps N is timed for N = WARM and N = WARM + STEPS, and the
# difference divided by STEPS (loading, init and the first steps cancel);
# the median of REPEATS such pairs. tgc runs on THREADS threads (default:
# every core, `nproc`; tg-run --threads), and the fused step once more on
# one thread, to show what the parallel loops bring. Writes OUT (default
# bench/results/cpu-speed-<date>.md) and prints it. A report, never a
# pass/fail. ONLY="mlp gpt" runs some of the models (mlp, lenet, gpt).
# Needs Debian's python3-torch (TGC_SETUP_BENCH=1 scripts/setup.sh).
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$here/..
out=${2:-$here/results/cpu-speed-$(date -u +%Y-%m-%d).md}
steps=${STEPS:-20}
warm=${WARM:-2}
repeats=${REPEATS:-3}
threads=${THREADS:-$(nproc)}
source "$here/torch_common.sh" cpu_speed
batchpy=$root/lit-tests/tgc/Inputs/batch.py
models=(
  "MLP (batch 64)|$root/examples/mlp.tg|mlp|batch=64|images=f32[64,784]:normal labels=i64[64]:class10"
  "LeNet (batch 64)|$root/examples/cnn.tg|lenet|batch=64|images=f32[64,1,28,28]:normal labels=i64[64]:class10"
  "2-layer GPT (d 256, seq 128, batch 8)|$tmp/gpt-fp32.tg|gpt|layers=2 d_model=256 heads=4 seq=128 batch=8 vocab=512 ctx=128|tokens=i64[8,128]:text targets=i64[8,128]:text+1"
)

# Seconds of one `tg-run ARTIFACT --batch B --steps N [--threads T]`
# (T: $threads unless given).
run_s() {
  local t0 t1
  t0=$(date +%s.%N)
  "$build/bin/tg-run" "$1" --batch "$2" --steps "$3" --threads "${4:-$threads}" >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

# Median milliseconds per step of ARTIFACT on BATCH [on THREADS threads].
step_ms() {
  local r samples=()
  for ((r = 0; r < repeats; r++)); do
    local a b
    a=$(run_s "$1" "$2" "$warm" "${3:-}")
    b=$(run_s "$1" "$2" $((warm + steps)) "${3:-}")
    samples+=("$(echo "($b - $a) * 1000 / $steps" | bc -l)")
  done
  printf '%s\n' "${samples[@]}" | sort -g | awk '{v[NR] = $1} END {printf "%.1f", v[int((NR + 1) / 2)]}'
}

load1=$(cut -d' ' -f1 /proc/loadavg)
{
  echo "# CPU step time: tgc (fused and unfused) against PyTorch eager"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "- command: bench/cpu_speed.sh $build${2:+ $(basename "$2")} (STEPS=$steps WARM=$warm REPEATS=$repeats${ONLY:+ ONLY=\"$ONLY\"})"
  echo "- git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- load before: $(uptime | sed 's/.*load average/load average/')"
  echo "- peer: $("$py" -c 'import torch; print("PyTorch", torch.__version__, "(OpenBLAS)")') eager, fp32, AdamW(foreach=True), median of $steps steps at each of 1..$(nproc) threads; torch.compile does not exist in 1.13, so eager is the peer"
  echo "- tgc: tgc -O3 artifact run by tg-run with --threads $threads (all $(nproc) cores unless THREADS says otherwise; the parallel loops of docs/cpu-backend.md), the fused step also with --threads 1; median over $repeats of (time of $((warm + steps)) steps - time of $warm steps) / $steps"
  echo
  echo "| model | tgc fused (ms, $threads thr) | tgc fused (ms, 1 thr) | tgc --no-fuse (ms, $threads thr) | fused speedup | PyTorch (ms, by threads) | PyTorch best (ms) | PyTorch / tgc fused (goal >= 1.2) |"
  echo "|---|---:|---:|---:|---:|---|---:|---:|"
  for entry in "${models[@]}"; do
    IFS='|' read -r name file peer defs inputs <<<"$entry"
    [[ -z ${ONLY:-} || " $ONLY " == *" $peer "* ]] || continue
    dflags=()
    for d in $defs; do dflags+=(-D "$d"); done
    [[ $peer == gpt ]] && dflags+=(-D accumulate=1)
    # shellcheck disable=SC2086
    "$py" "$batchpy" "$tmp/$peer.safetensors" $inputs
    "$build/bin/tgc" "$file" "${dflags[@]}" -o "$tmp/$peer.tgx"
    "$build/bin/tgc" "$file" "${dflags[@]}" --no-fuse -o "$tmp/$peer-nofuse.tgx"
    fused=$(step_ms "$tmp/$peer.tgx" "$tmp/$peer.safetensors")
    fused1=$(step_ms "$tmp/$peer.tgx" "$tmp/$peer.safetensors" 1)
    unfused=$(step_ms "$tmp/$peer-nofuse.tgx" "$tmp/$peer.safetensors")
    # shellcheck disable=SC2086
    torch=$("$py" "$here/torch_peers.py" time "$peer" $defs steps=$steps)
    "$py" - "$name" "$fused" "$fused1" "$unfused" "$torch" <<'PY'
import json, sys
name, fused, fused1, unfused, torch = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), json.loads(sys.argv[5])
by = ", ".join(f"{t}: {ms:.1f}" for t, ms in sorted(torch["by_threads"].items()))
print(f"| {name} | {fused:.1f} | {fused1:.1f} | {unfused:.1f} | {unfused / fused:.2f}x | {by} "
      f"| {torch['step_ms']:.1f} ({torch['threads']} thr) | {torch['step_ms'] / fused:.2f}x |")
PY
  done
  echo
  echo "- load after: $(uptime | sed 's/.*load average/load average/')"
  echo
  # The note follows the 1-minute load measured before the run: above the
  # core count other work shared the cores, and the ratios say so.
  if awk -v l="$load1" -v n="$(nproc)" 'BEGIN { exit !(l > n) }'; then
    echo "**Loaded machine** (1-minute load $load1 on $(nproc) cores): other"
    echo "work shared the cores; both systems ran under the same load in the"
    echo "same run, but the ratios are not a quiet machine's."
  else
    echo "Quiet machine (1-minute load $load1 on $(nproc) cores before the run)."
  fi
} | tee "$out"
