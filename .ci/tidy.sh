#!/usr/bin/env bash
# clang-tidy over the library, runtime and CLI sources with the checks of .clang-tidy; any
# finding fails. Uses build/compile_commands.json (the main build configures it).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
# Once per source file: clang-tidy checks a file once for every compile command it has, and
# src/cli/config_flags.cpp has two (the CLI and the fuzz targets build it), the longest file to check.
python3 -c '
import json, sys
seen, once = set(), []
for entry in json.load(open(sys.argv[1])):
    if entry["file"] not in seen:
        seen.add(entry["file"])
        once.append(entry)
json.dump(once, open(sys.argv[2], "w"), indent=1)
' build/compile_commands.json "$tmp/compile_commands.json"
rc=0
# shellcheck disable=SC2046  # one argument per file
run-clang-tidy -p "$tmp" -quiet -j "$(nproc)" $(git ls-files 'src/*.cpp' 'runtime/*.cpp') \
  >"$log" 2>&1 || rc=$?
# Only the findings (with their source lines), not the per-file chatter.
grep -E -A3 '(warning|error): ' "$log" | grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated' || true
echo "clang-tidy: $(grep -c -E '(warning|error): ' "$log" || true) findings (checks: .clang-tidy)"
exit $rc
