#!/usr/bin/env python3
"""Checks that a memory report's category rows add up to its lower bound.

    tgc MODEL --report=memory --format=json | memory_rows.py

The persistent rows (params, optimizer, inputs) are counted whole and the
transient ones (grads, activations, workspace, op scratch) as live at the
schedule's worst moment; the lower bound counts each transient buffer
rounded up to the plan's 256-byte alignment and the persistent region
padded likewise, so the rows fall short of it by less than 256 bytes per
buffer live at that moment (of a loop body: any of its buffers) plus the
persistent region's buffers. Prints
the rows and their sum; exits 1 when they exceed the lower bound or fall
short of it by more than that.
"""
import json
import sys

ROWS = ["params_bytes", "grads_bytes", "optimizer_bytes", "inputs_bytes",
        "activations_bytes", "workspace_bytes", "op_scratch_bytes"]


def main():
    report = json.load(sys.stdin)
    total = sum(report[k] for k in ROWS)
    bound = report["lower_bound_bytes"]
    slack = 256 * sum(1 for b in report["buffers"]
                      if b["at_peak"] or b["persistent"] or b["nested"])
    for k in ROWS:
        print(f"{k} {report[k]}")
    print(f"sum {total} lower_bound {bound} slack {bound - total}")
    if total > bound or bound - total >= slack:
        print(f"memory_rows.py: the rows ({total}) do not add up to the "
              f"lower bound ({bound}, allowed shortfall < {slack})")
        sys.exit(1)
    print("rows add up")


if __name__ == "__main__":
    main()
