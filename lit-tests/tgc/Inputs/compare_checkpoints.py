#!/usr/bin/env python3
"""Compares two training runs by their checkpoints and metrics.

    compare_checkpoints.py REF.safetensors CAND.safetensors
        [--metrics REF.csv CAND.csv] [--rtol R] [--atol A]

Every tensor of the candidate checkpoint must have the reference's name,
dtype and size and agree within |cand - ref| <= atol + rtol * |ref|; with
--metrics, so must every step's loss in the two CSVs (tg-run --metrics).
Prints one line per check; exits 1 on the first failure.
"""
import argparse
import csv
import sys

from compare_devices import read_safetensors


def agree(what, ref, cand, rtol, atol):
    if len(ref) != len(cand):
        sys.exit(f"FAIL {what}: {len(cand)} values vs {len(ref)}")
    worst = 0.0
    for r, c in zip(ref, cand):
        if abs(c - r) > atol + rtol * abs(r):
            sys.exit(f"FAIL {what}: {c} vs {r}")
        worst = max(worst, abs(c - r))
    return worst


def step_losses(path):
    return [float(row["loss"]) for row in csv.DictReader(open(path))
            if row["kind"] == "step"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ref")
    p.add_argument("cand")
    p.add_argument("--metrics", nargs=2)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    a = p.parse_args()
    ref, cand = read_safetensors(a.ref), read_safetensors(a.cand)
    if sorted(ref) != sorted(cand):
        sys.exit(f"FAIL names: {sorted(cand)} vs {sorted(ref)}")
    worst = 0.0
    for name in sorted(ref):
        if ref[name][0] != cand[name][0]:
            sys.exit(f"FAIL {name}: {cand[name][0]} vs {ref[name][0]}")
        worst = max(worst, agree(name, ref[name][1], cand[name][1], a.rtol, a.atol))
    print(f"checkpoint: {len(ref)} tensors agree (largest difference {worst:.3g})")
    if a.metrics:
        lr, lc = step_losses(a.metrics[0]), step_losses(a.metrics[1])
        worst = agree("losses", lr, lc, a.rtol, a.atol)
        print(f"metrics: {len(lr)} step losses agree (largest difference {worst:.3g})")


if __name__ == "__main__":
    main()
