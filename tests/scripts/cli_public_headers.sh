#!/usr/bin/env bash
# The command uses the library as any program would: every #include "..." under
# src/cli/ names a public header (extmem/...) or the command's own (cli/...).
# Usage: cli_public_headers.sh SRC_CLI_DIR. Exit 1 naming each other include.
set -euo pipefail
dir=$1
[ -d "$dir" ] || { echo "FAIL: no directory $dir" >&2; exit 1; }
bad=$(grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$dir"/*.cpp "$dir"/*.h |
  grep -vE '#[[:space:]]*include[[:space:]]*"(extmem|cli)/' || true)
if [ -n "$bad" ]; then
  echo "FAIL: the command includes private headers (use a public one under include/extmem/):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "cli: every include is public (extmem/...) or the command's own (cli/...)"
