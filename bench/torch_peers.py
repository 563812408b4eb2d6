"""PyTorch peers of the example models, for benchmarks that compare a TGC
step with the same step in PyTorch eager on the CPU.

    python3 bench/torch_peers.py memory MODEL [KEY=VALUE ...]
    python3 bench/torch_peers.py time MODEL [KEY=VALUE ...] [steps=N]

MODEL is mlp, lenet or gpt: examples/mlp.tg, examples/cnn.tg and
examples/gpt.tg written again in PyTorch, with the same shapes, losses,
optimizer (AdamW, its multi-tensor `foreach` form, PyTorch's fastest on the
CPU), clipping and hyper-parameters (KEY=VALUE overrides them as `tgc -D`
does). Attention is written as matmul, causal mask, softmax and matmul (the
values of the example's fused attention(); Debian's PyTorch 1.13 has no
scaled_dot_product_attention), and fp32 throughout (the examples' CPU
comparison).

memory: one training step after a warm-up step (so AdamW's state exists),
under torch.profiler with profile_memory=True; the allocation timeline's
peak above the start of the step, plus what lives across steps (parameters,
optimizer state, the batch), is the step's peak. Prints one JSON line with
the peak and its parts.

time: the median step time over `steps` steps after warm-up, at the best
thread count of 1..nproc (each tried; `by_threads` has every one). Prints
one JSON line.

torch.compile does not exist in Debian's PyTorch 1.13, so eager is the peer.
"""
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DEFAULTS = {
    "mlp": dict(batch=64, pixels=784, hidden=256, classes=10),
    "lenet": dict(batch=64, classes=10, c1=6, c2=32),
    "gpt": dict(vocab=50257, ctx=1024, d_model=768, layers=12, heads=12,
                batch=8, seq=1024),
}


class MLP(torch.nn.Module):
    def __init__(self, h):
        super().__init__()
        self.fc1 = torch.nn.Linear(h["pixels"], h["hidden"])
        self.fc2 = torch.nn.Linear(h["hidden"], h["classes"])

    def forward(self, images, labels):
        logits = self.fc2(F.relu(self.fc1(images)))
        return F.cross_entropy(logits, labels)


