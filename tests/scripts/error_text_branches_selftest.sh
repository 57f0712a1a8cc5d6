#!/usr/bin/env bash
# error_text_branches.sh on DIR (tests/data/error_text_branches): it must fail,
# flag every line marked "// bad" and no line marked "// good" or "(good)".
set -uo pipefail
dir=$1
out=$(bash "$(dirname "$0")/error_text_branches.sh" "$dir")
rc=$?
flagged=$(grep -E '^[^ ]+:[0-9]+:' <<<"$out" | grep -v 'error-text: display only' || true)
want=$(grep -c '// bad$' "$dir"/*.cpp | awk -F: '{n += $NF} END {print n}')
got=$(grep -c '// bad$' <<<"$flagged" || true)
wrong=$(grep -v '// bad$' <<<"$flagged" || true)
echo "$out"
echo "exit $rc; flagged $got of $want bad lines"
[[ -n "$wrong" ]] && echo "flagged though not bad:" && echo "$wrong"
[[ $rc -eq 1 && $got -eq $want && -z "$wrong" ]]
