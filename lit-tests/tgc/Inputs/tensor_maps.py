"""Prints the TMA descriptors of a .tgx artifact's GPU schedule.

Usage: tensor_maps.py MODEL.tgx TARGET

One line per distinct (kernel, parameter, map), in schedule order, then a
summary that checks each map against its buffer: the bytes the map spans
(dims and strides, innermost first) equal the parameter's bytes, so a map
covers exactly the operand it was generated for.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "scripts"))
from tgx import sections, steps  # noqa: E402


ELEM = {"bf16": 2, "f16": 2, "f32": 4}


def main():
    manifest = json.loads(sections(sys.argv[1])["manifest"])
    schedule = manifest["gpu"]["schedules"][sys.argv[2]]
    seen, maps, exact = set(), 0, 0
    for entry in schedule["entries"].values():
        for s in steps(entry["steps"]):
            for i, p in enumerate(s.get("params", [])):
                m = p.get("tensor_map")
                if m is None:
                    continue
                maps += 1
                span = m["dims"][0] * ELEM[m["dtype"]] + sum(
                    (d - 1) * st for d, st in zip(m["dims"][1:], m["strides"]))
                exact += span == p["bytes"]
                key = (s["kernel"], i, json.dumps(m, sort_keys=True))
                if key in seen:
                    continue
                seen.add(key)
                print("%s #%d %s dims %s strides %s box %s element_strides %s "
                      "interleave %s swizzle %s l2 %s fill %s" % (
                          s["kernel"].rsplit("_", 1)[0], i, m["dtype"], m["dims"],
                          m["strides"], m["box"], m["element_strides"],
                          m["interleave"], m["swizzle"], m["l2_promotion"],
                          m["oob_fill"]))
    print("maps: %d, %d spanning their buffer exactly" % (maps, exact))


if __name__ == "__main__":
    main()
