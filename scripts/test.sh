#!/usr/bin/env bash
# Installs what is missing, then builds ONE configuration, preset "fuzz" (clang with
# AddressSanitizer + UndefinedBehaviorSanitizer, libFuzzer targets and the test suite),
# runs the libFuzzer smoke (10 s a target) and every test (unit and integration, on
# lavapipe) through ctest in that build: leaks, overflows, use-after-free and UB fail
# the test. One compile instead of a fuzz build plus a sanitizer build keeps CI short.
# EXTMEM_TEST_PRESET=default|asan|tsan runs the tests in that build instead (the fuzz
# smoke still runs from the fuzz build).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${EXTMEM_TEST_PRESET:-fuzz}"
bash scripts/deps.sh --tests
bash scripts/fuzz-smoke.sh "${EXTMEM_FUZZ_SECONDS:-10}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset" "$@"
