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

cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKPLAY_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j"$(nproc)"
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
