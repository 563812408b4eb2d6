#!/usr/bin/env python3
"""TGC's memory-bound kernels against PyTorch eager and torch.compile, on one GPU.

The bandwidth step of scripts/device-check.sh (issue 15): an elementwise op
(GELU on GPT-2 small's MLP activations) and row reductions (softmax and
cross-entropy over GPT-2's 50257-wide vocabulary rows, layer norm over its
768-wide residual rows), each compiled by tgc from bench/rowops/OP.tg for
one GPU target. This script replays the artifact's `eval` launch schedule
(the manifest's gpu.schedules.TARGET, docs/artifact.md "GPU schedule") with
the CUDA driver (ctypes on libcuda: the target's PTX section loaded with
cuModuleLoadData, cuLaunchKernel, cuTensorMapEncodeTiled for TMA
descriptors, cuMemcpyDtoDAsync for copies) on PyTorch's tensors, and in the
same run the same function in PyTorch eager and torch.compile.

The model's only parameter `w` exists because a model must minimize a loss
of its parameters; the launches that read it are left out of the timing.

Correctness: random x in [-4, 4) (bf16), labels uniform; the reference is
PyTorch's op in fp32 on the same bf16 inputs; error = max |ours - ref| /
max |ref|, pass at <= 2e-2 (one bf16 rounding of the result is 4e-3).
Timing: CUDA events around the replay (and around each PyTorch call),
warm-up, median of --iters. Bandwidth: the bytes the op must move (its
inputs read once, its result written once) / time, and that as a fraction
of the H200's 4.8 TB/s (--peak-tbs).

Without a CUDA device (or with --plan-only) it checks the artifact and
prints the replay plan (steps, kernels, minimal bytes) and a SKIPPED line:
the half that runs on a build machine. Prints one key=value line last;
scripts/device-check.sh parses it.
"""
import argparse
import ctypes
import json
import struct
import sys
import zlib

from cuda_torch import Skip, check, median_ms, open_device

DTYPE_BYTES = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i32": 4, "i64": 8, "i1": 1}
# cuda.h's CU_TENSOR_MAP_* values for the manifest's names (runtime/cuda/TensorMap.h).
TMAP_TYPES = ["u8", "u16", "u32", "i32", "u64", "i64", "f16", "f32", "f64", "bf16",
              "f32_ftz", "tf32", "tf32_ftz"]
TMAP_INTERLEAVE = ["none", "16B", "32B"]
TMAP_SWIZZLE = ["none", "32B", "64B", "128B"]
TMAP_L2 = ["none", "64B", "128B", "256B"]
TMAP_FILL = ["zero", "nan"]

# What each op's artifact is checked against: the PyTorch function of x
# (and labels), the result it is compared with, and the bytes it must move.
OPS = ("gelu", "softmax", "layernorm", "xent")


class PlanError(Exception):
    pass


def read_tgx(path):
    """The sections of a .tgx container (docs/artifact.md, "Container")."""
    data = open(path, "rb").read()
    if len(data) < 32 or data[:4] != b"TGX1":
        raise PlanError(f"{path}: not a .tgx artifact")
    version, n, crc, size = struct.unpack_from("<IIIQ", data, 4)
    if version != 1 or size != len(data) or 32 + 64 * n > len(data):
        raise PlanError(f"{path}: bad header (version {version}, {n} sections, size {size})")
    if zlib.crc32(data[:12] + b"\0\0\0\0" + data[16:]) & 0xFFFFFFFF != crc:
        raise PlanError(f"{path}: file CRC mismatch")
    sections = {}
    for i in range(n):
        name, off, sz, _ = struct.unpack_from("<40sQQI", data, 32 + 64 * i)
        name = name.rstrip(b"\0").decode()
        if off + sz > len(data):
            raise PlanError(f"{path}: section '{name}' past the end")
        sections[name] = data[off:off + sz]
    return sections


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def spec_bytes(s):
    return numel(s["shape"]) * DTYPE_BYTES[s["dtype"]]


