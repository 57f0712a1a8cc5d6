#!/usr/bin/env bash
# Installs what is missing, builds, and runs `extmem probe` (extra arguments are passed on).
# With no GPU driver installed this runs on Mesa's lavapipe (Vulkan).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default >/dev/null
exec ./build/extmem probe "$@"
