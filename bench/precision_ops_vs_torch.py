#!/usr/bin/python3
"""One bf16 matmul and one bf16 layer_norm, tgc against PyTorch's CPU
autocast, both against a float64 reference (issue 13, "numerics checked
against an independent reference").

    /usr/bin/python3 bench/precision_ops_vs_torch.py BUILD [--check FACTOR]
                     [--out FILE.md]

Each case is a tiny `.tg` model compiled with `precision = bf16` whose loss
is `sum(op(...) * probe)`, so the gradients that `tg-run --save-grads`
writes are the op's vector-Jacobian products for the cotangent `probe`,
and the gradient of `probe` itself is the op's forward result (the VJP of
the product with respect to `probe` is the op's output times 1, exact in
bf16 and fp32). tgc runs on the CPU backend (tg-run --load --batch
--save-grads: no step is taken).

The inputs are written once (safetensors) and read back by both sides:

- matmul, fp32 inputs: x [64, 1024], w [1024, 256] fp32 masters, cast to
  bf16 by each framework's mixed precision (tgc's compute copies, autocast's
  cast of `x @ w`); the products accumulate in fp32 and round to bf16.
- matmul, bf16 inputs: the same with x, w and probe rounded to bf16
  beforehand, so only the contraction's own arithmetic differs from the
  reference.
- layer_norm over 1024 of a bf16 activation (mean 3, so the variance is
  a difference of large terms), fp32 weight and bias. In tgc the bf16 value
  is the gather of an embedding's compute copy; layer_norm is `fp32-sensitive`
  (statistics and result in fp32). PyTorch 1.13's CPU autocast has no rule
  for layer_norm and refuses a bf16 input with fp32 weights, so a model
  under autocast reaches it in fp32 (the residual add promotes): "autocast"
  runs `layer_norm(x_bf16.float(), w, b)`, the same math as tgc's;
  "bf16 kernel" runs PyTorch's own bf16 layer_norm (x, w, b in bf16), what
  `model.to(torch.bfloat16)` would compute. Both are checked.

The reference evaluates each case in float64 on the same inputs (for a bf16
case, the bf16 values). Error of a tensor: ||out - ref||_2 / ||ref||_2
(relative, Frobenius) and max |out - ref| / max |ref|. With --check F, the
run fails unless for every tensor and both measures tgc's error is at most
F times PyTorch's plus 2^-20 relative (8 units in the last place of fp32:
a floor at fp32's resolution, far below bf16's 2^-8, so that a tensor both
compute in fp32 is not ranked by the order of its fp32 sums). Exit 0 if it
holds, 1 if not, 77 (ctest's skip) when torch cannot be imported; the
markdown report goes to stdout (and --out).
"""
import argparse
import datetime
import os
import sys
import tempfile

try:
    import torch
except ImportError as err:
    # Loud, and a distinct status: ctest reports the test as skipped
    # (SKIP_RETURN_CODE 77), not passed.
    print(f"precision_ops_vs_torch: SKIPPED: PyTorch is not importable "
          f"({err}); install python3-torch to run this comparison")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from precision_vs_torch import read_safetensors, run, write_safetensors  # noqa: E402

M, K, N = 64, 1024, 256
D = 1024
EPS = 1e-5
FLOOR = 2.0 ** -20

MATMUL_TG = """
model mm(m = %d, k = %d, n = %d) {
  param x: f32[m, k] = zeros
  param w: f32[k, n] = zeros
  param probe: f32[m, n] = zeros
  loss = sum(matmul(x, w) * probe)
  minimize loss
}
train {
  optimizer = sgd(lr = 0.001)
  batch = 1
  precision = bf16
}
""" % (M, K, N)

# The embedding of rows 0..m-1 is the bf16 compute copy of x itself: the
# layer_norm reads a bf16 activation, as it would after a bf16 op.
LAYER_NORM_TG = """
model ln(m = %d, d = %d) {
  input rows: i64[m]
  param x: f32[m, d] = zeros
  param weight: f32[d] = ones
  param bias: f32[d] = zeros
  param probe: f32[m, d] = zeros
  loss = sum(layer_norm(embedding(x, rows), weight, bias, eps = %g) * probe)
  minimize loss
}
train {
  optimizer = sgd(lr = 0.001)
  batch = m
  precision = bf16
}
""" % (M, D, EPS)


def bf16(t):
    """t rounded to bf16 (to nearest even), kept as fp32."""
    return t.to(torch.bfloat16).float()


def tgc_grads(bin_dir, name, source, params, batch, tmp):
    """tgc's gradients of the case: {param: fp32 tensor}."""
    src, tgx = (os.path.join(tmp, name + ext) for ext in (".tg", ".tgx"))
    load, inputs, grads = (os.path.join(tmp, f"{name}-{kind}.safetensors")
                           for kind in ("params", "batch", "grads"))
    open(src, "w").write(source)
    write_safetensors(load, params)
    write_safetensors(inputs, batch)
    run([os.path.join(bin_dir, "tgc"), src, "-o", tgx])
    run([os.path.join(bin_dir, "tg-run"), tgx, "--device", "cpu", "--load", load,
         "--batch", inputs, "--steps", "0", "--save-grads", grads])
    return read_safetensors(grads)


