#!/usr/bin/env bash
# Installs the Debian packages extmem needs to build, run on lavapipe/llvmpipe, and test.
# Run as root on Debian 12 bookworm or Debian 13 trixie. Does nothing when everything is already installed.
# No package name carries a version the release decides: libclang-rt-dev (llvm-defaults) is the
# sanitizer runtime of the release's default clang (14 on bookworm, 19 on trixie).
# lld: the "fuzz" preset (CI) links its instrumented executables with it.
# libdrm-dev (only with --tests): its drm.h is what tests/memtools_ioctl_drm_header_tests.cpp checks the built-in DRM ioctl names against (headers only; nothing links it).
# libucx-dev: UCX's headers (the T5-ucx-* rows; libucp.so.0 itself, from libucx0, is dlopen()ed at run time,
#   so the binary starts without it and the rows SKIP "no UCX"). 1.13.1 on bookworm; trixie has it too.
# file: CPack's DEB generator reads the shared-library dependencies with it (package.deb test; missing on a minbase bookworm, found there).
# python3-torch (only with --tests, so the main job's first run does not wait for it): the pytorch.*
#   tests run examples/pytorch_alias.py on CPU tensors (torch 1.13.1, CPU only); without recommends
#   176 packages, 48 MB, ~42 s to install here (with them 230 packages, 77 MB).
# universal-ctags (only with --tests): lint.function_lengths reads each function's first and last line with it.
# bubblewrap (only with --tests): cell (i) of the boundary matrix (tests/serve_tests.cpp, scripts/boundary-matrix.sh)
#   runs the driving side in a bubblewrap container; unshare and setpriv (cells c-h) are util-linux's, always there.
# prometheus, prometheus-node-exporter (only with --tests): the probe.prometheus test checks the
#   --prometheus file with promtool and reads it back through a real node_exporter (docs/fleet.md).
set -euo pipefail

packages=(
  g++ make cmake pkg-config clang libclang-rt-dev lld
  libvulkan-dev libvulkan1 mesa-vulkan-drivers glslang-tools
  libegl-dev libgles-dev libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libucx-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jsonschema
  libxml2-utils
  dpkg-dev file
)
case "${1-}" in
  --tests) packages+=(python3-torch libdrm-dev prometheus prometheus-node-exporter universal-ctags bubblewrap) ;;
  "") ;;
  *) echo "extmem: scripts/deps.sh: unknown argument '$1' (accepted: --tests, or nothing)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "extmem: missing Debian packages: ${missing[*]}; run this as root (apt-get install)" >&2
    exit 1
  fi
  echo "extmem: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  DEBCONF_NOWARNINGS=yes apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