def expand(steps, where):
    """The schedule's steps with every repeat unrolled (offsets advanced)."""
    out = []
    for i, st in enumerate(steps):
        if st.get("op") != "repeat":
            out.append(st)
            continue
        for k in range(int(st["count"])):
            for inner in expand(st["steps"], f"{where}[{i}]"):
                inner = json.loads(json.dumps(inner))
                for ref in ([inner.get("src"), inner.get("dst")] + inner.get("params", [])):
                    if ref and "stride" in ref:
                        ref["offset"] += k * ref["stride"]
                out.append(inner)
    return out


def build_plan(sections, target, entry_name):
    """The entry's launches and copies, every buffer range checked."""
    manifest = json.loads(sections["manifest"])
    entry = manifest["entries"].get(entry_name)
    if entry is None:
        raise PlanError(f"the manifest has no entry '{entry_name}'")
    gpu = manifest.get("gpu", {}).get("schedules", {}).get(target)
    if gpu is None:
        raise PlanError(f"the artifact has no {target} schedule")
    ptx = sections.get(f"gpu.{target}.ptx")
    if ptx is None:
        raise PlanError(f"the artifact has no gpu.{target}.ptx section")
    sched = gpu["entries"][entry_name]
    consts = [bytes.fromhex(c["hex"]) * int(c["repeat"]) for c in gpu["constants"]]
    args = entry["args"]
    arena = int(sched["arena_bytes"])
    steps = expand(sched["steps"], "steps")

    def check(ref, what):
        kind, off, n = ref["buffer"], int(ref["offset"]), int(ref["bytes"])
        size = {"arena": arena,
                "arg": spec_bytes(args[ref["index"]]) if kind == "arg" else 0,
                "const": len(consts[ref["index"]]) if kind == "const" else 0}[kind]
        if off < 0 or off + n > size:
            raise PlanError(f"{what}: bytes {off}..{off + n} outside the {kind}'s {size}")

    for i, st in enumerate(steps):
        if st["op"] == "launch":
            for j, p in enumerate(st["params"]):
                check(p, f"steps[{i}].params[{j}]")
        elif st["op"] == "copy":
            check(st["src"], f"steps[{i}].src")
            check(st["dst"], f"steps[{i}].dst")
        else:
            raise PlanError(f"steps[{i}]: {st['op']} is not a launch or a copy")
    results = sched["results"]
    for i, r in enumerate(results):
        check(r, f"results[{i}]")
    return {"manifest": manifest, "entry": entry, "steps": steps, "arena": arena,
            "consts": consts, "results": results, "ptx": ptx}


