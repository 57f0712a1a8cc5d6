#!/usr/bin/env bash
# undeclared_leg.sh CXX SOURCE_DIR: a half that names a leg its route's table
# does not declare does not compile (report_leg, src/probe/routes.h). Passes
# when a declared name compiles (the control) and an undeclared one is refused.
set -u
cxx=$1 src=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "undeclared_leg.sh: $*" >&2; exit 1; }
write() {
  cat > "$d/half.cpp" <<CPP
#include "probe/routes.h"
namespace extmem::probe {
constexpr LegDef kLegs[] = {{"mmap", true, "a mapping shares the bytes"}, {"gpu", false, "the GPU sees them"}};
Leg half_leg() { return report_leg({kLegs, "$1"}); }
}  // namespace extmem::probe
CPP
}
compile() { "$cxx" -std=c++20 -fsyntax-only -I"$src/src" -I"$src/include" "$d/half.cpp" > "$d/log" 2>&1; }
write gpu
compile || fail "a declared leg did not compile: $(head -20 "$d/log")"
write gpuu
compile && fail "a leg the table does not declare compiled"
grep -q "declares no leg of this name" "$d/log" || fail "the refusal does not say why: $(head -20 "$d/log")"
exit 0
