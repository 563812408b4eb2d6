#!/usr/bin/env bash
# device-check.sh - the GEMM kernels and training on a GPU, in one call
# (≤ 8 minutes).
#
#   scripts/device-check.sh --prepare   # on a build machine (no GPU needed)
#   scripts/device-check.sh             # on the GPU machine (an H200)
#
# --prepare writes the PTX of every kernel the check runs into
# $BUILD/gemm-kernels with tg-bench-gemm (which needs the MLIR/LLVM 22
# libraries). The GPU run needs only the driver: it uses tg-bench-gemm-run (no
# MLIR, no LLVM) on those files, or tg-bench-gemm directly where it can start.
# Carry the build folder to the GPU machine; nothing is compiled there.
#
# On the GPU it: trains GPT-2 small (examples/gpt.tg, bf16, batch
# $TG_GPT2_DEFINES) for 20 steps against the same model in PyTorch (eager
# and torch.compile, bf16 autocast, SDPA, fused AdamW) from the same initial
# weights on the same batch: losses, step time, tokens/s, MFU and peak memory
# of each (bench/gpt2_gpu.py); runs the training check
# (scripts/device-train-check.sh); checks correctness (random data, output poisoned with NaN,
# fp64 reference, normwise relative error ≤ 1e-2) and times (CUDA events,
# warm-up, median of 30) 4096³, 8192³ and the GPT-2-small training shapes on
# the sm_90a and sm_80 paths; times cuBLAS on the same shapes through
# PyTorch's torch.matmul (bench/gemm_torch.py); checks the sm_90a SASS for
# HGMMA (cuobjdump); checks and times the fused attention kernels (forward
# and forward+backward, bf16, causal, GPT-2 small and a d = 128 shape) against
# PyTorch's flash SDPA in the same run (bench/attention_torch.py, on the PTX
# and launches tg-bench-attention wrote at --prepare); measures the
# memory-bound kernels (GELU on [8192, 3072], softmax and cross-entropy over
# 50257-wide rows, layer norm over 768-wide rows; bf16; bench/rowops/*.tg
# compiled by tgc at --prepare, their `eval` schedule replayed by
# bench/rowops_torch.py) against PyTorch eager and torch.compile in the same
# run, achieved bandwidth as a fraction of 4.8 TB/s; writes
# bench/results/gemm-h200-<date>.md and prints a short table last. Exit
# status: 0 if every correctness check passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD

if [[ -n "${BUILD:-}" ]]; then :
elif [[ -x build-gpu/bin/tg-bench-gemm-run ]]; then BUILD=build-gpu
else BUILD=build; fi
KDIR=${TG_GEMM_KERNELS:-$BUILD/gemm-kernels}
GEN=$BUILD/bin/tg-bench-gemm
RUN=$BUILD/bin/tg-bench-gemm-run
DEADLINE=$((SECONDS + ${TG_DEVICE_CHECK_BUDGET_S:-470}))
# In order of what matters, each with its own cap inside the one budget:
# GPT-2 small against PyTorch (TG_GPT2_BUDGET_S), the training check
# (TG_TRAIN_CHECK_BUDGET_S), attention (60 s a shape), the memory-bound
# kernels (TG_ROWOPS_BUDGET_S in all, 45 s an op at most), the timed GEMMs;
# the config sweep takes what is left.


