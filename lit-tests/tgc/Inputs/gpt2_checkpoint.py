#!/usr/bin/env python3
"""Writes and checks safetensors files laid out like the released GPT-2.

The Hugging Face GPT-2 checkpoints (model.safetensors of `gpt2`) hold, for a
model with L layers, width D, vocabulary V and context C:

  wte.weight [V, D]   wpe.weight [C, D]   ln_f.weight [D]   ln_f.bias [D]
  h.{i}.ln_1.weight [D]            h.{i}.ln_1.bias [D]
  h.{i}.attn.c_attn.weight [D, 3D] h.{i}.attn.c_attn.bias [3D]   (Conv1D: in x out)
  h.{i}.attn.c_proj.weight [D, D]  h.{i}.attn.c_proj.bias [D]
  h.{i}.ln_2.weight [D]            h.{i}.ln_2.bias [D]
  h.{i}.mlp.c_fc.weight [D, 4D]    h.{i}.mlp.c_fc.bias [4D]
  h.{i}.mlp.c_proj.weight [4D, D]  h.{i}.mlp.c_proj.bias [D]

and two buffers per layer that are not parameters: h.{i}.attn.bias
[1, 1, C, C] (the causal mask) and h.{i}.attn.masked_bias [] (-1e4).

Commands (Python 3 standard library only):
  write OUT [--layers L --d D --vocab V --ctx C] [--extra NAME]
            [--transpose NAME] [--drop NAME]   random f32 values, seeded
  check-report REPORT [same options]           the parameters `tgc
                                               --report=params` lists are exactly
                                               the checkpoint's (names, shapes)
  same A B                                     every tensor of B equals A's
"""
import argparse
import json
import random
import re
import struct
import sys
from array import array

DTYPES = {"F32": ("f", 4)}


def gpt2_tensors(layers, d, vocab, ctx):
    """(name, shape, is_parameter) in the checkpoint's order."""
    out = [("wte.weight", [vocab, d], True), ("wpe.weight", [ctx, d], True)]
    for i in range(layers):
        p = f"h.{i}."
        out += [
            (p + "ln_1.weight", [d], True), (p + "ln_1.bias", [d], True),
            (p + "attn.bias", [1, 1, ctx, ctx], False),
            (p + "attn.masked_bias", [], False),
            (p + "attn.c_attn.weight", [d, 3 * d], True),
            (p + "attn.c_attn.bias", [3 * d], True),
            (p + "attn.c_proj.weight", [d, d], True),
            (p + "attn.c_proj.bias", [d], True),
            (p + "ln_2.weight", [d], True), (p + "ln_2.bias", [d], True),
            (p + "mlp.c_fc.weight", [d, 4 * d], True),
            (p + "mlp.c_fc.bias", [4 * d], True),
            (p + "mlp.c_proj.weight", [4 * d, d], True),
            (p + "mlp.c_proj.bias", [d], True),
        ]
    out += [("ln_f.weight", [d], True), ("ln_f.bias", [d], True)]
    return out


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, shape, array)."""
    header, offset = {}, 0
    for name, dtype, shape, data in tensors:
        size = numel(shape) * DTYPES[dtype][1]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":"))
    text += " " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text.encode())
        for _, _, _, data in tensors:
            f.write(data.tobytes())


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    body = raw[8 + n:]
    out = {}
    for name, e in header.items():
        code, _ = DTYPES[e["dtype"]]
        begin, end = e["data_offsets"]
        out[name] = (e["shape"], array(code, body[begin:end]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["write", "check-report", "same"])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--extra")
    ap.add_argument("--transpose")
    ap.add_argument("--drop")
    a = ap.parse_args()
    rng = random.Random(11)

    if a.command == "check-report":
        want = {name: shape for name, shape, param in
                gpt2_tensors(a.layers, a.d, a.vocab, a.ctx) if param}
        got = {}
        with open(a.paths[0]) as f:
            for line in f:
                m = re.match(r"(\S+)\s+\[([0-9, ]*)\]", line)
                if m:
                    got[m.group(1)] = [int(x) for x in m.group(2).split(",") if x.strip()]
        bad = sorted(set(want) ^ set(got)) + sorted(
            n for n in set(want) & set(got) if want[n] != got[n])
        for n in bad:
            print(f"mismatch: {n}: checkpoint {want.get(n)}, model {got.get(n)}")
        if bad:
            return 1
        print(f"match: {len(got)} parameters")
        return 0

    if a.command == "write":
        tensors = []
        for name, shape, _ in gpt2_tensors(a.layers, a.d, a.vocab, a.ctx):
            if name == a.drop:
                continue
            if name == a.transpose:
                shape = shape[::-1]
            data = array("f", (rng.gauss(0, 0.02) for _ in range(numel(shape))))
            tensors.append((name, "F32", shape, data))
        if a.extra:
            tensors.append((a.extra, "F32", [3], array("f", [0.0] * 3)))
        write_safetensors(a.paths[0], tensors)
        return 0

    want, got = read_safetensors(a.paths[0]), read_safetensors(a.paths[1])
    for name, (shape, data) in got.items():
        if name not in want or want[name] != (shape, data):
            print(f"differs: {name}")
            return 1
    print(f"same: {len(got)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
