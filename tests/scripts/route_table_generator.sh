#!/usr/bin/env bash
# route_table_generator.sh CMAKE GENERATOR: cmake/route_table.cmake on sample
# route files. Passes when two files' rows come out in place order, and when a
# place used twice, a name used twice and a malformed line each fail with a
# message naming the files (the build would stop there).
set -u
cmake=$1 gen=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "route_table_generator.sh: $*" >&2; exit 1; }
run() { "$cmake" -DOUT="$d/out.cpp" "-DSOURCES=$1" -P "$gen" > "$d/log" 2>&1; }

printf 'EXTMEM_ROUTE(kB, 20);\nEXTMEM_ROUTE(kC, 100);\n' > "$d/b.cpp"
printf 'EXTMEM_ROUTE(kA, 9);\n' > "$d/a.cpp"
run "$d/b.cpp;$d/a.cpp" || fail "good files refused: $(cat "$d/log")"
got=$(grep -o '^      k[A-Z]*' "$d/out.cpp" | tr -d ' ' | tr '\n' ' ')
[ "$got" = "kA kB kC " ] || fail "rows in order \"$got\", wanted place order \"kA kB kC \""

printf 'EXTMEM_ROUTE(kD, 20);\n' > "$d/dup_place.cpp"
run "$d/b.cpp;$d/dup_place.cpp" && fail "a place used twice was accepted"
grep -q "route place 20 is used by kB (b.cpp) and kD (dup_place.cpp)" "$d/log" || fail "place message: $(cat "$d/log")"

printf 'EXTMEM_ROUTE(kB, 30);\n' > "$d/dup_name.cpp"
run "$d/b.cpp;$d/dup_name.cpp" && fail "a name used twice was accepted"
grep -q "route kB is registered in b.cpp and dup_name.cpp" "$d/log" || fail "name message: $(cat "$d/log")"

printf 'EXTMEM_ROUTE(kE);\n' > "$d/bad.cpp"
run "$d/bad.cpp" && fail "a malformed line was accepted"
grep -q "bad.cpp: not EXTMEM_ROUTE(kName, PLACE);" "$d/log" || fail "malformed message: $(cat "$d/log")"
# With ROOT (as the build passes it), files in a family's room are named from the root.
mkdir -p "$d/t9"
printf 'EXTMEM_ROUTE(kB, 20);\n' > "$d/t9/b.cpp"
"$cmake" -DOUT="$d/out.cpp" "-DSOURCES=$d/b.cpp;$d/t9/b.cpp" -DROOT="$d" -P "$gen" > "$d/log" 2>&1 && fail "a place used twice in two rooms was accepted"
grep -q "route place 20 is used by kB (b.cpp) and kB (t9/b.cpp)" "$d/log" || fail "room message: $(cat "$d/log")"
exit 0
