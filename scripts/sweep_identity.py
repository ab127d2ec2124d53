#!/usr/bin/env python3
"""Check that two mbsim builds predict the same numbers.

usage: sweep_identity.py REF_MBSIM NEW_MBSIM [--rel 1e-9] [--sweep-rel 1e-6] [--validate CSV] GRID.yaml...

Runs `mbsim sweep GRID -j 1 --json` with both binaries and compares every
row: statuses, reasons and strings exactly, numbers to a relative tolerance
(--sweep-rel, default 1e-6: sweep rows carry the 6 significant digits the TSV
prints, so a row reads back from a TSV as it was written). With --validate it also runs `mbsim validate CSV
--json` on both and compares every number of the report the same way (the
per-row predictions included). Prints one line per comparison and the largest
relative difference; exit status 1 when anything differs beyond the tolerance.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run_json(mbsim, args, path):
    with open(path, "w") as out:
        subprocess.run([mbsim] + args, stdout=out, stderr=subprocess.DEVNULL, check=True)
    with open(path) as f:
        return json.load(f)


def compare(a, b, rel, where, diffs, worst):
    """Walk two JSON values; append mismatches to diffs, track the largest relative difference."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        if type(a) is not type(b):
            diffs.append(f"{where}: {a!r} != {b!r}")
        elif isinstance(a, dict):
            if a.keys() != b.keys():
                diffs.append(f"{where}: keys {sorted(a)} != {sorted(b)}")
            for k in a.keys() & b.keys():
                compare(a[k], b[k], rel, f"{where}.{k}", diffs, worst)
        elif isinstance(a, list):
            if len(a) != len(b):
                diffs.append(f"{where}: {len(a)} items != {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                compare(x, y, rel, f"{where}[{i}]", diffs, worst)
        elif a != b:
            diffs.append(f"{where}: {a!r} != {b!r}")
        return
    d = abs(a - b) / max(abs(a), abs(b), 1e-300) if a != b else 0.0
    if d > worst[0]:
        worst[0], worst[1] = d, where
    if d > rel:
        diffs.append(f"{where}: {a!r} != {b!r} (rel {d:.3g})")


def report(name, a, b, rel):
    diffs, worst = [], [0.0, ""]
    compare(a, b, rel, name, diffs, worst)
    print(f"{name}: {'identical' if not diffs else f'{len(diffs)} differences'}"
          f" (largest relative difference {worst[0]:.3g}{' at ' + worst[1] if worst[1] else ''})")
    for d in diffs[:20]:
        print("  " + d)
    return not diffs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("new")
    ap.add_argument("grids", nargs="*")
    ap.add_argument("--rel", type=float, default=1e-9)
    ap.add_argument("--sweep-rel", type=float, default=1e-6)
    ap.add_argument("--validate")
    o = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for g in o.grids:
            args = ["sweep", g, "-j", "1", "--json", "-"]
            a = run_json(o.ref, args, os.path.join(tmp, "a.json"))
            b = run_json(o.new, args, os.path.join(tmp, "b.json"))
            ok &= report(os.path.basename(g), a["rows"], b["rows"], o.sweep_rel)
            ok &= report(os.path.basename(g) + " ranking", [a["top"], a["pareto"]], [b["top"], b["pareto"]], 0)
        if o.validate:
            args = ["validate", o.validate, "--json"]
            a = run_json(o.ref, args, os.path.join(tmp, "a.json"))
            b = run_json(o.new, args, os.path.join(tmp, "b.json"))
            ok &= report("validate", a, b, o.rel)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
