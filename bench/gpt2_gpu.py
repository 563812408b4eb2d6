#!/usr/bin/env python3
"""GPT-2 training steps, tgc against PyTorch in the same run (issue 16).

    python3 bench/gpt2_gpu.py --tgx GPT.tgx --bin BUILD/bin --defines "-D k=v ..."
        [--device cuda] [--steps 20] [--text FILE] [--tol 0.02]
        [--peak-tflops 989.4] [--json OUT.json]

GPT.tgx is examples/gpt.tg compiled by tgc with `schedule = constant` (so
both frameworks use the same learning rate from the first step; the
example's cosine warm-up has no PyTorch spelling without a scheduler) and
the -D values given in --defines (the same string is used here to build the
PyTorch peer: bench/torch_peers.py's GPT, the example written again).

1. Ours: `tg-run --steps 0 --seed 1 --save-params` writes tgc's initial
   parameters; `tg-run --load --batch --steps N --print-loss --print-time
   --memory --device D` trains N steps on one batch (tokens of a text,
   the same batch every step) and prints every loss, the steady-state time
   per step (steps 2..N, from the first loss to the last) and the planned
   next to the measured memory.
2. The peer: the same parameters (loaded from that file), the same batch and
   optimizer (AdamW with the train block's hyper-parameters, clipping 1.0),
   bf16 autocast on the device, `scaled_dot_product_attention` and the fused
   AdamW where PyTorch has them; eager, then `torch.compile` (PyTorch 2 only).
   Each: the losses, the median step time of steps 2..N (synchronised),
   `torch.cuda.max_memory_allocated`, and the time to the end of the first
   step (compile time for torch.compile).
3. Reported: losses agree (max relative difference over the steps, ours vs
   eager, at most --tol), step time, tokens/s and MFU (model FLOPs
   6 N + 12 L T d per token, N the non-embedding parameters plus the tied
   head, over --peak-tflops, the H200's dense bf16 peak by default) for each,
   and the ratios ours / peer. The last line is `gpt2 key=value ...` for
   scripts/device-check.sh; --json writes everything.

On a machine without CUDA it runs too (--device cpu or emulator for ours,
PyTorch on the CPU in fp32 autocast-free, no compile), and without PyTorch
ours alone runs and the line says status=SKIPPED: the plumbing check of the
test suite (lit-tests/runtime/device-check-fake.test).
"""
import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:  # ours runs without PyTorch; the peer is then SKIPPED
    import torch
except ImportError:
    torch = None

# examples/gpt.tg's defaults (GPT-2 small); --defines overrides them.
GPT2 = dict(vocab=50257, ctx=1024, d_model=768, layers=12, heads=12,
            batch=8, seq=1024)


def parse_defines(text):
    vals = re.findall(r"-D\s*(\w+)=(\d+)", text)
    return {k: int(v) for k, v in vals}


