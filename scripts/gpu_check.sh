#!/usr/bin/env bash
# All GPU checks and benchmarks of one device session, in one call (see docs/benchmarks.md).
# Usage on the GPU machine: scripts/gpu_check.sh BIN_DIR [OUT_DIR]
#   BIN_DIR holds kplay, kplay_tests, kplay_db_stress, kplay_c_example and libkplay.so built
#   elsewhere; OUT_DIR receives the logs (everything packed into logs.tgz).
set -uo pipefail
BIN=${1:?usage: gpu_check.sh BIN_DIR [OUT_DIR]}
OUT=${2:-${OUT:-/tmp/kplay-gpu}}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
export KPLAY_CLI="$BIN/kplay"
export KPLAY_DB_STRESS="$BIN/kplay_db_stress"  # the database tests' second process
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # libkplay.so for the C example
export KPLAY_DB="$OUT/default.db"  # never the machine's cache dir
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

# Issue 2: the default config at the full size, both activations (no database: built-in default).
run_logged fwd_default "$BIN/kplay" run --no-db --act selu,relu --shape "$SHAPE"
# Knob variants (SELU): each is its own kernel, copy timed beside it.
run_logged fwd_vec1 "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --vec 1
run_logged fwd_pt2 "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --per-thread 2
run_logged fwd_pt4 "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --per-thread 4
run_logged fwd_block1024 "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --block 1024
run_logged fwd_gridstride4 "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --grid grid-stride:4
run_logged fwd_streaming "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --cache streaming
run_logged fwd_fastmath "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --fast-math
run_logged fwd_misaligned "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --in-offset 1
run_logged fwd_inplace "$BIN/kplay" run --no-db --act selu --shape "$SHAPE" --in-place
run_logged fwd_2e31p5 "$BIN/kplay" run --no-db --act relu --n 2^31+5 --check all

# Issue 5: backward (3 streams) and the other dtypes, default config.
run_logged bwd_f32 "$BIN/kplay" run --no-db --act selu,relu --direction backward --shape "$SHAPE"
run_logged bwd_f32_saved_output "$BIN/kplay" run --no-db --act selu --direction backward --saved output --shape "$SHAPE"
run_logged fwd_f16 "$BIN/kplay" run --no-db --act selu,relu --dtype f16 --shape "$SHAPE"
run_logged fwd_bf16 "$BIN/kplay" run --no-db --act selu,relu --dtype bf16 --shape "$SHAPE"
run_logged fwd_f64 "$BIN/kplay" run --no-db --act selu,relu --dtype f64 --shape "$SHAPE"

# Issue 3: tune, then serve from the database; a new process's first call vs a cold compile.
DB="$OUT/kernels.db"
rm -f "$DB"*
run_logged tune_full "$BIN/kplay" autotune --db "$DB" --act selu,relu --shape "$SHAPE"
run_logged tune_2e20 "$BIN/kplay" autotune --db "$DB" --act selu,relu --n 2^20
run_logged tune_2e24 "$BIN/kplay" autotune --db "$DB" --act selu,relu --n 2^24
run_logged tune_repeat "$BIN/kplay" autotune --db "$DB" --act selu --shape "$SHAPE" --no-resume
run_logged run_tuned "$BIN/kplay" run --db "$DB" --act selu,relu --shape "$SHAPE"
run_logged tune_f16 "$BIN/kplay" autotune --db "$DB" --act selu --dtype f16 --shape "$SHAPE"
run_logged tune_bf16 "$BIN/kplay" autotune --db "$DB" --act selu --dtype bf16 --shape "$SHAPE"
run_logged run_tuned_16 "$BIN/kplay" run --db "$DB" --act selu --dtype f16 --shape "$SHAPE"
run_logged run_tuned_bf16 "$BIN/kplay" run --db "$DB" --act selu --dtype bf16 --shape "$SHAPE"
rm -f "$OUT/cold.db"*
run_logged start_cold "$BIN/kplay" run --db "$OUT/cold.db" --act selu --n 2^20 --repeat 3
run_logged start_warm "$BIN/kplay" run --db "$OUT/cold.db" --act selu --n 2^20 --repeat 3
"$BIN/kplay" db list --db "$DB" >"$LOGS/db_list.txt" 2>&1
"$BIN/kplay" db export --db "$DB" "$LOGS/tuning.json" >/dev/null 2>&1

# Issue 4: NVIDIA's OpenCL, registered beside PoCL through OCL_ICD_VENDORS (docs/opencl.md).
ICD="$OUT/icd"
mkdir -p "$ICD"
cp /etc/OpenCL/vendors/*.icd "$ICD"/ 2>/dev/null
echo libnvidia-opencl.so.1 >"$ICD/nvidia.icd"
export OCL_ICD_VENDORS="$ICD"
"$BIN/kplay" devices 2>&1 | tee "$LOGS/devices_opencl.txt"
NV=$(awk '/^opencl:/{o=1} o && /^  \[[0-9]+\]/{ if ($0 ~ /NVIDIA|H100/) { gsub(/[^0-9]/, "", $1); print $1; exit } }' "$LOGS/devices_opencl.txt")
echo "NVIDIA OpenCL device index: ${NV:-none}" | tee -a "$summary"
if [ -n "$NV" ]; then
  run_logged opencl_nvidia "$BIN/kplay" run --no-db --backend opencl --device "$NV" --act selu,relu --shape "$SHAPE"
  run_logged cuda_beside_opencl "$BIN/kplay" run --no-db --backend cuda --act selu,relu --shape "$SHAPE"
  run_logged tests_opencl_nvidia env KPLAY_OPENCL_DEVICE="$NV" "$BIN/kplay_tests" --test-suite=opencl
fi
unset OCL_ICD_VENDORS
if [ -x "$BIN/kplay_c_example" ]; then run_logged c_example "$BIN/kplay_c_example"; fi

# Every log in one archive: the device tool brings back only a few files.
tar czf "$OUT/logs.tgz" -C "$LOGS" . && rm -rf "$LOGS"
echo; echo "### summary"; cat "$summary"
