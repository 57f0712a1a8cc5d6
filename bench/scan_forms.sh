#!/usr/bin/env bash
# Every `extmem scan` form against GNU grep -c -a -F and a read-bandwidth
# floor on one RAM image, side by side: each round runs every row once, in
# turn, so the machine's load falls alike on all of them; medians, ranges and
# ratios. Not a test.
#
#   bash bench/scan_forms.sh [SIZE_MIB] [RUNS]     (defaults 2048 and 5)
#
# The image is the 8 MiB synthetic image of the scan tests repeated up to
# SIZE_MIB (bench/scan_vs_rg.sh describes it), written to $TMPDIR (default
# /tmp; /dev/shm keeps it in memory), page-cached, deleted at exit.
# EXTMEM_BASELINE=PATH adds each form run by another extmem binary (the
# commit before a change, say), in the same rounds: before/after ratios.
# Rows:
#   read floor, 1 thread   dd bs=128K of the whole image to /dev/null: what a
#                          reader like grep pays to get the bytes, searching nothing
#   read floor, N threads  the same split in N parts read at once (N = cores):
#                          the machine's read bandwidth, the floor for a search on every core
#   GNU grep -c -a -F      the 6-byte pattern of --hex below (the target: every
#                          form at least as fast)
#   extmem forms           --hex, --u16, --u32, --u64, --record, --entropy, --twins
# The outputs of each form are compared, byte for byte, with the baseline's
# when EXTMEM_BASELINE is given (a mismatch ends the script: exit 1).
# Columns: wall-clock median/min/max, GiB/s from the median, median CPU
# seconds (user + system, all threads), x grep (GiB/s over grep's: >= 1 is
# at least as fast), % floor (GiB/s over the faster read floor's); a last
# line checks issue #33's targets (every form >= 1.0x grep, --u32 >= 50 %).
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib="${1:-2048}"
runs="${2:-5}"
build="${EXTMEM_BUILD_DIR:-build}"
extmem="$build/extmem"
generator="$build/tests/programs/memtools_ram_image"
for tool in "$extmem" "$generator"; do
  [[ -x $tool ]] || { echo "scan_forms: $tool is missing: build first (cmake --build --preset default)" >&2; exit 2; }