class LeNet(torch.nn.Module):
    def __init__(self, h):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, h["c1"], 5, padding=2)
        self.conv2 = torch.nn.Conv2d(h["c1"], h["c2"], 5)
        self.fc1 = torch.nn.Linear(h["c2"] * 25, 120)
        self.fc2 = torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, h["classes"])

    def forward(self, images, labels):
        x = F.max_pool2d(F.relu(self.conv1(images)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.reshape(x.shape[0], -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.cross_entropy(self.fc3(x), labels)


# Set by GPU benchmarks (bench/gpt2_gpu.py) on PyTorch 2: attention through
# scaled_dot_product_attention (flash), PyTorch's best, instead of the
# matmul-mask-softmax-matmul its 1.13 CPU build needs.
SDPA = False


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(d, eps=1e-5)
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.attn_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d, eps=1e-5)
        self.c_fc = torch.nn.Linear(d, 4 * d)
        self.mlp_proj = torch.nn.Linear(4 * d, d)

    def attention(self, x):
        B, T, D = x.shape
        hd = D // self.heads
        q, k, v = self.c_attn(x).split(D, dim=2)
        q, k, v = (t.reshape(B, T, self.heads, hd).transpose(1, 2)
                   for t in (q, k, v))
        if SDPA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        y = y.transpose(1, 2).reshape(B, T, D)
        return self.attn_proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_proj(h)


class GPT(torch.nn.Module):
    def __init__(self, h):
        super().__init__()
        d = h["d_model"]
        self.wte = torch.nn.Parameter(torch.randn(h["vocab"], d) * 0.02)
        self.wpe = torch.nn.Parameter(torch.randn(h["ctx"], d) * 0.01)
        self.h = torch.nn.ModuleList(
            Block(d, h["heads"]) for _ in range(h["layers"]))
        self.ln_f = torch.nn.LayerNorm(d, eps=1e-5)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.wte[tokens] + self.wpe[:T]
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.t()  # head tied to wte
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


def build(name, overrides):
    h = dict(DEFAULTS[name])
    for key, value in overrides.items():
        if key not in h:
            sys.exit(f"torch_peers: error: {name} has no hyper-parameter "
                     f"'{key}' (has {', '.join(h)})")
        h[key] = int(value)
    torch.manual_seed(0)
    if name == "mlp":
        model = MLP(h)
        batch = (torch.rand(h["batch"], h["pixels"]),
                 torch.randint(0, h["classes"], (h["batch"],)))
        opt = dict(lr=1e-3, weight_decay=0.01)
        clip = 1.0
    elif name == "lenet":
        model = LeNet(h)
        batch = (torch.rand(h["batch"], 1, 28, 28),
                 torch.randint(0, h["classes"], (h["batch"],)))
        opt = dict(lr=2e-3, weight_decay=0.01)
        clip = None
    else:
        model = GPT(h)
        shape = (h["batch"], h["seq"])
        batch = (torch.randint(0, h["vocab"], shape),
                 torch.randint(0, h["vocab"], shape))
        opt = dict(lr=6e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
        clip = 1.0
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True, **opt)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = model(*batch)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        return loss

    return model, optimizer, batch, step


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def memory(name, overrides):
    torch.set_num_threads(1)
    model, optimizer, batch, step = build(name, overrides)
    step()  # AdamW's state now exists; gradients are freed by zero_grad
    optimizer.zero_grad(set_to_none=True)
    params = tensor_bytes(model.parameters())
    state = tensor_bytes(t for s in optimizer.state.values()
                         for t in s.values() if torch.is_tensor(t))
    inputs = tensor_bytes(batch)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True) as prof:
        step()
    # The allocation timeline: every allocation (+) and free (-) of the
    # step, in time order (a stable sort keeps same-microsecond events in
    # the order recorded); its running sum's maximum is the step's
    # transient peak.
    events = [e for e in prof.profiler.kineto_results.events()
              if e.name() == "[memory]" and e.nbytes()]
    changes = [e.nbytes() for e in sorted(events, key=lambda e: e.start_us())]
    live = peak = 0
    for delta in changes:
        live += delta
        peak = max(peak, live)
    grads = params  # every parameter gets a gradient, allocated in the step
    print(json.dumps({
        "model": name, "torch": torch.__version__,
        "peak_bytes": params + state + inputs + peak,
        "params_bytes": params, "optimizer_bytes": state,
        "inputs_bytes": inputs, "step_transient_peak_bytes": peak,
        "gradients_bytes": grads,
        "activations_and_scratch_bytes": peak - grads,
        "allocations": sum(1 for d in changes if d > 0),
    }))


def timing(name, overrides, steps):
    best = None
    by_threads = {}
    for threads in range(1, (os.cpu_count() or 1) + 1):
        torch.set_num_threads(threads)
        _, _, _, step = build(name, overrides)
        for _ in range(3):
            step()
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        by_threads[threads] = median * 1e3
        if best is None or median < best[1]:
            best = (threads, median)
    print(json.dumps({"model": name, "torch": torch.__version__,
                      "threads": best[0], "step_ms": best[1] * 1e3,
                      "steps": steps, "by_threads": by_threads}))


def main(argv):
    if len(argv) < 3 or argv[1] not in ("memory", "time") or \
            argv[2] not in DEFAULTS:
        sys.exit("usage: torch_peers.py memory|time mlp|lenet|gpt "
                 "[KEY=VALUE ...] [steps=N]")
    overrides = dict(a.split("=", 1) for a in argv[3:])
    steps = int(overrides.pop("steps", 20))
    if argv[1] == "memory":
        memory(argv[2], overrides)
    else:
        timing(argv[2], overrides, steps)


if __name__ == "__main__":
    main(sys.argv)
