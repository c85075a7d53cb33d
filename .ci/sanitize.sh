#!/usr/bin/env bash
# A second build with AddressSanitizer + UndefinedBehaviorSanitizer (KPLAY_SANITIZE) in
# build-sanitize/. Runs the unit and database tests, a small OpenCL subset on PoCL (every knob
# value, a stored binary loading back, the 2-D API), and each fuzz target for a fixed time.
# Usage: .ci/sanitize.sh [fuzz seconds per target, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${1:-30}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# PoCL's compiler (LLVM) leaks by design at exit and is not instrumented; its reports are not ours.
export LSAN_OPTIONS=suppressions=$PWD/.ci/lsan.supp:print_suppressions=0

# -O1: the sanitizers' usual level, and half the compile time of -O2 on CI's two cores; only the
# targets run below (and the CLI and stress binaries the tests start) are built.
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" \
  -DKPLAY_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j"$(nproc)" --target kplay_tests kplay_fuzz kplay kplay_db_stress
tests=build-sanitize/tests/kplay_tests
echo "-- unit and database tests (ASan+UBSan)"
"$tests" --test-suite-exclude=nvrtc,cuda,opencl
echo "-- OpenCL subset (ASan+UBSan): -tc='*knob*,*stored binary loads back*,*2-D views with row pitches*'"
set +e
"$tests" --require-backend=opencl --test-suite=opencl -tc='*knob*,*stored binary loads back*,*2-D views with row pitches*'
rc=$?
set -e
if [ $rc -eq 77 ]; then echo "no OpenCL device: skipped"; elif [ $rc -ne 0 ]; then exit $rc; fi
echo "-- fuzz targets, ${fuzz_seconds}s each (ASan+UBSan)"
build-sanitize/tests/kplay_fuzz all --seconds "$fuzz_seconds"