# Timed cases: M N K form (nn = forward, tn = weight gradient Xᵀ·dY).
TIMED=(
  "4096 4096 4096 nn"
  "8192 8192 8192 nn"
  "8192 768 3072 nn"
  "8192 3072 768 nn"
  "768 3072 8192 tn"
)
# Correctness-only cases: every form, ragged edges, the fused epilogue.
EXTRA=(
  "4096 4096 4096 nt|"
  "4096 4096 4096 tn|"
  "1000 776 504 nn|"
  "1000 776 504 nt|"
  "1000 776 504 tn|"
  "2048 1024 512 nn|--bias --act gelu --residual --alpha 0.5"
  "2048 1024 512 nt|--bias --act relu"
)
TARGETS=(sm_90a sm_80)
# Attention shapes (B H T d; bf16, causal, sm_90a): GPT-2 small at batch 8,
# and head dim 128 at T = 4096 (issue 17).
ATTN=("8 12 1024 64" "2 16 4096 128")
aname() { echo "$KDIR/attn_sm_90a_$1x$2x$3x$4"; } # B H T d -> file stem
PROBE="256 256 256 nn" # preflight kernel (sm_80)
SWEEP_ON=1
# Memory-bound kernels (op rows cols; bf16): GPT-2 small at B*T = 8192.
ROWOPS=("gelu 8192 3072" "softmax 8192 50257" "layernorm 8192 768" "xent 8192 50257")
ROWOPS_TARGET=sm_90a
if [[ -n ${TG_DEVICE_CHECK_SMOKE:-} ]]; then
  # The plumbing check of the test suite (lit-tests/runtime/device-check-fake.test,
  # on the fake libcuda that runs kernels on the PTX emulator): every step of
  # the script on shapes the emulator runs in seconds, no config sweep, and
  # sm_80 code only: the fake driver runs the PTX of a fat binary, which
  # holds sm_90a code as a cubin only (test/nvptx/FakeCudaEmu.cpp).
  TARGETS=(sm_80)
  : "${TG_GPT2_TARGETS:=--target=sm_80}"
  TIMED=("128 128 64 nn" "64 128 128 tn")
  EXTRA=("72 40 24 nt|" "64 64 64 nn|--bias --act gelu --residual --alpha 0.5")
  ATTN=("1 1 80 64")
  ROWOPS=("gelu 64 257" "softmax 4 1000" "layernorm 16 768" "xent 4 1000")
  ROWOPS_TARGET=sm_80
  PROBE="64 64 64 nn"
  SWEEP_ON=0
  : "${TG_GPT2_DEFINES:=-D layers=1 -D d_model=64 -D heads=1 -D seq=64 -D ctx=64 -D vocab=256 -D batch=2 -D accumulate=1}"
fi
# GPT-2 small as the H200 trains it (bf16, fused attention, no budget: the
# plan must fit 141 GB), one sequence of 1024 per row.
GPT2_DEFINES=${TG_GPT2_DEFINES:-"-D batch=16 -D seq=1024 -D accumulate=1"}
GPT2_TGX=$BUILD/device-models/gpt2.tgx

