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
# KPLAY_TIDY_CACHE (set by .ci/run): a folder of the files found clean before, each under the hash
# of what clang-tidy's verdict depends on: its version, .clang-tidy, the compile command and the
# preprocessed translation unit with its comments (NOLINT), which holds every header it includes,
# so a header's change checks its includers again; the clone's own path, which the command and the
# unit's line markers name, is left out of the hash, so that a clone elsewhere (CI's clean clone of
# each run) finds what another clone checked. A file whose hash is there is not checked
# again; after a clean run the hashes of the files checked are added. A file that does not
# preprocess is always checked. With every file unchanged the stage takes about 19 s on two cores
# (the preprocessing), against 160-240 s checking them all.
git ls-files 'src/*.cpp' 'runtime/*.cpp' >"$tmp/files"
if [ -n "${KPLAY_TIDY_CACHE:-}" ]; then
  mkdir -p "$KPLAY_TIDY_CACHE"
  python3 - "$tmp/compile_commands.json" "$tmp/files" "$KPLAY_TIDY_CACHE" "$tmp/keys" "$(clang-tidy --version)" <<'PY'
import concurrent.futures, hashlib, json, os, shlex, subprocess, sys
db, files, cache, keys_out, version = sys.argv[1:6]
entries = {os.path.realpath(e["file"]): e for e in json.load(open(db))}
config = open(".clang-tidy", "rb").read()
roots = sorted({os.getcwd(), os.path.realpath(os.getcwd())}, key=len, reverse=True)
def here_free(b):
    for r in roots:
        b = b.replace(r.encode(), b"@ROOT@")
    return b
def key(path):
    e = entries.get(os.path.realpath(path))
    if e is None:
        return path, None  # no compile command: checked, never cached
    args = shlex.split(e["command"])
    if os.path.basename(args[0]) == "ccache":
        args = args[1:]
    cmd, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
            cmd.append(a)
    pre = subprocess.run(cmd + ["-E", "-C"], cwd=e["directory"], capture_output=True)
    if pre.returncode != 0:
        return path, None
    h = hashlib.sha256()
    for part in (version.encode(), config, here_free(" ".join(cmd).encode()), here_free(pre.stdout)):
        h.update(hashlib.sha256(part).digest())
    return path, h.hexdigest()
paths = open(files).read().split()
with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
    keyed = list(pool.map(key, paths))
todo = [p for p, k in keyed if k is None or not os.path.exists(os.path.join(cache, k))]
open(files, "w").write("\n".join(todo) + ("\n" if todo else ""))
open(keys_out, "w").write("\n".join(k for p, k in keyed if k and p in todo) + "\n")
print("clang-tidy: %d of %d files unchanged since a clean check (%s)" % (len(paths) - len(todo), len(paths), cache))
PY
fi
rc=0
if [ -s "$tmp/files" ]; then
  # shellcheck disable=SC2046  # one argument per file
  run-clang-tidy -p "$tmp" -quiet -j "$(nproc)" $(cat "$tmp/files") >"$log" 2>&1 || rc=$?
else
  : >"$log"
fi
if [ "$rc" -eq 0 ] && [ -n "${KPLAY_TIDY_CACHE:-}" ]; then
  while read -r k; do [ -z "$k" ] || : >"$KPLAY_TIDY_CACHE/$k"; done <"$tmp/keys"
fi
# Only the findings (with their source lines), not the per-file chatter.
grep -E -A3 '(warning|error): ' "$log" | grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated' || true
echo "clang-tidy: $(grep -c -E '(warning|error): ' "$log" || true) findings (checks: .clang-tidy)"
exit $rc
