#!/usr/bin/env bash
# expect_exit.sh WANT SKIP COMMAND...: runs COMMAND and passes (exit 0) only when it exits WANT;
# SKIP (ctest's SKIP_RETURN_CODE) is passed through, so a skip stays a skip; anything else fails
# (exit 1) naming the exit status. For tests of a failure path: a harness that must say "wrong".
set -u
want=$1 skip=$2
shift 2
"$@"
rc=$?
if [ "$rc" -eq "$want" ]; then exit 0; fi
if [ "$rc" -eq "$skip" ]; then exit "$skip"; fi
echo "expect_exit.sh: exit status $rc, wanted $want: $*" >&2
exit 1
