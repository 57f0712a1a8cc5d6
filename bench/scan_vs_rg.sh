#!/usr/bin/env bash
# Side by side on one RAM image: `extmem scan --hex` against ripgrep and GNU
# grep searching the same bytes, and `extmem scan --hex --page-offset` against
# the equivalent ripgrep search (every match with its byte offset, kept when
# the offset lies at that place in its page). Not a test: it prints medians.
#
#   bash bench/scan_vs_rg.sh [SIZE_MIB] [RUNS]     (defaults 4096 and 5)
#
# Needs a built tree (build/extmem, build/tests/programs/memtools_ram_image;
# EXTMEM_BUILD_DIR=DIR for another build folder),
# ripgrep (`apt-get install ripgrep`; not a project dependency; RG=PATH for a
# copy elsewhere, e.g. one carried to a machine without it: ripgrep 13 needs
# libpcre2-8.so.0 beside it or installed) and python3.
# The image is the 8 MiB synthetic image of the scan tests repeated up to
# SIZE_MIB (noise and zero pages, the 6-byte pattern at page offset 0x59c three
# times per 8 MiB and twice elsewhere); it is written to $TMPDIR (default
# /tmp), read once to be in the page cache for every command, and deleted at exit.
# EXTMEM_BASELINE=PATH adds a row for another extmem binary's --page-offset
# (e.g. one built from the commit before a change), run in the same rounds, for
# an A/B ratio measured side by side. Two more rows time this binary's
# --page-offset with each of its reads forced (EXTMEM_PAGE_OFFSET_READ=copy:
# preadv of whole pages; =each: one pread per page; src/memtools/page_offset_scan.h;
# =map: the file mapped, its pages entered and dropped per piece by each thread),
# so one run on a machine shows which suits its core count.
# Columns: wall-clock median/min/max, GiB/s from the median, and the median CPU
# seconds (user + system, all threads; extmem maps pages on helper threads, so
# on a loaded machine its wall time depends on getting a second core).
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib="${1:-4096}"
runs="${2:-5}"
build="${EXTMEM_BUILD_DIR:-build}"
extmem="$build/extmem"
generator="$build/tests/programs/memtools_ram_image"
for tool in "$extmem" "$generator"; do
  [[ -x $tool ]] || { echo "scan_vs_rg: $tool is missing: build first (cmake --build --preset default)" >&2; exit 2; }
done
rg="${RG:-rg}"
command -v "$rg" >/dev/null || { echo "scan_vs_rg: ripgrep ($rg) is not installed: apt-get install ripgrep, or RG=PATH" >&2; exit 2; }
(( size_mib % 8 == 0 && size_mib >= 8 )) || { echo "scan_vs_rg: SIZE_MIB must be a multiple of 8" >&2; exit 2; }

tmp="${TMPDIR:-/tmp}"
need_kib=$(( size_mib * 1024 + 65536 ))
avail_kib=$(df -Pk "$tmp" | awk 'NR == 2 { print $4 }')
if (( avail_kib < need_kib )); then
  echo "scan_vs_rg: $tmp has $(( avail_kib / 1024 )) MiB free, $size_mib MiB image needs more: give a smaller SIZE_MIB" >&2
  exit 2
