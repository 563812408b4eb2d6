#!/usr/bin/env bash
# bench/cpu_jit_mlp.sh BUILD - samples/s of the MLP train step (784-256-10,
# AdamW, batch 128) JIT-compiled by the CPU backend, with matmuls as
# vectorised loops and through cblas_sgemm (OpenBLAS with its own core
# detection, then forced to the SkylakeX kernels). Runs the hidden Catch2
# case "MLP train step throughput" (test/cpu/BenchTest.cpp) three times each.
set -euo pipefail
build=${1:-build}
bin=$build/unittests/tg-cpu-tests
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(uname -m), $(nproc) cores," \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
     "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "git: $(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
for run in 1 2 3; do
  "$bin" "MLP train step throughput" | grep '^mlp'
done
echo "OPENBLAS_CORETYPE=SkylakeX:"
for run in 1 2 3; do
  OPENBLAS_CORETYPE=SkylakeX "$bin" "MLP train step throughput" | grep 'cblas'
done
