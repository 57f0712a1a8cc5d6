#!/usr/bin/env bash
# function_lengths_selftest.sh SCRIPT SAMPLE_DIR: function_lengths.sh refuses
# the sample's 128-line function by name, and passes it with the function allowed.
set -u
script=$1 sample=$2
out=$(bash "$script" "$sample" 15 2>&1); rc=$?
[ "$rc" = 1 ] || { echo "a 128-line function passed (exit $rc): $out" >&2; exit 1; }
grep -q "128 long.cpp:2 long_function" <<< "$out" || { echo "the refusal does not name it: $out" >&2; exit 1; }
allowed=$(mktemp); trap 'rm -f "$allowed"' EXIT
echo "long.cpp:long_function" > "$allowed"
out=$(bash "$script" "$sample" 15 "$allowed" 2>&1) || { echo "an allowed table was refused: $out" >&2; exit 1; }
exit 0
