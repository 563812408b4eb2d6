#!/usr/bin/env python3
"""Compares a model's run on two devices (tg-run cross-check outputs).

    compare_devices.py REF CAND [--rtol R] [--atol A] [--losses-only]

REF and CAND are path prefixes: PREFIX.out (tg-run --print-loss output),
PREFIX-grads.safetensors (--save-grads) and PREFIX-params.safetensors
(--save-params). Every loss and every element of every gradient and
parameter must agree within |cand - ref| <= atol + rtol * |ref| (defaults
for f32; bf16/f16 tensors get 2^-7 relative on top). Prints one line per
check with the largest error seen; exits 1 on the first failure.
"""
import argparse
import json
import re
import struct
import sys

FMT = {"F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8), "I32": ("i", 4)}


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        raw = body[lo:hi]
        if t["dtype"] in ("BF16", "F16"):
            half = struct.unpack(f"<{len(raw) // 2}H", raw)
            if t["dtype"] == "BF16":
                vals = [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in half]
            else:
                vals = list(struct.unpack(f"<{len(raw) // 2}e", raw))
        else:
            code, size = FMT[t["dtype"]]
            vals = list(struct.unpack(f"<{len(raw) // size}{code}", raw))
        out[name] = (t["dtype"], vals)
    return out


def losses(path):
    found = [float(m.group(1)) for m in
             (re.match(r"step \d+ loss (\S+)", l) for l in open(path)) if m]
    if not found:
        sys.exit(f"compare_devices.py: {path} has no losses")
    return found


def check(what, ref, cand, rtol, atol):
    worst = 0.0
    for r, c in zip(ref, cand):
        err = abs(c - r) - (atol + rtol * abs(r))
        if err > 0:
            print(f"FAIL {what}: {c} vs {r}")
            sys.exit(1)
        worst = max(worst, abs(c - r))
    return worst


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ref")
    p.add_argument("cand")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--losses-only", action="store_true")
    a = p.parse_args()
    lr, lc = losses(a.ref + ".out"), losses(a.cand + ".out")
    if len(lr) != len(lc):
        sys.exit(f"FAIL losses: {len(lc)} steps vs {len(lr)}")
    print(f"losses: {len(lr)} steps agree (largest difference "
          f"{check('loss', lr, lc, a.rtol, a.atol):.3g})")
    for kind in () if a.losses_only else ("grads", "params"):
        ref = read_safetensors(f"{a.ref}-{kind}.safetensors")
        cand = read_safetensors(f"{a.cand}-{kind}.safetensors")
        if sorted(ref) != sorted(cand):
            sys.exit(f"FAIL {kind}: tensors {sorted(cand)} vs {sorted(ref)}")
        worst = 0.0
        for name, (dtype, values) in ref.items():
            if cand[name][0] != dtype or len(cand[name][1]) != len(values):
                sys.exit(f"FAIL {kind} {name}: dtype or size differs")
            rtol = a.rtol + (2 ** -7 if dtype in ("BF16", "F16") else 0)
            worst = max(worst, check(f"{kind} {name}", values, cand[name][1],
                                     rtol, a.atol))
        print(f"{kind}: {len(ref)} tensors agree (largest difference "
              f"{worst:.3g})")


if __name__ == "__main__":
    main()
