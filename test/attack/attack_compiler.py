#!/usr/bin/env python3
"""attack_compiler.py - a hostile user's inputs against tgc, tg-eval and
the artifacts tg-run loads.

Issue 12's fresh attack on the compiler side, rerunnable and seeded. It
generates
  - mutated .tg model files (byte flips, token deletions, duplications and
    swaps, truncations, huge numbers, deep nesting, unicode, random -D
    overrides) from examples/ and lit-tests/frontend/, run through
    `tgc --emit=tg|train`, `--report=params|memory` and, for a few hundred,
    a full `-O0 -o x.tgx` compile;
  - bad IR for tg-eval: mutated lit inputs and `tgc --emit` outputs, dynamic
    and overflowing shapes, huge loops, unknown ops;
  - corrupt and mismatched artifacts for tg-run: manifests swapped between
    two compiled models, manifests edited (shapes, dtypes, entries, arena)
    with valid checksums, sections dropped, swapped or truncated, bytes
    flipped without fixing the checksums;
and runs each with a timeout, at most JOBS at a time. Each run is one of
  error  - a non-zero status with a diagnostic ("error:" on its first line);
  ok     - status 0;
  crash  - a signal, a sanitizer report, an assertion, an LLVM stack dump,
           an uncaught exception, another status, or an error without
           "error:";
  slow   - no exit within the timeout, but within six times it (counted
           apart, judged no further);
  hang   - no exit within six times the timeout;
  silent - status 0 where the input must be refused (an artifact whose
           manifest disagrees with its code, a file that is not the model).

  python3 test/attack/attack_compiler.py BUILD_DIR [--seed N] [--scale F]
      [--jobs N] [--timeout S] [--check]
  TGC=... TG_EVAL=... TG_RUN=... override the tools (e.g. an ASan build).

--scale 0.02 is the small sample ctest runs (--check: exit 1 on any crash,
hang or silent result). docs/hardening.md has the numbers of a full run.
"""
import concurrent.futures as cf
import json, os, random, re, shutil, struct, subprocess, sys, tempfile, time, zlib

from formats import safetensors  # test/attack/formats.py, beside this file

args = sys.argv[1:]


def opt(name, default):
    if name in args:
        return type(default)(args[args.index(name) + 1])
    return default


BUILD = args[0] if args and not args[0].startswith("--") else "build"
SEED, SCALE = opt("--seed", 12), opt("--scale", 1.0)
JOBS, TIMEOUT = opt("--jobs", 2), opt("--timeout", 10.0)
CHECK = "--check" in args
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(BUILD)
TGC, TG_EVAL, TG_RUN = (os.path.abspath(os.environ.get(v.upper().replace("-", "_"),
                                                       os.path.join(BUILD, "bin", v)))
                        for v in ("tgc", "tg-eval", "tg-run"))
rng = random.Random(SEED)
work = tempfile.mkdtemp(prefix="tgc-attack-")
CRASH_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "Assertion",
               "Stack dump", "PLEASE submit", "terminate called", "UNREACHABLE",
               "Segmentation fault", "libc++abi", "std::bad_alloc")


def n(count):
    return max(1, int(count * SCALE))


def path(name):
    return os.path.join(work, name)


def write(p, data):
    with open(p, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return p


# --- running and judging -----------------------------------------------------

cases = []  # (kind, argv, must_fail)


def case(kind, argv, must_fail=False):
    cases.append((kind, argv, must_fail))


def judge(c):
    kind, argv, must_fail = c
    t0 = time.time()
    try:
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=TIMEOUT, cwd=work)
    except subprocess.TimeoutExpired:
        # Slow is not hung (a loaded machine, a big but bounded job): a
        # second run gets six times as long before it counts as a hang.
        try:
            p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=6 * TIMEOUT, cwd=work)
        except subprocess.TimeoutExpired:
            return kind, "hang", argv, "", time.time() - t0
        return kind, "slow", argv, p.stderr.decode("latin1"), time.time() - t0
    err = p.stderr.decode("latin1")
    first = err.lstrip().splitlines()[0] if err.strip() else ""
    if p.returncode < 0 or any(m in err for m in CRASH_MARKS):
        outcome = "crash"
    elif p.returncode == 0:
        outcome = "silent" if must_fail else "ok"
    elif p.returncode == 1 and "error:" in first:
        outcome = "error"
    else:
        outcome = "crash"
    return kind, outcome, argv, err, time.time() - t0


