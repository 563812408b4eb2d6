"""Summarises the split reductions of a .tgx artifact's GPU schedule.

Usage: split_reductions.py MODEL.tgx TARGET ENTRY

A split reduction (docs/nvptx.md, "Split reductions") is a partial launch
(tg_redp_*) followed at once by its combine launch (tg_redc_*); both take
the op's scratch as their last parameter: the same arena bytes, after
every other arena buffer of the entry and inside its arena_bytes. Prints
how many there are, the most slices (the partial's blocks along y for
column sums, along x for a reduction over everything) and whether every
pair keeps those rules.
"""
import sys

from tensor_maps import sections, steps
import json


def main():
    manifest = json.loads(sections(sys.argv[1])["manifest"])
    entry = manifest["gpu"]["schedules"][sys.argv[2]]["entries"][sys.argv[3]]
    launches = [s for s in steps(entry["steps"]) if s.get("op") == "launch"]
    arena = entry["arena_bytes"]
    # The end of the planned values: every arena buffer but the scratch.
    scratch = {id(s["params"][-1]) for s in launches
               if s["kernel"].startswith(("tg_redp_", "tg_redc_"))}
    planned_end = max([p["offset"] + p["bytes"] for s in launches
                       for p in s["params"]
                       if p["buffer"] == "arena" and id(p) not in scratch] + [0])
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
        good &= p["offset"] >= planned_end and p["offset"] + p["bytes"] <= arena
        most = max(most, s["grid"][1] if s["grid"][1] > 1 else s["grid"][0])
    print("split reductions: %d, most slices %d, %s" % (
        pairs, most, "scratch shared and after the plan" if good else "BROKEN"))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
