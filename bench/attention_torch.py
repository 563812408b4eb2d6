#!/usr/bin/env python3
"""TGC's fused attention kernels against PyTorch's flash SDPA, on one GPU.

Runs the kernels that `tg-bench-attention` wrote (PTX + launch lines, the
exact launches tgc schedules) through the CUDA driver (ctypes on libcuda:
module load, cuTensorMapEncodeTiled for the TMA descriptors as the runtime
encodes them, cuLaunchKernel) on PyTorch's tensors, and in the same run
torch.nn.functional.scaled_dot_product_attention with the flash backend.

Correctness: random q, k, v, dO in [-1, 1) (bf16), every output poisoned with
NaN first; the reference is SDPA's math backend in fp32 (and the fp32
log-sum-exp of the masked scores); error = max |ours - ref| / max |ref| per
tensor, pass at <= 2e-2 (P and dS are rounded to bf16 in the products, as in
every FlashAttention). Timing: CUDA events, warm-up, median of --iters; the
forward+backward time of ours is the forward launch plus the backward
launches (dLSE = 0). FLOPs (FlashAttention's convention): forward
4·B·H·T²·d, halved when causal; backward 2.5 times the forward.

Prints one key=value line; scripts/device-check.sh parses it.
"""
import argparse
import ctypes
import sys