rname() { echo "$BUILD/device-models/rowops-$1.tgx"; } # op -> artifact
kname() { # target M N K form extra-flags -> kernel file
  local t=$1 m=$2 n=$3 k=$4 f=$5 x=${6:-}
  local tag=${x//[^a-z0-9]/}
  echo "$KDIR/${t}_${m}x${n}x${k}_${f}${tag:+_$tag}.ptx"
}

if [[ "${1:-}" == "--prepare" ]]; then
  [[ -x $GEN ]] || { echo "device-check: error: $GEN not built (ninja -C $BUILD tg-bench-gemm tg-bench-gemm-run)" >&2; exit 2; }
  mkdir -p "$KDIR"
  n=0
  read -r m nn k f <<<"$PROBE"
  "$GEN" "$m" "$nn" "$k" --form "$f" --target sm_80 --out bf16 --emit-ptx "$(kname sm_80 "$m" "$nn" "$k" "$f")" || exit 3
  for t in "${TARGETS[@]}"; do
    for c in "${TIMED[@]}"; do
      read -r m nn k f <<<"$c"
      "$GEN" "$m" "$nn" "$k" --form "$f" --target "$t" --out bf16 --emit-ptx "$(kname "$t" "$m" "$nn" "$k" "$f")" || exit 3
      n=$((n + 1))
    done
    for c in "${EXTRA[@]}"; do
      read -r m nn k f <<<"${c%%|*}"; x=${c#*|}
      # shellcheck disable=SC2086
      "$GEN" "$m" "$nn" "$k" --form "$f" --target "$t" --out bf16 $x --emit-ptx "$(kname "$t" "$m" "$nn" "$k" "$f" "$x")" || exit 3
      n=$((n + 1))
    done
  done
  # Every candidate config on the timed shapes, for the sweep.
  for t in "${TARGETS[@]}"; do
    ((SWEEP_ON)) || break
    for cfg in $("$GEN" --list-configs --target "$t"); do
      for c in "${TIMED[@]}"; do
        read -r m nn k f <<<"$c"
        "$GEN" "$m" "$nn" "$k" --form "$f" --target "$t" --out bf16 --config "$cfg" \
          --emit-ptx "$(kname "$t" "$m" "$nn" "$k" "$f" "--config $cfg")" || exit 3
        n=$((n + 1))
      done
    done
  done
  PTXAS=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
  if [[ -x $PTXAS ]]; then # cubins for the SASS check, in case the GPU machine has no ptxas
    for t in "${TARGETS[@]}"; do
      read -r m nn k f <<<"${TIMED[1]}"
      p=$(kname "$t" "$m" "$nn" "$k" "$f")
      "$PTXAS" -arch="$t" "$p" -o "${p%.ptx}.cubin" || exit 3
    done
  fi
  AGEN=$BUILD/bin/tg-bench-attention
  [[ -x $AGEN ]] || { echo "device-check: error: $AGEN not built (ninja -C $BUILD tg-bench-attention)" >&2; exit 2; }
  for c in "${ATTN[@]}"; do
    read -r b h t d <<<"$c"; stem=$(aname "$b" "$h" "$t" "$d")
    "$AGEN" "$b" "$h" "$t" "$d" --causal --target sm_90a --emit-ptx "$stem.ptx" --emit-launches "$stem.launches" || exit 3
    n=$((n + 1))
  done
  # The memory-bound kernels: one artifact per op (tgc), its replay plan
  # checked here (bench/rowops_torch.py --plan-only: container, manifest,
  # every buffer range of the eval schedule), so only the GPU half is left.
  mkdir -p "$BUILD/device-models"
  for c in "${ROWOPS[@]}"; do
    read -r op r cl <<<"$c"
    "$BUILD/bin/tgc" "bench/rowops/$op.tg" -D rows="$r" -D cols="$cl" --target="$ROWOPS_TARGET" \
      -o "$(rname "$op")" || exit 3
    "${PYTHON:-python3}" bench/rowops_torch.py --tgx "$(rname "$op")" --op "$op" \
      --target "$ROWOPS_TARGET" --plan-only || exit 3
    n=$((n + 1))
  done
  echo "device-check: wrote $n kernels to $KDIR; carry $BUILD to the GPU machine"
  # The shared libraries tg-run needs beyond the C/C++ runtime (libtgrt.so;
  # not Open MPI's, which the GPU machine's image does not have: tg-run
  # opens it only for a data-parallel job), for LD_LIBRARY_PATH there. libstdc++ stays the GPU machine's own (newer, and
  # the one its PyTorch needs).
  mkdir -p "$BUILD/device-lib"
  for lib in $(ldd "$BUILD/bin/tg-run" | awk '/=> \//{print $3}'); do
    case ${lib##*/} in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*|libz.so*) ;;
      *) cp -L "$lib" "$BUILD/device-lib/" || exit 3 ;;
    esac
  done
  # GPT-2 small for the comparison with PyTorch: the example with a constant
  # learning rate (PyTorch's AdamW has no warm-up of its own) and no memory
  # budget (the H200 holds the unfitted step); sm_90a only, which keeps the
  # artifact small enough to carry.
  mkdir -p "$BUILD/device-models"
  sed -e 's/schedule = .*/schedule = constant/' -e '/memory_budget/d' examples/gpt.tg \
    >"$BUILD/device-models/gpt2.tg"
  # shellcheck disable=SC2086
  "$BUILD/bin/tgc" "$BUILD/device-models/gpt2.tg" $GPT2_DEFINES ${TG_GPT2_TARGETS:---target=sm_90a} \
    -o "$GPT2_TGX" || exit 3
  # The training check's artifacts (tgc, no GPU needed).
  BUILD=$BUILD bash scripts/device-train-check.sh --prepare || exit 3
  exit 0
fi

# ---- on the GPU machine -----------------------------------------------------
# tg-run's libraries as --prepare copied them (tg-run's own rpath,
# $ORIGIN/../lib, finds libtgrt.so when bin/ and lib/ are carried whole).
[[ -d $BUILD/device-lib ]] && export LD_LIBRARY_PATH=$BUILD/device-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
DATE=$(date -u +%Y-%m-%d)
OUTDIR=${TG_RESULTS_DIR:-$ROOT/bench/results}
REPORT=$OUTDIR/gemm-h200-$DATE.md
STATE=$(mktemp -d)
LOG=$STATE/device-check.log
mkdir -p "$OUTDIR"
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "device-check: GPU: ${GPU:-unknown (nvidia-smi failed)}; build: $BUILD; kernels: $KDIR"

# Prefer prepared PTX + the driver-only runner; fall back to the generator.
gen_ok=0
if [[ -x $GEN ]] && "$GEN" 64 64 64 --emit-ptx /dev/null >/dev/null 2>&1; then gen_ok=1; fi
bench() { # target M N K form iters warmup extra... ; prints the result line
  local t=$1 m=$2 n=$3 k=$4 f=$5 it=$6 wu=$7; shift 7
  local ptx; ptx=$(kname "$t" "$m" "$n" "$k" "$f" "$*")
  local left=$((DEADLINE - SECONDS)); ((left < 20)) && { echo "status=SKIPPED reason=time-budget"; return; }
  local to=$((left < 60 ? left : 60))
  # After one hang on a target (a pipeline deadlock, say) skip its other runs.
  [[ -f $STATE/hung-$t ]] && { echo "status=SKIPPED reason=earlier-timeout-on-$t"; return; }
  local runner=()
  if [[ -f $ptx && -x $RUN ]]; then runner=("$RUN" --ptx "$ptx")
  elif ((gen_ok)); then runner=("$GEN")
  else echo "status=SKIPPED reason=no-kernel($ptx)-and-no-generator"; return; fi
  local out rc
  out=$(timeout "$to" "${runner[@]}" "$m" "$n" "$k" --form "$f" --target "$t" --out bf16 \
        --iters "$it" --warmup "$wu" "$@" 2>&1); rc=$?
  echo "${out##*$'\n'}" # the key=value line (or the error)
  if ((rc == 124)); then echo "status=FAIL reason=timeout(${to}s)"; touch "$STATE/hung-$t"; fi
  return 0
}
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }

# Preflight: a machine without a usable driver stops here, with the reason.
probe=$(bench sm_80 256 256 256 nn 1 1)
if grep -q "no CUDA driver\|cuInit failed\|no CUDA device" <<<"$probe"; then
  echo "device-check: error: $probe" >&2
  exit 3
fi

PY=${PYTHON:-python3}
fails=0

# GPT-2 small against PyTorch first: the number this machine is lent for.
GPT2_BUDGET=${TG_GPT2_BUDGET_S:-170}
if [[ -f $GPT2_TGX ]]; then
  # shellcheck disable=SC2086
  timeout "$GPT2_BUDGET" "$PY" bench/gpt2_gpu.py --tgx "$GPT2_TGX" --bin "$BUILD/bin" \
    --defines "$GPT2_DEFINES" --device "${TG_GPT2_DEVICE:-cuda}" --steps "${TG_GPT2_STEPS:-20}" \
    --text "$BUILD/device-data/text.u8" --json "$STATE/gpt2.json" \
    --timeout $((GPT2_BUDGET / 2)) ${TG_GPT2_FLAGS:-} >"$STATE/gpt2.out" 2>>"$LOG"
  rc=$?; GPT2_LINE=$(grep '^gpt2 ' "$STATE/gpt2.out" | tail -1)
  ((rc == 124)) && GPT2_LINE="gpt2 status=FAIL reason=timeout(${GPT2_BUDGET}s)"
  [[ -n $GPT2_LINE ]] || GPT2_LINE="gpt2 status=FAIL reason=no-output(see-log)"
  [[ -f $STATE/gpt2.json && -n ${OUT:-} && -d ${OUT:-} ]] && cp "$STATE/gpt2.json" "$OUT/"
else
  GPT2_LINE="gpt2 status=SKIPPED reason=not-prepared($GPT2_TGX)"
fi
echo "$GPT2_LINE" | tee -a "$LOG"
[[ $(field status "$GPT2_LINE") == PASS ]] || fails=$((fails + 1))

# Training (MLP and LeNet on Fashion-MNIST, --device cuda against
# --device cpu; its own share of the budget): its table is printed last.
TRAIN_TABLE=$STATE/train-table
# Its runs time out on their own; the whole is bounded too (a hang outside
# a run must not eat the GEMM checks' time).
TRAIN_BUDGET=${TG_TRAIN_CHECK_BUDGET_S:-150}
BUILD=$BUILD TG_TRAIN_CHECK_BUDGET_S=$TRAIN_BUDGET \
  timeout $((TRAIN_BUDGET + 30)) bash scripts/device-train-check.sh >"$TRAIN_TABLE" 2>&1
train_rc=$?
((train_rc == 124)) && echo "device-check: the training check timed out after $((TRAIN_BUDGET + 30))s" >>"$TRAIN_TABLE"

fails=$((fails + (train_rc != 0)))

# Attention against PyTorch's flash SDPA (its own cap per shape, so a hang
# costs at most that; the GEMM checks take what is left).
declare -a ATTN_ROWS ATTN_SUMMARY
for c in "${ATTN[@]}"; do
  read -r b h t d <<<"$c"; stem=$(aname "$b" "$h" "$t" "$d")
  left=$((DEADLINE - SECONDS)); to=$((left < 60 ? left : 60))
  if [[ ! -f $stem.ptx || ! -f $stem.launches ]]; then
    line="attention B=$b H=$h T=$t d=$d status=SKIPPED reason=not-prepared($stem.ptx)"
  elif ((to < 20)); then
    line="attention B=$b H=$h T=$t d=$d status=SKIPPED reason=time-budget"
  else
    timeout "$to" "$PY" bench/attention_torch.py --ptx "$stem.ptx" --launches "$stem.launches" \
      --shape "$b,$h,$t,$d" --causal >"$STATE/attn.out" 2>>"$LOG"
    rc=$?; line=$(tail -1 "$STATE/attn.out")
    ((rc == 124)) && line="attention B=$b H=$h T=$t d=$d status=FAIL reason=timeout(${to}s)"
    [[ -n $line ]] || line="attention B=$b H=$h T=$t d=$d status=FAIL reason=no-output(see-log)"
  fi
  echo "$line" | tee -a "$LOG"
  st=$(field status "$line"); [[ $st == PASS ]] || fails=$((fails + 1))
  ATTN_ROWS+=("| $b×$h×$t×$d | $(field fwd_tflops "$line") | $(field torch_fwd_tflops "$line") | $(field fwd_ratio "$line") | $(field fwdbwd_tflops "$line") | $(field torch_fwdbwd_tflops "$line") | $(field fwdbwd_ratio "$line") | $(field err_o "$line") / $(field err_dq "$line") | ${st:-ERROR} |")
  ATTN_SUMMARY+=("$(printf '%-16s fwd %5s/%5s TF/s (%s)  fwd+bwd %5s/%5s TF/s (%s)  %s' "${b}x${h}x${t}x${d}" "$(field fwd_tflops "$line")" "$(field torch_fwd_tflops "$line")" "$(field fwd_ratio "$line")" "$(field fwdbwd_tflops "$line")" "$(field torch_fwdbwd_tflops "$line")" "$(field fwdbwd_ratio "$line")" "${st:-ERROR}")")
done

# Memory-bound kernels against PyTorch eager and torch.compile (one cap for
# the step, TG_ROWOPS_BUDGET_S, and 45 s an op: torch.compile's first call
# compiles), before the GEMMs, which an H200 run has measured already.
ROWOPS_DEADLINE=$((SECONDS + ${TG_ROWOPS_BUDGET_S:-100}))
declare -a ROWOPS_ROWS ROWOPS_SUMMARY
for c in "${ROWOPS[@]}"; do
  read -r op r cl <<<"$c"; tgx=$(rname "$op")
  left=$((ROWOPS_DEADLINE - SECONDS)); dl=$((DEADLINE - SECONDS)); ((dl < left)) && left=$dl
  to=$((left < 45 ? left : 45))
  if [[ ! -f $tgx ]]; then
    line="rowops op=$op shape=${r}x$cl status=SKIPPED reason=not-prepared($tgx)"
  elif ((to < 15)); then
    line="rowops op=$op shape=${r}x$cl status=SKIPPED reason=time-budget"
  else
    timeout "$to" "$PY" bench/rowops_torch.py --tgx "$tgx" --op "$op" --target "$ROWOPS_TARGET" \
      >"$STATE/rowops.out" 2>>"$LOG"
    rc=$?; line=$(tail -1 "$STATE/rowops.out")
    ((rc == 124)) && line="rowops op=$op shape=${r}x$cl status=FAIL reason=timeout(${to}s)"
    [[ -n $line ]] || line="rowops op=$op shape=${r}x$cl status=FAIL reason=no-output(see-log)"
  fi
  echo "$line" | tee -a "$LOG"
  st=$(field status "$line"); [[ $st == PASS ]] || fails=$((fails + 1))
  ROWOPS_ROWS+=("| $op | ${r}×$cl | $(field bytes "$line") | $(field ours_ms "$line") | $(field ours_tbs "$line") | $(field ours_frac "$line") | $(field eager_ms "$line") | $(field eager_frac "$line") | $(field compile_ms "$line") | $(field compile_frac "$line") | $(field rel_err "$line") | ${st:-ERROR} $(field reason "$line") |")
  ROWOPS_SUMMARY+=("$(printf '%-10s %-12s ours %6s ms %5s of peak  eager %6s ms %5s  compile %6s ms %5s  %s' "$op" "${r}x$cl" "$(field ours_ms "$line")" "$(field ours_frac "$line")" "$(field eager_ms "$line")" "$(field eager_frac "$line")" "$(field compile_ms "$line")" "$(field compile_frac "$line")" "${st:-ERROR} $(field reason "$line")")")
done

declare -A OURS_MS OURS_TF STATUS ERR CFG
for c in "${TIMED[@]}"; do
  read -r m n k f <<<"$c"
  for t in "${TARGETS[@]}"; do
    line=$(bench "$t" "$m" "$n" "$k" "$f" 30 5)
    echo "$line" | tee -a "$LOG"
    key="$m,$n,$k,$f,$t"
    OURS_MS[$key]=$(field median_ms "$line"); OURS_TF[$key]=$(field tflops "$line")
    STATUS[$key]=$(field status "$line"); ERR[$key]=$(field rel_err "$line"); CFG[$key]=$(field config "$line")
    [[ ${STATUS[$key]} == PASS ]] || fails=$((fails + 1))
  done
done

declare -a EXTRA_ROWS
for c in "${EXTRA[@]}"; do
  read -r m n k f <<<"${c%%|*}"; x=${c#*|}
  for t in "${TARGETS[@]}"; do
    # shellcheck disable=SC2086
    line=$(bench "$t" "$m" "$n" "$k" "$f" 3 1 $x)
    echo "$line" | tee -a "$LOG"
    st=$(field status "$line"); [[ $st == PASS ]] || fails=$((fails + 1))
    EXTRA_ROWS+=("| $m×$n×$k | $f | ${x:-—} | $t | $(field rel_err "$line") | $(field unwritten "$line") | ${st:-ERROR} |")
  done
done

# cuBLAS through PyTorch, same shapes, same run.
declare -A PEER_MS PEER_TF
cases=()
for c in "${TIMED[@]}"; do read -r m n k f <<<"$c"; cases+=("$m,$n,$k,$f"); done
peer_out=$(timeout $((DEADLINE - SECONDS > 30 ? DEADLINE - SECONDS : 30)) "$PY" bench/gemm_torch.py "${cases[@]}" 2>&1)
echo "$peer_out" | tee -a "$LOG"
while read -r line; do
  [[ $line == peer=* ]] || continue
  key="$(field M "$line"),$(field N "$line"),$(field K "$line"),$(field form "$line")"
  PEER_MS[$key]=$(field median_ms "$line"); PEER_TF[$key]=$(field tflops "$line")
done <<<"$peer_out"
TORCH=$(sed -n 's/.*torch=\([^ ]*\).*/\1/p' <<<"$peer_out" | head -1)

# SASS: the sm_90a kernel must use HGMMA (and the sm_80 one HMMA). Cubins
# come from --prepare (where ptxas was present) or from ptxas here.
CUDA=${CUDA_HOME:-/usr/local/cuda}
OBJDUMP=$(command -v cuobjdump || echo "$CUDA/bin/cuobjdump")
PTXAS=$(command -v ptxas || echo "$CUDA/bin/ptxas")
read -r m n k f <<<"${TIMED[1]}"
sass="SKIPPED (no cuobjdump)"
if [[ -x $OBJDUMP ]]; then
  counts=()
  for t in sm_90a sm_80; do
    p=$(kname "$t" "$m" "$n" "$k" "$f"); cub=${p%.ptx}.cubin
    [[ -f $cub || ! -f $p || ! -x $PTXAS ]] || "$PTXAS" -arch="$t" "$p" -o "$cub" 2>>"$LOG"
    if [[ -f $cub ]]; then
      op=HGMMA; [[ $t == sm_80 ]] && op=HMMA
      counts+=("$t:$("$OBJDUMP" --dump-sass "$cub" | grep -c "$op")")
    else
      counts+=("$t:none")
    fi
  done
  hg=${counts[0]#sm_90a:}
  if [[ $hg == none ]]; then sass="SKIPPED (no sm_90a cubin: no ptxas here and none prepared)"
  elif ((hg > 0)); then sass="PASS: HGMMA in sm_90a SASS ($hg), HMMA in sm_80 SASS (${counts[1]#sm_80:})"
  else sass="FAIL: no HGMMA in the sm_90a kernel's SASS"; fails=$((fails + 1)); fi
fi

# Config sweep (time permitting): every candidate on every timed shape, so
# the heuristic can be checked against measurements.
declare -A SWEEP
SWEEP_CFGS=()
for t in "${TARGETS[@]}"; do
  ((SWEEP_ON)) || break
  for cfg in $("$RUN" --list-configs --target "$t" 2>/dev/null); do
    SWEEP_CFGS+=("$t:$cfg")
    for c in "${TIMED[@]}"; do
      read -r m n k f <<<"$c"
      ((DEADLINE - SECONDS < 40)) && break 3
      line=$(bench "$t" "$m" "$n" "$k" "$f" 20 3 --config "$cfg")
      echo "$line" >>"$LOG"
      st=$(field status "$line")
      SWEEP["$m,$n,$k,$f,$t:$cfg"]=$([[ $st == PASS ]] && field tflops "$line" || echo "${st:-ERROR}")
    done
  done
done

# Report.
{
  echo "# GEMM on $(cut -d, -f1 <<<"${GPU:-unknown GPU}") — $DATE"
  echo
  echo "Measured by \`scripts/device-check.sh\` (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)),"
  echo "driver $(cut -d, -f2 <<<"${GPU:-,?}" | tr -d ' '), peer: cuBLAS via torch.matmul ${TORCH:-unavailable}."
  echo "bf16 in, bf16 out, f32 accumulation; medians of 30 CUDA-event timings (runs back to back) after 5 warm-ups;"
  echo "correctness: random data, output poisoned with NaN, fp64 reference (sampled for large shapes)."
  echo
  echo "GPT-2 small training step ($GPT2_DEFINES, bf16, AdamW, ${TG_GPT2_STEPS:-20} steps on one batch from the"
  echo "same initial weights; bench/gpt2_gpu.py) against PyTorch $(field torch "$GPT2_LINE") (bf16 autocast, SDPA, fused"
  echo "AdamW): step time of steps 2..N, speed-up = PyTorch ms / ours ms, MFU at 989.4 TFLOP/s dense bf16,"
  echo "memory = device allocation (ours: planned / measured; PyTorch: max_memory_allocated), compile = first step:"
  echo
  echo "| ours ms | eager ms | compile ms | vs eager | vs compile | MFU ours / eager / compile | memory ours plan / measured | eager | compile | torch.compile s | loss diff | check |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  g=$GPT2_LINE
  echo "| $(field ours_ms "$g") | $(field eager_ms "$g") | $(field compile_ms "$g") | $(field vs_eager "$g") | $(field vs_compile "$g") | $(field ours_mfu "$g") / $(field eager_mfu "$g") / $(field compile_mfu "$g") | $(field ours_plan "$g") / $(field ours_mem "$g") | $(field eager_mem "$g") | $(field compile_mem "$g") | $(field compile_s "$g") | $(field loss_diff "$g") | $(field status "$g") $(field reason "$g") |"
  echo
  echo "| M×N×K | form | path | config | ours ms | ours TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | ratio | rel err | check |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for c in "${TIMED[@]}"; do
    read -r m n k f <<<"$c"
    for t in "${TARGETS[@]}"; do
      key="$m,$n,$k,$f,$t"; pk="$m,$n,$k,$f"
      ratio="—"
      if [[ -n ${OURS_TF[$key]} && -n ${PEER_TF[$pk]:-} ]]; then
        ratio=$(awk -v a="${OURS_TF[$key]}" -v b="${PEER_TF[$pk]}" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else print "—" }')
      fi
      echo "| $m×$n×$k | $f | $t | ${CFG[$key]:-—} | ${OURS_MS[$key]:-—} | ${OURS_TF[$key]:-—} | ${PEER_MS[$pk]:-—} | ${PEER_TF[$pk]:-—} | $ratio | ${ERR[$key]:-—} | ${STATUS[$key]:-ERROR} |"
    done
  done
  echo
  echo "Correctness of the other forms, ragged edges and fused epilogues (bf16 out):"
  echo
  echo "| M×N×K | form | epilogue | path | rel err | unwritten | check |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${EXTRA_ROWS[@]}"
  echo
  echo "Config sweep, TFLOP/s (bf16 out; a status instead of a number means the run did not pass):"
  echo
  hdr="| M×N×K | form |"; sep="|---|---|"
  for tc in "${SWEEP_CFGS[@]}"; do hdr+=" ${tc/:/ } |"; sep+="---|"; done
  echo "$hdr"; echo "$sep"
  for c in "${TIMED[@]}"; do
    read -r m n k f <<<"$c"
    row="| $m×$n×$k | $f |"
    for tc in "${SWEEP_CFGS[@]}"; do row+=" ${SWEEP["$m,$n,$k,$f,$tc"]:-—} |"; done
    echo "$row"
  done
  echo
  echo "SASS check: $sass"
  echo
  echo "Fused attention (sm_90a forward: wgmma + TMA; backward: mma.sync), bf16, causal, vs"
  echo "torch.nn.functional.scaled_dot_product_attention (flash backend); ratio = ours / PyTorch"
  echo "throughput; error = max |ours - fp32 reference| / max |reference| (output / dQ):"
  echo
  echo "| B×H×T×d | fwd TFLOP/s | PyTorch fwd | ratio | fwd+bwd TFLOP/s | PyTorch fwd+bwd | ratio | error | check |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${ATTN_ROWS[@]}"
  echo
  echo "Memory-bound kernels ($ROWOPS_TARGET, bf16; bench/rowops/*.tg, the eval schedule replayed by"
  echo "bench/rowops_torch.py) against PyTorch eager and torch.compile in the same run: bytes = the op's"
  echo "inputs read once and its result written once; fraction = achieved bandwidth / 4.8 TB/s;"
  echo "error = max |ours - fp32 PyTorch| / max |ref|:"
  echo
  echo "| op | rows×cols | bytes | ours ms | ours TB/s | ours fraction | eager ms | eager fraction | compile ms | compile fraction | error | check |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWOPS_ROWS[@]}"
  echo
  echo "<details><summary>raw output</summary>"
  echo
  echo '```'
  cat "$LOG"
  echo '```'
  echo "</details>"
} >"$REPORT"

# A device session brings back what is under $OUT.
[[ -n ${OUT:-} && -d ${OUT:-} ]] && cp "$REPORT" "$OUT/"
echo
echo "device-check: wrote $REPORT ($fails failed checks, $((SECONDS))s)"
echo "shape            form path    ours TF/s  cuBLAS TF/s  ratio  check"
for c in "${TIMED[@]}"; do
  read -r m n k f <<<"$c"
  for t in "${TARGETS[@]}"; do
    key="$m,$n,$k,$f,$t"; pk="$m,$n,$k,$f"
    ratio=$(awk -v a="${OURS_TF[$key]:-0}" -v b="${PEER_TF[$pk]:-0}" 'BEGIN{ if (b > 0 && a > 0) printf "%.2f", a / b; else print "-" }')
    printf '%-16s %-4s %-7s %9s  %11s  %5s  %s\n' "${m}x${n}x${k}" "$f" "$t" "${OURS_TF[$key]:--}" "${PEER_TF[$pk]:--}" "$ratio" "${STATUS[$key]:-ERROR}"
  done
done
echo "SASS: $sass"
g=$GPT2_LINE
echo "GPT-2 small step: ours $(field ours_ms "$g") ms, eager $(field eager_ms "$g") ms, compile $(field compile_ms "$g") ms; speed-up vs eager $(field vs_eager "$g"), vs compile $(field vs_compile "$g"); MFU $(field ours_mfu "$g"); $(field status "$g") $(field reason "$g")"
echo "attention (ours/PyTorch flash):"
printf '  %s\n' "${ATTN_SUMMARY[@]}"
echo "memory-bound kernels (fraction of 4.8 TB/s):"
printf '  %s\n' "${ROWOPS_SUMMARY[@]}"
echo
sed -n '/^device-train-check: wrote/,$p' "$TRAIN_TABLE" | grep -q . \
  && sed -n '/^device-train-check: wrote/,$p' "$TRAIN_TABLE" \
  || { echo "training check (no table):"; tail -5 "$TRAIN_TABLE"; }
((fails == 0))
