"""Writes one section of a .tgx artifact to stdout.

Usage: section.py MODEL.tgx NAME (the container layout: runtime/Artifact.h)
"""
import struct
import sys

data = open(sys.argv[1], "rb").read()
count = struct.unpack_from("<I", data, 8)[0]
for i in range(count):
    at = 32 + 64 * i
    name = data[at:at + 40].rstrip(b"\0").decode()
    offset, size = struct.unpack_from("<QQ", data, at + 40)
    if name == sys.argv[2]:
        sys.stdout.buffer.write(data[offset:offset + size])
        sys.exit(0)
sys.exit("no section " + sys.argv[2])
