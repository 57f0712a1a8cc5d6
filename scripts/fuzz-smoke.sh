#!/usr/bin/env bash
# Builds the libFuzzer targets (preset "fuzz", clang + ASan/UBSan) and runs each
# for SECONDS (default 10) from its seed corpus in fuzz/corpus/<target>/.
# Targets run EXTMEM_FUZZ_JOBS at a time (default: the number of cores); each
# still gets its own SECONDS of wall time, so the smoke takes about
# targets x SECONDS / jobs instead of targets x SECONDS.
# A crash fails the script; the crashing input is left in build-fuzz/crashes/.
# For long local runs: bash scripts/fuzz-long.sh (see docs/hardening.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
jobs="${EXTMEM_FUZZ_JOBS:-$(nproc)}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz >/dev/null  # with the test suite: scripts/test.sh runs it from here
mkdir -p build-fuzz/crashes

# One target: its log in build-fuzz/NAME.log, exit status its own.
run_one() {
  local target=$1 name work corpus
  name=$(basename "$target")
  corpus="fuzz/corpus/${name%_fuzz}"
  work="build-fuzz/corpus/${name%_fuzz}"
  mkdir -p "$work"
  "$target" -max_total_time="$seconds" -artifact_prefix=build-fuzz/crashes/ "$work" "$corpus" >"build-fuzz/$name.log" 2>&1
}

targets=(build-fuzz/fuzz/*_fuzz)
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, $jobs at a time"
declare -A running=()  # pid -> target
failed=()
reap() {  # waits for one running target; records it if it failed
  local pid rc=0
  wait -n -p pid "${!running[@]}" || rc=$?
  [ "$rc" = 0 ] || failed+=("${running[$pid]}")
  unset "running[$pid]"
}
for target in "${targets[@]}"; do
  while ((${#running[@]} >= jobs)); do reap; done
  echo "fuzz: $(basename "$target") for ${seconds}s"
  run_one "$target" &
  running[$!]=$target
done
while ((${#running[@]})); do reap; done
if ((${#failed[@]})); then
  for target in "${failed[@]}"; do
    name=$(basename "$target")
    tail -40 "build-fuzz/$name.log"
    echo "fuzz: $name FAILED"
  done
  exit 1
fi
echo "fuzz: all targets ran without a crash"
