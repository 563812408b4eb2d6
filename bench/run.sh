#!/usr/bin/env bash
# bench/run.sh BUILD - every benchmark; each writes its own file under
# bench/results/. Benchmarks report; they never fail on speed.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/memory.sh" "$build"
bash "$here/memory_measured.sh" "$build"
if [[ -x "$here/cpu_train_step.sh" ]]; then
  bash "$here/cpu_train_step.sh" "$build"
fi
bash "$here/gpt2_init_from.sh" "$build"
