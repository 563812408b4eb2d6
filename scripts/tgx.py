#!/usr/bin/env python3
"""Reads a .tgx artifact's container (runtime/Artifact.h, docs/artifact.md).

As a module: sections(path) -> {name: bytes}, and steps(items), a GPU
schedule's steps with every `repeat` flattened. As a program:

    tgx.py MODEL.tgx NAME      writes section NAME to stdout
"""
import struct
import sys


def sections(path):
    """Every section of the container at `path`, by name."""
    data = open(path, "rb").read()
    out = {}
    for i in range(struct.unpack_from("<I", data, 8)[0]):
        at = 32 + 64 * i
        name = data[at:at + 40].rstrip(b"\0").decode()
        offset, size = struct.unpack_from("<QQ", data, at + 40)
        out[name] = data[offset:offset + size]
    return out


def steps(items):
    """The steps of a schedule's list, `repeat` bodies flattened in order."""
    for s in items:
        if s.get("op") == "repeat":
            yield from steps(s["steps"])
        else:
            yield s


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: tgx.py MODEL.tgx NAME")
    found = sections(sys.argv[1]).get(sys.argv[2])
    if found is None:
        sys.exit("no section " + sys.argv[2])
    sys.stdout.buffer.write(found)


if __name__ == "__main__":
    main()
