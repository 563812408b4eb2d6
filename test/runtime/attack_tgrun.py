#!/usr/bin/env python3
"""attack_tgrun.py - a hostile user's inputs and faults against tg-run.

Issue 12's attack on the runtime side, rerunnable: generates bad inputs and
faults, runs tg-run on each with a timeout, and counts
  crashes  - a death by a signal we did not send, a status other than the
             expected ones, or an error that is not one "tg-run: error:" line;
  hangs    - no exit within the timeout;
  silent   - a wrong result without an error: out-of-range labels or token
             ids accepted, a device or an input replaced, a checkpoint lost
             or inconsistent after a kill or Ctrl-C, a short metrics file
             with status 0, temporaries left behind.

  python3 test/runtime/attack_tgrun.py BUILD_DIR [--quick] [--seed N]
  TG_RUN=/other/tg-run python3 test/runtime/attack_tgrun.py BUILD_DIR

Models are compiled with BUILD_DIR/bin/tgc (an MLP with 10 classes and a GPT
with a vocabulary of 100); data is synthetic. docs/hardening.md has the
numbers of a run.
"""
import gzip, json, os, random, signal, struct, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "attack"))
from formats import safetensors  # noqa: E402  (test/attack/formats.py)

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
QUICK = "--quick" in sys.argv
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TGRUN, TGC = os.path.join(BUILD, "bin", "tg-run"), os.path.join(BUILD, "bin", "tgc")
TGRUN = os.environ.get("TG_RUN", TGRUN)  # another tg-run to attack (before/after)
TIMEOUT = 30
# --seed N: another attack of the same kinds (12 is the recorded one).
SEED = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 12
rng = random.Random(SEED)
work = tempfile.mkdtemp(prefix="tgrun-attack-")
stats = {}  # kind -> [runs, crashes, hangs, silent]
examples = []
notes = {}  # what the faults hit, for the record


def note(what):
    notes[what] = notes.get(what, 0) + 1


def path(name):
    return os.path.join(work, name)


def record(kind, crash=False, hang=False, silent=False, why=""):
    s = stats.setdefault(kind, [0, 0, 0, 0])
    s[0] += 1
    s[1] += crash
    s[2] += hang
    s[3] += silent
    if (crash or hang or silent) and len(examples) < 30:
        examples.append(f"{kind}: {why}")


def run(args, timeout=TIMEOUT):
    """(status, stderr); status is -signal if killed, None on a hang."""
    try:
        p = subprocess.run([TGRUN] + args, capture_output=True, timeout=timeout)
        return p.returncode, p.stderr.decode("latin1")
    except subprocess.TimeoutExpired:
        return None, ""


def judge(kind, args, must_fail=False, allow=(0, 1)):
    rc, err = run(args)
    if rc is None:
        return record(kind, hang=True, why=" ".join(args))
    lines = err.splitlines()
    bad_err = rc == 1 and not (len(lines) == 1 and lines[0].startswith("tg-run: error: "))
    if rc not in allow or bad_err:
        return record(kind, crash=True, why=f"status {rc}: {err.strip()[:200]} ({' '.join(args)})")
    if must_fail and rc == 0:
        return record(kind, silent=True, why="accepted: " + " ".join(args))
    record(kind)


# --- models and data ---------------------------------------------------------

def compile_model(out, tg, defines):
    cmd = [TGC, os.path.join(SRC, "examples", tg), "-O1", "-o", out]
    for d in defines:
        cmd += ["-D", d]
    subprocess.run(cmd, check=True)


MLP, GPT = path("mlp.tgx"), path("gpt.tgx")
compile_model(MLP, "mlp.tg", ["batch=16", "hidden=64"])
compile_model(GPT, "gpt.tg", ["layers=1", "d_model=32", "heads=2", "seq=16", "ctx=16",
                              "vocab=100", "batch=2", "accumulate=1"])