def reads_arg(step, index):
    refs = step.get("params", []) + [step.get("src")]
    return any(r and r["buffer"] == "arg" and r["index"] == index for r in refs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tgx", required=True)
    ap.add_argument("--op", required=True, choices=OPS)
    ap.add_argument("--target", default="sm_90a")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--peak-tbs", type=float, default=4.8)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--plan-only", action="store_true")
    args = ap.parse_args()
    tag = f"rowops op={args.op}"
    try:
        plan = build_plan(read_tgx(args.tgx), args.target, "eval")
    except (PlanError, KeyError, ValueError, OSError) as e:
        print(f"{tag} status=FAIL reason=plan({str(e).replace(' ', '_')})")
        return 1
    specs = plan["entry"]["args"]
    arg_of = {s["name"]: i for i, s in enumerate(specs)}
    res_of = {s["name"]: i for i, s in enumerate(plan["entry"]["results"])}
    if "x" not in arg_of or "w" not in arg_of:
        print(f"{tag} status=FAIL reason=plan(the_model_needs_inputs_x_and_w)")
        return 1
    x_spec = specs[arg_of["x"]]
    rows, cols = x_spec["shape"]
    out_name = "loss" if args.op == "xent" else "p"
    out_spec = plan["entry"]["results"][res_of[out_name]]
    # The bytes the op must move: its inputs once, its result once.
    need = spec_bytes(x_spec) + spec_bytes(out_spec)
    if "labels" in arg_of:
        need += spec_bytes(specs[arg_of["labels"]])
    timed = [i for i, st in enumerate(plan["steps"]) if not reads_arg(st, arg_of["w"])]
    tag += f" shape={rows}x{cols} target={args.target}"
    kernels = sorted({plan["steps"][i]["kernel"] for i in timed if plan["steps"][i]["op"] == "launch"})
    print(f"{tag}: {len(plan['steps'])} steps ({len(timed)} timed: {', '.join(kernels)}), "
          f"arena {plan['arena']} B, minimal traffic {need} B", file=sys.stderr)
    if args.plan_only:
        print(f"{tag} bytes={need} steps={len(timed)} status=SKIPPED reason=plan-only")
        return 0
    try:
        torch, dev, cu, mod = open_device(plan["ptx"])
    except Skip as e:
        print(f"{tag} bytes={need} status=SKIPPED reason={e}")
        return 3
    import torch.nn.functional as F

    g = torch.Generator(device=dev).manual_seed(23)
    x = (torch.rand(rows, cols, device=dev, generator=g) * 8 - 4).to(torch.bfloat16)
    buffers = []
    for i, s in enumerate(specs):
        if s["name"] == "x":
            buffers.append(x)
        elif s["name"] == "labels":
            buffers.append(torch.randint(0, cols, (rows,), device=dev, generator=g))
        else:  # w, zero (the loss adds w·w)
            buffers.append(torch.zeros(spec_bytes(s), dtype=torch.uint8, device=dev))
    labels = buffers[arg_of["labels"]] if "labels" in arg_of else None
    arena = torch.empty(max(plan["arena"], 1), dtype=torch.uint8, device=dev)
    consts = [torch.frombuffer(bytearray(c), dtype=torch.uint8).to(dev) for c in plan["consts"]]

    def addr(ref):
        base = {"arena": lambda: arena, "arg": lambda: buffers[ref["index"]],
                "const": lambda: consts[ref["index"]]}[ref["buffer"]]()
        return base.data_ptr() + int(ref["offset"])

    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    maps = []  # keeps the device copies of the tensor maps alive
    funcs = {}
    launches = []
    for i, st in enumerate(plan["steps"]):
        if st["op"] == "copy":
            launches.append(("copy", addr(st["dst"]), addr(st["src"]), int(st["src"]["bytes"]), i))
            continue
        if st["kernel"] not in funcs:
            f = ctypes.c_void_p()
            check(cu.cuModuleGetFunction(ctypes.byref(f), mod, st["kernel"].encode()),
                  f"cuModuleGetFunction({st['kernel']})")
            if st["shared_bytes"] > 48 * 1024:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                check(cu.cuFuncSetAttribute(f, 8, st["shared_bytes"]), "cuFuncSetAttribute")
            funcs[st["kernel"]] = f
        vals = []
        for p in st["params"]:
            a = addr(p)
            m = p.get("tensor_map")
            if m:
                rank = len(m["dims"])
                host = (ctypes.c_uint8 * 192)()
                at = (ctypes.addressof(host) + 63) // 64 * 64
                u64s = lambda v: (ctypes.c_uint64 * max(len(v), 1))(*v)
                u32s = lambda v: (ctypes.c_uint32 * max(len(v), 1))(*v)
                check(cu.cuTensorMapEncodeTiled(
                    ctypes.c_void_p(at), TMAP_TYPES.index(m["dtype"]), rank, ctypes.c_void_p(a),
                    u64s(m["dims"]), u64s(m["strides"]), u32s(m["box"]), u32s(m["element_strides"]),
                    TMAP_INTERLEAVE.index(m["interleave"]), TMAP_SWIZZLE.index(m["swizzle"]),
                    TMAP_L2.index(m["l2_promotion"]), TMAP_FILL.index(m["oob_fill"])),
                    "cuTensorMapEncodeTiled")
                d = torch.frombuffer(bytearray(ctypes.string_at(at, 128)), dtype=torch.uint8).to(dev)
                maps.append(d)
                a = d.data_ptr()
            vals.append(ctypes.c_uint64(a))
        ptrs = (ctypes.c_void_p * max(len(vals), 1))(*[ctypes.addressof(v) for v in vals])
        launches.append(("launch", funcs[st["kernel"]], st["grid"], st["block"],
                         st["shared_bytes"], vals, ptrs, i))

    def run(only=None):
        for l in launches:
            if only is not None and l[-1] not in only:
                continue
            if l[0] == "copy":
                check(cu.cuMemcpyDtoDAsync_v2(ctypes.c_uint64(l[1]), ctypes.c_uint64(l[2]),
                                              ctypes.c_size_t(l[3]), stream), "cuMemcpyDtoDAsync")
                continue
            _, f, gr, bl, sh, _, ptrs, _ = l
            check(cu.cuLaunchKernel(f, gr[0], gr[1], gr[2], bl[0], bl[1], bl[2], sh, stream,
                                    ptrs, None), "cuLaunchKernel")

    def timeit(fn):
        return median_ms(torch, fn, args.warmup, args.iters)

    # Correctness: the whole entry once on NaN-poisoned memory.
    arena.fill_(0xFF)
    run()
    torch.cuda.synchronize()
    r = plan["results"][res_of[out_name]]
    raw = {"arena": arena, "arg": buffers[r["index"]] if r["buffer"] == "arg" else None,
           "const": None}[r["buffer"]]
    out_dt = {"bf16": torch.bfloat16, "f32": torch.float32, "f16": torch.float16}[out_spec["dtype"]]
    ours = raw.view(torch.uint8)[r["offset"]:r["offset"] + r["bytes"]].view(out_dt)
    ours = ours.reshape(out_spec["shape"]).float()

    def torch_fn(xx, ll):
        if args.op == "gelu":
            return F.gelu(xx)
        if args.op == "softmax":
            return torch.softmax(xx, dim=-1)
        if args.op == "layernorm":
            return F.layer_norm(xx, (cols,), eps=1e-5)
        return F.cross_entropy(xx, ll)

    ref = torch_fn(x.float(), labels)
    err = ((ours - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
    ok = err <= 2e-2 and bool(torch.isfinite(ours).all())

    ms = timeit(lambda: run(set(timed)))
    eager_ms = timeit(lambda: torch_fn(x, labels))
    compile_ms = None
    if not args.no_compile:
        try:
            compiled = torch.compile(torch_fn)
            compiled(x, labels)
            compile_ms = timeit(lambda: compiled(x, labels))
        except Exception as e:  # a missing Triton etc.: report, do not fail ours
            print(f"{tag}: torch.compile failed: {e}", file=sys.stderr)

    def bw(t):
        return need / (t * 1e-3) / 1e12 if t else None

    def fmt(v, d=3):
        return "-" if v is None else f"{v:.{d}f}"

    print(f"{tag} bytes={need} ours_ms={fmt(ms, 4)} ours_tbs={fmt(bw(ms), 2)} "
          f"ours_frac={fmt(bw(ms) / args.peak_tbs, 2)} eager_ms={fmt(eager_ms, 4)} "
          f"eager_tbs={fmt(bw(eager_ms), 2)} eager_frac={fmt(bw(eager_ms) / args.peak_tbs, 2)} "
          f"compile_ms={fmt(compile_ms, 4)} compile_tbs={fmt(bw(compile_ms), 2)} "
          f"compile_frac={fmt(bw(compile_ms) / args.peak_tbs if compile_ms else None, 2)} "
          f"rel_err={err:.2e} torch={torch.__version__} status={'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