# --- .tg model files ----------------------------------------------------------

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*|\d+(?:\.\d+)?(?:e-?\d+)?|\S", re.S)
HUGE = ["0", "-1", "2147483648", "4294967296", "9223372036854775807",
        "9223372036854775808", "18446744073709551616", "1" + "0" * 40, "1e308",
        "1e-320", "nan", "3000000000", "65536"]
UNICODE = ["é", "→", "😀", "\u202e", "\u00a0", "\ufeff", "\x00", "\x7f", "α", "\udcff"]


def tg_sources():
    srcs = []
    for d in ("examples", "lit-tests/frontend"):
        for f in sorted(os.listdir(os.path.join(SRC, d))):
            if f.endswith(".tg"):
                srcs.append(open(os.path.join(SRC, d, f), encoding="utf-8").read())
    return srcs


def hypers(text):
    m = re.search(r"model\s+\w+\s*\(([^)]*)\)", text)
    return re.findall(r"(\w+)\s*=", m.group(1)) if m else []


def mutate_tg(text, chains=True):
    how = rng.choice(["flip", "delete", "duplicate", "swap", "truncate", "huge",
                      "nest", "unicode"] + ["chain"] * chains)
    toks = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
    if how == "flip":
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 6)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        return how, bytes(b)
    if how in ("delete", "duplicate", "swap") and len(toks) > 2:
        out = text
        for _ in range(rng.randint(1, 3)):
            toks = [(m.start(), m.end()) for m in TOKEN.finditer(out)]
            i, j = sorted(rng.sample(range(len(toks)), 2))
            (a, b), (c, d) = toks[i], toks[j]
            if how == "delete":
                out = out[:a] + out[b:]
            elif how == "duplicate":
                out = out[:b] + " " + out[a:b] + out[b:]
            else:
                out = out[:a] + out[c:d] + out[b:c] + out[a:b] + out[d:]
        return how, out
    if how == "truncate":
        return how, text[: rng.randrange(len(text) + 1)]
    if how == "huge":
        nums = [m for m in re.finditer(r"\b\d+(\.\d+)?\b", text)]
        if nums:
            m = rng.choice(nums)
            return how, text[: m.start()] + rng.choice(HUGE) + text[m.end():]
    if how == "nest":
        # An expression nested thousands deep: parentheses, calls or blocks.
        depth = rng.choice([100, 1000, 5000, 20000])
        lines = text.splitlines()
        at = [i for i, l in enumerate(lines) if re.match(r"\s+\w+\s*=", l)]
        if at:
            i = rng.choice(at)
            name, expr = lines[i].split("=", 1)
            form = rng.choice(["(", "relu(", "-", "{"])
            if form == "-":
                lines[i] = name + "= " + "-" * depth + "(" + expr + ")"
            else:
                close = ")" if form != "{" else "}"
                lines[i] = name + "= " + form * depth + expr + close * depth
            return how, "\n".join(lines) + "\n"
    if how == "chain":
        # A long chain of elementwise ops (class 2's compile-time scaling).
        lines = text.splitlines()
        at = [i for i, l in enumerate(lines) if re.match(r"\s+(\w+)\s*=", l)]
        if at:
            i = rng.choice(at)
            v = re.match(r"\s+(\w+)", lines[i]).group(1)
            k = rng.choice([50, 300, 2000])
            lines[i + 1:i + 1] = ["  %s = relu(%s)" % (v, v)] * k
            return how, "\n".join(lines) + "\n"
    s = rng.randrange(len(text) + 1)
    return "unicode", text[:s] + rng.choice(UNICODE) * rng.randint(1, 3) + text[s:]


def random_define(names):
    name = rng.choice(names + ["nope", "", "=", "a b", "x" * 300]) if names else "nope"
    value = rng.choice(HUGE + ["abc", "", "1.5", "-7", "0x10", "1_000", "true", "'s'",
                               "é", str(rng.randint(1, 64))])
    return ["-D", "%s=%s" % (name, value)] if rng.random() < 0.9 else ["-D", name]


