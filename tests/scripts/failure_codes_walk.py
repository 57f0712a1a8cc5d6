#!/usr/bin/env python3
"""Walks the failure-code table against the sources (docs/failure-codes.md).

Checks, each failing with what to do:
  1. docs/failure-codes.md is what `extmem probe --list-failure-codes` prints now.
  2. Every released code keeps its class, name and status (tests/data/failure_codes_released.tsv),
     and every code in the table is in that list.
  3. Every id the derivation names (by_id("EMnnn") in src/probe/failure_codes.cpp) is in the table.
  4. Every place under src/ that sets a non-OK fact of a row (.fatal/.unsupported/.skip = ...,
     RouteFacts{.fatal ...}, stop_row(...)) has a code: typed sites (stop_row's kind, a
     stop_kind or stop_basis in the same statement or the next) get theirs from the derivation; the rest
     get their status's generic code, which must be in the table, and their count per file
     may only fall (tests/data/failure_codes_untyped_sites.txt), so a new site must be typed.

Usage: failure_codes_walk.py SOURCE_DIR EXTMEM_BINARY   Exit 0: all hold; 1: one failed.
"""
import pathlib
import re
import subprocess
import sys

src_dir = pathlib.Path(sys.argv[1])
binary = sys.argv[2]
failures = []

# 1. the generated document is current
doc_path = src_dir / "docs/failure-codes.md"
generated = subprocess.run([binary, "probe", "--list-failure-codes"], capture_output=True, text=True, check=True).stdout
if not doc_path.exists() or doc_path.read_text() != generated:
    failures.append("docs/failure-codes.md is stale: regenerate it with\n"
                    "  build/extmem probe --list-failure-codes > docs/failure-codes.md")

table = {}
for line in generated.splitlines():
    m = re.match(r"^\| (EM\d{3}) \| (\w+) \| ([a-z0-9-]+) \| ([A-Za-z]+) \|", line)
    if m:
        table[m.group(1)] = (m.group(2), m.group(3), m.group(4))
if len(table) < 5:
    failures.append(f"the generated table has only {len(table)} codes: is --list-failure-codes broken?")

# 2. released codes never change meaning
released_path = src_dir / "tests/data/failure_codes_released.tsv"
released = {}
for line in released_path.read_text().splitlines():
    if line.startswith("#") or not line.strip():
        continue
    code, klass, name, status = line.split("\t")
    released[code] = (klass, name, status)
for code, meaning in released.items():
    if code not in table:
        failures.append(f"released code {code} {meaning} is gone from the table: codes are never removed")
    elif table[code] != meaning:
        failures.append(f"released code {code} changed meaning: was {meaning}, now {table[code]}; "
                        "give the new meaning a new code")
for code, meaning in table.items():
    if code not in released:
        failures.append(f"code {code} {meaning} is not in tests/data/failure_codes_released.tsv: "
                        "add it there (tab-separated: id, class, name, status) once it is final")

# 3. every id the derivation uses is in the table
derivation = (src_dir / "src/probe/failure_codes.cpp").read_text()
for code in sorted(set(re.findall(r'by_id\("(EM\d{3})"\)', derivation))):
    if code not in table:
        failures.append(f"src/probe/failure_codes.cpp derives {code}, which is not in the table")

# 4. every site that sets a non-OK fact has a code
generic = {"fatal": ("EM501", "FAIL"), "unsupported": ("EM302", "UNSUPPORTED"), "skip": ("EM103", "SKIP")}
for field, (code, status) in generic.items():
    if table.get(code, (None, None, None))[2] != status:
        failures.append(f"the generic code of a {field} site, {code}, is not a {status} code of the table")

site_re = re.compile(r"(?:\.|RouteFacts\{\s*\.)(fatal|unsupported|skip)\s*=(?!=)|\bstop_row\(")
untyped = {}
typed_count = 0
for path in sorted(src_dir.glob("src/**/*.cpp")) + sorted(src_dir.glob("src/**/*.h")):
    rel = str(path.relative_to(src_dir))
    if rel == "src/core/verdict.cpp":
        continue  # the definitions of stop_row() and decide() themselves
    text = path.read_text()
    for m in site_re.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].lstrip().startswith("//"):
            continue
        # The statement, and the one after it: a kind may be set on the next line.
        end = text.find(";", m.end()) + 1
        statement = text[m.start():text.find(";", end) + 1]
        if m.group(0).startswith("stop_row(") or "stop_kind" in statement or "stop_basis" in statement:
            typed_count += 1
        else:
            untyped[rel] = untyped.get(rel, 0) + 1

ratchet_path = src_dir / "tests/data/failure_codes_untyped_sites.txt"
allowed = {}
for line in ratchet_path.read_text().splitlines():
    if line.startswith("#") or not line.strip():
        continue
    rel, count = line.rsplit(" ", 1)
    allowed[rel] = int(count)
for rel in sorted(set(untyped) | set(allowed)):
    have, may = untyped.get(rel, 0), allowed.get(rel, 0)
    if have > may:
        failures.append(f"{rel}: {have} sites set a non-OK fact without a kind ({may} allowed): "
                        "use stop_row(facts, kind, why) or set stop_kind beside it")
    elif have < may:
        failures.append(f"{rel}: {have} untyped sites, the list allows {may}: lower it in "
                        "tests/data/failure_codes_untyped_sites.txt")

print(f"{len(table)} codes; {typed_count} typed sites; {sum(untyped.values())} untyped sites in "
      f"{len(untyped)} files (generic codes {', '.join(c for c, _ in generic.values())})")
for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)
