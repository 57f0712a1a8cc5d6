#!/usr/bin/env bash
# Installs what is missing, builds the extmem command alone, and runs
# `extmem probe` (extra arguments are passed on). With no GPU driver installed
# this runs on Mesa's lavapipe (Vulkan).
# Preset "probe" (CMakePresets.json): build-probe/, the extmem target with the
# probe subcommand only (EXTMEM_PROBE_ONLY: no tests, benchmarks, fuzzers or
# other subcommands), -Og without debug info, the library as two unity units,
# one a core (docs/architecture.md, "Builds"; measured in
# docs/results/build-time.md); the test suite has its own command,
# scripts/test.sh. bench/first_result.py times it from a clean clone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset probe >/dev/null
cmake --build --preset probe >/dev/null
exec ./build-probe/extmem probe "$@"
