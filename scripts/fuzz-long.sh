#!/usr/bin/env bash
# Long local fuzzing: runs every libFuzzer target (or those named) for SECONDS
# each (default 1800), one after another, with -jobs=JOBS parallel workers
# (default: the number of cores). Grows the working corpus in build-fuzz/corpus/
# (the in-tree seeds in fuzz/corpus/ are read, never written); crashes, leaks
# and timeouts go to build-fuzz/crashes/ and the script exits 1 listing them.
#   bash scripts/fuzz-long.sh                 # every target, 30 min each
#   bash scripts/fuzz-long.sh 600 frame cli_values
# A crash becomes a regression test: minimise it (TARGET -minimize_crash=1
# CRASHFILE), fix the parser, add the input as a case in tests/ and as a seed
# in fuzz/corpus/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-1800}"
shift || true
jobs="${EXTMEM_FUZZ_JOBS:-$(nproc)}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz >/dev/null
mkdir -p build-fuzz/crashes
if [ "$#" -gt 0 ]; then names=("$@"); else names=(); for t in build-fuzz/fuzz/*_fuzz; do names+=("$(basename "${t%_fuzz}")"); done; fi
failed=()
for name in "${names[@]}"; do
  target="build-fuzz/fuzz/${name}_fuzz"
  [ -x "$target" ] || { echo "fuzz-long: no target $target"; exit 2; }
  work="build-fuzz/corpus/$name"
  mkdir -p "$work"
  echo "fuzz-long: $name for ${seconds}s on $jobs worker(s)"
  # -fork keeps fuzzing after a crash so one run finds more than one; each crash is still saved.
  if ! "$target" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=2048 -artifact_prefix="build-fuzz/crashes/${name}-" "$work" "fuzz/corpus/$name" \
      >"build-fuzz/${name}.long.log" 2>&1; then
    failed+=("$name")
  fi
  if compgen -G "build-fuzz/crashes/${name}-*" >/dev/null; then failed+=("$name"); fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz-long: findings in: $(printf '%s\n' "${failed[@]}" | sort -u | tr '\n' ' ')"
  ls -l build-fuzz/crashes/
  exit 1
fi
echo "fuzz-long: no crash, leak or timeout in ${#names[@]} target(s)"