fi
work=$(mktemp -d "$tmp/scan-vs-rg.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$generator" "$work/tile.img" >/dev/null
for (( i = 0; i < size_mib / 8; i++ )); do cat "$work/tile.img"; done >"$work/ram.img"
rm -f "$work/tile.img"
printf '\xb1\x7e\x55\xed\xc0\xde' >"$work/pattern"  # for GNU grep -F -f
# ripgrep refuses a pattern file that is not UTF-8; the same bytes as a regex of escapes:
rg_pattern='(?-u)\xb1\x7e\x55\xed\xc0\xde'
cat "$work/ram.img" >/dev/null  # into the page cache

# median_seconds CMD...: runs CMD once to warm up, then RUNS times; prints the median wall time.
median_seconds() {
  "$@" >/dev/null 2>&1 || true
  python3 - "$runs" "$@" <<'EOF'
import os, statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
walls, cpus = [], []
for _ in range(runs):
    t = time.monotonic()
    # Output into a pipe, never /dev/null: GNU grep stops at the first match
    # when it sees its output is /dev/null.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdout.read()
    _, _, usage = os.wait4(p.pid, 0)
    walls.append(time.monotonic() - t)
    cpus.append(usage.ru_utime + usage.ru_stime)  # all threads, and the children a shell waited for
print(f"{statistics.median(walls):.3f} {min(walls):.3f} {max(walls):.3f} {statistics.median(cpus):.3f}")
EOF
}

# Each pair: a label and a command. The counts are checked to agree before timing.
img="$work/ram.img"
rg_page_offset="$rg -a -o -b --no-line-number '$rg_pattern' $img | LC_ALL=C awk -F: '\$1 % 4096 == 1436' | wc -l"
declare -a labels=(
  "extmem scan --hex"
  "rg -c -a"
  "GNU grep -c -a -F"
  "extmem scan --hex --page-offset=0x59c"
  "rg -o -b | awk offset%4096==0x59c"
)
declare -a commands=(
  "$extmem scan $img --hex=b17e55edc0de"
  "$rg -c -a '$rg_pattern' $img"
  "env LC_ALL=C grep -c -a -F -f $work/pattern $img"
  "$extmem scan $img --hex=b17e55edc0de --page-offset=0x59c"
  "sh -c \"$rg_page_offset\""
)

labels+=("extmem --page-offset, read=copy" "extmem --page-offset, read=each" "extmem --page-offset, read=map")
commands+=("env EXTMEM_PAGE_OFFSET_READ=copy $extmem scan $img --hex=b17e55edc0de --page-offset=0x59c"
           "env EXTMEM_PAGE_OFFSET_READ=each $extmem scan $img --hex=b17e55edc0de --page-offset=0x59c"
           "env EXTMEM_PAGE_OFFSET_READ=map $extmem scan $img --hex=b17e55edc0de --page-offset=0x59c")
if [[ -n ${EXTMEM_BASELINE:-} ]]; then
  [[ -x $EXTMEM_BASELINE ]] || { echo "scan_vs_rg: EXTMEM_BASELINE=$EXTMEM_BASELINE is not executable" >&2; exit 2; }
  labels+=("baseline extmem --page-offset=0x59c")
  commands+=("$EXTMEM_BASELINE scan $img --hex=b17e55edc0de --page-offset=0x59c")
fi
echo "image: $size_mib MiB in $tmp; $runs runs each after one warm-up; $(nproc) cores; $(uname -r)"
echo "read forms: copy $(env EXTMEM_PAGE_OFFSET_READ=copy "$extmem" scan "$img" --hex=b17e55edc0de --page-offset=0x59c 2>/dev/null | wc -l) hits," \
     "each $(env EXTMEM_PAGE_OFFSET_READ=each "$extmem" scan "$img" --hex=b17e55edc0de --page-offset=0x59c 2>/dev/null | wc -l) hits," \
     "map $(env EXTMEM_PAGE_OFFSET_READ=map "$extmem" scan "$img" --hex=b17e55edc0de --page-offset=0x59c 2>/dev/null | wc -l) hits"
echo "counts: extmem --hex $($extmem scan "$img" --hex=b17e55edc0de 2>/dev/null | wc -l) hits," \
     "rg -c $("$rg" -c -a "$rg_pattern" "$img") lines," \
     "grep -c $(LC_ALL=C grep -c -a -F -f "$work/pattern" "$img") lines," \
     "extmem --page-offset $($extmem scan "$img" --hex=b17e55edc0de --page-offset=0x59c 2>/dev/null | wc -l) hits," \
     "rg -o -b + awk $(sh -c "$rg_page_offset")"
printf '%-42s %9s %9s %9s %9s %9s\n' "command" "median_s" "min_s" "max_s" "GiB/s" "cpu_s"
declare -a medians=()
for i in "${!labels[@]}"; do
  # shellcheck disable=SC2086
  read -r med lo hi cpu < <(eval median_seconds ${commands[$i]})
  medians+=("$med")
  printf '%-42s %9s %9s %9s %9.2f %9s\n' "${labels[$i]}" "$med" "$lo" "$hi" "$(python3 -c "print($size_mib / 1024 / $med)")" "$cpu"
done
python3 - "${medians[@]}" <<'EOF'
import sys
m = [float(x) for x in sys.argv[1:]]
print(f"extmem --hex vs rg: {m[1] / m[0]:.2f}x; vs GNU grep: {m[2] / m[0]:.2f}x; "
      f"--page-offset vs rg + offset filter: {m[4] / m[3]:.1f}x")
print(f"--page-offset vs rg + offset filter, read forced: copy {m[4] / m[5]:.1f}x, each {m[4] / m[6]:.1f}x, map {m[4] / m[7]:.1f}x")
if len(m) > 8:
    print(f"--page-offset, baseline binary / this one: {m[8] / m[3]:.2f}x; baseline vs rg + offset filter: {m[4] / m[8]:.1f}x")
EOF
