#!/usr/bin/env bash
# Fails when code under DIR (default: the repository's src/) branches on an
# error's text: compares an error's code, detail, step, why or message with a
# string, an errno_code() or a kCode* name, or searches that text (find,
# starts_with, ...). Callers branch on Error::kind, Error::native (is_errno,
# word_code) or a typed field instead (include/extmem/core/error.h).
#
# A line that only formats text for people (no decision about what happened)
# may say so with the marker "error-text: display only" and a reason; the
# script lists those lines and passes them.
#
# Usage: error_text_branches.sh [DIR]   Exit: 0 clean, 1 a branch found.
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/../.." && pwd)/src}

fields='(code|detail|step|why|result|dma_buf_result|message\(\)|what\(\))'
text='("|errno_code\(|kCode[A-Z])'
patterns=(
  # x.code == "..." / x.step != "..." / e.code == errno_code(E) / e.code == kCodeX
  "[.>]${fields}\\s*[!=]=\\s*${text}"
  # "..." == x.code
  "\"\\s*[!=]=\\s*[A-Za-z_][A-Za-z_0-9.()>-]*[.>]${fields}(\\W|$)"
  # errno_code(E) == x / x == errno_code(E)
  'errno_code\([^)]*\)\s*[!=]='
  '[!=]=\s*errno_code\('
  # x.code.rfind("ESPIPE", 0), x.why.find(...), x.code.substr(0, 6) == "ESPIPE"
  "[.>]${fields}\\s*\\.\\s*(find|rfind|starts_with|ends_with|compare)\\s*\\("
  "[.>]${fields}\\s*\\.\\s*substr\\s*\\([^)]*\\)\\s*[!=]="
  '\b(what|message|why|detail)\s*\.\s*(find|rfind|starts_with|ends_with|compare)\s*\('
)

hits=$(for p in "${patterns[@]}"; do
  grep -rnP --include='*.cpp' --include='*.h' -e "$p" "$dir" || true
done | { grep -v 'error-text: display only' || true; } | sort -u)
allowed=$(grep -rn --include='*.cpp' --include='*.h' 'error-text: display only' "$dir" || true)
if [[ -n "$allowed" ]]; then
  echo "display only (allowed):"
  echo "$allowed"
fi
if [[ -n "$hits" ]]; then
  echo "$hits"
  echo "error_text_branches: the lines above branch on an error's text; branch on Error::kind or its native code" >&2
  exit 1
fi
echo "error_text_branches: no branch on an error's text under $dir"
