#!/usr/bin/env bash
# No build outputs or large binaries in the repository: fails on tracked compiled Python, objects,
# libraries or executables, and on any tracked file over 1 MB (what .gitignore should have kept out).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(git ls-files | grep -E '(^|/)__pycache__/|\.(pyc|pyo|o|obj|a|so|so\.[0-9.]+|dylib|dll|exe|cubin|fatbin|whl)$' || true)
big=$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$1 > 1048576 {print $2 " (" $1 " bytes)"}')
if [ -n "$bad$big" ]; then
  echo "tracked files that are build outputs or too large:"
  [ -n "$bad" ] && echo "$bad"
  [ -n "$big" ] && echo "$big"
  exit 1
fi
echo "$(git ls-files | wc -l) tracked files: no build outputs, none over 1 MB"
