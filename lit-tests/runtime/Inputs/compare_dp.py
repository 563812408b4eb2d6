#!/usr/bin/env python3
"""Compares a data-parallel run with a single-process one.

    compare_dp.py ONE.txt MANY.txt ONE.safetensors MANY.safetensors [--rel R]
                  [--losses-rel L] [--zero-grad NAME[A:B] --zero-grad-bound X]

The `step I loss L` lines (or, from a --metrics CSV, its `step` rows) must
match in number and each loss within the relative tolerance L (default:
R); every tensor of the two parameter files (or checkpoints) must have the
same name, dtype and shape, and an F32 tensor differ from the
single-process one by at most R times that tensor's largest magnitude (an
elementwise relative bound would fail on entries that cancel to ~0); any
other (a checkpoint's I64 `step`) must be equal.

--zero-grad names elements [A, B) of a tensor whose gradient is zero in
exact arithmetic and whose initial value is zero: computed, their gradient
is rounding noise, which Adam(W) normalises into steps of up to the
learning rate of either sign, so the two runs cannot agree on them. They
are left out of the comparison above and checked instead to stay within X
of zero (the sum of the learning rates of the steps) in both runs.
Prints one line per check; exits 1 on the first failure.
"""
import argparse
import json
import re
import struct
import sys


def losses(path):
    out = [float(m.group(1) or m.group(2)) for m in
           (re.match(r"step \d+ loss (\S+)|step,\d+,\d+,([^,]+),", line)
            for line in open(path)) if m]
    if not out:
        sys.exit(f"compare_dp.py: {path} has no 'step I loss L' lines")
    return out


def tensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        if t["dtype"] != "F32":
            out[name] = (t["shape"], data[base + b:base + e])
            continue
        count = (e - b) // 4
        out[name] = (t["shape"], struct.unpack(f"<{count}f", data[base + b:base + e]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("one")
    ap.add_argument("many")
    ap.add_argument("one_params")
    ap.add_argument("many_params")
    ap.add_argument("--rel", type=float, default=1e-6)
    ap.add_argument("--losses-rel", type=float, default=None)
    ap.add_argument("--zero-grad", action="append", default=[])
    ap.add_argument("--zero-grad-bound", type=float, default=0.0)
    a = ap.parse_args()
    noise = {}  # tensor name -> the element range left out
    for spec in a.zero_grad:
        m = re.fullmatch(r"(.+)\[(\d+):(\d+)\]", spec)
        if not m:
            sys.exit(f"compare_dp.py: --zero-grad {spec!r} is not NAME[A:B]")
        noise[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    loss_rel = a.rel if a.losses_rel is None else a.losses_rel
    la, lb = losses(a.one), losses(a.many)
    if len(la) != len(lb):
        sys.exit(f"FAIL: {len(la)} steps against {len(lb)}")
    for i, (x, y) in enumerate(zip(la, lb)):
        if abs(x - y) > loss_rel * max(abs(x), abs(y)):
            sys.exit(f"FAIL: step {i}: loss {x!r} against {y!r}")
    print(f"losses: {len(la)} steps equal within {loss_rel}", flush=True)
    ta, tb = tensors(a.one_params), tensors(a.many_params)
    if sorted(ta) != sorted(tb):
        sys.exit(f"FAIL: tensors {sorted(ta)} against {sorted(tb)}")
    for name in noise:
        if name not in ta:
            sys.exit(f"FAIL: --zero-grad names {name!r}, not a tensor")
    worst = 0.0
    for name in sorted(ta):
        (sa, va), (sb, vb) = ta[name], tb[name]
        if sa != sb:
            sys.exit(f"FAIL: {name}: shape {sa} against {sb}")
        if isinstance(va, bytes) or isinstance(vb, bytes):
            if va != vb:
                sys.exit(f"FAIL: {name}: not F32 and not equal")
            continue
        if name in noise:
            lo, hi = noise[name]
            big = max(abs(v) for v in va[lo:hi] + vb[lo:hi])
            if big > a.zero_grad_bound:
                sys.exit(f"FAIL: {name}[{lo}:{hi}] (zero gradient) reaches "
                         f"{big:.3g}, beyond {a.zero_grad_bound}")
            print(f"{name}[{lo}:{hi}]: zero gradient, within "
                  f"{a.zero_grad_bound} of zero in both (largest {big:.3g})")
            va, vb = va[:lo] + va[hi:], vb[:lo] + vb[hi:]
        scale = max(abs(v) for v in va) or 1.0
        diff = max(abs(x - y) for x, y in zip(va, vb)) / scale
        worst = max(worst, diff)
        if diff > a.rel:
            sys.exit(f"FAIL: {name}: differs by {diff:.3g} of its largest value")
    print(f"parameters: {len(ta)} tensors equal within {a.rel} (worst {worst:.3g})")


if __name__ == "__main__":
    main()
