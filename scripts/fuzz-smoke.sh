#!/usr/bin/env bash
# Builds the libFuzzer targets (preset "fuzz", clang + ASan/UBSan) and runs each
# for SECONDS (default 10) from its seed corpus in fuzz/corpus/<target>/.
# A crash fails the script; the crashing input is left in build-fuzz/crashes/.
# For long local runs: bash scripts/fuzz-long.sh (see docs/hardening.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz >/dev/null  # with the test suite: scripts/test.sh runs it from here
mkdir -p build-fuzz/crashes
for target in build-fuzz/fuzz/*_fuzz; do
  name=$(basename "$target")
  corpus="fuzz/corpus/${name%_fuzz}"
  work="build-fuzz/corpus/${name%_fuzz}"
  mkdir -p "$work"
  echo "fuzz: $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -artifact_prefix=build-fuzz/crashes/ "$work" "$corpus" 2>build-fuzz/$name.log \
    || { tail -40 build-fuzz/$name.log; echo "fuzz: $name FAILED"; exit 1; }
done
echo "fuzz: all targets ran without a crash"