done
(( size_mib % 8 == 0 && size_mib >= 8 )) || { echo "scan_forms: SIZE_MIB must be a multiple of 8" >&2; exit 2; }
baseline="${EXTMEM_BASELINE:-}"
[[ -z $baseline || -x $baseline ]] || { echo "scan_forms: EXTMEM_BASELINE=$baseline is not executable" >&2; exit 2; }
tmp="${TMPDIR:-/tmp}"
avail_kib=$(df -Pk "$tmp" | awk 'NR == 2 { print $4 }')
(( avail_kib > size_mib * 1024 + 65536 )) || { echo "scan_forms: $tmp has too little room for $size_mib MiB" >&2; exit 2; }
work=$(mktemp -d "$tmp/scan-forms.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$generator" "$work/tile.img" >/dev/null
for (( i = 0; i < size_mib / 8; i++ )); do cat "$work/tile.img"; done >"$work/ram.img"
rm -f "$work/tile.img"
printf '\xb1\x7e\x55\xed\xc0\xde' >"$work/pattern"
cat "$work/ram.img" >/dev/null
img="$work/ram.img"
cores=$(nproc)
bytes=$(( size_mib << 20 ))
part=$(( (bytes / cores + 131071) / 131072 * 131072 ))
floor_n="for (( k = 0; k < $cores; k++ )); do dd if=$img of=/dev/null bs=128K iflag=skip_bytes,count_bytes skip=\$(( k * $part )) count=$part status=none & done; wait"

declare -a forms=(
  "--hex=b17e55edc0de"
  "--u16=0xdec0"
  "--u32=0xedc0de55"
  "--u64=0x7f00cafe0000"
  "--record=va@-0x18:u64 size@-0x10:u64 zero@-0x8:u64=0 marker@0:u32=0x7461696c"
  "--entropy=4.5"
  "--twins"
)
python3 - "$runs" "$size_mib" "$img" "$extmem" "$baseline" "$work/pattern" "$floor_n" "$cores" "${forms[@]}" <<'PY'
import hashlib, os, statistics, subprocess, sys, time
runs, mib, img, extmem, baseline, pattern, floor_n, cores = sys.argv[1:9]
runs, mib, cores = int(runs), int(mib), int(cores)
forms = sys.argv[9:]
rows = [("read floor, 1 thread (dd bs=128K)", ["dd", f"if={img}", "of=/dev/null", "bs=128K", "status=none"]),
        (f"read floor, {cores} threads", ["bash", "-c", floor_n]),
        ("GNU grep -c -a -F", ["env", "LC_ALL=C", "grep", "-c", "-a", "-F", "-f", pattern, img])]
for f in forms:
    rows.append((f"extmem {f.split('=')[0]}", [extmem, "scan", img, f]))
    if baseline:
        rows.append((f"  baseline {f.split('=')[0]}", [baseline, "scan", img, f]))

def run(cmd):
    t = time.monotonic()
    # Output into a pipe, never /dev/null: GNU grep stops at the first match
    # when it sees its output is /dev/null.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    wall = time.monotonic() - t
    return wall, out, err

# Outputs: every form's stdout and summary line, compared with the baseline's.
print(f"image: {mib} MiB in {os.path.dirname(img)}; {runs} rounds after one warm-up; {cores} cores; {os.uname().release}")
outputs = {}
for label, cmd in rows:
    _, out, err = run(cmd)
    outputs[label] = (out, err)
    if label.startswith("extmem"):
        hits = out.count(b"\n")
        print(f"  {label:<26} {hits:>7} lines, sha256 {hashlib.sha256(out).hexdigest()[:16]}; {err.decode().strip().splitlines()[-1]}")
    elif label.startswith("GNU"):
        print(f"  {label:<26} {out.decode().strip()} lines")
mismatch = False
if baseline:
    for f in forms:
        name = f.split('=')[0]
        a, b = outputs[f"extmem {name}"], outputs[f"  baseline {name}"]
        if a != b:
            mismatch = True
            print(f"  MISMATCH: {name}: stdout {'same' if a[0] == b[0] else 'differs'}, stderr {'same' if a[1] == b[1] else 'differs'}")
    print("  outputs: " + ("DIFFER from the baseline" if mismatch else "identical to the baseline's, byte for byte (stdout and stderr)"))

walls = {label: [] for label, _ in rows}
cpus = {label: [] for label, _ in rows}
for rnd in range(runs):
    print(f"  round {rnd + 1} of {runs}", file=sys.stderr, flush=True)
    for label, cmd in rows:
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        while p.stdout.read(1 << 20):
            pass
        _, _, usage = os.wait4(p.pid, 0)
        walls[label].append(time.monotonic() - t)
        cpus[label].append(usage.ru_utime + usage.ru_stime)
gib = mib / 1024
med = {k: statistics.median(v) for k, v in walls.items()}
grep = med["GNU grep -c -a -F"]
floor = min(med["read floor, 1 thread (dd bs=128K)"], med[f"read floor, {cores} threads"])
print(f"{'row':<36} {'median_s':>8} {'min_s':>7} {'max_s':>7} {'GiB/s':>6} {'cpu_s':>6} {'x grep':>7} {'% floor':>8}")
for label, _ in rows:
    w = walls[label]
    print(f"{label:<36} {med[label]:8.3f} {min(w):7.3f} {max(w):7.3f} {gib / med[label]:6.2f} {statistics.median(cpus[label]):6.2f}"
          f" {grep / med[label]:7.2f} {100 * floor / med[label]:7.0f}%")
# Issue #33's targets, from this run's medians.
below = [f.split('=')[0] for f in forms if grep / med[f"extmem {f.split('=')[0]}"] < 1.0]
u32 = 100 * floor / med["extmem --u32"] if "extmem --u32" in med else float("nan")
print(f"targets: {len(forms) - len(below)} of {len(forms)} forms at >= 1.0x grep"
      + (f" (below: {', '.join(below)})" if below else "") + f"; --u32 at {u32:.0f}% of the read floor (target 50%)")
if baseline:
    print("after / before (baseline median over this one's):")
    for f in forms:
        name = f.split('=')[0]
        print(f"  {name:<10} {med[f'  baseline {name}'] / med[f'extmem {name}']:6.2f}x")
sys.exit(1 if mismatch else 0)
PY