def idx(dims, data, type_=0x08):
    return bytes([0, 0, type_, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data


def mutate(b):
    b = bytearray(b)
    how = rng.randrange(4)
    if how == 0 and b:  # flip bytes, mostly in the header
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(min(len(b), 64) if rng.random() < 0.7 else len(b))
            b[i] = rng.randrange(256)
    elif how == 1:  # truncate
        b = b[: rng.randrange(len(b) + 1)]
    elif how == 2:  # append junk
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    else:  # a huge dimension or length field
        if len(b) >= 8:
            i = rng.randrange(0, min(len(b) - 4, 16))
            b[i:i + 4] = struct.pack(">I", rng.choice([0xFFFFFFFF, 4000000000, 1 << 31, 70000]))
    return bytes(b)


N = 64
images = bytes(rng.randrange(256) for _ in range(N * 784))
labels = bytes(rng.randrange(10) for _ in range(N))


def write(p, b, gz=False):
    with (gzip.open(p, "wb") if gz else open(p, "wb")) as f:
        f.write(b)


def idx_labels_ok(raw):
    """The labels of an IDX image if it parses as u8 [n], else None."""
    try:
        if raw[:2] != b"\0\0" or raw[2] != 8 or raw[3] != 1:
            return None
        n = struct.unpack(">I", raw[4:8])[0]
        return raw[8:] if len(raw) == 8 + n else None
    except Exception:
        return None


def attack_idx(count):
    d = path("fm")
    os.makedirs(d, exist_ok=True)
    for i in range(count):
        files = {"train-images-idx3-ubyte.gz": idx([N, 28, 28], images),
                 "train-labels-idx1-ubyte.gz": idx([N], labels),
                 "t10k-images-idx3-ubyte.gz": idx([N, 28, 28], images),
                 "t10k-labels-idx1-ubyte.gz": idx([N], labels)}
        victim = rng.choice(list(files))
        raw = files[victim]
        if "labels" in victim and rng.random() < 0.4:  # valid file, bad labels
            lab = bytearray(labels)
            lab[rng.randrange(N)] = rng.choice([10, 11, 100, 255])
            raw = idx([N], bytes(lab))
        else:
            raw = mutate(raw)
        files[victim] = raw
        gz = rng.random() < 0.7
        for name, b in files.items():
            write(os.path.join(d, name), b, gz)
        lab = idx_labels_ok(raw) if "labels" in victim else None
        bad = lab is not None and max(lab, default=0) >= 10
        judge("IDX files (mutated, huge headers, labels >= classes)",
              [MLP, "--data", "fashion-mnist", "--data-dir", d, "--batch-limit", "2"],
              must_fail=bad)


def attack_tokens(count):
    for i in range(count):
        width = rng.choice([1, 2, 4])
        n = rng.randint(0, 400)
        top = rng.choice([100, 101, 256, 65536, 1 << 32]) if rng.random() < 0.7 else 100
        toks = [rng.randrange(min(top, 1 << (8 * width))) for _ in range(n)]
        fmt = {1: "B", 2: "H", 4: "I"}[width]
        raw = struct.pack("<%d%s" % (n, fmt), *toks)
        if rng.random() < 0.15:
            raw = raw[: max(0, len(raw) - 1)]  # not a whole number of tokens
        p = path("tok.bin")
        write(p, raw)
        whole = len(raw) % width == 0
        bad = whole and any(t >= 100 for t in toks)
        judge("token files (u8/u16/u32, ids >= vocabulary)",
              [GPT, "--data", "u%d:%s" % (8 * width, p), "--batch-limit", "2"], must_fail=bad)


def label_values(bad):
    vals = [rng.randrange(10) for _ in range(16)]
    if bad:
        vals[rng.randrange(16)] = rng.choice([10, 11, -1, -2, 1 << 31, 1 << 40, -(1 << 62)])
    elif rng.random() < 0.3:
        vals[rng.randrange(16)] = -100  # cross_entropy's ignore_index
    return vals


def attack_safetensors(count):
    for i in range(count):
        bad = rng.random() < 0.5
        rows = 16 if rng.random() < 0.5 else 48
        vals = (label_values(bad) * 3)[:rows]
        dt = rng.choice(["I64", "I32"])
        if dt == "I32":
            vals = [max(-(1 << 31), min((1 << 31) - 1, v)) for v in vals]
        lab = struct.pack("<%d%s" % (rows, "q" if dt == "I64" else "i"), *vals)
        img = struct.pack("<%df" % (rows * 784), *([0.5] * rows * 784))
        raw = safetensors({"images": ("F32", [rows, 784], img), "labels": (dt, [rows], lab)})
        corrupt = rng.random() < 0.3
        if corrupt:
            raw = mutate(raw)
        p = path("batch.safetensors")
        write(p, raw)
        must = bad and not corrupt and any(not (0 <= v < 10 or v == -100) for v in vals)
        if rows == 16 and rng.random() < 0.5:
            judge("safetensors batches (--batch, labels outside [0, 10))",
                  [MLP, "--batch", p, "--steps", "1"], must_fail=must)
        else:
            judge("safetensors data (--data, labels outside [0, 10))",
                  [MLP, "--data", p, "--batch-limit", "2"], must_fail=must)


def good_data(name, rows=32):
    """A fresh, valid training set (an attack may have overwritten the last)."""
    p = path(name)
    write(p, safetensors({
        "images": ("F32", [rows, 784], struct.pack("<%df" % (rows * 784), *([0.25] * rows * 784))),
        "labels": ("I64", [rows], struct.pack("<%dq" % rows, *[i % 10 for i in range(rows)]))}))
    return p


def attack_outputs(count):
    data = good_data("good.safetensors")
    batch = good_data("good16.safetensors", 16)
    fifo = path("fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    os.makedirs(path("adir"), exist_ok=True)
    # Our own device nodes: a tg-run that replaces devices (as root) must
    # never get the system's /dev/null.
    devices = own_devices()
    link = path("link-to-null")
    if devices and not os.path.lexists(link):
        os.symlink(devices[0], link)
    targets = devices + ([link] if devices else []) + [
        fifo, path("adir"), path("missing/dir/out"), MLP, data]
    model_bytes = open(MLP, "rb").read()
    for i in range(count):
        devices = own_devices()
        if devices and not os.path.islink(link):
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(devices[0], link)
        good_data("good.safetensors")
        good_data("good16.safetensors", 16)
        if open(MLP, "rb").read() != model_bytes:
            write(MLP, model_bytes)
        target = rng.choice(targets)
        flag = rng.choice(["--save", "--metrics", "--save-params", "--save-grads"])
        if flag in ("--save", "--metrics"):
            args = [MLP, "--data", data, flag, target]
        else:
            # In cross-check mode the batch is the input to protect.
            target = batch if target == data else target
            args = [MLP, "--batch", batch, flag, target]
        rc, err = run(args)
        kind = "outputs (devices, FIFO, folder, symlink, missing dir, inputs)"
        if rc is None:
            record(kind, hang=True, why=" ".join(args))
            continue
        replaced = (any(not _is_dev(d) for d in devices) or
                    (devices and not os.path.islink(link)) or
                    open(MLP, "rb").read() != model_bytes or
                    checkpoint_step(data) is not None or checkpoint_step(batch) is not None or
                    not os.path.isdir(path("adir")) or not _is_fifo(fifo))
        one = len(err.splitlines()) == 1 and err.startswith("tg-run: error: ")
        if rc != 1 or not one:
            record(kind, crash=rc not in (0, 1), silent=rc == 0,
                   why=f"status {rc} {err.strip()[:120]} ({' '.join(args)})")
        elif replaced:
            record(kind, silent=True, why="replaced " + target)
        else:
            record(kind)


def _is_dev(p):
    import stat
    return os.path.exists(p) and stat.S_ISCHR(os.lstat(p).st_mode)


def own_devices():
    """null, full and zero device nodes in the work folder (root only);
    recreated if a run replaced one."""
    out = []
    for name, minor in (("null", 3), ("full", 7), ("zero", 5)):
        p = path("dev-" + name)
        if os.path.lexists(p) and not _is_dev(p):
            os.unlink(p)
        if not os.path.lexists(p):
            try:
                os.mknod(p, 0o666 | __import__("stat").S_IFCHR, os.makedev(1, minor))
            except OSError:
                return []
        out.append(p)
    return out


def _is_fifo(p):
    import stat
    return stat.S_ISFIFO(os.lstat(p).st_mode)


def checkpoint_step(p):
    """The step counter of a checkpoint, or None if it does not parse."""
    try:
        b = open(p, "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        h = json.loads(b[8:8 + n])
        s, e = h["step"]["data_offsets"]
        end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
        if len(b) != 8 + n + end:
            return None
        return struct.unpack("<q", b[8 + n + s:8 + n + e])[0]
    except Exception:
        return None


def temporaries(d):
    return [f for f in os.listdir(d) if ".tmp." in f]


def attack_kills(count, sig, double=False):
    d = path("kill")
    os.makedirs(d, exist_ok=True)
    data = good_data("kill.safetensors")
    ckpt = os.path.join(d, "c.safetensors")
    kind = {signal.SIGKILL: "kill -9 during training and saves",
            signal.SIGINT: "Ctrl-C (SIGINT) mid-training",
            signal.SIGTERM: "SIGTERM mid-training"}[sig] + (" (twice)" if double else "")
    for i in range(count):
        args = [TGRUN, MLP, "--data", data, "--epochs", "1000000", "--save", ckpt]
        resumed = os.path.exists(ckpt) and checkpoint_step(ckpt) is not None
        if resumed:
            args += ["--resume", ckpt]
        before = checkpoint_step(ckpt) if resumed else None
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.05, 0.6))
        p.send_signal(sig)
        if double:
            time.sleep(rng.uniform(0, 0.01))
            p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            record(kind, hang=True, why="no exit after the signal")
            continue
        err = err.decode("latin1")
        rc = p.returncode
        step = checkpoint_step(ckpt) if os.path.exists(ckpt) else None
        if sig == signal.SIGKILL:
            ok_rc = rc == -signal.SIGKILL
            lost = before is not None and step is None
            # The next save sweeps what the kill left.
            left = temporaries(d)
            if left:
                note("kill -9 runs that left a temporary (swept by the next save)")
            subprocess.run([TGRUN, MLP, "--data", data, "--batch-limit", "1", "--save", ckpt] +
                           (["--resume", ckpt] if step is not None else []),
                           capture_output=True, timeout=TIMEOUT)
            stale = temporaries(d)
            if not ok_rc:
                record(kind, crash=True, why=f"status {rc}")
            elif lost or stale:
                record(kind, silent=True, why=f"lost={lost} stale={stale} (before sweep {left})")
            else:
                record(kind)
            continue
        expect = 128 + sig
        if double and rc == -sig:
            rc = expect
        line = [l for l in err.splitlines() if l.startswith("tg-run: interrupted")]
        if rc != expect or (not double and len(line) != 1):
            record(kind, crash=True, why=f"status {rc}: {err.strip()[:160]}")
            continue
        stale = temporaries(d)
        wrong = False
        if line and "checkpoint saved" in line[0]:
            counter = int(line[0].split("(step counter ")[1].split(")")[0])
            wrong = step != counter
        if (before is not None and step is None) or stale or wrong:
            record(kind, silent=True, why=f"step {step} line {line} stale {stale}")
        else:
            record(kind)


def attack_full_disk(count):
    d = path("small")
    os.makedirs(d, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", d],
                      capture_output=True).returncode != 0:
        print("full disk: cannot mount a small tmpfs here (needs root); skipped")
        return
    try:
        data = good_data("disk.safetensors")
        for i in range(count):
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))
            # Fill most of the disk first, leaving a random amount free.
            free = rng.choice([0, 100, 1000, 3000, 10000, rng.randrange(900 * 1024)])
            with open(os.path.join(d, "filler"), "wb") as f:
                try:
                    f.write(b"x" * (1024 * 1024 - free))
                except OSError:
                    pass
            epochs = str(rng.randint(1, 40))
            csv, ckpt = os.path.join(d, "m.csv"), os.path.join(d, "c.safetensors")
            args = [MLP, "--data", data, "--epochs", epochs, "--metrics", csv]
            if rng.random() < 0.5:
                args += ["--save", ckpt]
            rc, err = run(args)
            kind = "full disk (--metrics, --save on a 1 MB tmpfs)"
            if rc is None:
                record(kind, hang=True)
            elif rc not in (0, 1) or (rc == 1 and not err.startswith("tg-run: error: cannot write")):
                record(kind, crash=True, why=f"status {rc} {err.strip()[:120]}")
            elif rc == 1:
                note("full-disk runs that reported a write error")
            if rc == 0:
                rows = open(csv).read().count("\nepoch,")
                good = rows == int(epochs) and ("--save" not in args or checkpoint_step(ckpt) is not None)
                record(kind, silent=not good, why=f"rc 0 but {rows} epoch rows of {epochs}")
            elif rc != 1:
                pass
            elif temporaries(d):
                record(kind, silent=True, why=f"temporaries left: {temporaries(d)}")
            else:
                record(kind)
    finally:
        subprocess.run(["umount", d])


