#!/usr/bin/env bash
# The probe-engine measurements on the NVIDIA GPU machine, in one go (no package
# registry there). Expects, in the repository root: .gl/*.deb (see nvidia-run.sh)
# and .devbuild/ with extmem-base (built from the reference commit), extmem-new
# (the build under test), both stripped, and libfmt.so.9. Writes its results under
# $OUT (or ./nvidia-bench-out): A/B timings (bench/probe_ab.py), --jobs sweep, the
# JSON of both engine modes with their row-by-row comparison, EXTMEM_PROBE_TRACE
# traces of a default and a seven-row run (where the time goes), and a watch plot.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/nvidia-bench-out}"
mkdir -p "$out"
source scripts/nvidia-env.sh
base=.devbuild/extmem-base new=.devbuild/extmem-new
seven=--only=T1-opaque-fd,T1-dma-buf,T1-gles-memobj-fd-same-proc,T1-gles-memobj-fd-cross-proc,T3-memfd-cross-process,T3-external-memory-host,T3-client-memfd-server-import
{
  nproc; "$new" --version
  "$new" probe --json="$out/new.json" > "$out/new-default.txt" 2>&1; echo "new default exit $?"
  "$new" probe --isolate=route --json="$out/isolate.json" > /dev/null 2>&1; echo "new isolate exit $?"
  "$base" probe > /dev/null 2>&1; echo "base default exit $?"
  python3 bench/probe_ab.py --a "$base" --b "$new" --runs 9
  python3 bench/probe_ab.py --a "$base" --b "$new" --runs 9 -- "$seven"
  python3 bench/probe_ab.py --a "$new" --b "$new" --runs 5 -- --jobs=2
  # One file for both traces (the trace appends): the device tool brings back at most 8 files.
  echo "# default run" > "$out/traces.txt"
  EXTMEM_PROBE_TRACE="$out/traces.txt" "$new" probe > /dev/null 2>&1; echo "traced default exit $?"
  echo "# the seven rows" >> "$out/traces.txt"
  EXTMEM_PROBE_TRACE="$out/traces.txt" "$new" probe "$seven" > /dev/null 2>&1; echo "traced seven rows exit $?"
  "$new" watch --period=10ms --summary="$out/watch-default.json" --plot="$out/watch-default" -- "$new" probe > /dev/null 2>&1
  "$new" watch --period=10ms --summary="$out/watch-base.json" -- "$base" probe > /dev/null 2>&1
  python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def rows(p):
    return {r["row"]: (r["status"], r["why"], [(l["name"], l["value"], l["failed_step"], l["code"]) for l in r["legs"]]) for r in json.load(open(p))["rows"]}
a, b = rows(f"{out}/new.json"), rows(f"{out}/isolate.json")
for k in a:
    print(("same " if a[k] == b.get(k) else "DIFF ") + k, a[k][0], "" if a[k] == b.get(k) else f"{a[k]} vs {b.get(k)}")
for name in ("watch-default", "watch-base"):
    d = json.load(open(f"{out}/{name}.json"))
    print(name, "tree peak RSS KiB", d["tree"]["peak_rss_kib"], "processes", len(d["processes"]))
PY
} 2>&1 | tee "$out/summary.txt"
