#!/usr/bin/env python3
"""Compares two `extmem probe --json` documents row by row: status, why, code id,
the trace, and every leg's name, decisive, attempted, write_ok, read_ok, value,
failed step and code. Timings, details, measure figures and hygiene are not
compared (they vary run to run). Prints one line per row and every difference;
exit 0 when the rows are equal, 1 when any differs, 2 on bad input.

Usage: scripts/compare-rows.py BEFORE.json AFTER.json"""
import json
import sys

LEG_KEYS = ("name", "decisive", "attempted", "write_ok", "read_ok", "value", "failed_step", "code")


def rows(path):
    try:
        with open(path) as f:
            doc = json.load(f)
        return {r["row"]: r for r in doc["rows"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"compare-rows: {path}: not a probe JSON document ({e})")


def view(r):
    code = (r.get("code") or {}).get("id")
    legs = [tuple(l.get(k) for k in LEG_KEYS) for l in r.get("legs", [])]
    return {"status": r.get("status"), "why": r.get("why"), "code": code, "trace": r.get("trace"), "legs": legs}


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    a, b = rows(sys.argv[1]), rows(sys.argv[2])
    differ = 0
    for name in list(a) + [n for n in b if n not in a]:
        if name not in a or name not in b:
            print(f"{name}: only in {'AFTER' if name in b else 'BEFORE'}")
            differ += 1
            continue
        va, vb = view(a[name]), view(b[name])
        if va == vb:
            print(f"{name}: equal ({va['status']})")
            continue
        differ += 1
        for k in va:
            if va[k] != vb[k]:
                print(f"{name}: {k} differs:\n  before: {va[k]}\n  after:  {vb[k]}")
    total = len(set(a) | set(b))
    print(f"{total - differ} of {total} rows equal")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
