#!/usr/bin/env python3
"""Writes one batch as a safetensors file, for tg-run --batch.

    batch.py OUT.safetensors NAME=DTYPE[d0,d1,...]:KIND ...

KIND is `text` (bytes of /usr/share/common-licenses/GPL-3; `text+1` is the
same text shifted by one, i.e. next-token targets), `class<N>` (integers in
[0, N)), or `normal` (floats). The data are deterministic (fixed seed).
"""
import json
import random
import re
import struct
import sys

FMT = {"F32": "f", "I64": "q", "I32": "i"}


def write_safetensors(path, tensors):
    """Writes [(name, dtype, shape, bytes)] as one safetensors file."""
    header, blobs, offset = {}, [], 0
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def main():
    out, specs = sys.argv[1], sys.argv[2:]
    rng = random.Random(1234)
    text = open("/usr/share/common-licenses/GPL-3", "rb").read()
    tensors = []
    for spec in specs:
        m = re.fullmatch(r"(\w+)=(\w+)\[([\d,]+)\]:(\S+)", spec)
        if not m:
            sys.exit(f"batch.py: cannot parse '{spec}'")
        name, dtype, dims, kind = m.groups()
        dtype = dtype.upper()
        shape = [int(d) for d in dims.split(",")]
        n = 1
        for d in shape:
            n *= d
        if kind.startswith("text"):
            shift = 1 if kind == "text+1" else 0
            values = list(text[shift:shift + n])
        elif kind.startswith("class"):
            values = [rng.randrange(int(kind[5:])) for _ in range(n)]
        elif kind == "normal":
            values = [rng.gauss(0.0, 1.0) for _ in range(n)]
        else:
            sys.exit(f"batch.py: unknown kind '{kind}'")
        blob = struct.pack("<%d%s" % (n, FMT[dtype]), *values)
        tensors.append((name, dtype, shape, blob))
    write_safetensors(out, tensors)


if __name__ == "__main__":
    main()
