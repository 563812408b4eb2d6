#!/usr/bin/env python3
"""cuBLAS peer for tg-bench-gemm: time torch.matmul in the same run.

Each case is M,N,K,form (form nn: A[M,K]·B[K,N]; nt: A[M,K]·B[N,K]ᵀ;
tn: A[K,M]ᵀ·B[K,N]); the transposed operands are views, as a training step
would pass them, so cuBLAS picks its own transposed kernels. Random data,
bf16 (or f16) in and out, fp32 accumulation (cuBLAS's default for bf16).
Timing: CUDA events around each call, calls enqueued back to back and read
after one synchronisation, warm-up first, median of --iters.
Prints one key=value line per case; scripts/device-check.sh parses them.
"""
import argparse
import statistics
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("cases", nargs="+", help="M,N,K,form")
    ap.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"gemm_torch: error: PyTorch not importable: {e}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("gemm_torch: error: torch.cuda.is_available() is False", file=sys.stderr)
        return 3
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    for case in args.cases:
        m, n, k, form = case.split(",")
        m, n, k = int(m), int(n), int(k)
        a = torch.empty((k, m) if form == "tn" else (m, k), dtype=dt, device=dev).uniform_(-1, 1)
        b = torch.empty((n, k) if form == "nt" else (k, n), dtype=dt, device=dev).uniform_(-1, 1)
        lhs = a.t() if form == "tn" else a
        rhs = b.t() if form == "nt" else b
        out = torch.empty((m, n), dtype=dt, device=dev)
        for _ in range(args.warmup):
            torch.matmul(lhs, rhs, out=out)
        # Back to back, one event pair per call, one synchronisation at the
        # end (as tg-bench-gemm does): launch latency stays out of the times.
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(args.iters)]
        for s, e in events:
            s.record()
            torch.matmul(lhs, rhs, out=out)
            e.record()
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in events]
        med = statistics.median(times)
        tflops = 2.0 * m * n * k / (med * 1e-3) / 1e12
        print(f"peer=torch.matmul torch={torch.__version__} M={m} N={n} K={k} form={form} "
              f"dtype={args.dtype} median_ms={med:.4f} tflops={tflops:.2f}", flush=True)
        del a, b, out
    return 0


if __name__ == "__main__":
    sys.exit(main())
