#!/usr/bin/env bash
# On the NVIDIA machine: the same rows from two builds, to show a refactor left
# every verdict as it was on rows CI cannot run (CUDA, NVIDIA's GL semaphores).
# Expects, in the repository root: .gl/*.deb (the loaders, see scripts/nvidia-run.sh)
# and .devbuild/ with extmem-base and extmem-new (stripped `probe`-preset builds)
# and libfmt.so.9. Writes under $OUT: {base,new}-default.json, {base,new}-isolated.json
# (--isolate=route), new-measure-s1.json (--measure of the S1 and T1-cuda-ipc rows)
# and summary.txt (versions, wall times, the S1 fault controls' RESULT lines).
# Compare with: scripts/compare-rows.py base-default.json new-default.json
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/nvidia-ab-rows-out}"
mkdir -p "$out"
source scripts/nvidia-env.sh
B=.devbuild/extmem-base N=.devbuild/extmem-new
s1=--only=S1-semaphore-opaque-fd,S1-timeline-opaque-fd,S1-sync-fd,S1-gles-semaphore,S1-cuda-semaphore,T1-cuda-ipc
timed() { local s=$EPOCHREALTIME; "$@" > /dev/null 2>&1; echo "exit $? $(awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b-a}') s: $*"; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$B" --version; "$N" --version
  "$B" probe > /dev/null 2>&1; "$N" probe > /dev/null 2>&1  # warm-up: page cache, driver caches
  for tag in base new; do
    bin=$B; [ $tag = new ] && bin=$N
    timed "$bin" probe --json="$out/$tag-default.json"
    timed "$bin" probe --isolate=route --json="$out/$tag-isolated.json"
  done
  timed "$N" probe "$s1" --measure --json="$out/new-measure-s1.json"
  for tag in base new; do
    bin=$B; [ $tag = new ] && bin=$N
    for f in S1-semaphore-opaque-fd:client:consumer\ submits:nowait S1-timeline-opaque-fd:client:consumer\ submits:nowait \
             S1-semaphore-opaque-fd:server:release:nosignal S1-timeline-opaque-fd:server:release:nosignal \
             S1-cuda-semaphore:server:release:nosignal S1-gles-semaphore:server:release:nosignal; do
      echo "$tag $f: $(EXTMEM_TEST_FAULT="$f" "$bin" probe --only="${f%%:*}" 2>&1 | grep "^RESULT ${f%%:*} ")"
    done
  done
} 2>&1 | tee "$out/summary.txt"
