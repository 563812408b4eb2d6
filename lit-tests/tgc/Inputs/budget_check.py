#!/usr/bin/env python3
"""Fits a model into a fraction of its unconstrained peak and checks it.

    budget_check.py FRACTION BATCH.safetensors STEPS -- TGC-ARGS...

Reads the unconstrained plan's peak (tgc --report=memory --format=json),
compiles the model twice (as given, and with --memory-budget FRACTION x
peak), trains both for STEPS steps on the one batch from the same seed, and
checks with compare_runs.compare: equal losses (relative 1e-5), measured
memory equal to the plan in both, and within the budget.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_runs import compare  # noqa: E402


def run(cmd, out=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"budget_check.py: {' '.join(cmd)} failed:\n{r.stdout}")
    if out:
        with open(out, "w") as f:
            f.write(r.stdout)
    return r.stdout


def main():
    sep = sys.argv.index("--")
    fraction, batch, steps = float(sys.argv[1]), sys.argv[2], sys.argv[3]
    tgc = sys.argv[sep + 1:]
    report = json.loads(run(["tgc", *tgc, "--report=memory", "--format=json"]))
    peak = report["peak_bytes"]
    budget = int(fraction * peak)
    print(f"unconstrained peak {peak}, budget {budget} ({fraction:g})")
    with tempfile.TemporaryDirectory() as d:
        outs = []
        for name, extra in (("full", []), ("fit", ["--memory-budget", str(budget)])):
            tgx = os.path.join(d, name + ".tgx")
            note = run(["tgc", *tgc, *extra, "-O0", "-o", tgx]).strip()
            if note:
                print(note)
            out = os.path.join(d, name + ".out")
            run(["tg-run", tgx, "--batch", batch, "--steps", steps,
                 "--print-loss", "--memory", "--seed", "7"], out)
            outs.append(out)
        # Micro-batches sum the gradients in another order (1 ulp), and
        # AdamW turns such differences in near-zero gradient components into
        # update-sized ones: a few steps later the losses differ by ~1e-6
        # relative (2e-6 seen with GPT's f32-inside attention); a wrong
        # accumulation is off by orders of magnitude more.
        sys.exit(compare(outs[0], outs[1], 1e-5, budget))


if __name__ == "__main__":
    main()
