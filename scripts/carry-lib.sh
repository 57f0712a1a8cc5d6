#!/usr/bin/env bash
# Builds a self-contained, stripped libextmem.so.0 (the C interface only, include/extmem/core/zerocopy_c.h)
# to copy to a machine without build tools, such as a GPU host that has Python and torch but no Debian
# libfmt (docs/recipes/pytorch.md). Same sources and export list as CMake's extmem_c target
# (cmake/install.cmake), but only the three files the C interface needs and fmt compiled in header-only,
# so it needs libc, libstdc++ and libgcc_s (which every torch install has) and no libfmt.so.9; it
# prints the newest glibc and libstdc++ symbol versions it uses. The C++ runtime stays shared: linked
# statically it would pull in arc4random and _dl_find_object and need glibc 2.36 (bookworm's own).
# Usage: scripts/carry-lib.sh [OUT_DIR] (default build-carry).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build-carry}"
mkdir -p "$out"
"${CXX:-g++}" -std=c++20 -O2 -fPIC -shared -DFMT_HEADER_ONLY -Iinclude -Isrc \
  src/core/zerocopy_c.cpp src/core/zerocopy.cpp src/core/error.cpp \
  -Wl,--version-script=cmake/extmem_c.map -Wl,-soname,libextmem.so.0 -s \
  -o "$out/libextmem.so.0"
newest() { objdump -T "$out/libextmem.so.0" | grep -o "$1_[0-9.]*" | sort -uV | tail -1; }
echo "$out/libextmem.so.0: needs $(objdump -p "$out/libextmem.so.0" | awk '/NEEDED/ {print $2}' | tr '\n' ' ')" \
     "symbols up to $(newest GLIBC) $(newest GLIBCXX) $(newest CXXABI)"
