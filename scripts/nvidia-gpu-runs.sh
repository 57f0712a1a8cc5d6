#!/usr/bin/env bash
# The GPU runs of issue #34 on the NVIDIA machine, in one or two device calls
# (docs/results/nvidia-h200-580.md, "2026-12-05"). Expects, in the repository root:
# .gl/*.deb (the loaders, see scripts/nvidia-run.sh) and .devbuild/ with extmem-base
# (the reference build), extmem-new (the build under test), both stripped,
# whole_sweep_bench (bench/whole_sweep_bench.cpp), libfmt.so.9 and libbenchmark.so.1debian.
#   traces  default and 1 GiB runs of both builds, traced (EXTMEM_PROBE_TRACE); the S1
#           controls (nowait, nosignal) on the new build; the sweep bench at 1 GiB
#   ab      bench/probe_ab.py, 9 alternating runs: the default run and the seven original
#           rows, base against new; --jobs=2 against 1; the sweep bench on memory type 4
# Results go under $OUT (at most 8 files: the device tool brings back no more).
set -uo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
case "$mode" in traces | ab) ;; *) echo "usage: $0 traces|ab" >&2; exit 2 ;; esac
out="${OUT:-$PWD/nvidia-gpu-runs-out}"
mkdir -p "$out"
source scripts/nvidia-env.sh
B=.devbuild/extmem-base N=.devbuild/extmem-new
whole=--only=T1-opaque-fd,T3-memfd-cross-process,T3-external-memory-host,T1-opaque-fd-cuda,T1-cuda-vmm-fd,T3-cuda-host-register,T1-gles-memobj-fd-cross-proc
seven=--only=T1-opaque-fd,T1-dma-buf,T1-gles-memobj-fd-same-proc,T1-gles-memobj-fd-cross-proc,T3-memfd-cross-process,T3-external-memory-host,T3-client-memfd-server-import
timed() { local s=$EPOCHREALTIME; "$@" > /dev/null 2>&1; echo "exit $? $(awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b-a}') s: $*"; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$N" --version
  if [ "$mode" = traces ]; then
    "$B" probe > /dev/null 2>&1; "$N" probe > /dev/null 2>&1  # warm-up: page cache, driver caches
    for run in "base default:$B" "new default:$N" "base 1g:$B" "new 1g:$N"; do
      name=${run%%:*} bin=${run#*:} tag=${name// /-}
      echo "# $name" >> "$out/traces.txt"
      case $name in
        *default) EXTMEM_PROBE_TRACE="$out/traces.txt" timed "$bin" probe --json="$out/$tag.json" ;;
        *1g) EXTMEM_PROBE_TRACE="$out/traces.txt" timed "$bin" probe "$whole" --size=1073741824 --json="$out/$tag.json" ;;
      esac
    done
    for f in S1-semaphore-opaque-fd:client:consumer\ submits:nowait S1-timeline-opaque-fd:client:consumer\ submits:nowait \
             S1-semaphore-opaque-fd:server:release:nosignal S1-timeline-opaque-fd:server:release:nosignal; do
      EXTMEM_TEST_FAULT="$f" "$N" probe --only="${f%%:*}" 2>&1 | grep "^RESULT ${f%%:*} "
    done
    EXTMEM_SWEEP_BENCH_MIB=1024 timeout 200 .devbuild/whole_sweep_bench --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true > "$out/bench.txt" 2>&1; echo "bench exit $?"
  else
    python3 bench/probe_ab.py --a "$B" --b "$N" --runs 9
    python3 bench/probe_ab.py --a "$B" --b "$N" --runs 9 -- "$seven"
    printf '#!/bin/sh\nexec "%s" "$@" --jobs=2\n' "$PWD/$N" > "$out/jobs2"; chmod +x "$out/jobs2"
    python3 bench/probe_ab.py --a "$N" --b "$out/jobs2" --runs 7; rm -f "$out/jobs2"
    EXTMEM_SWEEP_BENCH_MIB=1024 timeout 150 .devbuild/whole_sweep_bench --benchmark_filter=mt4 > "$out/bench-mt4.txt" 2>&1
    echo "bench exit $?"
  fi
} 2>&1 | tee "$out/summary-$mode.txt"