from cuda_torch import Skip, check, open_device
from cuda_torch import median_ms as timed_median


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ptx", required=True)
    ap.add_argument("--launches", required=True)
    ap.add_argument("--shape", required=True, help="B,H,T,d")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    B, H, T, D = (int(v) for v in args.shape.split(","))
    tag = f"attention B={B} H={H} T={T} d={D}"
    try:
        torch, dev, cu, mod = open_device(open(args.ptx, "rb").read())
    except Skip as e:
        print(f"{tag} status=SKIPPED reason={e}")
        return 3
    import torch.nn.functional as F

    dt = torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(17)
    rnd = lambda *s: torch.empty(s, dtype=dt, device=dev).uniform_(-1, 1, generator=g)  # noqa: E731
    q, k, v, do = rnd(B, H, T, D), rnd(B, H, T, D), rnd(B, H, T, D), rnd(B, H, T, D)
    nan = lambda *s, d=dt: torch.full(s, float("nan"), dtype=d, device=dev)  # noqa: E731
    o, lse = nan(B, H, T, D), nan(B, H, T, d=torch.float32)
    dlse = torch.zeros(B, H, T, dtype=torch.float32, device=dev)
    dq, dk, dv = nan(B, H, T, D), nan(B, H, T, D), nan(B, H, T, D)
    operands = {"fwd": [q, k, v], "bwd": [do, dlse, q, k, v, o, lse]}
    results = {"fwd": [o, lse], "bwd": [dq, dk, dv]}
    keep = []  # tensor maps and argument storage outlive the launches

    def tensor_map(t, rows, cols, batches, box_rows, box_cols):
        raw = (ctypes.c_uint8 * 256)()
        addr = (ctypes.addressof(raw) + 127) // 128 * 128  # CUtensorMap is 128-byte aligned
        dims = (ctypes.c_uint64 * 3)(cols, rows, batches)
        strides = (ctypes.c_uint64 * 2)(cols * 2, rows * cols * 2)
        box = (ctypes.c_uint32 * 3)(box_cols, box_rows, 1)
        ones = (ctypes.c_uint32 * 3)(1, 1, 1)
        rank = 3 if batches > 1 else 2
        # bf16 = 9, interleave none, swizzle 128B = 3, L2 256B = 3, zero fill.
        check(cu.cuTensorMapEncodeTiled(ctypes.c_void_p(addr), 9, rank, ctypes.c_void_p(t.data_ptr()),
                                        dims, strides, box, ones, 0, 3, 3, 0), "cuTensorMapEncodeTiled")
        dev_map = torch.frombuffer(bytearray(ctypes.string_at(addr, 128)), dtype=torch.uint8).to(dev)
        keep.append((raw, dev_map))
        return dev_map.data_ptr()

    launches = {"fwd": [], "bwd": []}
    for line in open(args.launches):
        f = line.split()
        if not f:
            continue
        which, sym, gx, gy, block, smem = f[0], f[1], *map(int, f[2:6])
        fn = ctypes.c_void_p()
        check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, sym.encode()), f"cuModuleGetFunction({sym})")
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
        check(cu.cuFuncSetAttribute(fn, 8, smem), f"cuFuncSetAttribute({sym}, {smem} B)")
        ptrs = []
        for p in f[6:]:
            kind, idx, *m = p.split(":")
            t = (results if kind == "res" else operands)[which][int(idx)]
            ptrs.append(tensor_map(t, *map(int, m)) if kind == "map" else t.data_ptr())
        vals = [ctypes.c_uint64(x) for x in ptrs]
        argv = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(x) for x in vals])
        keep.append((vals, argv))
        launches[which].append((fn, gx, gy, block, smem, argv))

    def run(which):
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        for fn, gx, gy, block, smem, argv in launches[which]:
            check(cu.cuLaunchKernel(fn, gx, gy, 1, block, 1, 1, smem, stream, argv, None), "cuLaunchKernel")

    def median_ms(fn):
        return timed_median(torch, fn, args.warmup, args.iters)

    # Correctness first (one forward, one backward on the poisoned outputs).
    run("fwd")
    run("bwd")
    torch.cuda.synchronize()
    scale = D ** -0.5
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    ref_o = F.scaled_dot_product_attention(qf, kf, vf, is_causal=args.causal)
    ref_o.backward(do.float())
    s = (qf.detach() @ kf.detach().transpose(-1, -2)) * scale
    if args.causal:
        s.masked_fill_(torch.ones(T, T, dtype=torch.bool, device=dev).triu(1), float("-inf"))
    ref_lse = torch.logsumexp(s, dim=-1)
    del s
    errs = {}
    for name, got, want in (("o", o, ref_o), ("lse", lse, ref_lse), ("dq", dq, qf.grad),
                            ("dk", dk, kf.grad), ("dv", dv, vf.grad)):
        e = ((got.float() - want.detach()).abs().max() / want.detach().abs().max()).item()
        errs[name] = e if e == e else float("inf")  # NaN: unwritten
    ok = all(e <= 2e-2 for e in errs.values())

    fwd_flops = 4 * B * H * T * T * D / (2 if args.causal else 1)
    ours_f = median_ms(lambda: run("fwd"))
    ours_fb = median_ms(lambda: (run("fwd"), run("bwd")))
    qt, kt, vt = (x.detach().clone().requires_grad_() for x in (q, k, v))
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        flash = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)  # noqa: E731
    except ImportError:
        flash = lambda: torch.backends.cuda.sdp_kernel(  # noqa: E731
            enable_flash=True, enable_math=False, enable_mem_efficient=False)
    with flash():
        peer_f = median_ms(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=args.causal))
        peer_fb = median_ms(lambda: F.scaled_dot_product_attention(
            qt, kt, vt, is_causal=args.causal).backward(do))
    tf = lambda flops, ms: flops / (ms * 1e-3) / 1e12  # noqa: E731
    line = (f"{tag} causal={int(args.causal)} torch={torch.__version__} "
            f"fwd_ms={ours_f:.3f} fwd_tflops={tf(fwd_flops, ours_f):.1f} "
            f"torch_fwd_ms={peer_f:.3f} torch_fwd_tflops={tf(fwd_flops, peer_f):.1f} "
            f"fwd_ratio={peer_f / ours_f:.2f} "
            f"fwdbwd_ms={ours_fb:.3f} fwdbwd_tflops={tf(3.5 * fwd_flops, ours_fb):.1f} "
            f"torch_fwdbwd_ms={peer_fb:.3f} torch_fwdbwd_tflops={tf(3.5 * fwd_flops, peer_fb):.1f} "
            f"fwdbwd_ratio={peer_fb / ours_fb:.2f} "
            + " ".join(f"err_{n}={e:.2e}" for n, e in errs.items())
            + f" status={'PASS' if ok else 'FAIL'}")
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:  # a driver call failed: one line, like every check
        print(f"attention status=FAIL reason={str(e).replace(' ', '_')}")
        sys.exit(1)
