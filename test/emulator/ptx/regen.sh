#!/bin/sh
# Regenerates the checked-in PTX of the emulator's SIMT tests from simt.cu
# with clang's CUDA mode (no CUDA libraries needed, only the CUDA headers).
# Usage: test/emulator/ptx/regen.sh  [CUDA_PATH, default /usr/local/cuda]
set -e
cd "$(dirname "$0")"
CUDA=${1:-/usr/local/cuda}
clang-22 --cuda-device-only --cuda-gpu-arch=sm_80 -nocudalib -S -O2 \
  -Wno-unknown-cuda-version -x cuda simt.cu --cuda-path="$CUDA" -o simt.ptx
