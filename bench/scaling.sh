#!/usr/bin/env bash
# bench/scaling.sh BUILD [CHAIN_NS] [PARAM_NS] - compile time and peak memory
# of tgc against the length of the step (issue 12, class 2): `tgc -O0` of a
# chain of N relus (bench/scaling/chain.tg) and `tgc --report=memory` of N
# parameters (bench/scaling/params.tg), each under /usr/bin/time. Prints a
# markdown table and the exponent k of a fit time ~ N^k between the first
# and last N (1 is linear, 2 quadratic).
set -euo pipefail
build=${1:-build}
chain_ns=${2:-"250 500 1000 2000"}
param_ns=${3:-"1000 2000 5000"}
tgc=$build/bin/tgc
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# measure LABEL N ARGS...: one row "| LABEL | N | seconds | MiB |".
measure() {
  local label=$1 n=$2
  shift 2
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$tgc" -D "n=$n" "$@" >/dev/null
  read -r secs kib <"$tmp/time"
  echo "| $label | $n | $secs | $((kib / 1024)) |"
  echo "$n $secs" >>"$tmp/$label"
}

# fit LABEL: the exponent between the first and the last point.
fit() {
  awk -v label="$1" 'NR == 1 { n0 = $1; t0 = $2 } { n1 = $1; t1 = $2 }
    END { if (n1 > n0 && t0 > 0)
            printf "%s: time ~ N^%.2f (from N = %d to %d)\n", label, log(t1 / t0) / log(n1 / n0), n0, n1 }' "$tmp/$1"
}

echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- git: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
echo "| case | N | seconds | peak MiB |"
echo "|---|---:|---:|---:|"
for n in $chain_ns; do
  measure "chain-O0" "$n" -O0 "$here/scaling/chain.tg" -o "$tmp/c.tgx"
done
for n in $param_ns; do
  measure "params-report" "$n" --report=memory "$here/scaling/params.tg"
done
echo
fit chain-O0
fit params-report
