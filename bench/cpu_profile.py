#!/usr/bin/env python3
"""cpu_profile.py ARTIFACT.tgx PERF.data OUTLINED.mlir - where one tg-run
CPU step spends its time, by kind of loop nest (bench/cpu_profile.sh).

The artifact's cpu.so runs from a memfd, so perf sees addresses only: the
shared object is cut out of the artifact (docs/artifact.md), perf's
per-address sample counts are mapped to its tg_kernel_N symbols, and each
kernel is named from OUTLINED.mlir, the same step through tg-opt's CPU
pipeline printed after tg-outline-kernels (refused unless both hold the
same number of kernels)."""
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "scripts"))
import tgx  # noqa: E402


def cpu_so(path):
    so = tgx.sections(path).get("cpu.so")
    if so is None:
        sys.exit("cpu_profile: error: no cpu.so section in " + path)
    return so


def kind(body):
    """The loop nest's kind, from its outlined function's body."""
    arith = re.findall(r"arith\.\w+", body)
    if body.count("linalg.generic") == 1 and "reduction" in body and \
            sorted(arith) == ["arith.addf", "arith.mulf"]:
        return "contraction (matmul loop nest)"
    if "math.tanh" in body or "math.exp" in body or "math.log" in body:
        return "elementwise with tanh/exp/log"
    if "reduction" in body:
        return "reduction"
    return "elementwise, copy, transpose"


def main():
    tgx, data, outlined = sys.argv[1:4]
    with tempfile.NamedTemporaryFile(suffix=".so") as so:
        so.write(cpu_so(tgx))
        so.flush()
        nm = subprocess.run(["nm", "-n", so.name], capture_output=True,
                            text=True, check=True).stdout
    syms = [(int(l.split()[0], 16), l.split()[2]) for l in nm.splitlines()
            if len(l.split()) == 3 and l.split()[1] in "tT"]
    starts = [a for a, _ in syms]
    ir = open(outlined).read()
    bodies = {}
    for m in re.finditer(r"func\.func private @(tg_kernel_\d+)\((.*?)\)", ir):
        end = ir.index("\n  }\n", m.start())
        bodies[m.group(1)] = (m.group(2), ir[m.start():end])
    in_so = sum(1 for _, s in syms if s.startswith("tg_kernel_"))
    if in_so != len(bodies):
        sys.exit(f"cpu_profile: error: the artifact has {in_so} kernels, "
                 f"{outlined} {len(bodies)}: not the same pipeline")
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children",
                          "--stdio", "--sort", "dso,sym", "-F", "sample,dso,sym"],
                         capture_output=True, text=True, check=True).stdout
    total, by_dso, by_kernel = 0, collections.Counter(), collections.Counter()
    for line in rep.splitlines():
        f = line.split()
        if not f or not f[0].isdigit():
            continue
        n, dso = int(f[0]), f[1]
        total += n
        if dso.startswith("memfd:tgx-cpu.so"):
            i = bisect.bisect_right(starts, int(f[-1], 16)) - 1
            name = syms[i][1] if i >= 0 else "?"
            by_kernel[name] += n
        else:
            by_dso[dso + " " + (f[-1] if dso.startswith("lib") else "")] += n
    by_kind = collections.Counter()
    for name, n in by_kernel.items():
        by_kind[kind(bodies[name][1]) if name in bodies else "step code (" + name + ")"] += n
    pct = lambda n: f"{100 * n / total:5.1f}%"
    print(f"samples: {total}\n\n| where | share |\n|---|---:|")
    for k, n in by_kind.most_common():
        print(f"| {k} | {pct(n)} |")
    for k, n in by_dso.most_common(8):
        print(f"| {k.strip()} | {pct(n)} |")
    print("\n| kernel | share | operands |\n|---|---:|---|")
    for name, n in by_kernel.most_common(12):
        args = re.sub(r"%arg\d+: ", "", bodies.get(name, ("", ""))[0])
        print(f"| {name} ({kind(bodies[name][1]) if name in bodies else '-'}) | {pct(n)} | {args} |")


if __name__ == "__main__":
    main()
