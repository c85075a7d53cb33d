#!/usr/bin/env bash
# clang-tidy over the library, runtime and CLI sources with the checks of .clang-tidy; any
# finding fails. Uses build/compile_commands.json (the main build configures it).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
# shellcheck disable=SC2046  # one argument per file
run-clang-tidy -p build -quiet -j "$(nproc)" $(git ls-files 'src/*.cpp' 'runtime/*.cpp') \
  >"$log" 2>&1 || rc=$?
# Only the findings (with their source lines), not the per-file chatter.
grep -E -A3 '(warning|error): ' "$log" | grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated' || true
echo "clang-tidy: $(grep -c -E '(warning|error): ' "$log" || true) findings (checks: .clang-tidy)"
exit $rc
