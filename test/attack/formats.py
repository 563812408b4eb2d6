"""Writers of the data formats the attack scripts feed TGC (one definition,
shared by test/attack/attack_compiler.py and test/runtime/attack_tgrun.py)."""
import json
import struct


def safetensors(tensors):
    """A safetensors file: {name: (dtype, shape, raw bytes)}, header padded
    to 8 bytes as the format asks."""
    hdr, off, data = {}, 0, b""
    for name, (dt, shape, raw) in tensors.items():
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data
