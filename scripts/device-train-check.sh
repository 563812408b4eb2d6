#!/usr/bin/env bash
# device-train-check.sh - training on the GPU against the CPU, in one call.
#
#   scripts/device-train-check.sh --prepare   # build machine (tgc, ptxas)
#   scripts/device-train-check.sh             # GPU machine (tg-run + driver)
#
# --prepare compiles the MLP and the LeNet (examples/mlp.tg, examples/cnn.tg,
# their default sizes) with tgc --target=sm_80,sm_90a,cpu into
# $BUILD/device-models and copies Fashion-MNIST into $BUILD/device-data when
# this machine has it. On the GPU machine it trains each model for one
# epoch (the MLP whole, the LeNet the first $TG_CNN_BATCHES batches) with the
# same seed and data on `--device cpu` and `--device cuda`, and checks that
# the GPU reaches the CPU's test accuracy (within $TG_ACC_TOL points) and
# that the first line of the cuda run names the CUDA device. It writes
# bench/results/train-<gpu>-<date>.md and prints a short table last.
# scripts/device-check.sh runs it first, inside its 8 minutes
# (TG_TRAIN_CHECK_BUDGET_S, default 200 s). Exit status 0 if every check
# passed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [[ -n "${BUILD:-}" ]]; then :
elif [[ -x build-gpu/bin/tg-run ]]; then BUILD=build-gpu
else BUILD=build; fi
MODELS=$BUILD/device-models
BUDGET=${TG_TRAIN_CHECK_BUDGET_S:-200}
DEADLINE=$((SECONDS + BUDGET))
CNN_BATCHES=${TG_CNN_BATCHES:-300}
MLP_BATCHES=${TG_MLP_BATCHES:-} # empty: the whole epoch
TOL=${TG_ACC_TOL:-1.0}

if [[ "${1:-}" == "--prepare" ]]; then
  TGC=$BUILD/bin/tgc
  [[ -x $TGC ]] || { echo "device-train-check: error: $TGC not built" >&2; exit 2; }
  mkdir -p "$MODELS"
  for m in mlp cnn; do
    "$TGC" "examples/$m.tg" --target=sm_80,sm_90a,cpu -o "$MODELS/$m.tgx" || exit 3
  done
  src=${TG_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
  if [[ -f $src/train-images-idx3-ubyte.gz ]]; then
    mkdir -p "$BUILD/device-data" && cp "$src"/*.gz "$BUILD/device-data/"
  fi
  echo "device-train-check: wrote $MODELS/{mlp,cnn}.tgx; carry $BUILD to the GPU machine"
  exit 0
fi

RUN=$BUILD/bin/tg-run
DATA=${TG_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
[[ -f $DATA/train-images-idx3-ubyte.gz ]] || DATA=$BUILD/device-data
OUTDIR=$ROOT/bench/results
mkdir -p "$OUTDIR"
STATE=$(mktemp -d)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
REPORT=$OUTDIR/train-$(tr ' ' '-' <<<"${GPU:-gpu}" | tr -cd 'A-Za-z0-9-')-$(date -u +%Y-%m-%d).md
ROWS=()
fails=0

# One training run; prints "acc loss rate first-line" or "ERROR why".
train() { # model device extra-args...
  local m=$1 dev=$2; shift 2
  local left=$((DEADLINE - SECONDS))
  ((left < 15)) && { echo "SKIPPED time-budget"; return; }
  local out rc
  out=$(timeout "$left" "$RUN" "$MODELS/$m.tgx" --data fashion-mnist --data-dir "$DATA" \
        --epochs 1 --seed 1 --device "$dev" --metrics "$STATE/$m-$dev.csv" "$@" 2>&1); rc=$?
  echo "$out" >"$STATE/$m-$dev.log"
  ((rc == 124)) && { echo "ERROR timeout"; return; }
  ((rc != 0)) && { echo "ERROR $(grep -m1 'error' <<<"$out")"; return; }
  local line; line=$(grep -m1 '^epoch 1: mean loss' <<<"$out")
  local acc loss rate
  acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' <<<"$line")
  loss=$(sed -n 's/.*mean loss \([0-9.]*\),.*/\1/p' <<<"$line")
  rate=$(sed -n 's/.* \([0-9.]*\) samples\/s.*/\1/p' <<<"$line")
  echo "${acc:--} ${loss:--} ${rate:--} $(head -1 <<<"$out" | tr ' ' '_')"
}

for m in mlp cnn; do
  extra=()
  [[ $m == cnn ]] && extra=(--batch-limit "$CNN_BATCHES")
  [[ $m == mlp && -n $MLP_BATCHES ]] && extra=(--batch-limit "$MLP_BATCHES")
  if [[ ! -f $MODELS/$m.tgx ]]; then
    ROWS+=("$m|-|-|-|-|-|-|SKIPPED (no $MODELS/$m.tgx: run --prepare)"); continue
  fi
  cres=$(train "$m" cpu "${extra[@]}")
  gres=$(train "$m" cuda "${extra[@]}")
  read -r cacc closs crate _ <<<"$cres"
  read -r gacc gloss grate gfirst <<<"$gres"
  check=PASS
  if [[ $cacc == ERROR || $cacc == SKIPPED ]]; then check="CPU: $cres"; closs=- crate=-
  elif [[ $gacc == ERROR || $gacc == SKIPPED ]]; then check="CUDA: $gres"; gloss=- grate=-
  elif [[ $gfirst != device:_cuda* ]]; then check="FAIL: ran on ${gfirst//_/ }"
  elif ! awk -v a="$gacc" -v b="$cacc" -v t="$TOL" 'BEGIN{ exit !(a + t >= b) }'; then
    check="FAIL: accuracy $gacc% < CPU $cacc% - $TOL"
  fi
  [[ $check == PASS ]] || fails=$((fails + 1))
  ROWS+=("$m|$cacc|$gacc|$closs|$gloss|$crate|$grate|$check")
done

{
  echo "# Training on ${GPU:-the GPU} against the CPU — $(date -u +%Y-%m-%d)"
  echo
  echo "\`scripts/device-train-check.sh\` (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)):"
  echo "one epoch of Fashion-MNIST (LeNet: the first $CNN_BATCHES batches), seed 1, same data and order on both devices."
  echo
  echo "| model | CPU acc % | CUDA acc % | CPU loss | CUDA loss | CPU samples/s | CUDA samples/s | check |"
  echo "|---|---|---|---|---|---|---|---|"
  for r in "${ROWS[@]}"; do echo "| ${r//|/ | } |"; done
  echo
  for f in "$STATE"/*.log; do
    [[ -f $f ]] || continue
    echo "<details><summary>$(basename "$f")</summary>"; echo; echo '```'; tail -20 "$f"; echo '```'; echo "</details>"
  done
} >"$REPORT"
[[ -n ${OUT:-} && -d ${OUT:-} ]] && cp "$REPORT" "$OUT/"

echo "device-train-check: wrote $REPORT ($fails failed checks)"
printf '%-5s %9s %10s %9s %10s %13s %14s  %s\n' model "CPU acc" "CUDA acc" "CPU loss" "CUDA loss" "CPU samples/s" "CUDA samples/s" check
for r in "${ROWS[@]}"; do
  IFS='|' read -r m ca ga cl gl cr gr ck <<<"$r"
  printf '%-5s %9s %10s %9s %10s %13s %14s  %s\n' "$m" "$ca" "$ga" "$cl" "$gl" "$cr" "$gr" "$ck"
done
((fails == 0))
