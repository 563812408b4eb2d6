#!/usr/bin/env python3
"""attack_planner.py BUILD [--seed N] [--count N] [--timeout S]

A fresh attack on the memory planner's offset search (issue 12, class 2;
docs/hardening.md): random straight-line op graphs through
`BUILD/bin/tg-opt --tg-plan-memory`, with random alignment, reordering and
in-place reuse, and a check of every plan from the printed IR alone.

The graphs: 1 to 3,000 ops (elementwise, matmul, reductions) over square
shapes of 1 to 96 (bytes not multiples of the alignment), operands drawn
from recent or from any earlier values (long lifetimes), a random subset
returned (live to the end), and some "wide" graphs whose values are all
returned (every buffer live at once: the case the segment-tree index is
for).

A plan is *invalid* when two values with a tg.offset are live at a common
step (from the op that writes one to the last op that reads it, the
return counting as the last step) and their aligned byte ranges overlap,
unless the later one is written by the op that reads the earlier one last
(in-place reuse of a dying operand); when an offset is not aligned; or
when an op's planned bytes differ from its type's. A *crash* is a signal
or an error on valid input; a *hang* no exit within the timeout.
"""
import argparse
import random
import re
import subprocess
import sys
import tempfile
import time


def graph(rng, ops, wide):
    sizes = [1, 3, 8, 16, 33, 64, 96]
    ty = lambda n: f"tensor<{n}x{n}xf32>"
    vals = []  # (name, n for n x n or None, type)
    args = []
    for i, n in enumerate(rng.sample(sizes, 3)):
        args.append(f"%a{i}: {ty(n)} {{tg.role = #tg.role<input>}}")
        vals.append((f"%a{i}", n, ty(n)))
    body = []
    for k in range(ops):
        square = [v for v in vals if v[1]]
        pool = square[-8:] if rng.random() < 0.7 else square
        a = rng.choice(pool)
        b = rng.choice([v for v in square if v[1] == a[1]])
        out, t, kind = f"%v{k}", a[2], rng.randrange(5)
        if kind == 0:
            body.append(f"{out} = tg.add {a[0]}, {b[0]} : {t}, {t} -> {t}")
        elif kind == 1:
            body.append(f"{out} = tg.mul {a[0]}, {b[0]} : {t}, {t} -> {t}")
        elif kind == 2:
            body.append(f"{out} = tg.matmul {a[0]}, {b[0]} : {t}, {t} -> {t}")
        elif kind == 3:
            body.append(f"{out} = tg.tanh {a[0]} : {t}")
        else:
            r = f"tensor<{a[1]}x1xf32>"
            body.append(f"{out} = tg.sum {a[0]} axes = [1] keepdims : {t} -> {r}")
            vals.append((out, None, r))
            continue
        vals.append((out, a[1], t))
    computed = vals[3:]
    rets = computed if wide else rng.sample(
        computed, min(len(computed), rng.randint(1, 6)))
    types = [v[2] for v in rets]
    body.append(f"return {', '.join(v[0] for v in rets)} : {', '.join(types)}")
    return (f"func.func @f({', '.join(args)}) -> ({', '.join(types)}) {{\n  "
            + "\n  ".join(body) + "\n}\n")


OP = re.compile(r"^\s*(%[\w]+) = (\S+) (.*)$")
ATTR = re.compile(r"tg\.(bytes|offset) = (-?\d+) : i64")


def elem_bytes(type_text):
    dims = re.match(r"tensor<((?:\d+x)*)f32>", type_text).group(1)
    n = 1
    for d in filter(None, dims.split("x")):
        n *= int(d)
    return 4 * n


def check(ir, alignment):
    """Problems of the plan in the printed IR (empty list: valid)."""
    lines = ir[ir.index("func.func @f"):].splitlines()[1:]
    ops = []  # (result, operands, offset, bytes, type)
    ret = None
    for l in lines:
        l = l.strip()
        if l.startswith("return"):
            ret = re.findall(r"%[\w]+", l.split(":")[0])
            break
        m = OP.match(l)
        if not m:
            continue
        attrs = dict(ATTR.findall(m.group(3)))
        head = m.group(3).split("{")[0]
        result_type = m.group(3).rsplit(":", 1)[1].split("->")[-1].strip()
        ops.append((m.group(1), re.findall(r"%[\w]+", head),
                    attrs.get("offset"), attrs.get("bytes"), result_type))
    n = len(ops)
    step = {r: i for i, (r, *_) in enumerate(ops)}
    last = {r: i for r, i in step.items()}
    for i, (_, operands, *_) in enumerate(ops):
        for v in operands:
            if v in last:
                last[v] = max(last[v], i)
    for v in ret or []:
        if v in last:
            last[v] = n
    problems = []
    bufs = []
    for r, operands, off, nbytes, rtype in ops:
        if off is None:
            problems.append(f"{r}: no tg.offset")
            continue
        off, nbytes = int(off), int(nbytes)
        if nbytes != elem_bytes(rtype):
            problems.append(f"{r}: tg.bytes {nbytes} for {rtype}")
        if off % alignment:
            problems.append(f"{r}: offset {off} not {alignment}-aligned")
        size = max(nbytes, 1)
        size = (size + alignment - 1) // alignment * alignment
        bufs.append((step[r], last[r], off, off + size, r, set(operands)))
    bufs.sort()
    active = []
    for b in bufs:
        active = [a for a in active if a[1] >= b[0]]
        for a in active:
            if a[2] < b[3] and b[2] < a[3]:
                inplace = a[1] == b[0] and a[4] in b[5]
                if not inplace:
                    problems.append(f"{a[4]} [{a[0]}, {a[1]}] and {b[4]} "
                                    f"[{b[0]}, {b[1]}] overlap at "
                                    f"{max(a[2], b[2])}")
        active.append(b)
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tgopt = f"{a.build}/bin/tg-opt"
    counts = {"ok": 0, "invalid": 0, "crash": 0, "hang": 0}
    worst = (0.0, None)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.count):
            wide = rng.random() < 0.15
            ops = rng.choice([1, 2, 5, 20, 100, 400, 1000, 3000])
            alignment = rng.choice([1, 4, 64, 256, 4096])
            opts = [f"func=f alignment={alignment}"]
            if rng.random() < 0.3:
                opts.append("reorder=false")
            if rng.random() < 0.3:
                opts.append("in-place=false")
            path = f"{tmp}/g{i}.mlir"
            with open(path, "w") as f:
                f.write(graph(rng, ops, wide))
            cmd = [tgopt, path, f"--tg-plan-memory={' '.join(opts)}"]
            start = time.time()
            try:
                r = subprocess.run(cmd, capture_output=True, text=True,
                                   timeout=a.timeout)
            except subprocess.TimeoutExpired:
                counts["hang"] += 1
                print(f"HANG: {' '.join(cmd)}")
                continue
            took = time.time() - start
            worst = max(worst, (took, f"{ops} ops{' wide' if wide else ''}"))
            if r.returncode != 0:
                counts["crash"] += 1
                print(f"CRASH ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
                continue
            problems = check(r.stdout, alignment)
            if problems:
                counts["invalid"] += 1
                print(f"INVALID: {' '.join(cmd)}: {problems[:3]}")
                continue
            counts["ok"] += 1
    print(f"attack_planner: seed {a.seed}, {a.count} graphs: {counts}; "
          f"slowest {worst[0]:.1f} s ({worst[1]})")
    sys.exit(1 if counts["invalid"] or counts["crash"] or counts["hang"] else 0)


if __name__ == "__main__":
    main()
