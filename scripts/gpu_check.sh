#!/usr/bin/env bash
# All GPU checks and benchmarks of one device session, in one call (see docs/benchmarks.md).
# Usage on the GPU machine: scripts/gpu_check.sh BIN_DIR [OUT_DIR]
#   BIN_DIR holds kplay and kplay_tests built elsewhere; OUT_DIR receives the logs.
set -uo pipefail
BIN=${1:?usage: gpu_check.sh BIN_DIR [OUT_DIR]}
OUT=${2:-${OUT:-/tmp/kplay-gpu}}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
export KPLAY_CLI="$BIN/kplay"
SHAPE=${KPLAY_SHAPE:-4096x393216}
summary="$OUT/summary.txt"
: >"$summary"

step() { echo; echo "### $*"; }
run_logged() {  # name, command... (KPLAY_ONLY="name1 name2" runs just those)
  if [ -n "${KPLAY_ONLY:-}" ] && [[ " $KPLAY_ONLY " != *" $1 "* ]]; then return; fi
  local name=$1; shift
  step "$name: $*"
  "$@" 2>&1 | tee "$LOGS/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "$name rc=$rc" | tee -a "$summary"
  grep -E "^(==|config:|kernel:|check:|verdict:|fast-math:|copy:|ratio:)" "$LOGS/$name.log" >>"$summary" || true
}

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$LOGS/nvidia-smi.txt"
"$BIN/kplay" devices 2>&1 | tee "$LOGS/devices.txt"

if [ "${KPLAY_SKIP_TESTS:-0}" != 1 ]; then
  run_logged tests_cuda "$BIN/kplay_tests" --test-suite=cuda
  run_logged tests_unit "$BIN/kplay_tests" --test-suite-exclude=nvrtc,cuda,opencl
fi

# Issue 2: the default config at the full size, both activations.
run_logged fwd_default "$BIN/kplay" run --act selu,relu --shape "$SHAPE"
# Knob variants (SELU): each is its own kernel, copy timed beside it.
run_logged fwd_vec1 "$BIN/kplay" run --act selu --shape "$SHAPE" --vec 1
run_logged fwd_pt2 "$BIN/kplay" run --act selu --shape "$SHAPE" --per-thread 2
run_logged fwd_pt4 "$BIN/kplay" run --act selu --shape "$SHAPE" --per-thread 4
run_logged fwd_block1024 "$BIN/kplay" run --act selu --shape "$SHAPE" --block 1024
run_logged fwd_gridstride4 "$BIN/kplay" run --act selu --shape "$SHAPE" --grid grid-stride:4
run_logged fwd_streaming "$BIN/kplay" run --act selu --shape "$SHAPE" --cache streaming
run_logged fwd_fastmath "$BIN/kplay" run --act selu --shape "$SHAPE" --fast-math
run_logged fwd_misaligned "$BIN/kplay" run --act selu --shape "$SHAPE" --in-offset 1
run_logged fwd_inplace "$BIN/kplay" run --act selu --shape "$SHAPE" --in-place
run_logged fwd_2e31p5 "$BIN/kplay" run --act relu --n 2^31+5 --check all

# Every log in one archive: the device tool brings back only a few files.
tar czf "$OUT/logs.tgz" -C "$LOGS" . && rm -rf "$LOGS"
echo; echo "### summary"; cat "$summary"
