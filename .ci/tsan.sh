#!/usr/bin/env bash
# ThreadSanitizer build in build-tsan/, then every suite that runs without a GPU (unit, database,
# OpenCL on PoCL, the CLI tests through the instrumented kplay). The threaded code it covers: the
# tuner's compile pool, whole tables over several devices (identical ones verifying each other),
# the database's locks and the API's per-thread streams. About 7 minutes on two cores, so it is
# run by hand before changing that code rather than in .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
flags="-O1 -g1 -fsanitize=thread"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$flags" -DCMAKE_C_FLAGS_DEBUG="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build build-tsan -j"$(nproc)" --target kplay_tests kplay
# A report fails the run (exit 66), from the tests or from a kplay they start.
export TSAN_OPTIONS="halt_on_error=1:exitcode=66"
KPLAY_CLI=$PWD/build-tsan/kplay build-tsan/tests/kplay_tests --test-suite-exclude=nvrtc,cuda
