#!/usr/bin/env bash
# Issue 9's first goal on one GPU, in one call: the README's run, then whole untuned tables against
# torch (perf_table.py: kernels timed alone, kplay and torch in alternating order, 15 rounds), as
# many as fit in LIMIT seconds: every row with each call allocating its output; the 16-bit rows
# with kplay and the copy writing one preallocated buffer (the tables before session 27); the
# 16-bit rows allocated again. perf_table_gaps.py prints the rows below torch last.
# Usage: scripts/gpu_untuned_tables.sh KPLAY_CLI KPLAY_WHEEL OUT_DIR   (LIMIT=540, PREALLOC=0 skips
# the preallocated table). The wheel is installed into /tmp/kplay-site, not the system.
set -uo pipefail
K=${1:?usage: gpu_untuned_tables.sh KPLAY_CLI KPLAY_WHEEL OUT_DIR}
WHEEL=${2:?usage: gpu_untuned_tables.sh KPLAY_CLI KPLAY_WHEEL OUT_DIR}
OUT=${3:?usage: gpu_untuned_tables.sh KPLAY_CLI KPLAY_WHEEL OUT_DIR}
LIMIT=${LIMIT:-540}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/kplay-site "$WHEEL" || exit 1
export PYTHONPATH=/tmp/kplay-site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm,driver_version --format=csv,noheader
"$K" run --act selu,relu --shape 4096x393216 >"$OUT/readme.log" 2>&1
echo "README run: rc=$?"
grep -E "^==|^config|^ratio|^verdict" "$OUT/readme.log"
start=$SECONDS
tables=()
run_table() {  # run_table NAME OUTPUT_MODE [perf_table.py options]
  local left=$((LIMIT - (SECONDS - start))) t=$SECONDS
  [ "$left" -lt 60 ] && { echo "$1: skipped, ${left} s left"; return; }
  KPLAY_DB=/tmp/kplay-none.db timeout "$left" python3 "$here/perf_table.py" --order alternate --timing queued \
    --repeat 15 --output "$2" "${@:3}" >"$OUT/$1.tsv" 2>"$OUT/$1.err"
  echo "$1: rc=$? $((SECONDS - t)) s, $(grep -c $'\t' "$OUT/$1.tsv") rows"
  tables+=("$OUT/$1.tsv")
}
run_table alloc1 allocated
[ "${PREALLOC:-1}" = 1 ] && run_table prealloc preallocated --dtypes f16,bf16
run_table alloc2 allocated --dtypes f16,bf16
python3 "$here/perf_table_gaps.py" --paired "${tables[@]}" >"$OUT/gaps.txt"
sed -n '/^== kplay minus/q;p' "$OUT/gaps.txt"
