#!/usr/bin/env bash
# Runs a carried extmem build on the NVIDIA GPU machine (no package registry there).
# Expects, in the repository root: .gl/*.deb (Debian libvulkan1 libegl1 libglvnd0
# libopengl0 libgl1 libglx0 libgles2, fetched with `apt-get download`) and
# .devbuild/ (build/extmem and libfmt.so.9*). Arguments go to `extmem probe`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/nvidia-env.sh
exec ./.devbuild/extmem probe "$@"
