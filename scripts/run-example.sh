#!/usr/bin/env bash
# run-example.sh BUILD - what `make run` shows: the example MLP's parameters
# and memory plan, compiled to a .tgx artifact for the CPU, then trained on
# Fashion-MNIST for one epoch with tg-run, which prints progress and the
# test accuracy.
set -euo pipefail
build=${1:-build}
bin=$build/bin
model=examples/mlp.tg
artifact=$build/mlp.tgx

step() { printf '\n==> %s\n' "$*"; }

step "tgc $model --report=params"
"$bin/tgc" "$model" --report=params

step "tgc $model --report=memory (planned before anything runs)"
"$bin/tgc" "$model" --report=memory | head -n 10

step "tgc $model -o $artifact"
"$bin/tgc" "$model" -o "$artifact"

step "tg-run $artifact --data fashion-mnist --epochs ${EPOCHS:-1}"
"$bin/tg-run" "$artifact" --data fashion-mnist --epochs "${EPOCHS:-1}"
printf '\nmake run: done\n'
