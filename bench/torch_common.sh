# bench/torch_common.sh - sourced by the benchmarks that compare tgc with
# PyTorch on the example models (memory_vs_torch.sh, cpu_speed.sh): sets
# py (Debian's python3 with torch) and tmp (removed on exit), refuses to
# run without torch, and writes $tmp/gpt-fp32.tg, the GPT example in fp32
# without its memory budget (the example trains in bf16 with accumulation;
# the comparisons are fp32, one micro-batch, as issues 14 and 19 measured).
# Usage: source "$here/torch_common.sh" NAME
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -c 'import torch' 2>/dev/null || {
  echo "$1: error: $py has no torch (TGC_SETUP_BENCH=1 scripts/setup.sh)" >&2
  exit 1
}
sed -e 's/precision = bf16/precision = fp32/' -e '/memory_budget/d' \
  "$here/../examples/gpt.tg" >"$tmp/gpt-fp32.tg"
