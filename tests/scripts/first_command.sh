#!/usr/bin/env bash
# The README's first command builds the extmem command and nothing of the test
# suite, the benchmarks or the fuzzers. Checked without building (one compiler
# front-end pass, no object file):
#   1. the first command in README.md is `bash scripts/probe.sh`;
#   2. scripts/probe.sh configures and builds with the "probe" presets and no other;
#   3. that configure preset, generated into a temporary directory, defines no
#      test, benchmark or fuzz target, and a dry run of its build preset's
#      targets (with the unity files it would compile) compiles no file under
#      tests/, bench/ or fuzz/;
#   4. the command's unity unit of that build (its files compiled as one)
#      passes the compiler's front end.
# Usage: first_command.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d /tmp/extmem-first-command-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

first=$(awk '/^```sh$/ {inside=1; next} inside && NF {print; exit}' "$src/README.md")
[[ "$first" == "bash scripts/probe.sh"* ]] || fail "README's first command is '$first', not bash scripts/probe.sh"

script=$src/scripts/probe.sh
configures=$(grep -E '^\s*cmake --preset ' "$script" || true)
builds=$(grep -E '^\s*cmake --build ' "$script" || true)
[[ "$configures" == "cmake --preset probe "* && $(wc -l <<<"$configures") == 1 ]] ||
  fail "scripts/probe.sh configures with: $configures"
[[ "$builds" == "cmake --build --preset probe "* && $(wc -l <<<"$builds") == 1 ]] ||
  fail "scripts/probe.sh builds with: $builds"

# The build preset's targets, read from CMakePresets.json.
targets=$(python3 - "$src/CMakePresets.json" <<'PY'
import json, sys
presets = json.load(open(sys.argv[1]))
build = [p for p in presets["buildPresets"] if p["name"] == "probe"][0]
assert build["configurePreset"] == "probe", build
print(" ".join(build.get("targets", ["all"])))
PY
)
[ -n "$targets" ] && [ "$targets" != all ] || fail "the probe build preset builds everything ($targets)"

(cd "$src" && cmake --preset probe -B "$tmp/b" -G "Unix Makefiles" >"$tmp/configure.log" 2>&1) || { cat "$tmp/configure.log" >&2; fail "configure"; }
cmake --build "$tmp/b" --target help >"$tmp/help.txt"
if grep -E '\.\.\. (extmem_tests|.*_bench|.*_fuzz|fake_libcuda|cuda_api_check|watch_grower|memtools_waiter)$' "$tmp/help.txt"; then
  fail "the probe preset defines the targets above"
fi
# make -n -k: print every command the build would run; the link steps cannot be
# planned without the objects, hence -k and no check of the exit status.
# shellcheck disable=SC2086
cmake --build "$tmp/b" --target $targets -- -n -k >"$tmp/dry.txt" 2>&1 || true
# A unity build compiles generated files that #include the sources: they count as compiled too.
find "$tmp/b" -path '*/Unity/unity_*' -type f -exec cat {} + >>"$tmp/dry.txt" 2>/dev/null || true
grep -q 'src/cli/main.cpp' "$tmp/dry.txt" || fail "the dry run does not compile the command (src/cli/main.cpp)"
if grep -E "$src/(tests|bench|fuzz)/" "$tmp/dry.txt" | head -3 | grep .; then
  fail "the probe build compiles the files above"
fi
# The command's files are one unity unit in that build only (CI compiles them one
# by one): a front-end pass over that unit catches two files defining one name.
python3 - "$tmp/b/compile_commands.json" <<'PY' || fail "the probe command's unity unit does not compile (a name defined twice?)"
import json, shlex, subprocess, sys
units = [e for e in json.load(open(sys.argv[1])) if "/extmem_cli" in e["file"] and "/Unity/" in e["file"]]
for e in units:
    args = shlex.split(e["command"])
    i = args.index("-o")
    del args[i:i + 2]
    if subprocess.run(args + ["-fsyntax-only"], cwd=e["directory"]).returncode != 0:
        sys.exit(1)
print(f"{len(units)} unity unit(s) of the command compile")
PY
echo "first command: bash scripts/probe.sh builds $targets, and no test, benchmark or fuzz file"
