#!/usr/bin/python3
"""bf16 mixed precision, tgc against PyTorch's CPU autocast (issue 13).

    /usr/bin/python3 bench/precision_vs_torch.py BUILD [steps=N] [cnn_epochs=E]

1. Loss curves. The MLP (examples/mlp.tg) and a tiny GPT (examples/gpt.tg
   with -D overrides, 2 layers) are compiled by tgc at precision = fp32 and
   bf16 with `schedule = constant` (PyTorch's AdamW has no schedule). Both
   frameworks start from the same parameters (tgc's init(seed 1), written by
   `tg-run --steps 0 --save-params`) and train N steps on the same batch
   (written here as safetensors): tgc with `tg-run --load --batch --steps N
   --print-loss`, PyTorch 1.13 (Debian's python3-torch) with the peers of
   bench/torch_peers.py in fp32 and under
   `torch.autocast("cpu", dtype=torch.bfloat16)`, AdamW (foreach) and
   clip_grad_norm_ as in the train block. Reported per model: the maximum
   over the steps of |loss_tgc - loss_torch| / |loss_torch|, for fp32 against
   fp32 (how closely the two implementations agree at all) and bf16 against
   bf16, and each framework's own bf16 against its fp32.
2. Accuracy. examples/cnn.tg on Fashion-MNIST at fp32 and bf16 after E
   epochs (tg-run --data fashion-mnist --seed 1): test accuracy.

Writes bench/results/precision-vs-torch-<date>.md and prints it.
"""
import datetime
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import torch_peers  # noqa: E402  (the PyTorch peers of the examples)

DTYPES = {"F32": (torch.float32, 4), "I64": (torch.int64, 8)}