def attack_args(count):
    words = ["--data", "--epochs", "--save", "--seed", "--steps", "--batch", "--load",
             "--metrics", "--describe", "--memory", "--print-loss", "--batch-limit", "-x",
             "--", "-1", "0", "99999999999999999999", "-9223372036854775809", "", "u16:",
             "safetensors:", "fashion-mnist", "--data-dir", "--resume", "=", "--steps=",
             "--seed=-1", MLP, "x" * 5000] + own_devices()
    for i in range(count):
        own_devices()
        args = [rng.choice(words) for _ in range(rng.randint(0, 6))]
        if rng.random() < 0.7:
            args = [MLP] + args
        judge("command lines (random options and values)", args, allow=(0, 1))


n = 40 if QUICK else 1
start = time.time()
attack_idx(200 // n)
attack_tokens(200 // n)
attack_safetensors(250 // n)
attack_outputs(120 // n)
attack_args(150 // n)
attack_kills(60 // n, signal.SIGKILL)
attack_kills(60 // n, signal.SIGINT)
attack_kills(20 // n, signal.SIGINT, double=True)
attack_kills(20 // n, signal.SIGTERM)
attack_full_disk(40 // n)

total = [sum(v[i] for v in stats.values()) for i in range(4)]
print(f"{'kind':<62} {'runs':>5} {'crash':>5} {'hang':>5} {'silent':>6}")
for kind, v in stats.items():
    print(f"{kind:<62} {v[0]:>5} {v[1]:>5} {v[2]:>5} {v[3]:>6}")
print(f"{'total':<62} {total[0]:>5} {total[1]:>5} {total[2]:>5} {total[3]:>6}")
print(f"({time.time() - start:.0f} s; machine: {os.uname().nodename}, {os.cpu_count()} CPUs)")
for what, k in notes.items():
    print(f"{what}: {k}")
for e in examples:
    print("  " + e)
subprocess.run(["rm", "-rf", work])
sys.exit(1 if total[1] or total[2] or total[3] else 0)
