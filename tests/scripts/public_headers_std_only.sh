#!/usr/bin/env bash
# The installed headers stand alone: every #include <...> under the given
# include directory names a C++ standard or POSIX header (<vector>,
# <sys/types.h>), never a third-party one the package does not provide
# (<nlohmann/json.hpp>, <fmt/format.h>, <vulkan/vulkan.h>); quoted includes
# name extmem's own headers. Usage: public_headers_std_only.sh INCLUDE_DIR.
# Exit 1 naming each other include.
set -euo pipefail
dir=$1
[ -d "$dir" ] || { echo "FAIL: no directory $dir" >&2; exit 1; }
bad=$(grep -rHnE '^[[:space:]]*#[[:space:]]*include' "$dir" --include='*.h' |
  grep -vE '#[[:space:]]*include[[:space:]]*(<([a-z_0-9]+(\.h)?|sys/[a-z_0-9]+\.h)>|"extmem/[^"]+")' || true)
if [ -n "$bad" ]; then
  echo "FAIL: a public header includes what the package does not provide (keep third-party types out of include/):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "include: every public header includes only standard, POSIX and extmem headers"
