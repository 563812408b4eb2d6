#!/usr/bin/env python3
"""Compares two `tg-run --print-loss --memory` outputs.

    compare_runs.py REFERENCE CANDIDATE [--rel 1e-6] [--budget BYTES]

Checks that both ran the same steps, that every candidate loss equals the
reference's within the relative tolerance, that each run's measured memory
equals its plan (and the compiled code allocated nothing outside the
arena), and that the candidate's measured memory is within --budget.
Prints one line per check; exits 1 on the first failure.
"""
import argparse
import re
import sys

MEM = re.compile(r"memory: planned peak (\d+) .*; measured (\d+) "
                 r"\(persistent \d+, arena (\d+), code heap peak (\d+) in (\d+)")


def parse(path):
    losses, memory = [], None
    for line in open(path):
        m = re.match(r"step (\d+) loss (\S+)", line)
        if m:
            losses.append(float(m.group(2)))
        m = MEM.search(line)
        if m:
            memory = [int(g) for g in m.groups()]
    if not losses or memory is None:
        sys.exit(f"compare_runs.py: {path} has no losses or no memory line")
    return losses, memory


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("candidate")
    ap.add_argument("--rel", type=float, default=1e-6)
    ap.add_argument("--budget", type=int)
    ap.add_argument("--no-ref-memory", action="store_true",
                    help="the reference allocates as it likes (--no-arena)")
    a = ap.parse_args()
    sys.exit(compare(a.reference, a.candidate, a.rel, a.budget,
                     not a.no_ref_memory))


def compare(reference, candidate, rel_tol, budget=None, ref_memory=True):
    """0 if every check passes, else a message."""
    ref, ref_mem = parse(reference)
    got, got_mem = parse(candidate)
    if len(ref) != len(got):
        return f"FAIL: {len(ref)} reference steps, {len(got)} candidate steps"
    for i, (r, g) in enumerate(zip(ref, got)):
        rel = abs(g - r) / max(abs(r), 1e-30)
        print(f"step {i}: {r:.9g} vs {g:.9g} rel {rel:.2e}")
        if rel > rel_tol:
            return f"FAIL: step {i} differs by {rel:.2e} > {rel_tol:g}"
    runs = [("candidate", got_mem)]
    if ref_memory:
        runs.insert(0, ("reference", ref_mem))
    for name, (planned, measured, arena, heap, count) in runs:
        print(f"{name}: planned {planned} measured {measured} heap {heap}")
        if measured != planned or heap != 0 or count != 0:
            return (f"FAIL: {name} measured {measured} bytes ({heap} on the "
                    f"heap in {count} allocations), planned {planned}")
    if budget is not None:
        print(f"budget {budget}: measured {got_mem[1]} "
              f"({100.0 * got_mem[1] / budget:.1f}%)")
        if got_mem[1] > budget:
            return f"FAIL: measured {got_mem[1]} > budget {budget}"
    print("PASS")
    return 0


if __name__ == "__main__":
    main()
