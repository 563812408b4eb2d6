#!/usr/bin/env python3
"""cpu_ratio.py SMALL LARGE LIMIT -- CMD...: runs CMD with every "{n}"
replaced by SMALL, then by LARGE (each best of two runs), and fails unless
CPU time (user + system of the child) grows by at most LIMIT times.

A compile-time scaling check that a loaded CI machine does not upset: CPU
time, not wall time, and a ratio, not an absolute bound. With LARGE = 8 x
SMALL a linear compile grows about 8x and a quadratic one about 64x, so
a LIMIT between them separates the two."""
import resource
import subprocess
import sys


def cpu_seconds(cmd):
    best = None
    for _ in range(2):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        # A regression to quadratic fails here rather than hanging CI.
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=120)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = t if best is None else min(best, t)
    return best


def main():
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.exit("usage: cpu_ratio.py SMALL LARGE LIMIT -- CMD...")
    small, large, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cmd = sys.argv[5:]
    t_small = cpu_seconds([a.replace("{n}", small) for a in cmd])
    t_large = cpu_seconds([a.replace("{n}", large) for a in cmd])
    ratio = t_large / max(t_small, 1e-3)
    print(f"n={small}: {t_small:.2f} s CPU, n={large}: {t_large:.2f} s CPU, "
          f"ratio {ratio:.1f} (limit {limit:g})")
    if ratio > limit:
        print("FAIL: superlinear compile time")
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
