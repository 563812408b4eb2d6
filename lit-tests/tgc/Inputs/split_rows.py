"""Summarises the rows split over blocks of a .tgx artifact's GPU schedule.

Usage: split_rows.py MODEL.tgx TARGET ENTRY

A row reduction split over blocks (docs/nvptx.md, "Long rows over several
blocks") is a run of statistics launches tg_rowp0_*, tg_rowp1_*, ... and
the output launch tg_rowc_*, each with blocks (slice, row) and the op's
scratch as its last parameter: the same arena bytes, 256-byte aligned,
after every other arena buffer of the entry and inside its arena_bytes.
Prints how many there are, the most blocks per row and statistics
launches of one, and whether every run keeps those rules.
"""
import sys

from tensor_maps import sections, steps
import json


def main():
    manifest = json.loads(sections(sys.argv[1])["manifest"])
    entry = manifest["gpu"]["schedules"][sys.argv[2]]["entries"][sys.argv[3]]
    launches = [s for s in steps(entry["steps"]) if s.get("op") == "launch"]
    arena = entry["arena_bytes"]
    # Every launch with scratch (split rows, split reductions) has it last.
    split = lambda s: s["kernel"].startswith(
        ("tg_rowp", "tg_rowc_", "tg_redp_", "tg_redc_"))
    scratch = {id(s["params"][-1]) for s in launches if split(s)}
    planned_end = max([p["offset"] + p["bytes"] for s in launches
                       for p in s["params"]
                       if p["buffer"] == "arena" and id(p) not in scratch] + [0])
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
        good &= p["offset"] >= planned_end and p["offset"] + p["bytes"] <= arena
        good &= all(s["grid"][1] == run[0]["grid"][1] for s in run)
        blocks = max(blocks, run[0]["grid"][0])
        phases = max(phases, len(run) - 1)
        i += len(run)
    print("split rows: %d, most blocks per row %d, most statistics launches %d, %s" % (
        runs, blocks, phases,
        "scratch shared and after the plan" if good else "BROKEN"))
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
