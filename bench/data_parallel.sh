#!/usr/bin/env bash
# bench/data_parallel.sh BUILD - data-parallel training on this machine
# (docs/data-parallel.md): samples/s at the same global batch for 1 process,
# for 1 rank that communicates all the same (tgc --ranks 1
# --keep-collectives under mpirun -n 1: the cost of the exchange itself,
# MPI over a communicator of one) and for 2 ranks (mpirun -n 2), for
#   - the MLP on Fashion-MNIST (global batch 128, STEPS steps), and
#   - a tiny GPT (1 layer, d_model 64, seq 64, vocab 256, fp32) on a token
#     file of the GPL-3 text (global batch 16, GPT_STEPS steps),
# plus the bytes each rank hands the communicator per step: every f32
# parameter's gradient once (one all_reduce per bucket) and the loss. A
# ring all_reduce sends 2 (N-1)/N times that over the wire per rank.
# Two more rows per model give the bytes of the GPU path, read from the
# collective steps of the 2-rank sm_80 artifact's schedule (what each rank
# hands NCCL per step; not timed here, there is no GPU): with f32
# gradients (the default) and with tgc --comm-dtype bf16 (half of them).
# They need ptxas (the CUDA toolkit) and are left out without it.
# Prints one markdown table (what bench/results/data-parallel-*.md records).
# CPU time (user + sys) is printed beside wall time: on a shared, loaded
# machine the wall-clock samples/s are lower bounds.
set -euo pipefail
build=${1:-build}
steps=${STEPS:-300}
gpt_steps=${GPT_STEPS:-60}
bin=$(cd "$build/bin" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        OMPI_MCA_btl_vader_single_copy_mechanism=none
        mpirun --allow-run-as-root --oversubscribe)

gpt=(-D layers=1 -D d_model=64 -D heads=2 -D seq=64 -D ctx=64 -D vocab=256
     -D accumulate=1 -O1)
sed 's/precision = bf16/precision = fp32/' "$here/examples/gpt.tg" > "$tmp/gpt.tg"
# 64 copies of the GPL-3 text as u16 tokens: enough for GPT_STEPS steps.
python3 -c "import struct,sys; t=open('/usr/share/common-licenses/GPL-3','rb').read()*64; open(sys.argv[1],'wb').write(struct.pack('<%dH' % len(t), *t))" "$tmp/tok.u16"

# samples/s (the epoch line's) and the run's CPU seconds.
measure() {
  local out=$tmp/run.txt
  /usr/bin/time -f '%U %S' -o "$tmp/time.txt" "$@" > "$out"
  local rate
  rate=$(sed -nE 's/^epoch [0-9]+:.* ([0-9.]+) samples\/s.*/\1/p' "$out" | tail -n 1)
  echo "$rate $(awk '{print $1 + $2}' "$tmp/time.txt")"
}

# Bytes of gradients per step: 4 x parameters (f32), plus the f32 loss.
bytes() {
  local n
  n=$("$bin/tgc" "$@" --report=params | sed -nE 's/^total: ([0-9]+) parameters.*/\1/p')
  echo $((4 * n + 4))
}

# Bytes each rank hands NCCL per train_step: the collective steps of the
# artifact's sm_80 schedule (docs/artifact.md, "Collectives"): an
# all_reduce's tensors, a reduce_scatter's whole sources, an all_gather's
# shards.
gpu_bytes() { # MODEL.tgx
  python3 - "$1" "$here/scripts" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from tgx import sections, steps
manifest = json.loads(sections(sys.argv[1])["manifest"])
entry = manifest["gpu"]["schedules"]["sm_80"]["entries"]["train_step"]
size = {"f32": 4, "bf16": 2, "f16": 2}
total = 0
for s in steps(entry["steps"]):
    if s.get("op") in ("all_reduce", "reduce_scatter", "all_gather"):
        per = manifest["ranks"] if s["op"] == "reduce_scatter" else 1
        total += sum(per * t["count"] * size[s["dtype"]] for t in s["tensors"])
print(total)
PY
}

echo "| model | global batch | processes | samples/s (wall) | CPU s | bytes all-reduced per rank per step |"
echo "|---|---:|---:|---:|---:|---:|"
# The load while measuring: a loaded machine's rates are not results.
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
run_case() { # NAME GLOBAL_BATCH DATA STEPS SOURCE DEFINES...
  local name=$1 g=$2 data=$3 n=$4 src=$5
  shift 5
  "$bin/tgc" "$src" "$@" -D batch="$g" -o "$tmp/one.tgx"
  "$bin/tgc" "$src" "$@" -D batch="$g" --keep-collectives -o "$tmp/keep.tgx"
  "$bin/tgc" "$src" "$@" -D batch=$((g / 2)) --ranks 2 -o "$tmp/two.tgx"
  local b
  b=$(bytes "$src" "$@" -D batch="$g")
  read -r rate cpu < <(measure "$bin/tg-run" "$tmp/one.tgx" --data "$data" \
                         --batch-limit "$n" --seed 1)
  echo "| $name | $g | 1 | $rate | $cpu | 0 |"
  read -r rate cpu < <(measure "${mpirun[@]}" -n 1 "$bin/tg-run" "$tmp/keep.tgx" \
                         --data "$data" --batch-limit "$n" --seed 1)
  echo "| $name | $g | 1, collectives kept (mpirun -n 1) | $rate | $cpu | $b |"
  read -r rate cpu < <(measure "${mpirun[@]}" -n 2 "$bin/tg-run" "$tmp/two.tgx" \
                         --data "$data" --batch-limit "$n" --seed 1)
  echo "| $name | $g | 2 x $((g / 2)) | $rate | $cpu | $b |"
  local dtype
  for dtype in f32 bf16; do
    if "$bin/tgc" "$src" "$@" -D batch=$((g / 2)) --ranks 2 --target=sm_80 \
         --comm-dtype "$dtype" -o "$tmp/gpu.tgx" 2> "$tmp/gpu.err"; then
      echo "| $name | $g | 2 x $((g / 2)) on GPUs, NCCL, $dtype gradients (not run) | - | - | $(gpu_bytes "$tmp/gpu.tgx") |"
    else
      echo "GPU rows left out: $(head -n 1 "$tmp/gpu.err")" >&2
    fi
  done
}
run_case mlp 128 fashion-mnist "$steps" "$here/examples/mlp.tg"
run_case "tiny GPT" 16 "u16:$tmp/tok.u16" "$gpt_steps" "$tmp/gpt.tg" "${gpt[@]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
