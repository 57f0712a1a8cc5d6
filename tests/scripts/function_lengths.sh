#!/usr/bin/env bash
# function_lengths.sh DIR MAX_OVER_80 [ALLOWED]: the functions under DIR by
# length (Universal Ctags' start and end lines). Fails when one is longer than
# 120 lines (tables and generated data excepted: ALLOWED lists "path:name" per
# line, paths from DIR), or when more than MAX_OVER_80 are longer than 80
# (issue #28: "No function over 120 lines outside tables and generated data;
# the ones over 80 lines go from 46 to at most 15"). Lambdas count on their own
# and inside the function that holds them.
# Exit: 0 within the limits, 1 not, 2 usage or no ctags.
set -euo pipefail
dir=${1:?usage: function_lengths.sh DIR MAX_OVER_80 [ALLOWED]} max_over_80=${2:?MAX_OVER_80}
allowed=${3:-/dev/null}
ctags=$(command -v ctags-universal || command -v ctags || true)
[ -n "$ctags" ] && "$ctags" --version 2>/dev/null | grep -q "Universal Ctags" ||
  { echo "function_lengths.sh: Universal Ctags not found (Debian package universal-ctags)" >&2; exit 2; }
list=$(cd "$dir" && "$ctags" --languages=C++ --c++-kinds=f --fields=+ne -R -f - . 2>/dev/null |
  awk -F'\t' '{l=0; e=0; for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) l = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
              if (e > 0 && e - l + 1 > 80) { p = $2; sub(/^\.\//, "", p); print e - l + 1, p ":" l, $1 } }' | sort -rn)
over_120=$(echo "$list" | awk -v allowed="$allowed" 'BEGIN { while ((getline a < allowed) > 0) if (a !~ /^#/ && a != "") ok[a] = 1 }
  $1 > 120 { split($2, at, ":"); if (!((at[1] ":" $3) in ok)) print }')
n_over_80=$(echo "$list" | grep -c . || true)
echo "functions over 80 lines under $dir: $n_over_80 (at most $max_over_80)"
echo "$list" | sed 's/^/  /'
status=0
if [ -n "$over_120" ]; then
  echo "function_lengths.sh: over 120 lines (split by meaning, or list a table in $allowed):" >&2
  echo "$over_120" | sed 's/^/  /' >&2
  status=1
fi
if [ "$n_over_80" -gt "$max_over_80" ]; then
  echo "function_lengths.sh: $n_over_80 functions over 80 lines, at most $max_over_80" >&2
  status=1
fi
exit $status
