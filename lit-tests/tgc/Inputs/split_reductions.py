"""Summarises the split reductions of a .tgx artifact's GPU schedule.

Usage: split_reductions.py MODEL.tgx TARGET ENTRY

A split reduction (docs/nvptx.md, "Split reductions") is a partial launch
(tg_redp_*) followed at once by its combine launch (tg_redc_*); both take
the op's scratch as their last parameter: the same arena bytes, 256-byte
aligned, inside its arena_bytes and apart from every other arena buffer
the two launches read or write (the memory plan places it, live at the
op's step only: docs/nvptx.md, "Op scratch in the plan"). Prints how many
there are, the most slices (the partial's blocks along y for column sums,
along x for a reduction over everything) and whether every pair keeps
those rules.
"""
import sys

from tensor_maps import sections, steps
import json


def apart(p, o):
    """Whether scratch `p` and buffer `o` share no byte."""
    return (o["buffer"] != "arena" or o["offset"] + o["bytes"] <= p["offset"]
            or p["offset"] + p["bytes"] <= o["offset"])


def main():
    manifest = json.loads(sections(sys.argv[1])["manifest"])
    entry = manifest["gpu"]["schedules"][sys.argv[2]]["entries"][sys.argv[3]]
    launches = [s for s in steps(entry["steps"]) if s.get("op") == "launch"]
    arena = entry["arena_bytes"]
    pairs, most, good = 0, 0, True
    for i, s in enumerate(launches):
        if not s["kernel"].startswith("tg_redp_"):
            continue
        pairs += 1
        c = launches[i + 1] if i + 1 < len(launches) else {"kernel": ""}
        good &= c["kernel"].startswith("tg_redc_")
        if not good:
            break
        p, q = s["params"][-1], c["params"][-1]
        good &= p == q and p["buffer"] == "arena" and p["offset"] % 256 == 0
        good &= p["offset"] + p["bytes"] <= arena
        good &= all(apart(p, o) for o in s["params"][:-1] + c["params"][:-1])
        most = max(most, s["grid"][1] if s["grid"][1] > 1 else s["grid"][0])
    print("split reductions: %d, most slices %d, %s" % (
        pairs, most, "scratch shared and planned" if good else "BROKEN"))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
