"""Interrupts tgc in the middle of writing its temporary files and checks
that none is left behind.

usage: interrupt.py SIGNAL TMPDIR -- TGC ARGS...

Runs the command with TMPDIR set, waits until a `tgc-cpu-*` file appears in
TMPDIR (the code generator is running), sends SIGNAL, waits for the exit and
prints "exit <status>" and "left <n> files". Fails if no temporary file ever
appeared (the compile was too quick to test anything).
"""
import os
import signal
import subprocess
import sys
import time

sig = getattr(signal, sys.argv[1])
tmp = sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
os.makedirs(tmp, exist_ok=True)
for f in os.listdir(tmp):
    os.remove(os.path.join(tmp, f))
env = dict(os.environ, TMPDIR=tmp)
# lit may run us with SIGINT ignored, which the child would inherit.
p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL,
                     preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                      signal.SIG_DFL))
deadline = time.time() + 300
seen = False
while time.time() < deadline and p.poll() is None:
    if any(f.startswith("tgc-cpu") for f in os.listdir(tmp)):
        seen = True
        p.send_signal(sig)
        break
    time.sleep(0.001)
status = p.wait()
if not seen:
    sys.exit("no temporary file appeared before tgc ended (status %d)" % status)
print("exit", "signal" if status < 0 else status)
print("left", len(os.listdir(tmp)), "files")
