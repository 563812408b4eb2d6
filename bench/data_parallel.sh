#!/usr/bin/env bash
# bench/data_parallel.sh BUILD - data-parallel training on this machine:
# samples/s of the MLP on Fashion-MNIST (global batch 128, STEPS steps of
# one epoch) for 1 process and for 2 ranks (mpirun, 64 rows each), and the
# gradient bytes each rank sends per step (every f32 parameter once, plus
# the loss). Prints what bench/results/*-data-parallel.md records.
set -euo pipefail
build=${1:-build}
steps=${STEPS:-300}
bin=$(cd "$build/bin" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        OMPI_MCA_btl_vader_single_copy_mechanism=none
        mpirun --allow-run-as-root --oversubscribe)

"$bin/tgc" "$here/examples/mlp.tg" -D batch=128 -o "$tmp/one.tgx"
"$bin/tgc" "$here/examples/mlp.tg" -D batch=64 --ranks 2 -o "$tmp/two.tgx"
params=$("$bin/tgc" "$here/examples/mlp.tg" --report=params | tail -n 1)
echo "== parameters: $params (f32: 4 bytes each are all-reduced per step)"
echo "== 1 process, batch 128"
"$bin/tg-run" "$tmp/one.tgx" --data fashion-mnist --batch-limit "$steps" --seed 1 |
  grep -E '^epoch [0-9]+:'
echo "== 2 ranks x 64"
"${mpirun[@]}" -n 2 "$bin/tg-run" "$tmp/two.tgx" --data fashion-mnist \
  --batch-limit "$steps" --seed 1 | grep -E '^epoch [0-9]+:'
