#!/usr/bin/env bash
# Side by side on one image: `extmem scan --twins` against two full reads of
# the same bytes, GNU grep -c for a pattern that is not there (a byte-search
# floor) and `extmem scan --hex` for the same absent pattern. Not a test: it
# prints medians, interleaved run by run so the machine's load falls alike.
#
#   bash bench/twins_rate.sh [SIZE_MIB] [RUNS]     (defaults 4096 and 5)
#
# The image is the 8 MiB synthetic image of the scan tests repeated to
# SIZE_MIB (so most pages have hundreds of twins), in $TMPDIR (default /tmp),
# page-cached, deleted at exit. Needs a built tree (EXTMEM_BUILD_DIR=DIR for
# another build folder) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib="${1:-4096}"
runs="${2:-5}"
build="${EXTMEM_BUILD_DIR:-build}"
for tool in "$build/extmem" "$build/tests/programs/memtools_ram_image"; do
  [[ -x $tool ]] || { echo "twins_rate: $tool is missing: build first" >&2; exit 2; }
done
(( size_mib % 8 == 0 && size_mib >= 8 )) || { echo "twins_rate: SIZE_MIB must be a multiple of 8" >&2; exit 2; }
tmp="${TMPDIR:-/tmp}"
avail_kib=$(df -Pk "$tmp" | awk 'NR == 2 { print $4 }')
(( avail_kib > size_mib * 1024 + 65536 )) || { echo "twins_rate: $tmp has too little room for $size_mib MiB" >&2; exit 2; }
work=$(mktemp -d "$tmp/twins-rate.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/tests/programs/memtools_ram_image" "$work/tile.img" >/dev/null
for (( i = 0; i < size_mib / 8; i++ )); do cat "$work/tile.img"; done >"$work/ram.img"
rm -f "$work/tile.img"
cat "$work/ram.img" >/dev/null
printf '\x01\x02\x03\x04\x05\x06\x07\xf8' >"$work/absent"
python3 - "$runs" "$size_mib" "$build/extmem" "$work/ram.img" "$work/absent" <<'PY'
import os, statistics, subprocess, sys, time
runs, mib, extmem, img, absent = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = {
    "extmem scan --twins": [extmem, "scan", img, "--twins"],
    "extmem scan --hex (absent 8 bytes)": [extmem, "scan", img, "--hex=01020304050607f8"],
    "GNU grep -c -a -F (absent 8 bytes)": ["env", "LC_ALL=C", "grep", "-c", "-a", "-F", "-f", absent, img],
}
walls = {k: [] for k in rows}
cpus = {k: [] for k in rows}
for _ in range(runs + 1):
    for k, cmd in rows.items():
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        p.stdout.read()
        _, _, u = os.wait4(p.pid, 0)
        walls[k].append(time.monotonic() - t)
        cpus[k].append(u.ru_utime + u.ru_stime)
print(f"image: {mib} MiB; {runs} runs each after one warm-up, interleaved; {os.cpu_count()} cores")
print(f"{'command':40} {'median_s':>9} {'GB/s':>7} {'cpu_s':>7}")
med = {}
for k in rows:
    w, c = walls[k][1:], cpus[k][1:]
    med[k] = statistics.median(w)
    print(f"{k:40} {med[k]:9.3f} {mib * 1048576 / 1e9 / med[k]:7.2f} {statistics.median(c):7.3f}")
t = med["extmem scan --twins"]
print(f"--twins vs grep -c (absent): {med['GNU grep -c -a -F (absent 8 bytes)'] / t:.2f}x; "
      f"vs scan --hex (absent): {med['extmem scan --hex (absent 8 bytes)'] / t:.2f}x")
PY
