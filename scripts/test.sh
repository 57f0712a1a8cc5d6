#!/usr/bin/env bash
# Installs what is missing, builds, runs the libFuzzer smoke (10 s a target), then every test
# (unit and integration, on lavapipe) through ctest, in the AddressSanitizer + UndefinedBehavior-
# Sanitizer build (preset "asan"; leaks, overflows, use-after-free and UB fail the test).
# EXTMEM_TEST_PRESET=default runs the same tests in the plain build instead (faster locally).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${EXTMEM_TEST_PRESET:-asan}"
bash scripts/deps.sh
bash scripts/fuzz-smoke.sh "${EXTMEM_FUZZ_SECONDS:-10}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset" "$@"
