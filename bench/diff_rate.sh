#!/usr/bin/env bash
# Side by side: `extmem diff` of one 1 GiB mapping of a live process
# (tests/programs/memtools_ticker MIB: a shared memfd, one word changing every
# 50 ms) against the floor, two plain reads of the same bytes of
# /proc/PID/mem with dd. Not a test: it prints medians.
#
#   bash bench/diff_rate.sh [MIB] [RUNS]     (defaults 1024 and 5)
#
# Rows: "diff" is a whole run (first snapshot into a fresh baseline, 1 ms,
# second snapshot and compare); "diff per --watch round" is the difference
# between --rounds=5 and --rounds=1, over 4 (a round of a longer watch: read
# and compare, the baseline already in place); "dd x2" reads the bytes twice
# and compares nothing. Rates are MIB of mappings per second of wall time.
# Needs a built tree (build/extmem and build/tests/programs/memtools_ticker;
# EXTMEM_BUILD_DIR=DIR for another) and python3. EXTMEM_BASELINE=PATH adds a
# row for another extmem binary's whole run (e.g. one built from the commit
# before a change), in the same interleaved rounds, and the A/B ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
mib="${1:-1024}"
runs="${2:-5}"
build="${EXTMEM_BUILD_DIR:-build}"
for tool in "$build/extmem" "$build/tests/programs/memtools_ticker"; do
  [[ -x $tool ]] || { echo "diff_rate: $tool is missing: build first" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/diff-rate.XXXXXX")
"$build/tests/programs/memtools_ticker" "$mib" 1800 >"$work/where" &
ticker=$!
trap 'kill $ticker 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [[ -s $work/where ]] && break; sleep 0.1; done
start=$(python3 -c "import json,sys; print(int(json.load(open(sys.argv[1]))['start'], 16))" "$work/where")
diff_cmd=("$build/extmem" diff "--pid=$ticker" "--match=path^=/memfd:extmem-ticker" --interval=1ms
          "--max-bytes=$(( mib * 2 ))M" --watch)
if [[ -n ${EXTMEM_BASELINE:-} ]]; then
  [[ -x $EXTMEM_BASELINE ]] || { echo "diff_rate: EXTMEM_BASELINE=$EXTMEM_BASELINE is not executable" >&2; exit 2; }
fi
python3 - "$runs" "$mib" "$ticker" "$start" "${EXTMEM_BASELINE:-}" "${diff_cmd[@]}" <<'PY'
import os, statistics, subprocess, sys, time
runs, mib, pid, start, baseline, cmd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6:]
base_cmd = [baseline] + cmd[1:] if baseline else None
cpu = {}  # row -> CPU seconds (user + system, all threads and children) per run
def wall(c, row=None):
    t = time.monotonic()
    p = subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"diff_rate: {c[0]} failed (wait status {status})")
    if row:
        cpu.setdefault(row, []).append(usage.ru_utime + usage.ru_stime)
    return time.monotonic() - t
dd = ["sh", "-c", f"for i in 1 2; do dd if=/proc/{pid}/mem bs=4M iflag=skip_bytes,count_bytes skip={start} "
      f"count={mib << 20} of=/dev/null status=none; done"]
one, five, floor, base = [], [], [], []
wall(cmd + ["--rounds=1"])  # warm-up
for _ in range(runs):  # interleaved, so the machine's load falls on every row alike
    one.append(wall(cmd + ["--rounds=1"], "one"))
    five.append(wall(cmd + ["--rounds=5"], "five"))
    floor.append(wall(dd, "dd"))
    if base_cmd:
        base.append(wall(base_cmd + ["--rounds=1"], "base"))
d1, d5, f = statistics.median(one), statistics.median(five), statistics.median(floor)
per_round = max(1e-9, (d5 - d1) / 4)
c = {k: statistics.median(v) for k, v in cpu.items()}
print(f"{mib} MiB mapping, {runs} runs each, medians; {os.cpu_count()} cores; last column CPU seconds")
print(f"{'diff (two snapshots, fresh baseline)':42} {d1:7.3f} s {mib / 1024 / d1:6.2f} GiB/s {c['one']:7.3f}")
print(f"{'diff per --watch round':42} {per_round:7.3f} s {mib / 1024 / per_round:6.2f} GiB/s {(c['five'] - c['one']) / 4:7.3f}")
print(f"{'dd x2 of /proc/PID/mem (read only)':42} {f:7.3f} s {mib / 1024 / f:6.2f} GiB/s {c['dd']:7.3f}")
if base:
    b = statistics.median(base)
    print(f"{'baseline diff (two snapshots)':42} {b:7.3f} s {mib / 1024 / b:6.2f} GiB/s {c['base']:7.3f}")
    print(f"baseline / this binary, whole run: {b / d1:.2f}x wall, {c['base'] / c['one']:.2f}x CPU")
print(f"diff / dd x2 wall-time ratio: {d1 / f:.2f} (1.00 would be the cost of reading alone)")
PY
