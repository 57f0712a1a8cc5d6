#!/usr/bin/env bash
# Runs a carried extmem build on the NVIDIA GPU machine (no package registry there).
# Expects, in the repository root: .gl/*.deb (Debian libvulkan1 libegl1 libglvnd0
# libopengl0 libgl1 libglx0 libgles2, fetched with `apt-get download`) and
# .devbuild/ (build/extmem and libfmt.so.9*). Arguments go to `extmem probe`.
set -euo pipefail
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export LD_LIBRARY_PATH="$PWD/.devbuild"
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
exec ./.devbuild/extmem probe "$@"
