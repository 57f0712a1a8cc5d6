#!/usr/bin/env bash
# Installs what is missing, builds the extmem command alone, and runs
# `extmem probe` (extra arguments are passed on). With no GPU driver installed
# this runs on Mesa's lavapipe (Vulkan).
# Preset "probe" (CMakePresets.json): build-probe/, the extmem target only (no
# tests, benchmarks or fuzzers), -O2 without debug info, precompiled headers;
# the test suite has its own command, scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset probe >/dev/null
cmake --build --preset probe >/dev/null
exec ./build-probe/extmem probe "$@"