def vjp(fn, inputs, probe, dtype=None, autocast=False):
    """fn's result and its VJPs for cotangent probe: {name: tensor}."""
    leaves = {k: v.to(dtype or v.dtype).detach().requires_grad_(True)
              for k, v in inputs.items()}
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        y = fn(**leaves)
    y.backward(probe.to(dtype or probe.dtype))
    out = {"forward": y.detach()}
    out.update({"d" + k: v.grad for k, v in leaves.items()})
    return out


def matmul(x, w):
    return x @ w


def layer_norm_fp32(x, weight, bias):
    # Autocast's path: the bf16 activation reaches layer_norm as fp32.
    return torch.nn.functional.layer_norm(bf16(x), (D,), weight, bias, EPS)


def layer_norm_any(x, weight, bias):
    return torch.nn.functional.layer_norm(x, (D,), weight, bias, EPS)


def errors(out, ref):
    out, ref = out.double(), ref.double()
    diff = out - ref
    return (diff.norm().item() / max(ref.norm().item(), 1e-300),
            diff.abs().max().item() / max(ref.abs().max().item(), 1e-300))


def cases():
    g = torch.Generator().manual_seed(13)
    randn = lambda *shape: torch.randn(*shape, generator=g)
    x, w, probe = randn(M, K), randn(K, N) / K ** 0.5, randn(M, N)
    yield ("matmul, fp32 inputs", MATMUL_TG, dict(x=x, w=w), probe, {},
           matmul, [("autocast", dict(autocast=True))])
    yield ("matmul, bf16 inputs", MATMUL_TG, dict(x=bf16(x), w=bf16(w)),
           bf16(probe), {}, matmul, [("autocast", dict(autocast=True))])
    xl = bf16(3.0 + randn(M, D))
    weight, bias = 1.0 + 0.1 * randn(D), 0.1 * randn(D)
    torch_runs = [("autocast", dict(autocast=True, fn=layer_norm_fp32)),
                  ("bf16 kernel", dict(dtype=torch.bfloat16))]
    yield ("layer_norm, bf16 input", LAYER_NORM_TG,
           dict(x=xl, weight=weight, bias=bias), randn(M, D),
           dict(rows=torch.arange(M, dtype=torch.int64)), layer_norm_any,
           torch_runs)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--check", type=float, default=None, metavar="FACTOR")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    bin_dir = os.path.join(args.build, "bin")
    lines = ["# bf16 matmul and layer_norm: tgc against PyTorch's CPU autocast",
             "",
             f"- command: `/usr/bin/python3 bench/precision_ops_vs_torch.py "
             f"BUILD{'' if args.check is None else f' --check {args.check:g}'}`",
             f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
             f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])} "
             "(errors do not depend on load)",
             f"- PyTorch {torch.__version__} (CPU, {torch.get_num_threads()} threads); "
             "tgc on its CPU backend (tg-run --save-grads)",
             "- error: ||out - ref||_2 / ||ref||_2 and max|out - ref| / max|ref| "
             "against float64 on the same inputs; ratio: tgc / PyTorch "
             "(of the larger of the two measures' ratios)", ""]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (title, source, inputs, probe, batch, fn, runs) in enumerate(cases()):
            params = dict(inputs, probe=probe)
            ours = tgc_grads(bin_dir, f"case{i}", source, params, batch, tmp)
            ours = {"forward": ours.pop("probe"),
                    **{"d" + k: v for k, v in ours.items()}}
            ref = vjp(fn, {k: v.double() for k, v in inputs.items()}, probe.double())
            theirs = [(label, vjp(opts.pop("fn", fn), inputs, probe, **opts))
                      for label, opts in runs]
            lines += [f"## {title}", "",
                      "| tensor | tgc | " + " | ".join(
                          f"PyTorch {label} | ratio" for label, _ in theirs) + " |",
                      "|---|---:|" + "---:|---:|" * len(theirs)]
            for name in ref:
                e_ours = errors(ours[name], ref[name])
                cells = [f"{e_ours[0]:.2e} / {e_ours[1]:.2e}"]
                for label, t in theirs:
                    e_t = errors(t[name], ref[name])
                    ratio = max(a / b if b else float("inf") if a else 1.0
                                for a, b in zip(e_ours, e_t))
                    cells += [f"{e_t[0]:.2e} / {e_t[1]:.2e}", f"{ratio:.2f}"]
                    if args.check is not None and any(
                            a > args.check * b + FLOOR for a, b in zip(e_ours, e_t)):
                        failures.append(f"{title}: {name}: tgc {e_ours[0]:.3e} / "
                                        f"{e_ours[1]:.3e}, PyTorch {label} "
                                        f"{e_t[0]:.3e} / {e_t[1]:.3e}")
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
            lines.append("")
    if args.check is not None:
        lines.append(f"Check: tgc's error at most {args.check:g} x PyTorch's + 2^-20 "
                     f"for every tensor: {'FAILED' if failures else 'holds'}.")
        lines += [f"- {f}" for f in failures]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        open(args.out, "w").write(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