def make_batch(path, batch, seq, vocab, text_path):
    """The bytes of a text as token ids (targets: the next byte), written as
    an I64 safetensors file; returns the two [batch, seq] id lists."""
    data = open(text_path, "rb").read() if text_path else b""
    n = batch * seq + 1
    if len(data) < n:  # repeat a short text
        data = (data or bytes(range(256))) * (n // max(1, len(data) or 256) + 1)
    ids = [c % vocab for c in data[:n]]
    tokens, targets = ids[:-1], ids[1:]
    header, blob = {}, b""
    for name, vals in (("tokens", tokens), ("targets", targets)):
        raw = struct.pack(f"<{len(vals)}q", *vals)
        header[name] = {"dtype": "I64", "shape": [batch, seq],
                        "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + blob)
    return tokens, targets


def run(cmd, timeout):
    p = subprocess.run(cmd, text=True, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed: "
                           f"{msg[-1] if msg else 'exit ' + str(p.returncode)}")
    return p.stdout + p.stderr


def ours(args, tmp, batch_path):
    tgrun = os.path.join(args.bin, "tg-run")
    init = os.path.join(tmp, "init.safetensors")
    t0 = time.time()
    run([tgrun, args.tgx, "--device", args.device, "--batch", batch_path,
         "--steps", "0", "--seed", "1", "--save-params", init], args.timeout)
    t_init = time.time() - t0
    t0 = time.time()
    out = run([tgrun, args.tgx, "--device", args.device, "--load", init,
               "--batch", batch_path, "--steps", str(args.steps),
               "--print-loss", "--print-time", "--memory"], args.timeout)
    wall = time.time() - t0
    losses = [float(x) for x in re.findall(r"^step \d+ loss (\S+)", out, re.M)]
    m = re.search(r"time: steps 2-\d+ in \S+ s, (\S+) ms/step", out)
    mem = re.search(r"^memory: .*", out, re.M)
    dev = re.search(r"device: planned (\d+) .*measured (\d+)", out)
    first = out.splitlines()[0] if out else ""
    return dict(losses=losses, step_ms=float(m.group(1)) if m else None,
                init_s=t_init, run_s=wall, first_line=first,
                memory_line=mem.group(0) if mem else "",
                device_planned=int(dev.group(1)) if dev else None,
                device_measured=int(dev.group(2)) if dev else None), init


def peer(hyper, init, batch, steps, device, compiled):
    import torch_peers
    from precision_vs_torch import read_safetensors, torch_name
    torch_peers.SDPA = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    net, _, _, _ = torch_peers.build("gpt", {k: v for k, v in hyper.items()
                                             if k in torch_peers.DEFAULTS["gpt"]})
    own = dict(net.named_parameters())
    with torch.no_grad():
        for name, value in read_safetensors(init).items():
            pt, transpose = torch_name(name)
            own[pt].copy_(value.t() if transpose else value)
    net = net.to(device)
    cuda = device.type == "cuda"
    opt = dict(lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    try:
        optimizer = torch.optim.AdamW(net.parameters(), fused=cuda,
                                      foreach=not cuda, **opt)
    except TypeError:  # a PyTorch without fused AdamW
        optimizer = torch.optim.AdamW(net.parameters(), foreach=True, **opt)
    model = net
    if compiled:
        if not hasattr(torch, "compile"):
            return None
        model = torch.compile(net)
    tokens, targets = (torch.tensor(t, dtype=torch.int64).reshape(
        hyper["batch"], hyper["seq"]).to(device) for t in batch)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    losses, times = [], []
    t_start = time.time()
    first_s = None
    for _ in range(steps):
        t0 = time.time()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            loss = model(tokens, targets)
        loss.float().backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())  # a sync, as ours reads every loss
        sync()
        times.append(time.time() - t0)
        if first_s is None:
            first_s = time.time() - t_start
    peak = torch.cuda.max_memory_allocated() if cuda else None
    return dict(losses=losses,
                step_ms=1e3 * statistics.median(times[1:]) if steps > 1 else None,
                first_step_s=first_s, peak_bytes=peak)


def model_flops_per_token(h):
    d, L, T, V = h["d_model"], h["layers"], h["seq"], h["vocab"]
    n = L * 12 * d * d + V * d  # blocks' matmul weights + the tied head
    return 6 * n + 12 * L * T * d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgx", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--defines", default="")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--text", default="")
    ap.add_argument("--tol", type=float, default=0.02)
    ap.add_argument("--peak-tflops", type=float, default=989.4)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    hyper = dict(GPT2)
    hyper.update(parse_defines(args.defines))
    tdev = None if torch is None else torch.device(
        "cuda" if args.device == "cuda" and torch.cuda.is_available() else "cpu")
    tokens = hyper["batch"] * hyper["seq"]
    fpt = model_flops_per_token(hyper)
    version = torch.__version__ if torch is not None else "-"
    res = dict(hyper=hyper, device=args.device, torch=version,
               torch_device=str(tdev), steps=args.steps)
    status, reasons = "PASS", []
    with tempfile.TemporaryDirectory() as tmp:
        bpath = os.path.join(tmp, "batch.safetensors")
        batch = make_batch(bpath, hyper["batch"], hyper["seq"], hyper["vocab"],
                           args.text)
        try:
            res["ours"], init = ours(args, tmp, bpath)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"gpt2 status=FAIL reason={str(e).replace(' ', '_')[:200]}")
            return 1
        for name, compiled in (("eager", False), ("compile", True)):
            if torch is None or (compiled and args.no_compile):
                continue
            try:
                r = peer(hyper, init, batch, args.steps, tdev, compiled)
            except Exception as e:  # the peer's own failure is reported, not fatal
                r = dict(error=f"{type(e).__name__}: {e}"[:300])
            res[name] = r
    o, e = res["ours"], res.get("eager") or {}
    if len(o["losses"]) != args.steps:
        status = "FAIL"
        reasons.append(f"ours printed {len(o['losses'])} of {args.steps} losses")
    if torch is None:
        status = "SKIPPED" if status == "PASS" else status
        reasons.append("no PyTorch here: ours only")
    elif e.get("losses") and o["losses"]:
        rel = max(abs(a - b) / abs(b) for a, b in zip(o["losses"], e["losses"]))
        res["max_rel_loss_diff"] = rel
        if rel > args.tol:
            status = "FAIL"
            reasons.append(f"losses differ by {rel:.3g} relative (> {args.tol})")
    else:
        status = "FAIL" if status == "PASS" else status
        reasons.append("no eager losses: " + e.get("error", "?"))

    def rate(ms):
        return None if not ms else tokens / (ms / 1e3)

    def mfu(ms):
        return None if not ms else fpt * tokens / (ms / 1e3) / (args.peak_tflops * 1e12)

    for k in ("ours", "eager", "compile"):
        r = res.get(k)
        if r and r.get("step_ms"):
            r["tokens_per_s"], r["mfu"] = rate(r["step_ms"]), mfu(r["step_ms"])
    res["status"], res["reasons"] = status, reasons
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)

    def fmt(v, spec):
        return "-" if v is None else format(v, spec)

    c = res.get("compile") or {}
    kv = dict(
        torch=version, ours_ms=fmt(o.get("step_ms"), ".2f"), eager_ms=fmt(e.get("step_ms"), ".2f"),
        compile_ms=fmt(c.get("step_ms"), ".2f"),
        vs_eager=fmt(e["step_ms"] / o["step_ms"] if e.get("step_ms") and o.get("step_ms") else None, ".2f"),
        vs_compile=fmt(c["step_ms"] / o["step_ms"] if c.get("step_ms") and o.get("step_ms") else None, ".2f"),
        ours_tok_s=fmt(o.get("tokens_per_s"), ".0f"), ours_mfu=fmt(o.get("mfu"), ".3f"),
        eager_mfu=fmt(e.get("mfu"), ".3f"), compile_mfu=fmt(c.get("mfu"), ".3f"),
        ours_mem=fmt(o.get("device_measured"), "d"), ours_plan=fmt(o.get("device_planned"), "d"),
        eager_mem=fmt(e.get("peak_bytes"), "d"), compile_mem=fmt(c.get("peak_bytes"), "d"),
        compile_s=fmt(c.get("first_step_s"), ".1f"),
        loss_diff=fmt(res.get("max_rel_loss_diff"), ".2e"),
        status=status)
    if reasons:
        kv["reason"] = ";".join(reasons).replace(" ", "_")[:300]
    print("gpt2 " + " ".join(f"{k}={v}" for k, v in kv.items()))
    return 0 if status in ("PASS", "SKIPPED") else 1


if __name__ == "__main__":
    sys.exit(main())
