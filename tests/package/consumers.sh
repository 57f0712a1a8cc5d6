#!/usr/bin/env bash
# Installs an already-built extmem into a temporary prefix and builds and runs
# programs against that prefix only: a C program through pkg-config
# (tests/package/c_consumer.c, the C interface in libextmem.so) and C++
# projects through find_package(extmem CONFIG): cxx_consumer (zerocopy and
# reclaim from the static library), no_standard_consumer (no C++ standard of
# its own) and find_consumer (probe::find() on the default device, lavapipe in
# CI, with the installed extmem as its worker executable). Nothing of extmem
# is rebuilt.
# Usage: consumers.sh BUILD_DIR CC CXX "FLAGS" (FLAGS: the build's sanitizer
# flags, which a consumer of an instrumented library must link with too).
set -euo pipefail
build=$1 cc=$2 cxx=$3 flags=$4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/extmem-consumers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name extmem.pc -path '*/pkgconfig/*')")/..
libdir=$(cd "$libdir" && pwd)

# The installed package must not ask consumers for what extmem uses privately.
if grep -q nlohmann "$libdir"/cmake/extmem/*.cmake; then
  echo "FAIL: the installed CMake package names nlohmann_json" >&2
  exit 1
fi
# libextmem.so exports the C interface and nothing else.
others=$(nm -D --defined-only "$libdir"/libextmem.so | awk '{print $3}' | grep -v '^extmem_zc_' | grep -v '^$' || true)
if [ -n "$others" ]; then
  echo "FAIL: libextmem.so exports more than extmem_zc_*: $(echo "$others" | head -5 | tr '\n' ' ')" >&2
  exit 1
fi
# ... all of it: every function zerocopy_c.h declares (Python's ctypes binding finds them by name).
for fn in extmem_zc_status_name extmem_zc_options_init extmem_zc_check extmem_zc_check_fn extmem_zc_check_rw; do
  if ! nm -D --defined-only "$libdir"/libextmem.so | awk '{print $3}' | grep -qx "$fn"; then
    echo "FAIL: libextmem.so does not export $fn" >&2
    exit 1
  fi
done

# C, through pkg-config only (PKG_CONFIG_LIBDIR: this prefix, not the system's).
pc="env PKG_CONFIG_LIBDIR=$libdir/pkgconfig pkg-config"
$pc --exists extmem
# shellcheck disable=SC2046,SC2086
"$cc" $flags -o "$tmp/c_consumer" "$here/c_consumer.c" $($pc --cflags --libs extmem)
LD_LIBRARY_PATH=$libdir "$tmp/c_consumer"

# C++, through the CMake package only.
cmake -S "$here/cxx_consumer" -B "$tmp/cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$tmp/cxx" >/dev/null
"$tmp/cxx/cxx_consumer"

# C++ without a standard of its own: the exported target carries cxx_std_20.
cmake -S "$here/no_standard_consumer" -B "$tmp/nostd" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$tmp/nostd" >/dev/null
"$tmp/nostd/no_standard_consumer"

# The probe as a library call: find() on the default device (lavapipe here), its
# halves run by the extmem executable this prefix installed, not by the consumer.
cmake -S "$here/find_consumer" -B "$tmp/find" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$tmp/find" >/dev/null
"$tmp/find/find_consumer"
echo "consumers: C via pkg-config, C++ via find_package (with and without a standard of its own) and find() built against $prefix and passed"
