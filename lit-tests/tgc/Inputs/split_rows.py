"""Summarises the rows split over blocks of a .tgx artifact's GPU schedule.

Usage: split_rows.py MODEL.tgx TARGET ENTRY

A row reduction split over blocks (docs/nvptx.md, "Long rows over several
blocks") is a run of statistics launches tg_rowp0_*, tg_rowp1_*, ... and
the output launch tg_rowc_*, each with blocks (slice, row) and the op's
scratch as its last parameter: the same arena bytes, 256-byte aligned,
inside its arena_bytes and apart from every other arena buffer the run's
launches read or write (the memory plan places it, live at the op's step
only: docs/nvptx.md, "Op scratch in the plan"). Prints how many there are, the most blocks per row and statistics
launches of one, and whether every run keeps those rules.
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
    runs, blocks, phases, good = 0, 0, 0, True
    i = 0
    while i < len(launches):
        if not launches[i]["kernel"].startswith("tg_rowp0_"):
            i += 1
            continue
        runs += 1
        run = [launches[i]]
        while i + len(run) < len(launches) and \
                launches[i + len(run)]["kernel"].startswith("tg_rowp%d_" % len(run)):
            run.append(launches[i + len(run)])
        last = launches[i + len(run)] if i + len(run) < len(launches) else {"kernel": ""}
        good &= last["kernel"].startswith("tg_rowc_")
        if not good:
            break
        run.append(last)
        p = run[0]["params"][-1]
        good &= all(s["params"][-1] == p for s in run)
        good &= p["buffer"] == "arena" and p["offset"] % 256 == 0
        good &= p["offset"] + p["bytes"] <= arena
        good &= all(apart(p, o) for s in run for o in s["params"][:-1])
        good &= all(s["grid"][1] == run[0]["grid"][1] for s in run)
        blocks = max(blocks, run[0]["grid"][0])
        phases = max(phases, len(run) - 1)
        i += len(run)
    print("split rows: %d, most blocks per row %d, most statistics launches %d, %s" % (
        runs, blocks, phases,
        "scratch shared and planned" if good else "BROKEN"))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
