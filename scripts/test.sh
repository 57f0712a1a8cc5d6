#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and integration, on lavapipe).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default
ctest --preset default "$@"
