#!/usr/bin/env bash
# Installs what is missing, builds, runs the libFuzzer smoke (10 s a target), then every test
# (unit and integration, on lavapipe) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/fuzz-smoke.sh "${EXTMEM_FUZZ_SECONDS:-10}"
cmake --preset default >/dev/null
cmake --build --preset default
ctest --preset default "$@"
