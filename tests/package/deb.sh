#!/usr/bin/env bash
# Builds the Debian package from an already-built tree (CPack; nothing is
# recompiled) into a temporary directory and checks it: the file name, the
# files others build on, the declared dependencies, and that the packaged
# command runs from the extracted tree.
# Usage: deb.sh BUILD_DIR VERSION CC "FLAGS"
set -euo pipefail
build=$1 version=$2 cc=$3 flags=$4
tmp=$(mktemp -d /tmp/extmem-deb-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; fail "cpack"; }
deb=$tmp/extmem_${version}_amd64.deb
[ -f "$deb" ] || fail "no $(basename "$deb") in: $(ls "$tmp")"

contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/extmem ./usr/include/extmem/core/zerocopy_c.h ./usr/include/extmem/core/zerocopy.h \
         ./usr/include/extmem/reclaim/deferred_list.h ./usr/lib/libextmem.a ./usr/lib/libextmem.so.0 \
         ./usr/lib/libextmem.so ./usr/lib/cmake/extmem/extmemConfig.cmake \
         ./usr/lib/cmake/extmem/extmemConfigVersion.cmake ./usr/lib/cmake/extmem/extmemTargets.cmake \
         ./usr/lib/pkgconfig/extmem.pc; do
  grep -qxF "$f" <<<"$contents" || fail "$f is not in the package"
done

field() { dpkg-deb -f "$deb" "$1"; }
# The package names of a relation field ("libc6 (>= 2.34), libfmt9" -> "libc6" "libfmt9"), one a line.
names() { tr ',' '\n' <<<"$1" | awk '{print $1}'; }
[ "$(field Package)" = extmem ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version)"
[ "$(field Architecture)" = amd64 ] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
# The package that ships the libfmt the command links: its name carries fmt's soname, which
# the release decides (bookworm libfmt9, trixie libfmt10), so it is read off this machine.
fmt_soname=$(readelf -d "$build/extmem" | sed -n 's/.*NEEDED.*\[\(libfmt\.so\.[0-9]*\)\].*/\1/p')
[ -n "$fmt_soname" ] || fail "$build/extmem does not link a shared libfmt"
# awk reads to the end: ldconfig -p writes more than a pipe holds, and an awk that exits at the
# first match leaves it to die of SIGPIPE, which pipefail makes this assignment's failure (silently).
fmt_path=$(ldconfig -p | awk -v so="$fmt_soname" '$1 == so && /x86-64/ && path == "" {path = $NF} END {print path}')
[ -n "$fmt_path" ] || fail "ldconfig does not know $fmt_soname"
fmt_package=$(dpkg -S "$(readlink -f "$fmt_path")" | cut -d: -f1)
[ -n "$fmt_package" ] || fail "no Debian package ships $fmt_path"
# Read off the ELF files (dpkg-shlibdeps), and the dlopen()ed ones declared by hand.
for d in libc6 libstdc++6 "$fmt_package" libvulkan1 libegl1 libgles2; do
  names "$depends" | grep -qxF "$d" || fail "Depends lacks $d: $depends"
done
recommends=$(field Recommends)
for d in mesa-vulkan-drivers libegl-mesa0 libgl1-mesa-dri libucx0; do
  names "$recommends" | grep -qxF "$d" || fail "Recommends lacks $d: $recommends"
done
# ldconfig runs when the shared library is installed or removed.
dpkg-deb -I "$deb" postinst | grep -q ldconfig || fail "postinst does not run ldconfig"
dpkg-deb -I "$deb" shlibs | grep -q '^libextmem 0 extmem' || fail "no shlibs entry for libextmem.so.0"

dpkg-deb -x "$deb" "$tmp/root"
packaged_version=$("$tmp/root/usr/bin/extmem" --version) || fail "the packaged extmem --version exited $?"
grep -qF "extmem $version" <<<"$packaged_version" || fail "the packaged extmem --version: $packaged_version"
# The packaged (stripped) libraries still link: the C consumer against the extracted tree.
lib=$tmp/root/usr/lib
# shellcheck disable=SC2046
"$cc" $flags -o "$tmp/c_consumer" "$(dirname "$0")/c_consumer.c" $(PKG_CONFIG_LIBDIR=$lib/pkgconfig pkg-config --cflags --libs extmem)
LD_LIBRARY_PATH=$lib "$tmp/c_consumer" >/dev/null || fail "the C consumer linked against the package"
echo "deb: $(basename "$deb") has the command, headers, CMake package, pkg-config file; Depends: $depends"