# Tiny GPT: bytes of a text (vocab 256), 2 layers of width 64.
GPT = dict(vocab=256, ctx=64, d_model=64, layers=2, heads=4, batch=4, seq=32)
MLP = dict(batch=64, pixels=784, hidden=256, classes=10)


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        kind = {torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": kind, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        dtype, _ = DTYPES[h["dtype"]]
        a, b = h["data_offsets"]
        buf = bytearray(raw[8 + n + a:8 + n + b])
        out[name] = torch.frombuffer(buf, dtype=dtype).reshape(h["shape"]).clone()
    return out


def torch_name(name):
    """tgc's parameter name -> (the peer's name, transposed?). tgc stores a
    linear weight as [in, out] (GPT-2's Conv1D), torch.nn.Linear [out, in]."""
    for tg, pt in (("attn.c_attn", "c_attn"), ("attn.c_proj", "attn_proj"),
                   ("mlp.c_fc", "c_fc"), ("mlp.c_proj", "mlp_proj")):
        name = name.replace(tg, pt)
    if name in ("wte.weight", "wpe.weight"):
        return name.split(".")[0], False
    linear = name.endswith(".weight") and not re.search(r"ln_\w+\.weight$", name)
    return name, linear


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def tg_source(model, precision, tmp):
    src = open(os.path.join(ROOT, "examples", model + ".tg")).read()
    src = re.sub(r"schedule = .*", "schedule = constant", src)
    src = re.sub(r"precision = \w+", "precision = " + precision, src)
    path = os.path.join(tmp, f"{model}-{precision}.tg")
    open(path, "w").write(src)
    return path


def tgc_losses(bin_dir, model, hyper, precision, init, batch, steps, tmp):
    src = tg_source(model, precision, tmp)
    tgx = src[:-3] + ".tgx"
    defines = [a for k, v in hyper.items() for a in ("-D", f"{k}={v}")]
    if model == "gpt":
        defines += ["-D", "accumulate=1"]
    run([os.path.join(bin_dir, "tgc"), src, *defines, "-o", tgx])
    if not os.path.exists(init):
        run([os.path.join(bin_dir, "tg-run"), tgx, "--batch", batch,
             "--steps", "0", "--seed", "1", "--save-params", init])
    out = run([os.path.join(bin_dir, "tg-run"), tgx, "--load", init,
               "--batch", batch, "--steps", str(steps), "--print-loss"])
    return [float(m) for m in re.findall(r"^step \d+ loss (\S+)", out, re.M)]


def torch_losses(model, hyper, params, batch, steps, bf16):
    net, _, _, _ = torch_peers.build("gpt" if model == "gpt" else "mlp",
                                     {k: v for k, v in hyper.items()})
    own = dict(net.named_parameters())
    with torch.no_grad():
        for name, value in params.items():
            pt, transpose = torch_name(name)
            own[pt].copy_(value.t() if transpose else value)
    if model == "gpt":
        opt = dict(lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    else:
        opt = dict(lr=1e-3, weight_decay=0.01)
    optimizer = torch.optim.AdamW(net.parameters(), foreach=True, **opt)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = net(*batch)
        loss.float().backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


def max_rel(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def make_batch(model, path):
    g = torch.Generator().manual_seed(1)
    if model == "mlp":
        b = (torch.rand(MLP["batch"], MLP["pixels"], generator=g),
             torch.randint(0, MLP["classes"], (MLP["batch"],), generator=g))
        write_safetensors(path, {"images": b[0], "labels": b[1]})
    else:
        text = open("/usr/share/common-licenses/GPL-3", "rb").read()
        n = GPT["batch"] * GPT["seq"]
        tok = torch.tensor(list(text[:n + 1]), dtype=torch.int64)
        b = (tok[:n].reshape(GPT["batch"], GPT["seq"]),
             tok[1:n + 1].reshape(GPT["batch"], GPT["seq"]))
        write_safetensors(path, {"tokens": b[0], "targets": b[1]})
    return b


def cnn_accuracy(bin_dir, precision, epochs, tmp):
    src = open(os.path.join(ROOT, "examples", "cnn.tg")).read()
    src = re.sub(r"precision = \w+", "precision = " + precision, src)
    if "precision =" not in src:
        src = src.replace("train {", "train {\n  precision = " + precision, 1)
    path = os.path.join(tmp, f"cnn-{precision}.tg")
    open(path, "w").write(src)
    run([os.path.join(bin_dir, "tgc"), path, "-o", path + "x"])
    t0 = time.time()
    out = run([os.path.join(bin_dir, "tg-run"), path + "x", "--data",
               "fashion-mnist", "--epochs", str(epochs), "--seed", "1"])
    acc = re.findall(r"test accuracy ([\d.]+)%", out)
    return float(acc[-1]), time.time() - t0


def main(argv):
    build = argv[1] if len(argv) > 1 and "=" not in argv[1] else "build"
    opts = dict(a.split("=", 1) for a in argv[1:] if "=" in a)
    steps = int(opts.get("steps", 50))
    cnn_epochs = int(opts.get("cnn_epochs", 1))
    bin_dir = os.path.join(ROOT, build, "bin")
    torch.set_num_threads(2)
    rows, curves = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for model, hyper in (("mlp", MLP), ("gpt", GPT)):
            batch_path = os.path.join(tmp, model + "-batch.safetensors")
            init = os.path.join(tmp, model + "-init.safetensors")
            batch = make_batch(model, batch_path)
            tg = {p: tgc_losses(bin_dir, model, hyper, p, init, batch_path,
                                steps, tmp) for p in ("fp32", "bf16")}
            params = read_safetensors(init)
            pt = {p: torch_losses(model, hyper, params, batch, steps,
                                  p == "bf16") for p in ("fp32", "bf16")}
            curves[model] = (tg, pt)
            rows.append((model, max_rel(tg["fp32"], pt["fp32"]),
                         max_rel(tg["bf16"], pt["bf16"]),
                         max_rel(tg["bf16"], tg["fp32"]),
                         max_rel(pt["bf16"], pt["fp32"])))
        # The curves are written before the (long) CNN runs, then again with
        # the accuracies.
        report(build, steps, cnn_epochs, rows, curves, {})
        cnn = {p: cnn_accuracy(bin_dir, p, cnn_epochs, tmp)
               for p in ("fp32", "bf16")} if cnn_epochs else {}
    print(report(build, steps, cnn_epochs, rows, curves, cnn), end="")


def report(build, steps, cnn_epochs, rows, curves, cnn):
    """Writes bench/results/precision-vs-torch-<date>.md; returns its text."""
    date = datetime.datetime.utcnow().strftime("%Y-%m-%d")
    lines = [f"# bf16 mixed precision: tgc against PyTorch {torch.__version__} "
             f"CPU autocast ({date})", "",
             f"- command: `/usr/bin/python3 bench/precision_vs_torch.py "
             f"{build} steps={steps} cnn_epochs={cnn_epochs}`",
             f"- machine: {os.uname().machine}, {os.cpu_count()} cores, "
             "shared with other engineers' builds (no timings are compared)",
             f"- models: examples/mlp.tg ({MLP}), examples/gpt.tg with "
             f"{GPT}, accumulate = 1; schedule = constant in both; same "
             "initial parameters (tgc init, seed 1) and the same batch every step",
             "", "## Loss curves: maximum relative loss difference over "
             f"{steps} steps", "",
             "| model | tgc fp32 vs torch fp32 | tgc bf16 vs torch autocast bf16 "
             "| tgc bf16 vs tgc fp32 | torch bf16 vs torch fp32 |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]:.2e} | {r[2]:.2e} | {r[3]:.2e} | {r[4]:.2e} |")
    for model, (tg, pt) in curves.items():
        lines += ["", f"### {model}: losses every {max(1, steps // 10)} steps", "",
                  "| step | tgc fp32 | torch fp32 | tgc bf16 | torch bf16 |",
                  "|---:|---:|---:|---:|---:|"]
        for i in sorted(set(range(0, steps, max(1, steps // 10))) | {steps - 1}):
            lines.append(f"| {i + 1} | {tg['fp32'][i]:.6f} | {pt['fp32'][i]:.6f} "
                         f"| {tg['bf16'][i]:.6f} | {pt['bf16'][i]:.6f} |")
    if cnn:
        lines += ["", f"## examples/cnn.tg on Fashion-MNIST, {cnn_epochs} "
                  "epoch(s), seed 1 (CPU backend)", "",
                  "| precision | test accuracy | seconds (loaded machine) |",
                  "|---|---:|---:|"]
        for p, (acc, secs) in cnn.items():
            lines.append(f"| {p} | {acc:.2f}% | {secs:.0f} |")
        lines.append(f"\nbf16 - fp32: {cnn['bf16'][0] - cnn['fp32'][0]:+.2f} points")
    text = "\n".join(lines) + "\n"
    out = os.path.join(HERE, "results", f"precision-vs-torch-{date}.md")
    open(out, "w").write(text)
    return text


if __name__ == "__main__":
    main(sys.argv)