# Small enough that a full compile takes seconds, not a minute.
SMALL = {"mlp.tg": ["-D", "batch=4", "-D", "hidden=16"],
         "gpt.tg": ["-D", "layers=1", "-D", "d_model=16", "-D", "heads=2", "-D", "seq=8",
                    "-D", "ctx=8", "-D", "vocab=50", "-D", "batch=2", "-D", "accumulate=1"],
         "cnn.tg": ["-D", "batch=2"]}


def gen_tg(count, full):
    srcs = tg_sources()
    examples = {f: open(os.path.join(SRC, "examples", f)).read() for f in SMALL}
    for i in range(count):
        if i < full:  # a full compile of a mutated small model
            f = rng.choice(["mlp.tg", "mlp.tg", "cnn.tg"])
            # No op chains here: their compile time is class 2's (LLVM at
            # -O0 on hundreds of chained ops), measured by bench/, not here.
            how, text = mutate_tg(examples[f], chains=False)
            defs = list(SMALL[f])
            mode = ["-O0", "-o", path("m%d.tgx" % i)]
        else:
            text = rng.choice(srcs)
            how, text = mutate_tg(text) if rng.random() < 0.85 else ("defines", text)
            defs = []
            big = "bert" in str(text[:200]) or "d_model" in str(text[:2000])
            mode = rng.choice([["--emit=tg"], ["--emit=tg"], ["--emit=train"],
                               ["--report=params"], ["--report=memory"],
                               ["--report=memory", "--format=json"],
                               ["--memory-budget=1MiB", "--report=memory"]])
            if big and "--report=memory" in mode:  # bert's plan takes minutes
                mode = ["--emit=tg"]
        for _ in range(rng.choice([0, 0, 0, 1, 2, 3]) if how != "defines" else rng.randint(1, 4)):
            defs += random_define(hypers(text if isinstance(text, str) else ""))
        p = write(path("m%d.tg" % i), text)
        case("tg: " + ("full -o" if i < full else mode[0].split("=")[0]) + " (" + how + ")",
             [TGC, p] + defs + mode)


# --- IR for tg-eval ----------------------------------------------------------

SHAPES = ["?", "0", "9223372036854775807", "4294967296", "2147483648", "100000000"]


def ir_sources():
    srcs = []
    for d in ("lit-tests/reference", "lit-tests/passes", "lit-tests/dialects"):
        for f in sorted(os.listdir(os.path.join(SRC, d))):
            if f.endswith(".mlir"):
                text = open(os.path.join(SRC, d, f)).read()
                srcs += [s for s in text.split("// -----") if "func.func" in s]
    for f, defs in SMALL.items():
        for emit in ("tg", "train"):
            p = subprocess.run([TGC, os.path.join(SRC, "examples", f), "--emit=" + emit] + defs,
                               capture_output=True, text=True)
            if p.returncode == 0:
                srcs.append(p.stdout)
    return srcs


