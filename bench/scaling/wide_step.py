#!/usr/bin/env python3
"""bench/scaling/wide_step.py N: a function (@wide) of N independent tanh
ops whose results are all returned, so all N buffers are live at once; each
placed buffer overlaps every one placed before it. The planner's offset search on it is quadratic
if it lists the overlapping buffers per buffer, near-linear if it reads the
taken address space as merged runs (passes/MemoryPlan.cpp, TakenIndex)."""
import sys

n = int(sys.argv[1])
ty = "tensor<64xf32>"
print(f'func.func @wide(%x: {ty} {{tg.name = "x", tg.role = #tg.role<input>}})'
      f' -> ({", ".join([ty] * n)}) {{')
for i in range(n):
    print(f"  %{i} = tg.tanh %x : {ty}")
print(f'  return {", ".join(f"%{i}" for i in range(n))} : {", ".join([ty] * n)}')
print("}")
