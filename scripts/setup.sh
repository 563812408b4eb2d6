#!/usr/bin/env bash
# setup.sh - install what TGC needs to build, test and run, and nothing else.
#
# Idempotent: packages already present are not touched, so a second run costs
# one dpkg query. Runs as root on Debian 12 (apt-get); elsewhere it only checks.
set -euo pipefail

PKGS=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  libclang-rt-22-dev libfuzzer-22-dev
  catch2 ninja-build cmake ccache make python3
  libopenblas-dev dataset-fashion-mnist zlib1g-dev nlohmann-json3-dev
  libcli11-dev libopenmpi-dev openmpi-bin libzstd-dev
  # The LLVM OpenMP runtime (libomp.so.5) that the CPU code's parallel loops
  # call (docs/cpu-backend.md, "Threads"). Debian 12's own, LLVM 14's: the
  # __kmpc_* entry points LLVM 22 emits for static worksharing loops are in
  # it, and bookworm's libomp-22-dev conflicts with libomp-14-dev.
  libomp5-14
)
# Extra packages for `make bench` only (PyTorch is the peer we measure against;
# perf for bench/cpu_profile.sh).
if [[ "${TGC_SETUP_BENCH:-0}" == 1 ]]; then
  PKGS+=(python3-torch libopenblas0-pthread linux-perf)
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: error: missing packages and not root; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The CUDA toolkit is optional: without it the PTX assembly tests skip, loudly.
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [[ -x "$CUDA_HOME/bin/ptxas" && -x "$CUDA_HOME/bin/fatbinary" ]]; then
  echo "setup: CUDA toolkit: $("$CUDA_HOME/bin/ptxas" --version | tail -1)"
else
  echo "setup: WARNING: no CUDA toolkit at $CUDA_HOME (ptxas, fatbinary); PTX assembly tests will be SKIPPED"
fi
