#!/usr/bin/env bash
# device-train-check.sh - training on the GPU against the CPU, in one call.
#
#   scripts/device-train-check.sh --prepare   # build machine (tgc, ptxas)
#   scripts/device-train-check.sh             # GPU machine (tg-run + driver)
#
# --prepare compiles the MLP and the LeNet (examples/mlp.tg, examples/cnn.tg,
# their default sizes) and a small byte-level GPT (examples/gpt.tg in fp32,
# $TG_GPT_DEFINES: vocab 256, a multiple of 8) with tgc
# --target=sm_80,sm_90a,cpu into $BUILD/device-models, copies Fashion-MNIST
# into $BUILD/device-data when this machine has it, and the repository's
# docs as the GPT's text (device-data/text.u8). On the GPU machine it trains
# each model for one epoch (the MLP whole, the LeNet the first
# $TG_CNN_BATCHES batches, the GPT the first $TG_GPT_BATCHES) with the same
# seed and data on `--device cpu` and `--device cuda`, and checks that the
# GPU reaches the CPU's test accuracy (within $TG_ACC_TOL points; the GPT:
# its mean loss within $TG_LOSS_TOL relative) and that the first line of the
# cuda run names the CUDA device. Every run has its own timeout (what is
# left of the budget), and the table is printed even when runs fail. It writes
# bench/results/train-<gpu>-<date>.md and prints a short table last.
# scripts/device-check.sh runs it first, inside its 8 minutes
# (TG_TRAIN_CHECK_BUDGET_S, default 200 s). Exit status 0 if every check
# passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
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
GPT_BATCHES=${TG_GPT_BATCHES:-100}
LOSS_TOL=${TG_LOSS_TOL:-0.01}
# The fp32 GPT checks the SIMT kernels at full precision; the bf16 GPT-2
# small of scripts/device-check.sh checks the tensor-core path.
MODEL_LIST=${TG_TRAIN_MODELS:-mlp cnn gpt}
# Accuracy on the first N test samples only (empty: all 10,000).
TEST_LIMIT=${TG_TEST_LIMIT:-}
GPT_DEFINES=${TG_GPT_DEFINES:-"-D layers=4 -D d_model=256 -D heads=8 -D seq=128 -D ctx=128 -D vocab=256 -D batch=16 -D accumulate=1"}

if [[ "${1:-}" == "--prepare" ]]; then
  TGC=$BUILD/bin/tgc
  [[ -x $TGC ]] || { echo "device-train-check: error: $TGC not built" >&2; exit 2; }
  mkdir -p "$MODELS"
  for m in $MODEL_LIST; do
    [[ $m == gpt ]] && continue
    "$TGC" "examples/$m.tg" --target=sm_80,sm_90a,cpu -o "$MODELS/$m.tgx" || exit 3
  done
  if [[ " $MODEL_LIST " == *" gpt "* ]]; then
    sed -e 's/precision = bf16/precision = fp32/' examples/gpt.tg >"$MODELS/gpt-small.tg"
    # shellcheck disable=SC2086
    "$TGC" "$MODELS/gpt-small.tg" $GPT_DEFINES --target=sm_80,sm_90a,cpu \
      -o "$MODELS/gpt.tgx" || exit 3
  fi
  mkdir -p "$BUILD/device-data"
  cat docs/*.md README.md >"$BUILD/device-data/text.u8"
  src=${TG_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
  if [[ -f $src/train-images-idx3-ubyte.gz ]]; then
    cp "$src"/*.gz "$BUILD/device-data/"
  fi
  echo "device-train-check: wrote $MODELS/{${MODEL_LIST// /,}}.tgx; carry $BUILD to the GPU machine"
  exit 0
fi

RUN=$BUILD/bin/tg-run
DATA=${TG_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
[[ -f $DATA/train-images-idx3-ubyte.gz ]] || DATA=$BUILD/device-data
TEXT=$BUILD/device-data/text.u8
OUTDIR=${TG_RESULTS_DIR:-$ROOT/bench/results}
mkdir -p "$OUTDIR"
STATE=$(mktemp -d)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
REPORT=$OUTDIR/train-$(tr ' ' '-' <<<"${GPU:-gpu}" | tr -cd 'A-Za-z0-9-')-$(date -u +%Y-%m-%d).md
ROWS=()
fails=0

# One training run; prints "acc loss rate first-line" or "ERROR why".
train() { # model device data-and-extra-args...
  local m=$1 dev=$2; shift 2
  local left=$((DEADLINE - SECONDS))
  ((left < 15)) && { echo "SKIPPED time-budget"; return; }
  local out rc
  out=$(timeout "$left" "$RUN" "$MODELS/$m.tgx" \
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

for m in $MODEL_LIST; do
  extra=(--data fashion-mnist --data-dir "$DATA")
  [[ -n $TEST_LIMIT ]] && extra+=(--test-limit "$TEST_LIMIT")
  [[ $m == cnn ]] && extra+=(--batch-limit "$CNN_BATCHES")
  [[ $m == mlp && -n $MLP_BATCHES ]] && extra+=(--batch-limit "$MLP_BATCHES")
  [[ $m == gpt ]] && extra=(--data "u8:$TEXT" --batch-limit "$GPT_BATCHES")
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
  elif [[ $m == gpt ]]; then # no test split: the losses must agree
    awk -v a="$gloss" -v b="$closs" -v t="$LOSS_TOL" 'BEGIN{ d = a - b; if (d < 0) d = -d; exit !(d <= t * b) }' ||
      check="FAIL: mean loss $gloss vs CPU $closs (more than $LOSS_TOL relative)"
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
  echo "one epoch of Fashion-MNIST (LeNet: the first $CNN_BATCHES batches), seed 1, same data and order on both devices${TEST_LIMIT:+, accuracy on the first $TEST_LIMIT test samples};"
  echo "the GPT (fp32, $GPT_DEFINES) on the repository's docs as bytes, the first $GPT_BATCHES batches (no test split: loss only)."
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
