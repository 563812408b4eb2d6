#!/usr/bin/env bash
# bench/gemm_gflops.sh BUILD [OUT] - single-thread GFLOP/s of one f32 GEMM
# as tgc's CPU backend compiles it (tg-vectorize-contractions: the
# register-blocked vector kernels) against OpenBLAS's cblas_sgemm on the
# same machine (tg-convert-matmul-to-blas on the same linalg.generic,
# OPENBLAS_NUM_THREADS=1), for the matrix products of the 2-layer GPT of
# bench/cpu_speed.sh (d_model 256, 8 x 128 tokens) in each transpose form
# the step uses (nn forward, nt input gradient, tn weight gradient).
# bench/gemm_kernel.py writes the kernel and a main that times REPS calls
# after one warm-up call; both run under LLVM's mlir-runner at -O3 (host
# CPU). A report, never a pass/fail. Writes OUT (default
# bench/results/gemm-gflops-<date>.md) and prints it.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/results/gemm-gflops-$(date -u +%Y-%m-%d).md}
reps=${REPS:-10}
llvm=/usr/lib/llvm-22
blas=$(ls /usr/lib/x86_64-linux-gnu/libopenblas.so.0 2>/dev/null || true)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lower=(--convert-linalg-to-loops --expand-strided-metadata --lower-affine
  --convert-scf-to-cf --convert-vector-to-llvm --convert-math-to-llvm
  --convert-arith-to-llvm --convert-index-to-llvm --finalize-memref-to-llvm
  --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts)
libs=$llvm/lib/libmlir_c_runner_utils.so,$llvm/lib/libmlir_runner_utils.so
# GFLOP/s of the kernel lowered with tg-opt pass $2, extra libraries $3.
gflops() {
  "$build/bin/tg-opt" "$1" "$2" | "$llvm/bin/mlir-opt" "${lower[@]}" >"$tmp/k.mlir"
  OPENBLAS_NUM_THREADS=1 "$llvm/bin/mlir-runner" -O3 -e main \
    -entry-point-result=void -shared-libs="$libs$3" "$tmp/k.mlir" | tail -1
}
shapes=(
  "1024 768 256 nn|qkv projection"
  "1024 1024 256 nn|MLP up"
  "1024 256 1024 nn|MLP down"
  "1024 512 256 nn|logits (vocab 512)"
  "1024 256 1024 nt|MLP up, input gradient"
  "1024 1024 256 nt|MLP down, input gradient"
  "256 1024 1024 tn|MLP up, weight gradient"
  "1024 256 1024 tn|MLP down, weight gradient"
)
{
  echo "# Single-thread f32 GEMM: tgc's vector kernels against OpenBLAS"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -m), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
  echo "- command: bench/gemm_gflops.sh $build (REPS=$reps)"
  echo "- git: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- load before: $(uptime | sed 's/.*load average/load average/')"
  echo "- OpenBLAS: ${blas:-not found}, one thread, its own core detection${OPENBLAS_CORETYPE:+ (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)}"
  echo
  echo "| GEMM (M x N x K, form) | in the GPT step | tgc (GFLOP/s) | OpenBLAS (GFLOP/s) | tgc / OpenBLAS |"
  echo "|---|---|---:|---:|---:|"
  for entry in "${shapes[@]}"; do
    IFS='|' read -r shape what <<<"$entry"
    # shellcheck disable=SC2086
    python3 "$here/gemm_kernel.py" $shape "$reps" >"$tmp/gemm.mlir"
    ours=$(gflops "$tmp/gemm.mlir" --tg-vectorize-contractions "")
    theirs=-
    [[ -n $blas ]] && theirs=$(gflops "$tmp/gemm.mlir" --tg-convert-matmul-to-blas ",$blas")
    read -r m n k form <<<"$shape"
    awk -v s="$m x $n x $k, $form" -v w="$what" -v a="$ours" -v b="$theirs" \
      'BEGIN { printf "| %s | %s | %.1f | %s | %s |\n", s, w, a, (b == "-" ? "-" : sprintf("%.1f", b)), (b == "-" ? "-" : sprintf("%.2fx", a / b)) }'
  done
  echo
  echo "- load after: $(uptime | sed 's/.*load average/load average/')"
} | tee "$out"