def mutate_ir(text):
    how = rng.choice(["shape", "shape", "number", "delete", "swap", "truncate", "flip",
                      "loop", "op", "dense"])
    if how == "shape":
        dims = list(re.finditer(r"(?<=[<x])(\d+)(?=x)", text))
        if dims:
            m = rng.choice(dims)
            return how, text[: m.start()] + rng.choice(SHAPES) + text[m.end():]
    if how == "number":
        nums = list(re.finditer(r"(?<![%\w])-?\d+(\.\d+)?(e[+-]?\d+)?", text))
        if nums:
            m = rng.choice(nums)
            return how, text[: m.start()] + rng.choice(HUGE + ["-9223372036854775808"]) + text[m.end():]
    if how in ("delete", "swap"):
        lines = text.splitlines()
        body = [i for i, l in enumerate(lines) if "=" in l or "return" in l]
        if len(body) >= 2:
            i, j = rng.sample(body, 2)
            if how == "delete":
                del lines[i]
            else:
                lines[i], lines[j] = lines[j], lines[i]
            return how, "\n".join(lines)
    if how == "truncate":
        return how, text[: rng.randrange(len(text) + 1)]
    if how == "loop":
        ub = rng.choice(["9223372036854775807", "1000000000000", "4294967296", "-1", "0"])
        step = rng.choice(["1", "1", "0", "-1"])
        return how, ("func.func @forward() -> tensor<f32> {\n"
                     "  %c0 = arith.constant 0 : index\n"
                     "  %ub = arith.constant " + ub + " : index\n"
                     "  %s = arith.constant " + step + " : index\n"
                     "  %z = tg.constant dense<0.0> : tensor<f32>\n"
                     "  %r = scf.for %i = %c0 to %ub step %s iter_args(%a = %z) -> tensor<f32> {\n"
                     "    scf.yield %a : tensor<f32>\n  }\n  return %r : tensor<f32>\n}\n")
    if how == "op":
        ops = list(re.finditer(r"\btg\.(\w+)", text))
        if ops:
            m = rng.choice(ops)
            new = rng.choice(["add", "matmul", "relu", "sum", "reshape", "transpose",
                              "bogus", "constant", "softmax", "gather", "conv2d"])
            return how, text[: m.start()] + "tg." + new + text[m.end():]
    if how == "dense":
        shape = "x".join(rng.choice(SHAPES[1:] + ["3", "1"]) for _ in range(rng.randint(1, 3)))
        return how, ("func.func @forward() -> tensor<%sxf32> {\n"
                     "  %%a = tg.constant dense<1.0> : tensor<%sxf32>\n"
                     "  %%r = tg.%s %%a, %%a : tensor<%sxf32>, tensor<%sxf32> -> tensor<%sxf32>\n"
                     "  return %%r : tensor<%sxf32>\n}\n"
                     % (shape, shape, rng.choice(["add", "mul"]), shape, shape, shape, shape))
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    return "flip", bytes(b)


def gen_ir(count):
    srcs = ir_sources()
    for i in range(count):
        how, text = mutate_ir(rng.choice(srcs))
        p = write(path("e%d.mlir" % i), text)
        extra = rng.choice([[], [], ["--f64"], ["--init"], ["--steps", "3", "--init"],
                            ["--func=train_step"], ["--func=eval"], ["--seed", "18446744073709551615"],
                            ["--int-max", "0"], ["--int-max", "-5"], ["--show", "0"],
                            ["--max-steps", "1"]])
        case("tg-eval (" + how + ")", [TG_EVAL, p] + extra)


# --- artifacts for tg-run -----------------------------------------------------

def tgx_read(raw):
    count = struct.unpack_from("<I", raw, 8)[0]
    secs = []
    for k in range(count):
        e = raw[32 + 64 * k: 96 + 64 * k]
        name = e[:40].rstrip(b"\0").decode()
        off, size = struct.unpack_from("<QQ", e, 40)
        secs.append((name, raw[off:off + size]))
    return secs


def tgx_write(secs):
    """A well-formed .tgx (valid CRCs) holding secs, as docs/artifact.md says."""
    off = 32 + 64 * len(secs)
    off = (off + 63) // 64 * 64
    table, body, pos = b"", b"", off
    for name, data in secs:
        table += name.encode().ljust(40, b"\0") + struct.pack("<QQII", pos, len(data),
                                                              zlib.crc32(data), 0)
        pad = (len(data) + 63) // 64 * 64 - len(data)
        body += data + b"\0" * pad
        pos += len(data) + pad
    head = table.ljust(off - 32, b"\0")
    size = 32 + len(head) + len(body)
    hdr = b"TGX1" + struct.pack("<IIIQQ", 1, len(secs), 0, size, 0)
    raw = bytearray(hdr + head + body)
    struct.pack_into("<I", raw, 12, zlib.crc32(bytes(raw)))
    return bytes(raw)


def compile_model(name, tg, defs):
    out = path(name)
    subprocess.run([TGC, os.path.join(SRC, "examples", tg), "-O1", "-o", out] + defs, check=True)
    return dict(tgx_read(open(out, "rb").read()))


