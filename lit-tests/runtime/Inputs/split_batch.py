"""Splits a batch file (safetensors, tg-run --batch) into N files of
consecutive rows: the rows each rank of an N-rank job reads.

    split_batch.py IN.safetensors N OUT0 OUT1 ...
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tgc", "Inputs"))
from batch import write_safetensors  # noqa: E402


def main():
    src, n, outs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    if len(outs) != n:
        sys.exit(f"split_batch.py: {n} parts need {n} output files")
    data = open(src, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    for r, out in enumerate(outs):
        parts = []
        for name, t in header.items():
            if name == "__metadata__":
                continue
            b, e = t["data_offsets"]
            rows = t["shape"][0]
            if rows % n:
                sys.exit(f"split_batch.py: {name} has {rows} rows, not a "
                         f"multiple of {n}")
            row = (e - b) // rows
            part = rows // n
            blob = data[base + b + r * part * row:base + b + (r + 1) * part * row]
            parts.append((name, t["dtype"], [part] + t["shape"][1:], blob))
        write_safetensors(out, parts)


if __name__ == "__main__":
    main()
