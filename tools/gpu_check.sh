#!/usr/bin/env bash
# The GPU check: kplay's builds, tests, accuracy, performance and tuning on an NVIDIA machine, in
# one call, organized by capability. Each capability logs under OUT_DIR/logs and adds its verdict
# lines to OUT_DIR/summary.txt; at the end the logs are packed into OUT_DIR/logs.tgz and the summary
# is printed. Exits 1 when any step failed.
# Usage on the GPU machine: tools/gpu_check.sh BIN_DIR [OUT_DIR] [CAPABILITY ...]
#   BIN_DIR holds kplay, kplay_tests, kplay_db_stress, libkplay.so and kplay_c_example, built
#   elsewhere. OUT_DIR: default /tmp/kplay-gpu. CAPABILITY (or KPLAY_ONLY="cap ..."): which to
#   run, default all, in this order (tools/gpu_check.sh --list prints them):
#     build     the artefacts are there and start: nvidia-smi, kplay devices, kplay list --texts, the C example
#     tests     the doctest suites: CUDA and NVRTC, a process a case (CASE_JOBS at a time, default
#               8), and the device-free unit tests
#     accuracy  kplay check: every float32 input forward (on both float32 math paths where the
#               device computes in double), every 16-bit input both directions, float32 backward
#               on 2^28 random bit patterns and on every input of its hard windows, the
#               accuracy=torch tier's float32 kernels on 2^28 patterns both ways
#     perf      kplay run --no-db: each activation's untuned default per dtype and direction (and
#               float32's float-float path), launch knob variants, odd layouts and sizes
#     torch     tools/perf_table.py: kplay against torch and a copy in one process, untuned, then
#               the rows where kplay is below torch
#     tuning    kplay autotune: sizes and dtypes, time per strategy, a table killed and resumed,
#               serving from the database, a cold start against a warm one, kplay bench
#     opencl    NVIDIA's OpenCL registered beside PoCL: kplay run and the OpenCL suite on it
#     python    the Python package: pytest with torch, the examples, the plots
#     multigpu  autotune --device all and the CUDA suite with every GPU (skipped below two GPUs)
#     gated     gated activations (gated(ACT): out = act(a) * b): the CUDA and NVRTC cases of the
#               gated suite; kplay run --act "gated(silu)" --shape GATED_SHAPE forward and backward
#               in bf16, f32 and f16, and gated(gelu) in f32, against a same-run copy (the goal:
#               >= 99 %); FP8 output (e4m3, e5m2) from bf16 and f32 timed, and checked over every
#               bfloat16 input; a compact table of the ratios.
#               GATED_FULL=1 adds tuning, padded tensors, other gates, every 16-bit input of every
#               gated built-in, float32 samples and a size sweep
#     prelu     PReLU and RReLU (prelu, rrelu, training(rrelu)): their CUDA and unit test cases;
#               kplay run at PRELU_SHAPE (a weight per channel of dim 1, and one weight) forward and
#               backward (prelu's with its weight gradient) in bf16 and f32 against a same-run copy;
#               kplay check over every 16-bit and float32 input, both directions; the torch tests
#               (tests/python/test_prelu_rrelu.py, and the OpInfo parity of prelu and rrelu)
#     rows      the softmax family (row kernels): their CUDA cases (every case of the row family, a
#               process each, all at once); tools/row_sweep.sh, every strategy's configs against
#               each other at the softmax table's shapes (timing only); tools/softmax_table.py
#               against torch eager and compiled, forward and backward; with Python, the torch
#               softmax tests and tools/softmax_ulps.py (kplay's and torch's errors against float64).
#               ROWS_STEPS (default "tests sweep table python") picks the steps; "tune" adds kplay
#               autotune --shape at those shapes into OUT_DIR/rows.db and the table from it: about
#               80 s a job on an H100, 56 jobs, over an hour.
#               ROWS_STEPS picks steps (default "tests sweep tune table python": more than one
#               device call's 10 minutes; split them), ROW_SHAPES the shapes
# Environment:
#   KPLAY_SHAPE   size of the timed runs (default 4096x393216)
#   KPLAY_ACTS    ';'-separated activation texts for the per-activation steps (default: every line
#                 of `kplay list --texts`, plus PARAM_VARIANTS in accuracy)
#   KPLAY_WHEEL   a wheel built elsewhere for python and torch (the GPU machine may lack SQLite's and
#                 nlohmann-json's headers), installed into OUT_DIR/site; without it python builds
#                 this checkout with pip, and torch uses whatever `import kplay` finds
#   TORCH_LIMIT   seconds the torch table may take (default 900)
#   GATED_SHAPE   the gated runs' input shape, rows x 2d (default 16384x28672: d = 14336)
#   GATED_FULL    1: the gated capability's longer steps too (see above)
#   PRELU_SHAPE   the prelu runs' input shape, N x C x H x W (default 32x256x128x128)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
CAPS_ALL="build tests accuracy perf torch tuning opencl python multigpu gated prelu rows"
if [ "${1:-}" = --list ]; then tr ' ' '\n' <<<"$CAPS_ALL"; exit 0; fi
BIN=${1:?usage: gpu_check.sh BIN_DIR [OUT_DIR] [CAPABILITY ...]   (gpu_check.sh --list: the capabilities)}
BIN="$(cd "$BIN" && pwd)"
OUT=${2:-${OUT:-/tmp/kplay-gpu}}
shift $(($# >= 2 ? 2 : 1))
CAPS=${*:-${KPLAY_ONLY:-$CAPS_ALL}}
for c in $CAPS; do
  [[ " $CAPS_ALL " == *" $c "* ]] || { echo "gpu_check.sh: unknown capability '$c' (known: $CAPS_ALL)" >&2; exit 2; }
done
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
LOGS="$OUT/logs"
mkdir -p "$LOGS"
K="$BIN/kplay"
export KPLAY_CLI="$K"                           # the tests' and tools' kplay
export KPLAY_DB_STRESS="$BIN/kplay_db_stress"   # the database tests' second process
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # libkplay.so for the C example
export KPLAY_DB="$OUT/default.db"               # never the machine's cache dir
PY="${PYTHON:-python3}"
SHAPE=${KPLAY_SHAPE:-4096x393216}
# Parameter sets besides the defaults, for accuracy: parameters are compile-time constants of the
# kernel (#define KP_P_*) with their own reference values and edge points, so the defaults alone
# do not show that a parameter reaches the kernel; gelu(approximate=tanh) is a different formula.
PARAM_VARIANTS=${PARAM_VARIANTS:-"leaky_relu(negative_slope=0.2);elu(alpha=0.5);celu(alpha=2.5);gelu(approximate=tanh);softplus(beta=2,threshold=10);softshrink(lambd=1.25)"}
summary="$OUT/summary.txt"
: >"$summary"
failed=0

want() { [[ " $CAPS " == *" $1 "* ]]; }
note() { echo "$*" | tee -a "$summary"; }
heading() { echo; echo "######## $*"; echo "== $*" >>"$summary"; }
# run_logged NAME COMMAND...: runs it, logs to $LOGS/NAME.log, records rc and kplay's verdict lines
# (the config, timing and check details stay in the log)
run_logged() {
  local name=$1; shift
  echo; echo "### $name: $*"
  local t0=$SECONDS
  # line-buffered, so that a step the device call's time limit ends keeps what it printed (doctest
  # writes through stdio: its cases would otherwise be lost with the buffer)
  stdbuf -oL -eL "$@" 2>&1 </dev/null | tee "$LOGS/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || failed=$((failed + 1))
  echo "$name rc=$rc ($((SECONDS - t0)) s)" >>"$summary"
  grep -E "^(==|config:|layer:|verdict:|fast-math:|ratio:)" "$LOGS/$name.log" >>"$summary" || true
  return "$rc"
}
# run_cases NAME CASE...: each kplay_tests case (a name as --list-test-cases prints it) in its own
# process, CASE_JOBS (default 8) at a time, so that they take about the time of the longest, not the
# sum (the CUDA row API case alone takes minutes), and no more CUDA contexts and buffers than the
# GPU's memory holds; logs $LOGS/NAME_I.log, a summary line a case
run_cases() {
  local name=$1 i=0 t0=$SECONDS tc rc
  shift
  echo; echo "### $name: $# cases, a process each, ${CASE_JOBS:-8} at a time"
  for tc in "$@"; do
    i=$((i + 1))
    while [ "$(jobs -rp | wc -l)" -ge "${CASE_JOBS:-8}" ]; do wait -n; done
    # a comma separates -tc's filters: a case whose name holds one is matched with * there
    (stdbuf -oL -eL "$BIN/kplay_tests" "-tc=${tc//,/*}" >"$LOGS/${name}_$i.log" 2>&1 </dev/null
      echo $? >"$LOGS/${name}_$i.rc") &
  done
  wait
  i=0
  for tc in "$@"; do
    i=$((i + 1))
    rc=$(cat "$LOGS/${name}_$i.rc" 2>/dev/null || echo 1)
    [ "$rc" = 0 ] || failed=$((failed + 1))
    note "${name}_$i rc=$rc: $tc ($(grep -m1 -oE 'assertions: *[0-9]+ \| *[0-9]+ passed \| *[0-9]+ failed' \
      "$LOGS/${name}_$i.log"))"
  done
  note "$name: $i cases in $((SECONDS - t0)) s"
}
# check_logged NAME KPLAY_CHECK_ARGS...: kplay check; the summary keeps the counts and failing rows
check_logged() {
  local name=$1; shift
  echo; echo "### $name: kplay check $*"
  local t0=$SECONDS
  "$K" check "$@" >"$LOGS/$name.log" 2>"$LOGS/$name.err" </dev/null
  local rc=$?
  [ "$rc" = 0 ] || failed=$((failed + 1))
  note "$name rc=$rc ($((SECONDS - t0)) s): $(grep -c '^row:.*PASS' "$LOGS/$name.log") pass, $(grep -c '^row:.*FAIL' "$LOGS/$name.log") fail"
  grep '^row:.*FAIL' "$LOGS/$name.log" | tee -a "$summary"
  [ "$rc" = 0 ] || tail -3 "$LOGS/$name.err" | tee -a "$summary"
}

# The activations: KPLAY_ACTS, else `kplay list --texts` (one text per line; commas inside
# parentheses separate parameters, so a comma-joined list is one --act argument).
VARIANTS=()
if [ -n "${KPLAY_ACTS:-}" ]; then
  IFS=';' read -r -a ACTS <<<"$KPLAY_ACTS"
else
  mapfile -t ACTS < <("$K" list --texts)
  IFS=';' read -r -a VARIANTS <<<"$PARAM_VARIANTS"
fi
[ ${#ACTS[@]} -gt 0 ] || { echo "gpu_check.sh: no activations: \`$K list --texts\` printed none" >&2; exit 2; }
join() { local IFS=,; echo "$*"; }
ACT_ARG=$(join "${ACTS[@]}")
CHECK_ARG=$(join "${ACTS[@]}" ${VARIANTS[@]+"${VARIANTS[@]}"})
# The device computes float32 activations in double (fast FP64); KPLAY_FP64_MATH=0 gives the
# float-float path that other devices get.
DOUBLE_PATH=0
"$K" devices 2>/dev/null | awk '/^[a-z]/ { cuda = /^cuda/ } cuda && /float32 math: in double/ { f = 1 } END { exit !f }' &&
  DOUBLE_PATH=1

python_ready=""
python_setup() {  # makes `import kplay` work: KPLAY_WHEEL into $OUT/site, else pip install of this checkout
  [ -n "$python_ready" ] && return "$python_ready"
  if [ -n "${KPLAY_WHEEL:-}" ]; then
    run_logged py_install "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$OUT/site" "$KPLAY_WHEEL"
    python_ready=$?
    export PYTHONPATH="$OUT/site${PYTHONPATH:+:$PYTHONPATH}"
  elif want python; then
    pushd "$root" >/dev/null || return 1
    run_logged py_install "$PY" -m pip install --no-build-isolation --no-deps -v .
    python_ready=$?
    popd >/dev/null || return 1
  else
    "$PY" -c "import kplay" 2>/dev/null
    python_ready=$?
    [ "$python_ready" = 0 ] || { note "no importable kplay package: set KPLAY_WHEEL"; failed=$((failed + 1)); }
  fi
  return "$python_ready"
}

if want build; then
  heading build
  nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm,clocks.max.mem --format=csv 2>&1 |
    tee "$LOGS/nvidia-smi.txt" | tee -a "$summary"
  for f in kplay kplay_tests kplay_db_stress libkplay.so kplay_c_example; do
    [ -e "$BIN/$f" ] || { note "missing: $BIN/$f"; failed=$((failed + 1)); }
  done
  run_logged devices "$K" devices
  grep -E "^\s+\[|architecture|float32 math" "$LOGS/devices.log" >>"$summary"
  run_logged list "$K" list --texts && note "kplay list --texts: ${#ACTS[@]} activations"
  [ -x "$BIN/kplay_c_example" ] && run_logged c_example "$BIN/kplay_c_example"
fi

if want tests; then
  heading tests
  # a process a case: the suite in a row outlasts a device call's 10 minutes (the knob matrix alone
  # compiles some 200 kernels)
  mapfile -t cuda_cases < <("$BIN/kplay_tests" --list-test-cases --test-suite=cuda,nvrtc 2>/dev/null |
    grep -vE '^(\[doctest\]|=|$)')
  run_cases tests_cuda "${cuda_cases[@]}"
  run_logged tests_unit "$BIN/kplay_tests" --test-suite-exclude=nvrtc,cuda,opencl
  grep -hE '^\[doctest\] (test cases|assertions)' "$LOGS"/tests_unit.log >>"$summary"
fi

if want accuracy; then
  heading accuracy
  check_logged acc_f32_forward --act "$CHECK_ARG" --dtype f32
  [ "$DOUBLE_PATH" = 1 ] && KPLAY_FP64_MATH=0 check_logged acc_f32_forward_floatfloat --act "$CHECK_ARG" --dtype f32
  # 2^28 random bit patterns: every exponent and sign, a sixteenth of all inputs
  check_logged acc_f32_backward --act "$CHECK_ARG" --dtype f32 --direction backward --sample 268435456
  # Every float32 in the windows a sample covers thinly: around the roots of f' (silu -1.2785,
  # gelu and gelu_tanh -0.7518, mish -1.1923: templates/common/precise_grad.h), where f' = (x - x0) q(x)
  # is evaluated apart, and across the branch points of the float32 formulas.
  while read -r a dir lo hi; do
    [[ " ${ACTS[*]} ${VARIANTS[*]:-} " == *" $a "* ]] || continue
    check_logged "acc_window_$(printf '%s' "${a}_${dir}_${lo}_$hi" | tr -c 'A-Za-z0-9.-' '_')" --act "$a" --dtype f32 --direction "$dir" --range="$lo:$hi"
  done <<'WINDOWS'
gelu backward -16 0
gelu backward 0.25 16
silu backward -4 -0.5
mish backward -16 0.5
gelu(approximate=tanh) backward -16 -0.25
tanh backward -1 1
gelu forward -16 0
gelu forward 0 8
softplus forward -20 20
logsigmoid forward -20 20
tanhshrink forward -12 12
WINDOWS
  # The accuracy=torch tier's float32 kernels, each held to its own bound (docs/accuracy.md), on
  # 2^28 random bit patterns both ways (its every-input figures: measure.py, docs/experiments/).
  tiers=$("$K" list --formulas | grep 'accuracy=torch' | paste -sd, -)
  for dir in forward backward; do
    check_logged "acc_tier_$dir" --act "$tiers" --dtype f32 --direction $dir --sample 268435456
  done
  # The activations whose derivative can be recovered from the saved output (kplay emit refuses the others).
  saved_out=()
  for a in "${ACTS[@]}"; do
    "$K" emit --act "$a" --direction backward --saved output >/dev/null 2>&1 </dev/null && saved_out+=("$a")
  done
  for d in f16 bf16; do
    check_logged "acc_${d}_forward" --act "$CHECK_ARG" --dtype $d
    check_logged "acc_${d}_backward" --act "$CHECK_ARG" --dtype $d --direction backward
    [ ${#saved_out[@]} -gt 0 ] &&
      check_logged "acc_${d}_backward_saved_output" --act "$(join "${saved_out[@]}")" --dtype $d --direction backward --saved output
  done
fi

if want perf; then
  heading perf
  for dir in forward backward; do
    for d in f32 f16 bf16 f64; do
      run_logged "default_${d}_$dir" "$K" run --no-db --act "$ACT_ARG" --dtype $d --direction $dir --shape "$SHAPE" --repeat 15
    done
    [ "$DOUBLE_PATH" = 1 ] && KPLAY_FP64_MATH=0 run_logged "default_f32_${dir}_floatfloat" \
      "$K" run --no-db --act "$ACT_ARG" --dtype f32 --direction $dir --shape "$SHAPE" --repeat 15
  done
  # Launch knobs on one activation: each is its own kernel, the copy timed beside it.
  run_logged knob_vec1 "$K" run --no-db --act selu --shape "$SHAPE" --vec 1
  run_logged knob_pt2 "$K" run --no-db --act selu --shape "$SHAPE" --per-thread 2
  run_logged knob_pt4 "$K" run --no-db --act selu --shape "$SHAPE" --per-thread 4
  run_logged knob_block1024 "$K" run --no-db --act selu --shape "$SHAPE" --block 1024
  run_logged knob_gridstride4 "$K" run --no-db --act selu --shape "$SHAPE" --grid grid-stride:4
  run_logged knob_streaming "$K" run --no-db --act selu --shape "$SHAPE" --cache streaming
  run_logged knob_fastmath "$K" run --no-db --act selu --shape "$SHAPE" --fast-math
  run_logged knob_general "$K" run --no-db --act selu --shape "$SHAPE" --general-kernel
  run_logged knob_late_gradient "$K" run --no-db --act selu --direction backward --shape "$SHAPE" --late-gradient
  # Layouts and sizes the flat kernel does not take, and the saved output.
  run_logged layout_misaligned "$K" run --no-db --act selu --shape "$SHAPE" --in-offset 1
  run_logged layout_inplace "$K" run --no-db --act selu --shape "$SHAPE" --in-place
  run_logged layout_2e31p5 "$K" run --no-db --act relu --n 2^31+5 --check all
  run_logged saved_output "$K" run --no-db --act selu --direction backward --saved output --shape "$SHAPE"
fi

if want torch; then
  heading torch
  if python_setup; then
    # untuned: a database of its own that nothing has tuned; alternate order and queued timing
    # leave neither kplay nor torch the one that always follows the copy, or pays its host time
    rm -f "$OUT/untuned.db"*
    t0=$SECONDS
    acts_opt=()
    [ -n "${KPLAY_ACTS:-}" ] && acts_opt=(--acts "$KPLAY_ACTS")
    KPLAY_DB="$OUT/untuned.db" PYTHONUNBUFFERED=1 timeout "${TORCH_LIMIT:-900}" "$PY" "$root/tools/perf_table.py" \
      --kplay "$K" --shape "$SHAPE" --order alternate --timing queued ${acts_opt[@]+"${acts_opt[@]}"} >"$LOGS/torch_table.tsv" 2>"$LOGS/torch_table.err"
    rc=$?
    [ "$rc" = 0 ] || failed=$((failed + 1))
    note "torch_table rc=$rc ($((SECONDS - t0)) s): $(grep -c $'\t' "$LOGS/torch_table.tsv") rows"
    head -1 "$LOGS/torch_table.tsv" >>"$summary"
    "$PY" "$root/tools/perf_table.py" --gaps "$LOGS/torch_table.tsv" | tee -a "$summary"
  fi
fi

if want tuning; then
  heading tuning
  DB="$OUT/kernels.db"
  rm -f "$DB"*
  run_logged tune_full "$K" autotune --db "$DB" --act selu,relu --shape "$SHAPE"
  run_logged tune_2e20 "$K" autotune --db "$DB" --act selu,relu --n 2^20
  run_logged tune_2e24 "$K" autotune --db "$DB" --act selu,relu --n 2^24
  run_logged tune_repeat "$K" autotune --db "$DB" --act selu --shape "$SHAPE" --no-resume
  run_logged tune_f16 "$K" autotune --db "$DB" --act selu --dtype f16 --shape "$SHAPE"
  run_logged tune_bf16 "$K" autotune --db "$DB" --act selu --dtype bf16 --shape "$SHAPE"
  run_logged run_tuned "$K" run --db "$DB" --act selu,relu --shape "$SHAPE"
  run_logged run_tuned_f16 "$K" run --db "$DB" --act selu --dtype f16 --shape "$SHAPE"
  run_logged run_tuned_bf16 "$K" run --db "$DB" --act selu --dtype bf16 --shape "$SHAPE"
  "$K" db list --db "$DB" >"$LOGS/db_list.txt" 2>&1
  "$K" db export --db "$DB" "$LOGS/tuning.json" >/dev/null 2>&1
  # Time per strategy from an empty database, and each winner timed again in a process of its own.
  for strat in fast halving exhaustive; do
    rm -f "$OUT/strategy_$strat.db"*
    run_logged "strategy_$strat" "$K" autotune --db "$OUT/strategy_$strat.db" --act selu --shape "$SHAPE" \
      --strategy $strat --no-resume --times
    run_logged "winner_$strat" "$K" run --db "$OUT/strategy_$strat.db" --act selu --shape "$SHAPE" --repeat 15
  done
  # A whole table killed after 20 s, then resumed: the second run must take up the first's jobs.
  rm -f "$OUT/table.db"*
  timeout -s KILL 20 "$K" autotune --db "$OUT/table.db" --act selu,relu --dtype f32,f16 --direction all \
    --n 2^16..2^28 --strategy fast >"$LOGS/table_killed.log" 2>&1
  run_logged table_resumed "$K" autotune --db "$OUT/table.db" --act selu,relu --dtype f32,f16 --direction all \
    --n 2^16..2^28 --strategy fast
  note "table: $(grep -cE '^[0-9]+ ' "$LOGS/table_resumed.log") jobs, $(grep -c ' resumed ' "$LOGS/table_resumed.log") resumed from the killed run"
  # A new process's first call: compiled (cold database) against served from the database (warm).
  rm -f "$OUT/cold.db"*
  run_logged start_cold "$K" run --db "$OUT/cold.db" --act selu --n 2^20 --repeat 3
  run_logged start_warm "$K" run --db "$OUT/cold.db" --act selu --n 2^20 --repeat 3
  run_logged bench_untuned "$K" bench --no-db --act selu,relu --dtype f32,f16 --n 2^12..2^30 --csv "$LOGS/bench_untuned.csv"
  run_logged bench_tuned "$K" bench --db "$OUT/table.db" --act selu --dtype f32 --n 2^12..2^28 --csv "$LOGS/bench_tuned.csv"
fi

if want opencl; then
  heading opencl
  # NVIDIA's OpenCL registered beside PoCL through OCL_ICD_VENDORS (docs/opencl.md).
  ICD="$OUT/icd"
  mkdir -p "$ICD"
  cp /etc/OpenCL/vendors/*.icd "$ICD"/ 2>/dev/null
  echo libnvidia-opencl.so.1 >"$ICD/nvidia.icd"
  export OCL_ICD_VENDORS="$ICD"
  "$K" devices 2>&1 | tee "$LOGS/devices_opencl.txt"
  NV=$(awk '/^opencl:/{o=1} o && /^  \[[0-9]+\]/{ if ($0 ~ /NVIDIA|H100|H200/) { gsub(/[^0-9]/, "", $1); print $1; exit } }' "$LOGS/devices_opencl.txt")
  note "NVIDIA OpenCL device index: ${NV:-none}"
  if [ -n "$NV" ]; then
    run_logged opencl_nvidia "$K" run --no-db --backend opencl --device "$NV" --act selu,relu --shape "$SHAPE"
    run_logged cuda_beside_opencl "$K" run --no-db --backend cuda --act selu,relu --shape "$SHAPE"
    run_logged tests_opencl_nvidia env KPLAY_OPENCL_DEVICE="$NV" "$BIN/kplay_tests" --test-suite=opencl
  fi
  unset OCL_ICD_VENDORS
fi

if want python; then
  heading python
  if python_setup; then
    pushd "$root" >/dev/null || exit 1
    export KPLAY_DB="$OUT/python.db"
    run_logged pytest timeout 300 "$PY" -m pytest -q -rfs tests/python
    grep -E "^FAILED|passed|failed" "$LOGS/pytest.log" | tail -n 20 >>"$summary"
    run_logged example_overhead timeout 300 "$PY" examples/overhead.py
    run_logged example_selu_model timeout 120 "$PY" examples/selu_model.py
    run_logged example_train_small timeout 180 "$PY" examples/train_small.py --steps 100
    # Timings live only in tuning records (launches store compiled kernels, no times): tune a
    # few sizes so that the database charts have something to draw.
    run_logged py_autotune timeout 180 "$PY" -c "import kplay; [kplay.autotune('selu', 1 << k, budget=8, repeats=5) for k in (12, 16, 20, 24)]; print('tuned', kplay.db_stats()['tunings'])"
    run_logged plot_bench timeout 60 "$PY" -m kplay.plot bench --db --out "$OUT/plots"
    run_logged plot_tuning timeout 60 "$PY" -m kplay.plot tuning --out "$OUT/plots" --format png
    export KPLAY_DB="$OUT/default.db"
    popd >/dev/null || exit 1
  fi
fi

if want multigpu; then
  heading multigpu
  GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
  if [ "$GPUS" -ge 2 ]; then
    rm -f "$OUT/multi.db"* "$OUT/multi1.db"*
    t0=$SECONDS
    run_logged multi_all "$K" autotune --db "$OUT/multi.db" --device all --act selu --dtype f32,f16 --n 2^20..2^28 --strategy fast
    note "--device all on $GPUS GPUs: $((SECONDS - t0)) s, devices used: $(awk '/^[0-9]+ /{print $1}' "$LOGS/multi_all.log" | sort -u | tr '\n' ' ')"
    t0=$SECONDS
    run_logged multi_one "$K" autotune --db "$OUT/multi1.db" --device 0 --act selu --dtype f32,f16 --n 2^20..2^28 --strategy fast
    note "the same table on one GPU: $((SECONDS - t0)) s"
    run_logged multi_tests_cuda "$BIN/kplay_tests" --test-suite=cuda
  else
    note "multigpu skipped: $GPUS GPU(s)"
  fi
fi

if want gated; then
  heading gated
  GSHAPE=${GATED_SHAPE:-16384x28672}
  run_logged gated_tests_cuda "$BIN/kplay_tests" --test-suite=cuda -tc='*gated*'
  run_logged gated_tests_nvrtc "$BIN/kplay_tests" --test-suite=nvrtc -tc='gated*'
  grep -hE '^\[doctest\] (test cases|assertions)' "$LOGS"/gated_tests_*.log >>"$summary"
  # The roofline, untuned (the device model's config); GeGLU in float32 too.
  for d in bf16 f32 f16; do
    for dir in forward backward; do
      run_logged "gated_silu_${d}_${dir}" "$K" run --no-db --act 'gated(silu)' --shape "$GSHAPE" --dtype $d \
        --direction $dir --repeat 25
    done
  done
  for dir in forward backward; do
    run_logged "gated_silu_f32_gelu_${dir}" "$K" run --no-db --act 'gated(gelu)' --shape "$GSHAPE" --dtype f32 \
      --direction $dir --repeat 25
  done
  # FP8 output: timed on the shape (every element checked once), and every bfloat16 input of a and
  # 64 values of b each through kplay check, both formats.
  for f8 in f8e4m3 f8e5m2; do
    run_logged "gated_silu_bf16_$f8" "$K" run --no-db --act 'gated(silu)' --shape "$GSHAPE" --dtype bf16 \
      --out-dtype $f8 --scale 0.5 --repeat 25
    run_logged "gated_silu_f32_$f8" "$K" run --no-db --act 'gated(silu)' --shape "$GSHAPE" --dtype f32 \
      --out-dtype $f8 --scale 0.5 --repeat 25
    check_logged "gated_fp8_check_$f8" --act 'gated(silu),gated(gelu(approximate=tanh))' --dtype bf16 \
      --out-dtype $f8 --scale 0.25
  done
  if [ "${GATED_FULL:-0}" = 1 ]; then
    # Tuned on this shape's size (one row of n, src/tuner/tuner.cpp), then served; two padded
    # tensors; the other common gates; every 16-bit input of every gated built-in and float32
    # samples; a size sweep.
    GDB="$OUT/gated.db"
    rm -f "$GDB"*
    for d in bf16 f32; do
      for dir in forward backward; do
        run_logged "gated_tune_${d}_${dir}" "$K" autotune --db "$GDB" --act 'gated(silu)' --shape "$GSHAPE" \
          --dtype $d --direction $dir --strategy fast
        run_logged "gated_silu_${d}_${dir}_tuned" "$K" run --db "$GDB" --act 'gated(silu)' --shape "$GSHAPE" \
          --dtype $d --direction $dir --repeat 25
      done
    done
    run_logged gated_silu_bf16_two_padded "$K" run --no-db --act 'gated(silu)' --shape "$GSHAPE" --dtype bf16 \
      --two-tensors --pad 64
    run_logged gated_others_bf16 "$K" run --no-db --act 'gated(gelu),gated(gelu(approximate=tanh)),gated(relu)' \
      --shape "$GSHAPE" --dtype bf16
    for d in f16 bf16; do
      check_logged "gated_acc_${d}_forward" --act 'gated(all)' --dtype $d
      check_logged "gated_acc_${d}_backward" --act 'gated(all)' --dtype $d --direction backward
    done
    check_logged gated_acc_f32_forward --act 'gated(all)' --dtype f32 --sample 67108864
    check_logged gated_acc_f32_backward --act 'gated(all)' --dtype f32 --direction backward --sample 67108864
    run_logged gated_bench "$K" bench --no-db --act 'gated(silu)' --dtype bf16,f32 --n 2^16..2^30 \
      --csv "$LOGS/gated_bench.csv"
  fi
  # The compact table: each timed run's ratio to the copy, and its verdict.
  echo "gated roofline (% of a same-run copy; goal >= 99 % at $GSHAPE):" | tee -a "$summary"
  for f in "$LOGS"/gated_silu_*.log "$LOGS"/gated_others_bf16.log; do
    [ -e "$f" ] || continue
    awk -v run="$(basename "$f" .log)" '/^== /{spec=substr($0, 4)} /^verdict:/{v=$2} /^ratio:/{printf "  %-30s %-58s %7s %% %s\n", run, spec, $2, v}' \
      "$f" | tee -a "$summary"
  done
fi

if want prelu; then
  heading prelu
  PSHAPE=${PRELU_SHAPE:-32x256x128x128}
  run_logged prelu_tests_cuda "$BIN/kplay_tests" --test-suite=cuda -tc='*prelu*'
  run_logged prelu_tests_unit "$BIN/kplay_tests" --test-suite-exclude=nvrtc,cuda,opencl \
    -tc='*prelu*,*rrelu*,*RReLU*,*--channels*'
  grep -hE '^\[doctest\] (test cases|assertions)' "$LOGS"/prelu_tests_*.log >>"$summary"
  for d in bf16 f32; do
    for dir in forward backward; do
      run_logged "prelu_${d}_${dir}" "$K" run --no-db --act prelu --shape "$PSHAPE" --dtype $d --direction $dir \
        --repeat 25
      run_logged "prelu_one_${d}_${dir}" "$K" run --no-db --act prelu --shape "$PSHAPE" --channels 1 --dtype $d \
        --direction $dir --repeat 25
      run_logged "rrelu_train_${d}_${dir}" "$K" run --no-db --act 'training(rrelu)' --shape "$PSHAPE" --dtype $d \
        --direction $dir --repeat 25
    done
  done
  for d in f16 bf16 f32; do
    check_logged "prelu_acc_${d}_forward" --act 'prelu,rrelu,training(rrelu)' --dtype $d
    check_logged "prelu_acc_${d}_backward" --act 'prelu,rrelu,training(rrelu)' --dtype $d --direction backward
  done
  check_logged prelu_acc_f64 --act 'prelu,training(rrelu)' --dtype f64 --sample 16777216
  grep -h "^weight gradient" "$LOGS"/prelu_*_backward.log | tee -a "$summary"
  if python_setup; then
    pushd "$root" >/dev/null || exit 1
    export KPLAY_DB="$OUT/python.db"
    run_logged prelu_pytest timeout 600 "$PY" -m pytest -q -rfs tests/python/test_prelu_rrelu.py
    run_logged prelu_opinfo timeout 900 "$PY" -m pytest -q -rfs tests/python/test_opinfo_parity.py -k "prelu or rrelu"
    grep -hE "^FAILED|passed|failed" "$LOGS"/prelu_pytest.log "$LOGS"/prelu_opinfo.log | tail -n 20 >>"$summary"
    export KPLAY_DB="$OUT/default.db"
    popd >/dev/null || exit 1
  fi
  echo "prelu and rrelu (% of a same-run copy; prelu backward counts g and x read twice):" | tee -a "$summary"
  for f in "$LOGS"/prelu_*_forward.log "$LOGS"/prelu_*_backward.log "$LOGS"/rrelu_train_*.log; do
    [ -e "$f" ] || continue
    awk -v run="$(basename "$f" .log)" '/^== /{spec=substr($0, 4)} /^verdict:/{v=$2} /^ratio:/{printf "  %-30s %-50s %7s %% %s\n", run, spec, $2, v}' \
      "$f" | tee -a "$summary"
  done
fi

if want rows; then
  heading rows
  steps=" ${ROWS_STEPS:-tests sweep table python} "
  ROW_SHAPES=${ROW_SHAPES:-"65536x128 32768x1024 16384x4096 8192x32768 4096x131072 4096x393216 1024x1048576"}
  if [[ $steps == *" tests "* ]]; then
    mapfile -t row_cases < <("$BIN/kplay_tests" --list-test-cases --test-suite=cuda 2>/dev/null |
      grep -vE '^(\[doctest\]|=)' | grep -E "row|softmax|strided|pipelined|persistent|cluster")
    run_cases rows_cuda "${row_cases[@]}"
  fi
  if [[ $steps == *" sweep "* ]]; then
    # shellcheck disable=SC2086  # the shapes are words
    run_logged rows_sweep env KPLAY_CLI="$K" "$root/tools/row_sweep.sh" $ROW_SHAPES
    run_logged rows_sweep_backward env KPLAY_CLI="$K" "$root/tools/row_sweep.sh" --direction backward \
      32768x1024 8192x32768 4096x393216
  fi
  if [[ $steps == *" tune "* ]]; then
    for sh in $ROW_SHAPES; do
      run_logged "rows_tune_$sh" "$K" autotune --db "$OUT/rows.db" --act softmax,log_softmax --dtype f32,bf16 \
        --direction all --shape "$sh" --strategy halving
    done
  fi
  if [[ $steps == *" table "* ]] && python_setup; then  # kplay.torch, in torch's process
    run_logged rows_table env KPLAY_DB="$OUT/none.db" "$PY" "$root/tools/softmax_table.py" --kplay "$K" \
      --shapes "${ROW_SHAPES// /,}" --json "$OUT/rows_table.json"
    [ -e "$OUT/rows.db" ] && run_logged rows_table_tuned env KPLAY_DB="$OUT/rows.db" "$PY" \
      "$root/tools/softmax_table.py" --kplay "$K" --shapes "${ROW_SHAPES// /,}" --json "$OUT/rows_table_tuned.json"
    grep -hE "^(softmax|log_softmax) " "$LOGS"/rows_table*.log >>"$summary"
  fi
  if [[ $steps == *" python "* ]] && python_setup; then
    pushd "$root" >/dev/null || exit 1
    export KPLAY_DB="$OUT/python.db"
    run_logged rows_pytest timeout 900 "$PY" -m pytest -q -rfs tests/python/test_softmax_torch.py \
      tests/python/test_softmax_opinfo.py
    run_logged rows_ulps "$PY" tools/softmax_ulps.py
    grep -hE "^FAILED|passed|failed" "$LOGS"/rows_pytest.log | tail -n 20 >>"$summary"
    export KPLAY_DB="$OUT/default.db"
    popd >/dev/null || exit 1
  fi
fi

# Every log in one archive: the device tool brings back only a few files.
tar czf "$OUT/logs.tgz" -C "$LOGS" . && rm -rf "$LOGS"
echo; echo "######## summary ($failed failed)"; cat "$summary"
[ "$failed" = 0 ]