def edit_manifest(m):
    """A manifest that disagrees with the code: (what, manifest)."""
    m = json.loads(json.dumps(m))
    entries = m["entries"]
    name = rng.choice(sorted(entries))
    e = entries[name]
    how = rng.choice(["shape", "dtype", "drop-entry", "drop-arg", "dup-arg", "arena",
                      "rename-entry", "swap-args", "role", "inplace"])
    lists = [l for l in (e.get("args", []), e.get("results", [])) if l]
    if how == "shape" and lists:
        a = rng.choice(rng.choice(lists))
        if a.get("shape"):
            i = rng.randrange(len(a["shape"]))
            a["shape"][i] = rng.choice([0, 1, a["shape"][i] + 1, a["shape"][i] * 2, 1 << 31, 1 << 40])
        else:
            a["shape"] = [rng.choice([2, 1 << 20])]
    elif how == "dtype" and lists:
        a = rng.choice(rng.choice(lists))
        a["dtype"] = rng.choice([d for d in ("f32", "f16", "bf16", "i64", "i32", "f64", "u8")
                                 if d != a.get("dtype")])
    elif how == "drop-entry":
        del entries[name]
    elif how == "drop-arg" and lists:
        l = rng.choice(lists)
        l.pop(rng.randrange(len(l)))
    elif how == "dup-arg" and lists:
        l = rng.choice(lists)
        l.append(json.loads(json.dumps(rng.choice(l))))
    elif how == "arena":
        e["arena_bytes"] = rng.choice([0, 1, 1 << 40, 1 << 62, e.get("arena_bytes", 64) // 2])
    elif how == "rename-entry":
        entries[rng.choice(["train", "evaluate", "init2", name + "_x"])] = entries.pop(name)
    elif how == "swap-args" and lists and len(lists[0]) >= 2:
        l = lists[0]
        i, j = rng.sample(range(len(l)), 2)
        if l[i].get("shape") == l[j].get("shape") and l[i].get("dtype") == l[j].get("dtype"):
            how = "swap-args (same type)"
        l[i], l[j] = l[j], l[i]
    elif how == "role" and lists:
        a = rng.choice(rng.choice(lists))
        a["role"] = rng.choice(["param", "input", "grad", "output", "loss", "state", "x"])
    else:
        how = "inplace"
        e["inplace"] = not e.get("inplace", False)
    return how, m


def run_argv(tgx, model):
    data = DATA[model]
    return rng.choice([
        [TG_RUN, tgx, "--describe"],
        [TG_RUN, tgx] + data + ["--batch-limit", "2"],
        [TG_RUN, tgx] + data + ["--batch-limit", "1", "--epochs", "1"]])


def gen_artifacts(count):
    mlp = compile_model("mlp.tgx", "mlp.tg", ["-D", "batch=16", "-D", "hidden=32"])
    mlp2 = compile_model("mlp2.tgx", "mlp.tg", ["-D", "batch=16", "-D", "hidden=48"])
    models = {"mlp": mlp, "mlp2": mlp2}
    if SCALE >= 0.5:  # a GPT takes half a minute to compile: not in the sample
        models["gpt"] = compile_model("gpt.tgx", "gpt.tg", SMALL["gpt.tg"])
    for name, secs in models.items():  # the unmodified artifacts must train
        case("artifacts: unmodified", run_argv(write(path(name + ".ok.tgx"), tgx_write(
            list(secs.items()))), name))
    for i in range(count):
        model = rng.choice(sorted(models))
        secs = dict(models[model])
        man = json.loads(secs["manifest"])
        how = rng.choice(["swap-manifest", "swap-manifest", "edit-manifest", "edit-manifest",
                          "edit-manifest", "sections", "flip"])
        must_fail = True
        if how == "swap-manifest":
            other = rng.choice([m for m in models if m != model])
            secs["manifest"] = models[other]["manifest"]
            what = "%s code, %s manifest" % (model, other)
        elif how == "edit-manifest":
            what, edited = edit_manifest(man)
            secs["manifest"] = json.dumps(edited).encode()
            same = what == "arena" and all(  # absent and 0 are the same arena
                e.get("arena_bytes", 0) == edited["entries"][k].get("arena_bytes", 0)
                for k, e in man["entries"].items())
            must_fail = edited != man and not same and not what.startswith(
                ("swap-args (same type)", "inplace", "role"))
        elif how == "sections":
            what = rng.choice(["drop cpu.so", "swap cpu.so", "truncate cpu.so",
                               "empty cpu.so", "drop manifest", "extra section", "gpu junk"])
            if what == "drop cpu.so":
                del secs["cpu.so"]
            elif what == "swap cpu.so":
                secs["cpu.so"] = models[rng.choice([m for m in models if m != model])]["cpu.so"]
            elif what == "truncate cpu.so":
                secs["cpu.so"] = secs["cpu.so"][: rng.randrange(len(secs["cpu.so"]))]
            elif what == "empty cpu.so":
                secs["cpu.so"] = b""
            elif what == "drop manifest":
                del secs["manifest"]
            elif what == "extra section":
                secs["junk%d" % i] = os.urandom(rng.randrange(1000))
                must_fail = False
            else:
                secs["gpu.fatbin"] = os.urandom(rng.randrange(1, 4000))
                must_fail = False
        raw = tgx_write(list(secs.items()))
        if how == "flip":  # checksums left as they were: the reader must notice
            b = bytearray(raw)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            raw, what = bytes(b), "bytes flipped"
        p = write(path("a%d.tgx" % i), raw)
        argv = run_argv(p, model)
        # --describe only reads the manifest: a swapped one is not an error there.
        case("artifacts (%s: %s)" % (how, what), argv,
             must_fail and "--describe" not in argv)


def data_files():
    rows = 32
    img = struct.pack("<%df" % (rows * 784), *([0.25] * rows * 784))
    lab = struct.pack("<%dq" % rows, *[i % 10 for i in range(rows)])
    mnist = write(path("data.safetensors"), safetensors({"images": ("F32", [rows, 784], img),
                                                "labels": ("I64", [rows], lab)}))
    toks = write(path("tokens.bin"), struct.pack("<400H", *[rng.randrange(50) for _ in range(400)]))
    return {"mlp": ["--data", "safetensors:" + mnist], "mlp2": ["--data", "safetensors:" + mnist],
            "gpt": ["--data", "u16:" + toks]}


# --- main ---------------------------------------------------------------------

def main():
    global DATA
    t0 = time.time()
    DATA = data_files()
    gen_artifacts(n(900))
    gen_ir(n(600))
    gen_tg(n(1100), n(200))
    rng.shuffle(cases)
    stats, examples = {}, []
    with cf.ThreadPoolExecutor(JOBS) as pool:
        for kind, outcome, argv, err, dt in pool.map(judge, cases):
            group = kind.split(" (")[0]
            s = stats.setdefault(group, {})
            s[outcome] = s.get(outcome, 0) + 1
            s["max_s"] = max(s.get("max_s", 0), dt)
            if outcome in ("crash", "hang", "silent", "slow"):
                keep = path("kept")
                os.makedirs(keep, exist_ok=True)
                copies = []
                for a in argv[1:]:
                    if a.startswith(work) and os.path.isfile(a):
                        copies.append(shutil.copy(a, keep))
                examples.append("%s %s: %s\n    %s" % (outcome, kind, " ".join(argv),
                                                       err.strip()[-600:].replace("\n", "\n    ")))
                print(examples[-1], file=sys.stderr, flush=True)
            done = sum(sum(v for k, v in g.items() if k != "max_s") for g in stats.values())
            if done % 100 == 0:  # progress, so that a stopped run still tells something
                print("%d/%d %s" % (done, len(cases), json.dumps(stats)), file=sys.stderr, flush=True)
    print("seed %d, scale %g, %d runs, %.0f s, timeout %g s, %d jobs" %
          (SEED, SCALE, len(cases), time.time() - t0, TIMEOUT, JOBS))
    print("| kind | runs | error | ok | crash | hang | silent | slow | slowest |")
    print("|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for group in sorted(stats):
        s = stats[group]
        runs = sum(v for k, v in s.items() if k != "max_s")
        print("| %s | %d | %d | %d | %d | %d | %d | %d | %.1f s |" % (
            group, runs, s.get("error", 0), s.get("ok", 0), s.get("crash", 0),
            s.get("hang", 0), s.get("silent", 0), s.get("slow", 0), s["max_s"]))
        bad += s.get("crash", 0) + s.get("hang", 0) + s.get("silent", 0)
    for e in examples[:40]:
        print(e)
    if examples:
        print("inputs kept in", path("kept"))
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if CHECK and bad else 0


if __name__ == "__main__":
    sys.exit(main())
