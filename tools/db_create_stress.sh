#!/usr/bin/env bash
# Runs the 16-process database-creation test (tests/test_database_reliability.cpp) N times in a
# row (default 200) and stops at the first failure. Each run starts 16 processes on a fresh path
# and on an existing empty file. Usage: tools/db_create_stress.sh [N] [build dir]
set -euo pipefail
runs=${1:-200}
build=${2:-build}
for i in $(seq "$runs"); do
  if ! KPLAY_CREATE_ROUNDS=1 "$build/tests/kplay_tests" -tc="*16 processes creating*" >"${TMPDIR:-/tmp}/kplay-create-stress.log" 2>&1; then
    echo "run $i of $runs FAILED:"; cat "${TMPDIR:-/tmp}/kplay-create-stress.log"; exit 1
  fi
done
echo "all $runs runs passed (each: 16 processes on a new path, then 16 on an empty file)"
