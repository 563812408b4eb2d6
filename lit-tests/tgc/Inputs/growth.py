"""usage: growth.py A B LIMIT: prints "growth small" if file B is at most
LIMIT bytes larger than file A, else "growth <bytes>"."""
import os
import sys

a, b = (os.path.getsize(p) for p in sys.argv[1:3])
print("growth", "small" if b - a <= int(sys.argv[3]) else b - a)
