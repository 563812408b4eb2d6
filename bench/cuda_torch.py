"""What the GPU peers of scripts/device-check.sh share.

bench/attention_torch.py and bench/rowops_torch.py run TGC's PTX through the
CUDA driver (ctypes on libcuda) on PyTorch's tensors and time PyTorch in the
same run. Both open the device the same way (PyTorch's primary context made
current, then the driver API beside it, one PTX module loaded), check every
driver call the same way and time with CUDA events the same way; this module
is that, once.
"""
import ctypes
import statistics


class Skip(Exception):
    """No PyTorch or no CUDA device: the caller prints a SKIPPED line."""


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} failed: CUresult {rc}")


def open_device(ptx):
    """(torch, device, libcuda, module) with `ptx` (bytes) loaded.

    Raises Skip with a key=value-safe reason when PyTorch or a CUDA device is
    missing."""
    try:
        import torch
    except ImportError as e:
        raise Skip(f"no-torch({e})")
    if not torch.cuda.is_available():
        raise Skip("no-cuda-device")
    dev = torch.device("cuda")
    torch.zeros(1, device=dev)  # the primary context, current on this thread
    cu = ctypes.CDLL("libcuda.so.1")
    mod = ctypes.c_void_p()
    check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx + b"\0")),
          "cuModuleLoadData")
    return torch, dev, cu, mod


def median_ms(torch, fn, warmup, iters):
    """The median of `iters` CUDA-event timings of fn() after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)
