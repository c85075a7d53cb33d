#!/usr/bin/env bash
# The fuzz targets coverage-guided: a clang build with -DKPLAY_LIBFUZZER=ON (libFuzzer, ASan,
# UBSan; the library instrumented too) in build-libfuzzer/, then each target of kplay_libfuzz for a
# fixed time from its seed corpus (tests/fuzz/corpus/<target>/, left as it is: what libFuzzer
# finds new goes to a scratch folder). A crash, sanitizer report, disallowed exception or an
# input slower than 10 s fails the stage, with libFuzzer's reproducer printed.
# Usage: .ci/libfuzzer.sh [seconds per target, default 4]
#        .ci/libfuzzer.sh --build-only   (the build alone; .ci/run starts it early, in the background)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-4}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/.ci/lsan.supp:print_suppressions=0

# -O0 without debug information: the build is most of this stage's CPU (79 CPU seconds at -O0,
# 184 at -O1 with the API layer too), and at -O0 libFuzzer still tries hundreds to thousands of
# inputs a second (db-pages about 30: a whole database file each). The sanitizers' reports name
# functions without debug information.
mkdir -p build-libfuzzer
CC=clang CXX=clang++ cmake -S . -B build-libfuzzer -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O0" \
  -DCMAKE_C_FLAGS_RELEASE="-O0" -DKPLAY_LIBFUZZER=ON >/dev/null
cmake --build build-libfuzzer -j"$(nproc)" --target kplay_libfuzz
[ "$seconds" = "--build-only" ] && exit 0

fuzz=build-libfuzzer/tests/kplay_libfuzz
read -r -a targets <<<"$("$fuzz" 2>&1 | sed -n 's/.*targets://p' || true)"
[ ${#targets[@]} -gt 0 ] || { echo "kplay_libfuzz named no targets"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One target per core at a time; each writes its own log, printed in order.
run_target() {  # TARGET
  local t=$1 rc=0
  mkdir -p "$work/$t/new"
  if [ ! -d "tests/fuzz/corpus/$t" ]; then
    echo "no seed corpus tests/fuzz/corpus/$t" >"$work/$t.log"
    rc=1
  else
    KPLAY_FUZZ_TARGET=$t "$fuzz" "$work/$t/new" "tests/fuzz/corpus/$t" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/$t/" >"$work/$t.log" 2>&1 || rc=$?
  fi
  echo "$rc" >"$work/$t.rc"
}
echo "-- libFuzzer targets, ${seconds} s each (ASan+UBSan): ${targets[*]}"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$(nproc)" ]; then wait -n || true; running=$((running - 1)); fi
  run_target "$t" &
  running=$((running + 1))
done
wait
failed=0
for t in "${targets[@]}"; do
  rc=$(cat "$work/$t.rc")
  echo "-- $t: $(grep -Eo 'stat::(number_of_executed_units|new_units_added|peak_rss_mb): *[0-9]+' "$work/$t.log" |
                 tr '\n' ' ')(exit $rc)"
  if [ "$rc" -ne 0 ]; then
    cat "$work/$t.log"
    for a in "$work/$t"/crash-* "$work/$t"/timeout-* "$work/$t"/leak-* "$work/$t"/oom-*; do
      if [ -e "$a" ]; then echo "-- its input, $(basename "$a"):"; od -c "$a" | head -40; fi
    done
    failed=1
  fi
done
[ $failed -eq 0 ]
