# Checks docs/data-parallel.md's error bound for gradients communicated in
# bf16 or f16 (tgc --comm-dtype): after one SGD step of learning rate LR
# without weight decay, p1 = p0 - LR * g, where g is the gradient the ranks
# averaged. With every rank's own gradient g_r (f32, from one process on the
# rank's rows), each element must satisfy
#
#   |g - mean_r g_r| <= (N + 1) * u * mean_r |g_r|  (+ the f32 roundings)
#
# where u is the type's unit roundoff (bf16 2^-8, f16 2^-11): one rounding
# of each g_r to the type, N - 1 of the library's partial sums and one of
# the mean. With --f32-sum (the CPU path: MPI sums the widened values in
# f32) the partial sums round as f32, and the bound is 2 u mean_r |g_r|.
# --expect-rounding also requires that some element differs from the f32
# mean beyond f32 rounding, so that the run did narrow.
#
#   comm_dtype_bound.py P0 P1 G0 G1 [G2 ...] --dtype bf16 --lr LR
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from compare_dp import tensors  # noqa: E402

UNIT = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}
F32 = 2.0 ** -24


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("p0")
    ap.add_argument("p1")
    ap.add_argument("grads", nargs="+")
    ap.add_argument("--dtype", choices=sorted(UNIT), required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--expect-rounding", action="store_true")
    ap.add_argument("--f32-sum", action="store_true")
    args = ap.parse_args()
    p0, p1 = tensors(args.p0), tensors(args.p1)
    ranks = [tensors(g) for g in args.grads]
    n, u = len(ranks), UNIT[args.dtype]
    worst, rounded, failed = 0.0, 0, False
    roundings = 2 if args.f32_sum else n + 1
    for name, (shape, a) in sorted(p0.items()):
        b = p1[name][1]
        gs = [r[name][1] for r in ranks]
        for i in range(len(a)):
            g = (a[i] - b[i]) / args.lr
            mean = sum(r[i] for r in gs) / n
            mag = sum(abs(r[i]) for r in gs) / n
            # f32: the subtraction of the update, the rank's own gradient
            # against one process's (the same kernels; a few roundings).
            slack = (2 * F32 * (abs(a[i]) + abs(b[i])) / args.lr
                     + (8 + n) * F32 * mag)
            bound = roundings * u * mag + slack
            err = abs(g - mean)
            if err > slack:
                rounded += 1
            if err > bound:
                if not failed:
                    print(f"FAIL: {name}[{i}]: averaged gradient {g:.9g}, "
                          f"ranks' mean {mean:.9g}: off by {err:.3g}, beyond "
                          f"the {args.dtype} bound {bound:.3g}")
                failed = True
            elif bound > 0:
                worst = max(worst, err / bound)
    if failed:
        return 1
    print(f"gradients: {len(p0)} tensors within the {args.dtype} bound "
          f"(worst {worst:.2f} of it)")
    if args.expect_rounding:
        if not rounded:
            print("FAIL: no element differs from the f32 mean beyond f32 "
                  "rounding: the gradients were not narrowed")
            return 1
        print(f"rounded: {rounded} elements beyond f32 rounding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
