#!/usr/bin/env bash
# run-example.sh BUILD - what `make run` shows: the example model compiled by
# tgc, its parameter report, its forward graph through tg-opt, and one
# evaluation of it with the reference evaluator. Later stages (training) are
# added here as they land.
set -euo pipefail
build=${1:-build}
bin=$build/bin
model=examples/mlp.tg

step() { printf '\n==> %s\n' "$*"; }

step "tgc $model --report=params"
"$bin/tgc" "$model" --report=params

step "tgc $model --emit=tg -D batch=4 | tg-opt --tg-decompose (first lines)"
"$bin/tgc" "$model" --emit=tg -D batch=4 -o "$build/mlp.mlir"
"$bin/tg-opt" "$build/mlp.mlir" --tg-decompose --canonicalize | head -n 20

if [[ -x "$bin/tg-eval" ]]; then
  step "tg-eval: the forward step of $model on random data (reference evaluator)"
  "$bin/tg-eval" "$build/mlp.mlir" --seed 1
fi
printf '\nmake run: done\n'
