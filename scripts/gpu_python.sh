#!/usr/bin/env bash
# The Python package on a CUDA machine without network (torch, cupy, nanobind, scikit-build-core,
# pytest and matplotlib preinstalled): build and install it, run pytest with torch, the examples
# and the overhead measurement. Logs go to $OUT (default ./gpu-python-logs); a summary comes last.
#   bash scripts/gpu_python.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-python-logs}"
mkdir -p "$OUT"
export KPLAY_DB="$OUT/kernels.db"
PY="${PYTHON:-python3}"
declare -a summary

step() {  # step NAME LIMIT_SECONDS COMMAND...: runs it, logs to $OUT/NAME.log, records the status
  local name="$1" limit="$2"; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-14s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(tail -n 1 "$OUT/$name.log")")")
  return $rc
}

# KPLAY_WHEEL: a wheel built elsewhere (the GPU machine may lack SQLite's and nlohmann-json's
# headers); installed into a private target folder. Otherwise build from this checkout.
if [ -n "${KPLAY_WHEEL:-}" ]; then
  step install 240 "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/kplay-site "$KPLAY_WHEEL" || { printf '%s\n' "${summary[@]}"; exit 1; }
  export PYTHONPATH=/tmp/kplay-site${PYTHONPATH:+:$PYTHONPATH}
else
  step install 240 "$PY" -m pip install --no-build-isolation --no-deps -v . || { printf '%s\n' "${summary[@]}"; exit 1; }
fi
step pytest 240 "$PY" -m pytest -q -rfs tests/python
# The C++ kplay::Launcher on CUDA, where this checkout carries a build of the doctest suite.
if [ -x build/tests/kplay_tests ]; then
  step launcher_cuda 120 build/tests/kplay_tests --test-suite=cuda -tc="*Launcher*"
fi
step overhead 60 "$PY" examples/overhead.py
step selu_model 120 "$PY" examples/selu_model.py
step train_small 180 "$PY" examples/train_small.py --steps 100
# Timings live only in tuning records (launches store compiled kernels, no times): tune a few
# selu sizes so the database charts have something to draw.
step autotune 180 "$PY" -c "import kplay; [kplay.autotune('selu', 1 << k, budget=8, repeats=5) for k in (12, 16, 20, 24)]; print('tuned', kplay.db_stats()['tunings'])"
step plot 60 "$PY" -m kplay.plot bench --db --out "$OUT/plots"
step plot_tuning 60 "$PY" -m kplay.plot tuning --out "$OUT/plots" --format png

echo "==== details ===="
grep -E "^FAILED|passed|failed|skipped|error" "$OUT/pytest.log" | tail -n 40
cat "$OUT/overhead.log" "$OUT/selu_model.log" "$OUT/train_small.log" 2>/dev/null | tail -n 30
echo "==== summary (logs in $OUT) ===="
printf '%s\n' "${summary[@]}"
